package gateway

import (
	"runtime"

	"github.com/lifeline-go/lifeline/internal/serial"
	"github.com/lifeline-go/lifeline/internal/tinyfmt"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// Delivery is what a subscription's handler receives: one event of the stream, or a reset.
//
// A reset (Reset set) means: drop what you hold for this stream and start from Baseline,
// which stands at Seq in log Epoch; the next event has Seq+1. Every subscription begins with
// a reset, and the Host sends another when the page's cursor is too old or belongs to another
// log. Events between resets arrive once each, with consecutive Seq.
type Delivery struct {
	Stream string
	// Seq is the event's sequence number, or for a reset the one the baseline stands at.
	Seq uint64
	// Data is the event's payload, one JSON value as the Host sent it; nil for a reset.
	Data wire.RawJSON
	// Reset marks a baseline rather than an event.
	Reset bool
	// Epoch names the log Seq belongs to.
	Epoch string
	// Baseline is the stream's state at Seq, for a reset; nil for an event.
	Baseline wire.RawJSON
}

// A Subscription is one stream followed by a handler, made by [Gateway.Subscribe]. It lives
// until Unsubscribe, a newer Subscribe on the same stream, or Close of its gateway.
type Subscription struct {
	g       *Gateway
	stream  string
	handler func(Delivery)
	done    chan struct{}

	// Guarded by g.mu.
	err   error  // why it ended; nil while active
	epoch string // cursor: the log followed, "" until the first reset
	last  uint64 // cursor: the last seq accepted for delivery
	token uint64 // bumped to make every session send a fresh sub (resync)
	// rewound: Rewind moved the cursor back, and the replay has not begun: events of the
	// older sub still in flight run ahead of it and are dropped (the replay brings them).
	rewound bool
	stalled bool // the queue overflowed; dropping until the handler returns
	queue   []Delivery
	running serial.Loop // runs the handler over queue (deliverOne), on a goroutine only while it holds any
	dups    uint64
	pres    *presence // who is on the stream, when asked for (presence.go); nil if not
}

// Stream returns the stream's name.
func (s *Subscription) Stream() string { return s.stream }

// Unsubscribe ends the subscription with [ErrUnsubscribed]: deliveries still queued are
// dropped, and the Host is told when connected. It is idempotent and never blocks.
func (s *Subscription) Unsubscribe() {
	g := s.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.err != nil {
		return
	}
	if g.subs[s.stream] == s {
		delete(g.subs, s.stream)
		g.kickAll()
	}
	g.end(s, ErrUnsubscribed)
}

// Resync asks the Host for a fresh baseline: every session subscribes the stream again without
// its cursor, so the next delivery is a reset at the Host's head; what happened in between is
// in that baseline, never delivered as events. Frames of the older sub still in flight are
// dropped. It does nothing on a subscription that has ended.
func (s *Subscription) Resync() {
	g := s.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.err != nil || g.subs[s.stream] != s {
		return
	}
	s.epoch, s.last, s.rewound = "", 0, false
	s.token++
	g.kickAll()
}

// Rewind moves the cursor back to c, an earlier point of the log the subscription follows:
// every session subscribes again from there, and the events after c.Seq are delivered again,
// those the handler has had included (or a reset, where the Host can no longer replay them).
// It is for a follower that fans the stream out to readers at different points, and drops
// what a reader has had: the shared hub, when a tab behind the others joins. It does nothing
// on a subscription that has ended, for a cursor of another log, or for one not behind.
func (s *Subscription) Rewind(c Cursor) {
	g := s.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.err != nil || g.subs[s.stream] != s || s.stalled || c.Epoch == "" || c.Epoch != s.epoch || c.Seq >= s.last {
		return
	}
	s.last, s.rewound = c.Seq, true
	s.token++
	g.kickAll()
}

// Done is closed once the subscription has ended and its handler is neither running nor
// about to run. Waiting on it from inside the handler therefore deadlocks.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Err returns why the subscription ended ([ErrUnsubscribed], [ErrReplaced], the cause given
// to Close, ...), or nil while it is active.
func (s *Subscription) Err() error {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	return s.err
}

// end ends s with err unless it has ended already. g.mu must be held.
func (g *Gateway) end(s *Subscription, err error) {
	if s.err != nil {
		return
	}
	s.err = err
	s.queue = nil
	if s.pres != nil {
		s.pres.unhold()
	}
	if !s.running.Running() {
		close(s.done)
	}
}

// enqueue hands d to s's handler. g.mu must be held. When the handler has fallen QueueLen
// deliveries behind, d and everything after it are dropped and the cursor forgotten: the
// stream stalls until the handler returns, then resubscribes from a fresh baseline, which
// queues up behind what was already waiting. This keeps the pump and every other stream
// moving and memory bounded, and the handler still sees a consistent stream (events once
// each, in order, or a reset).
func (g *Gateway) enqueue(s *Subscription, d Delivery) {
	if len(s.queue) >= g.queueLen {
		g.log.Warn("gateway: handler fell behind; dropping deliveries until it returns, then resynchronising from a baseline",
			"stream", s.stream, "queued", len(s.queue), "seq", d.Seq)
		s.stalled = true
		s.epoch, s.last, s.rewound = "", 0, false
		return
	}
	s.queue = append(s.queue, d)
	s.running.Start()
}

// deliverOne runs s's handler on the next delivery of its queue, one call at a time; with the
// queue empty its goroutine exits: an idle subscription holds none. g.mu is held, and released
// while the handler runs.
func (g *Gateway) deliverOne(s *Subscription) bool {
	if s.stalled && s.err == nil {
		// The handler is back: ask every session for a fresh baseline.
		s.stalled = false
		s.token++
		g.kickAll()
	}
	if len(s.queue) == 0 || s.err != nil {
		if s.err != nil {
			close(s.done)
		}
		return false
	}
	d := s.queue[0]
	s.queue[0] = Delivery{}
	s.queue = s.queue[1:]
	g.mu.Unlock()
	g.call(s, d)
	g.mu.Lock()
	return true
}

// call runs the handler once, containing a panic: a faulty handler must not take the
// delivery of later events, or anything else, down with it. The delivery counts as done.
func (g *Gateway) call(s *Subscription, d Delivery) {
	defer func() {
		if v := recover(); v != nil {
			g.log.Error("gateway: subscription handler panicked; delivery continues",
				"stream", s.stream, "seq", d.Seq, "reset", d.Reset, "panic", tinyfmt.Sprint(v), "stack", stack())
		}
	}()
	s.handler(d)
}

// stack is the calling goroutine's stack, as runtime/debug.Stack gives it (which would link
// fmt and os into the page's wasm).
func stack() string {
	buf := make([]byte, 4096)
	for {
		n := runtime.Stack(buf, false)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}
