//go:build !js

package main

import (
	"encoding/json"
	"testing"

	"github.com/lifeline-go/lifeline/internal/swarmline"
)

// The soak's calls check admits what each call's Promise may say, and fails everything else.
func TestCallsCheckHoldsEachCallToItsPromise(t *testing.T) {
	spans := []span{{kind: "outage", from: 100, to: 200}, {kind: "kill", from: 300, to: 400}, {kind: "handoff", from: 500, to: 600}, {kind: "goaway", from: 700, to: 800}}
	// Each call is made 20 ms before its outcome, and sent under the dedup epoch e1, which a
	// call resolved at 50 (call 1 of the client, beside the one of the row).
	resolved := func(keyed bool, at float64) callSeen {
		return callSeen{done: true, made: at - 20, at: at, keyed: keyed, replyOK: true, epoch: "e1"}
	}
	rejected := func(keyed bool, at float64, kind string, sent bool, code string) callSeen {
		return callSeen{done: true, made: at - 20, at: at, keyed: keyed, kind: kind, sent: sent, code: code, epoch: "e1"}
	}
	tests := []struct {
		name     string
		call     callSeen
		runs     int  // by the ledger
		stray    bool // the ledger also counts a run of a call nobody made
		failures int
		killed   [3]int
	}{
		{name: "a keyed call resolved and run once is clean", call: resolved(true, 150), runs: 1},
		{name: "an unkeyed call resolved and run once is clean", call: resolved(false, 50), runs: 1},
		{name: "a call resolved during a goaway is clean", call: resolved(true, 750), runs: 1},
		{name: "a keyed call the page rejects interrupted after a kill of Host A, run once, is counted", call: rejected(true, 310, "interrupted", true, ""), runs: 1, killed: [3]int{1, 0, 0}},
		{name: "a keyed call the store answers interrupted long after a kill, never run, is counted",
			call: callSeen{done: true, made: 290, at: 900, keyed: true, kind: "interrupted", sent: true, code: "interrupted", epoch: "e1"}, killed: [3]int{0, 1, 0}},
		{name: "a keyed call timed out across a kill, run once, is counted",
			call: callSeen{done: true, made: 290, at: 900, keyed: true, kind: "timeout", sent: true, epoch: "e1"}, runs: 1, killed: [3]int{0, 0, 1}},
		{name: "a keyed call made as Host A was being killed, interrupted, is counted",
			call: callSeen{done: true, made: 340, at: 380, keyed: true, kind: "interrupted", sent: true, epoch: "e1"}, killed: [3]int{1, 0, 0}},
		{name: "a keyed call sent to the restarted Host and interrupted fails",
			call: callSeen{done: true, made: 340, at: 380, keyed: true, kind: "interrupted", sent: true, epoch: "e2"}, runs: 1, failures: 1},
		{name: "a keyed call made after the kill's recovery and interrupted fails", call: rejected(true, 450, "interrupted", true, ""), runs: 1, failures: 1},
		{name: "a keyed call interrupted during an outage fails", call: rejected(true, 150, "interrupted", true, ""), runs: 1, failures: 1},
		{name: "a keyed call never sent, timed out across a kill, fails", call: callSeen{done: true, made: 290, at: 900, keyed: true, kind: "timeout", epoch: "e1"}, failures: 1},
		{name: "a keyed call rejected busy across a kill fails", call: rejected(true, 310, "busy", true, "busy"), failures: 1},
		{name: "an unkeyed call interrupted during an outage, run once, is admitted", call: rejected(false, 150, "interrupted", true, ""), runs: 1},
		{name: "an unkeyed call timed out between faults, never run, is admitted", call: rejected(false, 250, "timeout", true, "")},
		{name: "an unkeyed call interrupted during a handoff fails", call: rejected(false, 550, "interrupted", true, ""), failures: 1},
		{name: "a call interrupted during a goaway fails", call: rejected(false, 750, "interrupted", true, ""), failures: 1},
		{name: "an unkeyed call rejected busy fails", call: rejected(false, 150, "busy", true, "busy"), failures: 1},
		{name: "a call said never sent that ran fails", call: rejected(false, 150, "timeout", false, ""), runs: 1, failures: 1},
		{name: "an unkeyed call interrupted and run twice fails", call: rejected(false, 150, "interrupted", true, ""), runs: 2, failures: 1},
		{name: "an unkeyed call rejected not-run during an outage, never run, is admitted", call: rejected(false, 150, "not-run", true, "")},
		{name: "an unkeyed call rejected not-run that ran fails", call: rejected(false, 150, "not-run", true, ""), runs: 1, failures: 1},
		{name: "a keyed call resolved and run twice fails twice over", call: resolved(true, 50), runs: 2, failures: 2},
		{name: "a resolved call that never ran fails", call: resolved(true, 50), failures: 1},
		{name: "a call resolved with another's reply fails", call: callSeen{done: true, at: 50, keyed: true, epoch: "e1"}, runs: 1, failures: 1},
		{name: "a call without an outcome is lost", call: callSeen{}, runs: 0, failures: 1},
		{name: "a run of a call no client made fails", call: resolved(false, 50), runs: 1, stray: true, failures: 1},
	}
	for _, tt := range tests {
		tr := &tracker{}
		tr.addClient("client 0", 0, 0, 2)
		tr.members[0].calls[0] = tt.call
		tr.members[0].calls[1] = resolved(true, 50)
		counts := []ledgerCount{{Key: callID(0, 0, 1), Runs: 1}}
		id := callID(0, 0, 0)
		data, _ := json.Marshal(id)
		switch {
		case tt.runs == 0:
		case tt.call.keyed:
			counts = append(counts, ledgerCount{Key: id, Runs: tt.runs})
		default:
			counts = append(counts, ledgerCount{Data: data, Runs: tt.runs})
		}
		if tt.stray {
			counts = append(counts, ledgerCount{Key: callID(0, 0, 2), Runs: 1})
		}
		got := tr.checkCalls(counts, spans)
		if got.nFailures != tt.failures || got.keyedKilled != tt.killed {
			t.Errorf("%s: %d failures %q, keyed interrupted by a kill %v; want %d failures, %v", tt.name, got.nFailures, got.failures, got.keyedKilled, tt.failures, tt.killed)
		}
	}
}

// A client's second outcome for one call is a protocol issue, and the first one stands.
func TestACallsSecondOutcomeIsAnIssue(t *testing.T) {
	tr := &tracker{}
	tr.addClient("client 0", 0, 0, 2)
	m := tr.members[0]
	tr.callLine(m, lineOf(1, `"p0/0/1"`))
	tr.callLine(m, lineOf(1, `"p0/0/1"`))
	tr.callLine(m, lineOf(2, `"p0/0/2"`))
	if tr.nIssues != 2 || !m.calls[1].done || !m.calls[1].replyOK || m.calls[0].done {
		t.Errorf("issues %q, calls %+v; want two issues (a second outcome, a call past the client's count) and call 1 resolved with its data", tr.issues, m.calls)
	}
}

func lineOf(k int, reply string) swarmline.Line {
	return swarmline.Line{T: 1, ID: 0, Event: swarmline.Call, Call: k, Keyed: true, Reply: []byte(reply)}
}
