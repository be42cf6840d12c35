//go:build !js

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/bench/callline"
)

// Each row is one call: what its caller was told and how many times it ran, and which of
// the scenario's counts it lands in.
func TestCountCallsClassifiesEachCallByWhatItsCallerWasToldAndItsRuns(t *testing.T) {
	type want struct{ ok, failedRan, failedNot, unknownRan, unknownNot, noneRan, noneNot, mixed, dup, lost, wrong int }
	for _, tc := range []struct {
		name string
		told string // "" for a call with no line at all
		runs int
		want want
	}{
		{"an ok call that ran once is just ok", callline.Ok, 1, want{ok: 1}},
		{"an ok call that ran twice is a duplicate", callline.Ok, 2, want{ok: 1, dup: 1}},
		{"an ok call that never ran is lost, and its caller told wrong", callline.Ok, 0, want{ok: 1, lost: 1, wrong: 1}},
		{"a failed call that never ran is what it said", callline.Failed, 0, want{failedNot: 1}},
		{"a failed call that ran was told wrong", callline.Failed, 1, want{failedRan: 1, wrong: 1}},
		{"a failed call that ran three times is wrong and a duplicate", callline.Failed, 3, want{failedRan: 1, wrong: 1, dup: 1}},
		{"an unknown outcome that ran is no lie", callline.Unknown, 1, want{unknownRan: 1}},
		{"an unknown outcome that did not run is reported, not lost", callline.Unknown, 0, want{unknownNot: 1}},
		{"an unknown outcome run twice is still a duplicate", callline.Unknown, 2, want{unknownRan: 1, dup: 1}},
		{"a call never told that ran is not lost", callline.None, 1, want{noneRan: 1}},
		{"a call never told that never ran is lost", callline.None, 0, want{noneNot: 1, lost: 1}},
		{"a call with no line at all counts as never told", "", 0, want{noneNot: 1, lost: 1}},
		{"another call's reply is told wrong", callline.Mixed, 1, want{mixed: 1, wrong: 1}},
		{"another call's reply for one never run is lost too", callline.Mixed, 0, want{mixed: 1, wrong: 1, lost: 1}},
	} {
		told := map[string]callline.Line{}
		if tc.told != "" {
			told["0-0"] = callline.Line{Event: callline.Call, Call: "0-0", Told: tc.told}
		}
		runs := map[string]int{}
		if tc.runs > 0 {
			runs["0-0"] = tc.runs
		}
		c := countCalls(1, 1, 0, told, runs)
		got := want{c.ok, c.failedRan, c.failedNot, c.unknownRan, c.unknownNot, c.noneRan, c.noneNot, c.mixed, c.duplicates, c.lost, c.wrong}
		if got != tc.want || c.made != 1 {
			t.Errorf("%s: told %q, %d runs: got %+v of %d made, want %+v of 1", tc.name, tc.told, tc.runs, got, c.made, tc.want)
		}
	}
}

func TestCountCallsCountsRunsOfCallsNobodyMadeAndLeavesTheWarmUpOutOfTheRoundTrip(t *testing.T) {
	told := map[string]callline.Line{
		"0-0": {Call: "0-0", Told: callline.Ok, Ms: 90},
		"0-1": {Call: "0-1", Told: callline.Ok, Ms: 1},
		"1-0": {Call: "1-0", Told: callline.Ok, Ms: 80},
		"1-1": {Call: "1-1", Told: callline.Failed, Why: "socket has been disconnected", Ms: 5},
	}
	runs := map[string]int{"0-0": 1, "0-1": 1, "1-0": 1, "2-0": 2, "0-7": 1}
	c := countCalls(2, 2, 1, told, runs)
	if c.made != 4 || c.strays != 3 {
		t.Errorf("made %d, strays %d; want 4 made (2 callers × 2 calls), 3 stray runs (2-0 twice, 0-7)", c.made, c.strays)
	}
	if len(c.okMs) != 1 || c.okMs[0] != 1 {
		t.Errorf("okMs = %v; want [1]: the first call of each caller is its warm-up", c.okMs)
	}
	if len(c.toldMs) != 4 {
		t.Errorf("toldMs = %v; want the 4 calls told something, warm-up or not", c.toldMs)
	}
	if got := c.whyText(); got != `"socket has been disconnected" × 1` {
		t.Errorf("whyText() = %s", got)
	}
}

func TestCallPlanGivesEachCallerTheSamePlanInItsOwnFlags(t *testing.T) {
	p := callPlan{calls: 40, every: time.Second, work: 20 * time.Millisecond, timeout: 30 * time.Second, seq: true}
	if got, want := strings.Join(p.args(kLifeline), " "), "-calls 40 -every 1s -work 20ms -timeout 30s -seq"; got != want {
		t.Errorf("callpages: %s, want %s", got, want)
	}
	if got, want := strings.Join(p.args(kSIO), " "), "--calls 40 --every 1000 --work 20 --timeout 30000 --seq 1"; got != want {
		t.Errorf("sio-callers.js: %s, want %s", got, want)
	}
}
