//go:build !js

package main

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
)

// A run as bench/browser/pageload.js prints it, two loads per row. Lifeline in-page: its
// first visit streams its wasm; its repeat visit compiles with compileStreaming, then
// instantiates, and sets performance.mark('lifeline:go-ready'). Lifeline shared: the hub is a
// worker the stopwatch cannot see; tab 1 of a first visit and a repeat visit that found no hub
// carry the worker's own figures (read over the DevTools protocol), the other loads only
// connected. socket.io has no wasm.
const cannedRun = `{
 "first": {
  "lifeline": [
   {"connected": 330, "calls": [], "worker": {"resource": {"name": "http://h/lifeline.wasm", "fetchStart": 70, "responseEnd": 160, "transferSize": 1300000, "encodedBodySize": 1299700},
    "started": 50, "compiled": 230, "instantiated": 240, "goReady": 270}},
   {"connected": 420, "calls": [], "worker": {"resource": {"name": "http://h/lifeline.wasm", "fetchStart": 90, "responseEnd": 200, "transferSize": 1300000, "encodedBodySize": 1299700},
    "started": 60, "compiled": 280, "instantiated": 290, "goReady": 330}}
  ],
  "tabs": [{"connected": 40, "calls": []}, {"connected": 50, "calls": []}, {"connected": 45, "calls": []}],
  "inpage": [
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
  "lifeline": [{"connected": 30, "calls": []}, {"connected": 35, "calls": []}],
  "cold": [
   {"connected": 200, "calls": [], "worker": {"resource": {"name": "http://h/lifeline.wasm", "fetchStart": 40, "responseEnd": 60, "transferSize": 0, "encodedBodySize": 1299700},
    "started": 30, "compiled": 90, "instantiated": 95, "goReady": 130}},
   {"connected": 260, "calls": [], "worker": {"resource": {"name": "http://h/lifeline.wasm", "fetchStart": 50, "responseEnd": 70, "transferSize": 0, "encodedBodySize": 1299700},
    "started": 40, "compiled": 100, "instantiated": 105, "goReady": 140}}
  ],
  "inpage": [
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
 "primer": {}, "traces": [], "errors": []
}`

func TestBreakdownReadsEveryColumnOfBothVisits(t *testing.T) {
	var res pageRun
	if err := json.Unmarshal([]byte(cannedRun), &res); err != nil {
		t.Fatal(err)
	}
	res.adoptWorkers()
	got := breakdown(&res)
	// Nearest-rank medians of two loads are the lower one; p90 the higher.
	want := [][]string{
		// fetch start, bytes arrived, compiled, instantiated, Go ready, connected, p90,
		// ÷ socket.io, wasm call → instance, last byte → instance, transferred / body, loads
		{"Lifeline shared", "first, tab 1", "70 ms", "160 ms", "230 ms", "240 ms", "270 ms", "330 ms", "420 ms", "3.30×", "n/a", "80 ms", "1.30 MB / 1.30 MB", "2"},
		{"Lifeline shared", "first, tabs 2–5", "n/a", "n/a", "n/a", "n/a", "n/a", "45 ms", "50 ms", "0.45×", "n/a", "n/a", "n/a / n/a", "3"},
		{"Lifeline shared", "repeat, the hub up", "n/a", "n/a", "n/a", "n/a", "n/a", "30 ms", "35 ms", "0.60×", "n/a", "n/a", "n/a / n/a", "2"},
		{"Lifeline shared", "repeat, no hub", "40 ms", "60 ms", "90 ms", "95 ms", "130 ms", "200 ms", "260 ms", "4.00×", "n/a", "35 ms", "0 B / 1.30 MB", "2"},
		{"Lifeline in-page", "first", "60 ms", "150 ms", "200 ms", "200 ms", "250 ms", "300 ms", "400 ms", "3.00×", "139 ms", "50 ms", "1.30 MB / 1.30 MB", "2"},
		// compileStreaming's start to instantiate's end: 70 - 11 = 59.
		{"Lifeline in-page", "repeat", "10 ms", "40 ms", "60 ms", "70 ms", "90 ms", "150 ms", "250 ms", "3.00×", "59 ms", "30 ms", "0 B / 1.30 MB", "2"},
		{"socket.io-client", "first", "20 ms", "30 ms", "n/a", "n/a", "n/a", "100 ms", "200 ms", "1", "n/a", "n/a", "15.0 KB / 14.7 KB", "2"},
		{"socket.io-client", "repeat", "5 ms", "8 ms", "n/a", "n/a", "n/a", "50 ms", "70 ms", "1", "n/a", "n/a", "300 B / 14.7 KB", "2"},
	}
	for i := range want {
		if i >= len(got) || !slices.Equal(got[i], want[i]) {
			t.Errorf("row %d:\n got %q\nwant %q", i, safeRow(got, i), want[i])
		}
	}
	if s := goReadySource(res.Repeat.InPage); !strings.Contains(s, "performance.mark") || strings.Contains(s, "else") {
		t.Errorf("goReadySource(repeat) = %q, want the mark alone", s)
	}
	if s := goReadySource(res.First.InPage); !strings.HasPrefix(s, "the first `lifeline:state`") {
		t.Errorf("goReadySource(first) = %q, want the first lifeline:state", s)
	}
}

