//go:build !js

package main

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/lifeline-go/lifeline/internal/swarmline"
)

// member is one client or page as the soak sees it through its output lines.
type member struct {
	name string
	page bool

	// Clients only: the bin/swarm process, the client's id in it, and its calls' outcomes.
	proc, local int
	calls       []callSeen

	up       bool
	lastUp   float64 // ms since the epoch of the latest connected
	lastDown float64 // … of the latest disconnect
	downs    int

	// The stream, checked the way PROTOCOL.md §4.5 promises: a reset first, then consecutive seqs.
	seen       bool
	next       uint64
	epoch      string // pages only: the clients do not print the epoch
	lastSeq    uint64
	delivered  int
	lost       uint64
	dups       int
	resets     int
	unexpReset int
	reportIdx  int // pages: the next report number
}

// tracker holds every member's facts; every output line goes through it.
type tracker struct {
	mu       sync.Mutex
	members  []*member
	issues   []string // violations seen, capped
	nIssues  int
	epochWin int // > 0 while a fault that changes the log's epoch is in progress
	stats    map[int]chan clientStats
}

type clientStats struct {
	Goroutines           int
	HeapInuse, HeapAlloc uint64
	OnHTTP               int // clients on the HTTP carrier
}

func msNow() float64 { return swarmline.Stamp(time.Now()) }

func (tr *tracker) add(name string, page bool) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.members = append(tr.members, &member{name: name, page: page})
	return len(tr.members) - 1
}

// addClient adds client local of bin/swarm process proc, which makes calls calls.
func (tr *tracker) addClient(name string, proc, local, calls int) int {
	id := tr.add(name, false)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	m := tr.members[id]
	m.proc, m.local, m.calls = proc, local, make([]callSeen, calls)
	return id
}

func (tr *tracker) issue(format string, args ...any) {
	tr.nIssues++
	if len(tr.issues) < 40 {
		tr.issues = append(tr.issues, fmt.Sprintf(format, args...))
	}
}

