package main

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The proxy ends with the process that started it: run through `go run`, a SIGTERM to the go
// command would otherwise leave the proxy running. An init function runs on the main
// thread, which lives as long as the process: the kernel keeps the setting per thread.
func init() {
	ppid := os.Getppid()
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0); err != nil {
		return
	}
	if os.Getppid() != ppid { // the parent died before the setting took
		_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
	}
}