func TestBreakdownSaysNAWhereAPageHasNoSuchMoment(t *testing.T) {
	// A Lifeline page that never instantiated (its wasm failed) but connected nothing either
	// must not invent figures.
	res := pageRun{First: pageLoads{InPage: []pageLoad{{Calls: nil}}}}
	got := breakdown(&res)[4]
	for i, col := range []int{2, 3, 4, 5, 6, 7, 10, 11} {
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

func TestCodeCacheNoteReadsTheTracedLoad(t *testing.T) {
	var res pageRun
	if err := json.Unmarshal([]byte(cannedRun), &res); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		trace  string
		want   []string
		unwant []string
	}{
		{"no trace", `[]`, []string{"no traced load", "first visit 139 ms, repeat 59 ms (0.42×)"}, []string{"compiled from"}},
		{"never cached", `[{"counts": {"lazyCompiled": 968, "topTierJobs": 10}}, {"counts": {"lazyCompiled": 970, "topTierJobs": 10}}]`,
			[]string{"of 2 more repeat loads", "**none** of 2 compiled from the code cache", "offered the module to the cache 0 times", "stored it 0 times", "per load 969 functions were compiled lazily", "and 10 top-tier"}, nil},
		{"a hit of three", `[{"counts": {"offeredToCache": 10, "cachedModule": 10}, "producedCacheSize": 160000},
			{"counts": {"cacheHit": 1, "deserialize": 1, "offeredToCache": 4, "cachedModule": 4}, "consumedCacheSize": 250000, "producedCacheSize": 260000}, {"counts": {}}]`,
			[]string{"1 of 3 compiled from the code cache (`v8.wasm.moduleCacheHit`, up to 250.0 KB consumed)", "offered the module to the cache 14 times", "stored it 14 times (`v8.wasm.cachedModule`, up to 260.0 KB)"}, []string{"**none**"}},
		{"an invalid entry", `[{"counts": {"cacheHit": 1, "cacheInvalid": 1}}]`, []string{"1 cache entries rejected as invalid"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res.Traces = nil
			if err := json.Unmarshal([]byte(tt.trace), &res.Traces); err != nil {
				t.Fatal(err)
			}
			r := newReport()
			r.out = io.Discard
			tab := r.table("6", "")
			(&env{}).s6CodeCache(r, tab, &res)
			if len(tab.notes) != 1 {
				t.Fatalf("notes %q, want one", tab.notes)
			}
			for _, w := range tt.want {
				if !strings.Contains(tab.notes[0], w) {
					t.Errorf("note %q lacks %q", tab.notes[0], w)
				}
			}
			for _, u := range tt.unwant {
				if strings.Contains(tab.notes[0], u) {
					t.Errorf("note %q has %q", tab.notes[0], u)
				}
			}
		})
	}
}

func TestRevalidatedCountsThe304s(t *testing.T) {
	var res pageRun
	if err := json.Unmarshal([]byte(cannedRun), &res); err != nil {
		t.Fatal(err)
	}
	// Lifeline's repeat loads came from the cache (0 B), its first loads over the wire; both of
	// socket.io's repeat loads were revalidated (300 B for a 14.7 KB body).
	for _, tt := range []struct {
		name string
		ls   []pageLoad
		want int
	}{{"lifeline first", res.First.InPage, 0}, {"lifeline repeat", res.Repeat.InPage, 0}, {"sio repeat", res.Repeat.Sio, 2}} {
		if got := revalidated(tt.ls); got != tt.want {
			t.Errorf("revalidated(%s) = %d, want %d", tt.name, got, tt.want)
		}
	}
}
