//go:build !js

package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/lifeline-go/lifeline/internal/testbed"
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
