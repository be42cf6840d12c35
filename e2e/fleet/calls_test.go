//go:build !js

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/gateway"
)

// checkCalls holds each call to its promise through the kill, and fails a step in which the
// kill cut no call.
func TestCheckCallsHoldsEveryCallToItsPromise(t *testing.T) {
	killed := time.Unix(1000, 0)
	after, before := killed.Add(time.Second), killed.Add(-time.Second)
	// A kill that cut a keyed call (re-sent, answered by h1) and an unkeyed one (interrupted).
	cut := []fleetCallRec{
		{id: "c0-k1", keyed: true, firstOn: "h2", resolved: after, kind: callOutcomeOK, replyHost: "h1"},
		{id: "c0-u1", firstOn: "h2", resolved: after, kind: gateway.CallInterrupted},
	}
	cutRuns := map[string]int{"c0-k1": 1, "c0-u1": 1}
	for _, tt := range []struct {
		name string
		recs []fleetCallRec
		runs map[string]int
		want string // in a failure; "" for none
	}{
		{"a keyed call answered by a survivor and an unkeyed one interrupted pass", nil, nil, ""},
		{"a keyed call answered with the dead Host's stored reply passes",
			[]fleetCallRec{{id: "c1-k1", keyed: true, firstOn: "h2", resolved: after, kind: callOutcomeOK, replyHost: "h2"}},
			map[string]int{"c1-k1": 1}, ""},
		{"a keyed call cut mid-run, interrupted without a second run, passes",
			[]fleetCallRec{{id: "c1-k1", keyed: true, firstOn: "h2", resolved: after, kind: gateway.CallInterrupted}},
			map[string]int{"c1-k1": 1}, ""},
		{"a call answered that ran twice fails",
			[]fleetCallRec{{id: "c1-k1", keyed: true, firstOn: "h2", resolved: after, kind: callOutcomeOK, replyHost: "h1"}},
			map[string]int{"c1-k1": 2}, "c1-k1 answered by h1 ran 2 times"},
		{"a call answered that never ran fails",
			[]fleetCallRec{{id: "c1-u1", firstOn: "h3", resolved: before, kind: callOutcomeOK, replyHost: "h3"}},
			nil, "c1-u1 answered by h3 ran 0 times"},
		{"an interrupted call that ran twice fails",
			[]fleetCallRec{{id: "c1-u1", firstOn: "h2", resolved: after, kind: gateway.CallInterrupted}},
			map[string]int{"c1-u1": 2}, "c1-u1 interrupted ran 2 times"},
		{"an unkeyed call cut off and fenced before it started, not-run and never run, passes",
			[]fleetCallRec{{id: "c1-u1", firstOn: "h2", resolved: after, kind: gateway.CallNotRun}},
			nil, ""},
		{"a not-run call that ran fails",
			[]fleetCallRec{{id: "c1-u1", firstOn: "h2", resolved: after, kind: gateway.CallNotRun}},
			map[string]int{"c1-u1": 1}, "c1-u1 not-run ran 1 times"},
		{"a call sent to a Host that lived is never interrupted",
			[]fleetCallRec{{id: "c1-k1", keyed: true, firstOn: "h3", resolved: after, kind: gateway.CallInterrupted}},
			nil, "first sent to h3, which lived"},
		{"a call that timed out is lost",
			[]fleetCallRec{{id: "c1-k1", keyed: true, firstOn: "h2", resolved: after, kind: gateway.CallTimeout}},
			nil, "ended timeout"},
		{"a run of a call nobody made fails", nil, map[string]int{"c9-k9": 1}, "nobody made: c9-k9"},
	} {
		runs := map[string]int{}
		for id, n := range cutRuns {
			runs[id] = n
		}
		for id, n := range tt.runs {
			runs[id] = n
		}
		rep := checkCalls(append(append([]fleetCallRec(nil), cut...), tt.recs...), runs, "h2", killed)
		got := strings.Join(rep.failures, "; ")
		if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("%s: failures %q, want %q", tt.name, got, tt.want)
		}
	}
	for _, tt := range []struct {
		name string
		recs []fleetCallRec
		want string
	}{
		{"no keyed call cut", cut[1:], "no keyed call"},
		{"no unkeyed call cut", cut[:1], "no unkeyed call"},
		{"calls answered before the kill cut nothing", []fleetCallRec{
			{id: "c0-k1", keyed: true, firstOn: "h2", resolved: before, kind: callOutcomeOK, replyHost: "h2"},
			{id: "c0-u1", firstOn: "h2", resolved: before, kind: callOutcomeOK, replyHost: "h2"},
		}, "no keyed call"},
	} {
		rep := checkCalls(tt.recs, cutRuns, "h2", killed)
		if got := strings.Join(rep.failures, "; "); !strings.Contains(got, tt.want) {
			t.Errorf("%s: failures %q, want %q", tt.name, got, tt.want)
		}
	}
}
