//go:build ignore

// vulnfilter reads govulncheck -format json on stdin and fails if the code calls a vulnerable
// function of a module it requires: those are this repository's to fix (raise the module).
// Vulnerabilities of the standard library are listed and do not fail: which Go builds a
// Host is its builder's choice, not this module's, and the fix is a newer Go there.
//
//	go run golang.org/x/vuln/cmd/govulncheck@VERSION -format json ./... | go run ./scripts/vulnfilter.go
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
)

type frame struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Package  string `json:"package"`
	Function string `json:"function"`
	Position *struct {
		Filename string `json:"filename"`
		Line     int    `json:"line"`
	} `json:"position"`
}

type message struct {
	Finding *struct {
		OSV          string  `json:"osv"`
		FixedVersion string  `json:"fixed_version"`
		Trace        []frame `json:"trace"`
	} `json:"finding"`
}

func main() {
	dec := json.NewDecoder(os.Stdin)
	called := map[string]string{} // id → what to print
	stdlib := map[string]bool{}
	for {
		var m message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			fmt.Fprintln(os.Stderr, "vulnfilter: reading govulncheck's JSON:", err)
			os.Exit(2)
		}
		f := m.Finding
		if f == nil || len(f.Trace) == 0 || f.Trace[0].Function == "" {
			continue // not called: govulncheck finds it only required or imported
		}
		top, at := f.Trace[0], f.Trace[len(f.Trace)-1]
		where := at.Package + "." + at.Function
		if at.Position != nil {
			where = fmt.Sprintf("%s:%d", at.Position.Filename, at.Position.Line)
		}
		if _, seen := called[f.OSV]; !seen {
			called[f.OSV] = fmt.Sprintf("%s: %s@%s calls %s.%s (fixed in %s), from %s", f.OSV, top.Module, top.Version, top.Package, top.Function, f.FixedVersion, where)
			stdlib[f.OSV] = top.Module == "stdlib"
		}
	}
	ids := make([]string, 0, len(called))
	for id := range called {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	failed := 0
	for _, id := range ids {
		if stdlib[id] {
			fmt.Println("govulncheck: in the Go this was built with (build with the fixed Go):", called[id])
		} else {
			fmt.Println("govulncheck: in a required module (raise it):", called[id])
			failed++
		}
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "vulnfilter: %d vulnerabilities of required modules are called\n", failed)
		os.Exit(1)
	}
}
