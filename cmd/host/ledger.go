//go:build lifeline_faults && !js

package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/fault"
)

// The call ledger (-ledger): tooling for the chaos soak (e2e/soak), which holds every call a
// page made to what its Promise said, and so must know how often each call's handler ran.
// The handler ledgerCall answers a call with its data and appends one line per run to the
// ledger file. Every Host given the same file appends to it, so the count spans Hosts, SIGUSR2
// successors and restarts, and a run survives a SIGKILL of its Host as soon as its write
// returned (the kernel has it): the line is written before the reply exists. The counts are
// served at ledgerPath, per (identity, key) for a keyed call and per (identity, data) for an
// unkeyed one, whose data the soak's pages make unique.

// ledgerCall is the ledger's call name; ledgerPath is where its counts are served.
const (
	ledgerCall = "ledger.run"
	ledgerPath = "/_lifeline/ledger"
)

// ledgerRun is one line of the ledger file: one run of the handler.
type ledgerRun struct {
	Identity string          `json:"identity"`
	Key      string          `json:"key,omitempty"`
	Data     json.RawMessage `json:"data"`
}

// ledgerCount is how many times the handler ran for one (identity, key), or for one
// (identity, data) of the unkeyed calls (Key ""), in the answer at ledgerPath.
type ledgerCount struct {
	Identity string          `json:"identity"`
	Key      string          `json:"key,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"` // unkeyed calls only
	Runs     int             `json:"runs"`
}

// installLedger registers the ledger's handler on h, appending to the file at path (created if
// need be), and serves its counts on mux. The returned function closes the file.
func installLedger(h *hostplugin.Host, mux *http.ServeMux, path string) (closeLedger func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	h.HandleCall(ledgerCall, func(_ context.Context, c *hostplugin.Call) (json.RawMessage, error) {
		line, err := json.Marshal(ledgerRun{Identity: c.Identity, Key: c.Key, Data: c.Data})
		if err != nil {
			return nil, fmt.Errorf("ledger: %v", err)
		}
		// One write of a whole line: with O_APPEND it lands at the end in one piece, whatever
		// the other Hosts append meanwhile.
		if _, err := f.Write(append(line, '\n')); err != nil {
			return nil, fmt.Errorf("ledger: the run could not be counted: %v", err)
		}
		return c.Data, nil
	})
	mux.Handle(ledgerPath, ledgerCounts(path))
	return func() { _ = f.Close() }, nil
}

// ledgerCounts serves the counts of the ledger file at path as JSON,
// {"counts":[{"identity":…,"key":…,"runs":n},{"identity":…,"data":…,"runs":n}…]}, sorted by
// identity, key and data, to loopback clients only (fault.LocalOnly, as the fault panel).
func ledgerCounts(path string) http.Handler {
	return fault.LocalOnly("the ledger", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "ledger: use GET", http.StatusMethodNotAllowed)
			return
		}
		f, err := os.Open(path)
		if err != nil {
			http.Error(w, "ledger: "+err.Error(), http.StatusInternalServerError)
			return
		}
		defer f.Close()
		counts, err := countRuns(f)
		if err != nil {
			http.Error(w, "ledger: "+path+": "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(struct {
			Counts []ledgerCount `json:"counts"`
		}{counts})
	}))
}

// countRuns counts the runs of a ledger file. A line that is not a run fails it: the file is
// the ledger's own, so such a line means a count that cannot be trusted.
func countRuns(r io.Reader) ([]ledgerCount, error) {
	type id struct{ identity, key, data string }
	n := map[id]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		var run ledgerRun
		if err := json.Unmarshal(sc.Bytes(), &run); err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		k := id{identity: run.Identity, key: run.Key}
		if run.Key == "" {
			// The same value however it was spaced.
			var c bytes.Buffer
			if err := json.Compact(&c, run.Data); err != nil {
				return nil, fmt.Errorf("line %d: data: %v", line, err)
			}
			k.data = c.String()
		}
		n[k]++
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make([]ledgerCount, 0, len(n))
	for k, runs := range n {
		c := ledgerCount{Identity: k.identity, Key: k.key, Runs: runs}
		if k.key == "" {
			c.Data = json.RawMessage(k.data)
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b ledgerCount) int {
		return cmp.Or(cmp.Compare(a.Identity, b.Identity), cmp.Compare(a.Key, b.Key), bytes.Compare(a.Data, b.Data))
	})
	return out, nil
}