// clientLine reads one line of a bin/swarm process whose clients are members base….
func (tr *tracker) clientLine(proc, base int, b []byte) {
	ev, err := swarmline.Decode(b)
	if err != nil {
		tr.mu.Lock()
		tr.issue("client proc %d: unreadable line %q", proc, truncate(string(b)))
		tr.mu.Unlock()
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if ev.Event == swarmline.Stats {
		if ch := tr.stats[proc]; ch != nil {
			select {
			case ch <- clientStats{ev.Goroutines, ev.HeapInuse, ev.HeapAlloc, ev.OnHTTP}:
			default:
			}
		}
		return
	}
	if ev.ID < 0 || base+ev.ID >= len(tr.members) {
		tr.issue("client proc %d: id %d out of range", proc, ev.ID)
		return
	}
	m := tr.members[base+ev.ID]
	switch ev.Event {
	case swarmline.Connected:
		tr.setUp(m, true, ev.T)
	case swarmline.Disconnected:
		tr.setUp(m, false, ev.T)
	case swarmline.Delivery:
		tr.deliver(m, ev.Seq, ev.Reset, "", ev.T)
	case swarmline.Violation:
		tr.issue("%s: client reports a violation: seq %d, want %s", m.name, ev.Seq, ev.Want)
	case swarmline.Call:
		tr.callLine(m, ev)
	}
}

// pageLine reads one line of the page driver; pages are members base….
func (tr *tracker) pageLine(base int, b []byte) {
	var ev struct {
		T     float64 `json:"t"`
		Page  int     `json:"page"`
		Event string  `json:"event"`
		State string  `json:"state"`
		Seq   uint64  `json:"seq"`
		Reset bool    `json:"reset"`
		Epoch string  `json:"epoch"`
		I     int     `json:"i"`
		Text  string  `json:"text"`
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if err := json.Unmarshal(b, &ev); err != nil {
		tr.issue("pages: unreadable line %q", truncate(string(b)))
		return
	}
	if ev.Event == "console" {
		tr.issue("page %d console: %s", ev.Page, ev.Text)
		return
	}
	if ev.Page < 0 || base+ev.Page >= len(tr.members) {
		tr.issue("pages: %s", truncate(string(b)))
		return
	}
	m := tr.members[base+ev.Page]
	if ev.Event == "state" || ev.Event == "delivery" {
		if ev.I != m.reportIdx {
			tr.issue("%s: report %d arrived, want %d (a report was lost or reordered)", m.name, ev.I, m.reportIdx)
		}
		m.reportIdx = ev.I + 1
	}
	switch ev.Event {
	case "state":
		tr.setUp(m, ev.State == "connected", ev.T)
		if ev.State == "misconfigured" || ev.State == "stopped" {
			tr.issue("%s: state %s", m.name, ev.State)
		}
	case "delivery":
		tr.deliver(m, ev.Seq, ev.Reset, ev.Epoch, ev.T)
	}
}

func (tr *tracker) setUp(m *member, up bool, t float64) {
	if up == m.up {
		return
	}
	m.up = up
	if up {
		m.lastUp = t
	} else {
		m.lastDown = t
		m.downs++
	}
}

// deliver checks one delivery against the member's cursor. A reset is expected first, and
// while a fault that changes the log's epoch (a Host killed, a move to another Host) is in
// progress; any other reset is counted as unexpected (for pages: a reset within the same
// epoch always is, since nothing in the soak makes a cursor too old).
func (tr *tracker) deliver(m *member, seq uint64, reset bool, epoch string, _ float64) {
	switch {
	case reset:
		if m.seen {
			m.resets++
			sameEpoch := m.page && epoch == m.epoch
			if tr.epochWin == 0 || sameEpoch {
				m.unexpReset++
				tr.issue("%s: unexpected reset at seq %d (previous seq %d, same epoch %v)", m.name, seq, m.lastSeq, sameEpoch)
			}
		}
		m.seen, m.next, m.epoch = true, seq+1, epoch
	case !m.seen:
		tr.issue("%s: event %d before any reset", m.name, seq)
		m.next = seq + 1
	case seq > m.next:
		m.lost += seq - m.next
		tr.issue("%s: gap: event %d, want %d", m.name, seq, m.next)
		m.next = seq + 1
		m.delivered++
	case seq < m.next:
		m.dups++
		tr.issue("%s: duplicate or out of order: event %d, want %d", m.name, seq, m.next)
	default:
		m.next++
		m.delivered++
	}
	m.lastSeq = seq
}

// counts of members: all, up, and those that have seen the stream's first reset.
func (tr *tracker) counts() (all, up, subscribed int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, m := range tr.members {
		all++
		if m.up {
			up++
		}
		if m.seen {
			subscribed++
		}
	}
	return
}

func (tr *tracker) allUp() bool {
	all, up, _ := tr.counts()
	return all == up
}

func (tr *tracker) setEpochWindow(open bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if open {
		tr.epochWin++
	} else if tr.epochWin > 0 {
		tr.epochWin--
	}
}

// recovery is what one fault did to the members.
type recovery struct {
	affected  int           // members that were disconnected at some point since the fault began
	recovered int           // … and are connected again
	down      []string      // members still down
	worst     time.Duration // the latest reconnection, measured from the fault's end (≥ 0)
	worstName string
}

// recoveryAfter measures, for the fault that began at t0 and ended at t1 (ms), how long each
// member that went down took to come back after t1.
func (tr *tracker) recoveryAfter(t0, t1 float64) recovery {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var r recovery
	for _, m := range tr.members {
		if m.lastDown < t0 && m.up {
			continue // untouched by this fault
		}
		r.affected++
		if !m.up {
			r.down = append(r.down, m.name)
			continue
		}
		r.recovered++
		if d := time.Duration((m.lastUp - t1) * float64(time.Millisecond)); d > r.worst {
			r.worst, r.worstName = d, m.name
		}
	}
	return r
}

// totals sums the stream facts.
type totals struct {
	delivered, dups, resets, unexpResets int
	lost                                 uint64
	headSeq                              uint64
	lagging                              []string
}

// finalCheck compares every member's last seq with the newest one seen: after the soak's
// final quiet period every member must have caught up (one tick of slack for timing).
func (tr *tracker) finalCheck() totals {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var t totals
	for _, m := range tr.members {
		t.headSeq = max(t.headSeq, m.lastSeq)
	}
	for _, m := range tr.members {
		t.delivered += m.delivered
		t.dups += m.dups
		t.resets += m.resets
		t.unexpResets += m.unexpReset
		t.lost += m.lost
		if m.lastSeq+1 < t.headSeq || !m.seen {
			t.lagging = append(t.lagging, fmt.Sprintf("%s at seq %d (head %d, seen %v)", m.name, m.lastSeq, t.headSeq, m.seen))
		}
	}
	return t
}

func truncate(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
