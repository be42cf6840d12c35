//go:build !js

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/lifeline-go/lifeline/internal/swarmline"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// Event is one line of a client process (swarmline.Line: {"t": ms since the epoch, "id":
// client, "event": …}), with its time as a time.
type Event struct {
	T  time.Time
	ID int
	Ev string
	// With bin/swarm -sub -deliveries: "delivery" and "violation" events carry these.
	Seq   uint64
	Reset bool
	Want  json.RawMessage // a violation's expected seq (a number) or what was expected
}

// Client events.
const (
	evAttempt      = swarmline.Attempt
	evConnected    = swarmline.Connected
	evDisconnected = swarmline.Disconnected
)

// fleet collects the event lines of one client process of n clients.
type fleet struct {
	n int

	mu     sync.Mutex
	events []Event
	up     []bool // each client's state as of its last connected/disconnected event
	nUp    int
	bad    int // lines that did not parse
}

func newFleet(n int) *fleet { return &fleet{n: n, up: make([]bool, n)} }

// line is the process's line callback: a line that is not a JSON object is not an event
// (a peer's own message), one that does not decode is counted as bad.
func (f *fleet) line(b []byte) {
	b = bytes.TrimSpace(b)
	if !bytes.HasPrefix(b, []byte("{")) {
		return
	}
	l, err := swarmline.Decode(b)
	if err != nil {
		f.mu.Lock()
		f.bad++
		f.mu.Unlock()
		return
	}
	e := Event{T: l.At(), ID: l.ID, Ev: l.Event, Seq: l.Seq, Reset: l.Reset, Want: l.Want}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, e)
	if e.ID < 0 || e.ID >= f.n {
		return
	}
	switch e.Ev {
	case evConnected:
		if !f.up[e.ID] {
			f.up[e.ID] = true
			f.nUp++
		}
	case evDisconnected:
		if f.up[e.ID] {
			f.up[e.ID] = false
			f.nUp--
		}
	}
}

// connectedNow is how many clients are connected.
func (f *fleet) connectedNow() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nUp
}

// snapshot returns the events so far, in time order.
func (f *fleet) snapshot() []Event {
	f.mu.Lock()
	ev := slices.Clone(f.events)
	f.mu.Unlock()
	slices.SortStableFunc(ev, func(a, b Event) int { return a.T.Compare(b.T) })
	return ev
}

// connectedSince returns, per client, the first connected event at or after t (zero if none).
func (f *fleet) connectedSince(t time.Time) []time.Time {
	first := make([]time.Time, f.n)
	for _, e := range f.snapshot() {
		if e.Ev == evConnected && !e.T.Before(t) && e.ID >= 0 && e.ID < f.n && first[e.ID].IsZero() {
			first[e.ID] = e.T
		}
	}
	return first
}

// countIn counts each client's events of kind ev in [from, to).
func (f *fleet) countIn(ev string, from, to time.Time) []int {
	c := make([]int, f.n)
	for _, e := range f.snapshot() {
		if e.Ev == ev && !e.T.Before(from) && e.T.Before(to) && e.ID >= 0 && e.ID < f.n {
			c[e.ID]++
		}
	}
	return c
}

// downTime returns, per client, how long it was not connected within [from, to]: from each
// disconnected event (or from `from`, if it was not connected then) to the next connected.
func (f *fleet) downTime(from, to time.Time) []time.Duration {
	down := make([]time.Duration, f.n)
	state := make([]bool, f.n)
	since := make([]time.Time, f.n)
	for _, e := range f.snapshot() {
		if e.ID < 0 || e.ID >= f.n {
			continue
		}
		switch e.Ev {
		case evConnected:
			if !state[e.ID] && !since[e.ID].IsZero() && e.T.After(from) {
				down[e.ID] += e.T.Sub(maxTime(since[e.ID], from))
			}
			state[e.ID], since[e.ID] = true, time.Time{}
		case evDisconnected:
			if state[e.ID] && !e.T.After(to) {
				state[e.ID], since[e.ID] = false, e.T
			}
		}
	}
	for id := range state {
		if !state[id] {
			s := since[id]
			if s.IsZero() {
				s = from
			}
			down[id] += to.Sub(maxTime(s, from))
		}
	}
	return down
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// waitFor polls cond every 50 ms until it holds or d has passed; it reports whether it held.
func waitFor(d time.Duration, cond func() bool) bool {
	return testbed.Poll(context.Background(), d, 50*time.Millisecond, cond)
}
