//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// notifyStats relays the signal that asks for a stats line (-stats): SIGUSR1.
func notifyStats(c chan<- os.Signal) { signal.Notify(c, syscall.SIGUSR1) }
