//go:build unix

package main

import (
	"os"
	"syscall"
)

// upgradeSignal starts a successor that inherits the listening socket (see doc.go).
var upgradeSignal os.Signal = syscall.SIGUSR2
