//go:build !js

package main

import (
	"testing"

	"github.com/lifeline-go/lifeline/internal/swarmline"
)

// After a SIGKILL a client counts as recovered once it is connected and has delivered a tick
// stored after the kill (past head), whatever it said or did not say about the dead Host.
func TestAllPastWantsEveryClientConnectedWithATickPastTheHead(t *testing.T) {
	const head = 25
	lines := func(s *clientState, ls ...swarmline.Line) {
		for _, l := range ls {
			s.apply(l)
		}
	}
	connected := func(id int) swarmline.Line { return swarmline.Line{ID: id, Event: swarmline.Connected} }
	down := func(id int) swarmline.Line { return swarmline.Line{ID: id, Event: swarmline.Disconnected} }
	tick := func(id int, seq uint64) swarmline.Line {
		return swarmline.Line{ID: id, Event: swarmline.Delivery, Stream: "ticks", Seq: seq}
	}
	for _, tt := range []struct {
		name  string
		after []swarmline.Line // the lines of client 1 after the kill
		want  bool
	}{
		{"still shown connected to the dead Host: it has not noticed yet", nil, false},
		{"a tick the dead Host sent before it died, read after", []swarmline.Line{tick(1, head)}, false},
		{"noticed, not back", []swarmline.Line{down(1)}, false},
		{"back, the replay not past the head yet", []swarmline.Line{down(1), connected(1), tick(1, head)}, false},
		{"back with a tick stored after the kill", []swarmline.Line{down(1), connected(1), tick(1, head), tick(1, head+1)}, true},
		// It moved make-before-break just before the kill: its Host's count still held its
		// replaced session, and it never had a disconnect to report.
		{"moved off before the kill, never disconnected", []swarmline.Line{tick(1, head+1)}, true},
		{"back, then down again", []swarmline.Line{down(1), connected(1), tick(1, head+1), down(1)}, false},
	} {
		s := newClientState()
		for id := range 2 {
			lines(s, connected(id), swarmline.Line{ID: id, Event: swarmline.Delivery, Stream: "ticks", Seq: head - 1, Reset: true})
		}
		s.mark()
		lines(s, tick(0, head), tick(0, head+1)) // client 0 was on a Host that lives
		lines(s, tt.after...)
		if got := s.allPast(2, head); got != tt.want {
			t.Errorf("%s: allPast = %v, want %v", tt.name, got, tt.want)
		}
	}
	if s := newClientState(); s.allPast(1, 0) {
		t.Error("allPast(1, 0) of a client that printed nothing = true, want false")
	}
}
