//go:build !unix && !js

package main

import "os"

// notifyStats does nothing where there is no SIGUSR1 (js/wasm, windows): -stats prints no line.
func notifyStats(chan<- os.Signal) {}
