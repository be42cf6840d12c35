//go:build !unix && !js

package main

import "os"

// upgradeSignal is nil where a process cannot hand its socket to a successor: no signal
// asks for it.
var upgradeSignal os.Signal
