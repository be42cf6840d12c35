//go:build !js

package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// panics returns the stderr logs of bed's processes that mention a Go panic, a fatal error
// or a data race, with the first such line.
func panics(bed *testbed.Bed) []string {
	var out []string
	for _, p := range bed.Procs() {
		b, err := os.ReadFile(p.ErrLog())
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.Contains(line, "panic:") || strings.Contains(line, "fatal error:") || strings.Contains(line, "DATA RACE") {
				out = append(out, fmt.Sprintf("%s: %s", p.ErrLog(), line))
				break
			}
		}
	}
	return out
}

// readPID reads a PID file (bin/host -pidfile): the PID of the process serving, written once
// it is ready.
func readPID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("soak: the PID file %s holds %q", path, b)
	}
	return pid, nil
}

// alive reports whether process pid runs: it exists and is no zombie (a SIGUSR2 successor
// outlives its parent, and whoever adopts it may reap it late).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state …, where comm may hold spaces and parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}
