//go:build !js

package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// A run as bench/browser/pageload.js prints it, two loads per row. Lifeline's first visit
// streams its wasm; its repeat visit compiles with compileStreaming, then instantiates, and
// sets performance.mark('lifeline:go-ready'). socket.io has no wasm.
const cannedRun = `{
 "first": {
  "lifeline": [
   {"connected": 300, "resource": {"name": "http://h/lifeline.wasm", "fetchStart": 60, "responseEnd": 150, "transferSize": 1300000, "encodedBodySize": 1299700},
    "calls": [{"fn": "instantiateStreaming", "t0": 61, "t1": 200}], "compiled": 200, "instantiated": 200, "goReady": 250, "goReadyFrom": "state", "ready": 240},
   {"connected": 400, "resource": {"name": "http://h/lifeline.wasm", "fetchStart": 80, "responseEnd": 170, "transferSize": 1300000, "encodedBodySize": 1299700},
    "calls": [{"fn": "instantiateStreaming", "t0": 81, "t1": 260}], "compiled": 260, "instantiated": 260, "goReady": 330, "goReadyFrom": "state", "ready": 320}
  ],
  "sio": [
   {"connected": 100, "resource": {"name": "http://s/socket.io/socket.io.min.js", "fetchStart": 20, "responseEnd": 30, "transferSize": 15000, "encodedBodySize": 14700}, "calls": []},
   {"connected": 200, "resource": {"name": "http://s/socket.io/socket.io.min.js", "fetchStart": 40, "responseEnd": 50, "transferSize": 15000, "encodedBodySize": 14700}, "calls": []}
  ]
 },
 "repeat": {
  "lifeline": [
   {"connected": 150, "resource": {"name": "http://h/lifeline.wasm", "fetchStart": 10, "responseEnd": 40, "transferSize": 0, "encodedBodySize": 1299700},
    "calls": [{"fn": "compileStreaming", "t0": 11, "t1": 60}, {"fn": "instantiate", "t0": 61, "t1": 70}], "compiled": 60, "instantiated": 70, "goReady": 90, "goReadyFrom": "mark"},
   {"connected": 250, "resource": {"name": "http://h/lifeline.wasm", "fetchStart": 30, "responseEnd": 60, "transferSize": 0, "encodedBodySize": 1299700},
    "calls": [{"fn": "compileStreaming", "t0": 31, "t1": 80}, {"fn": "instantiate", "t0": 81, "t1": 90}], "compiled": 80, "instantiated": 90, "goReady": 110, "goReadyFrom": "mark"}
  ],
  "sio": [
   {"connected": 50, "resource": {"name": "http://s/socket.io/socket.io.min.js", "fetchStart": 5, "responseEnd": 8, "transferSize": 300, "encodedBodySize": 14700}, "calls": []},
   {"connected": 70, "resource": {"name": "http://s/socket.io/socket.io.min.js", "fetchStart": 7, "responseEnd": 9, "transferSize": 300, "encodedBodySize": 14700}, "calls": []}
  ]
 },
 "primer": {}, "trace": null, "errors": []
}`

func TestBreakdownReadsEveryColumnOfBothVisits(t *testing.T) {
	var res pageRun
	if err := json.Unmarshal([]byte(cannedRun), &res); err != nil {
		t.Fatal(err)
	}
	got := breakdown(&res)
	// Nearest-rank medians of two loads are the lower one; p90 the higher.
	want := [][]string{
		// fetch start, bytes arrived, instantiated, Go ready, connected, p90, ÷ socket.io,
		// wasm call → instance, last byte → instance, transferred / body, loads
		{"Lifeline", "first", "60 ms", "150 ms", "200 ms", "250 ms", "300 ms", "400 ms", "3.00×", "139 ms", "50 ms", "1.30 MB / 1.30 MB", "2"},
		// compileStreaming's start to instantiate's end: 70 - 11 = 59.
		{"Lifeline", "repeat", "10 ms", "40 ms", "70 ms", "90 ms", "150 ms", "250 ms", "3.00×", "59 ms", "30 ms", "0 B / 1.30 MB", "2"},
		{"socket.io-client", "first", "20 ms", "30 ms", "n/a", "n/a", "100 ms", "200 ms", "1", "n/a", "n/a", "15.0 KB / 14.7 KB", "2"},
		{"socket.io-client", "repeat", "5 ms", "8 ms", "n/a", "n/a", "50 ms", "70 ms", "1", "n/a", "n/a", "300 B / 14.7 KB", "2"},
	}
	for i := range want {
		if i >= len(got) || !slices.Equal(got[i], want[i]) {
			t.Errorf("row %d:\n got %q\nwant %q", i, safeRow(got, i), want[i])
		}
	}
	if s := goReadySource(res.Repeat.Lifeline); !strings.Contains(s, "performance.mark") || strings.Contains(s, "else") {
		t.Errorf("goReadySource(repeat) = %q, want the mark alone", s)
	}
	if s := goReadySource(res.First.Lifeline); !strings.HasPrefix(s, "the first `lifeline:state`") {
		t.Errorf("goReadySource(first) = %q, want the first lifeline:state", s)
	}
}

func TestBreakdownSaysNAWhereAPageHasNoSuchMoment(t *testing.T) {
	// A Lifeline page that never instantiated (its wasm failed) but connected nothing either
	// must not invent figures.
	res := pageRun{First: pageLoads{Lifeline: []pageLoad{{Calls: nil}}}}
	got := breakdown(&res)[0]
	for i, col := range []int{2, 3, 4, 5, 6, 9, 10} {
		if got[col] != "n/a" {
			t.Errorf("column %d (%d) = %q, want n/a", col, i, got[col])
		}
	}
}

func safeRow(rows [][]string, i int) []string {
	if i < len(rows) {
		return rows[i]
	}
	return nil
}
