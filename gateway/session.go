package gateway

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway/wire"
)

// session is one generation: one socket, from dial to close. Its frame handling (handle,
// dispatch, reconcile) is plain logic over the gateway's state; run.go carries it over a
// socket.
type session struct {
	g      *Gateway
	gen    *controller.Generation
	target *url.URL
	// ctx ends with the generation's context or with Close; set by register.
	ctx      context.Context
	cancel   context.CancelCauseFunc
	stopLife func() bool

	kick   chan struct{} // wakes the writer to reconcile subscriptions (capacity 1)
	probes chan struct{} // a liveness probe is wanted (capacity 1): run sends it and times it

	noPing atomic.Bool // the Host does not know the ping frame (an older Host)

	// Owned by the pump goroutine.
	readyFrame wire.ServerFrame
	gotReady   bool

	// Guarded by g.mu.
	ready bool               // gen.Ready succeeded: subscriptions may be sent
	wire  map[string]wireSub // what this session told the Host, per stream

	retryAfter atomic.Int64 // ms from an error frame "retry-after=<ms>"; -1 when none
	restart    atomic.Int64 // ms from an error frame or close reason "service-restart[ retry-after=<ms>]"; -1 when none
}

// wireSub is one stream as a session subscribed it.
type wireSub struct {
	sub   *Subscription
	token uint64 // sub.token when the sub frame was sent
	epoch string // the log this session serves the stream from: the cursor's, then each reset's
}

func newSession(g *Gateway, gen *controller.Generation, target *url.URL) *session {
	s := &session{
		g:      g,
		gen:    gen,
		target: target,
		kick:   make(chan struct{}, 1),
		probes: make(chan struct{}, 1),
		wire:   make(map[string]wireSub),
	}
	s.retryAfter.Store(-1)
	s.restart.Store(-1)
	return s
}

// probe asks run for a liveness probe; one already wanted or outstanding absorbs it.
func (s *session) probe() {
	if s.noPing.Load() {
		return
	}
	select {
	case s.probes <- struct{}{}:
	default:
	}
}

func (s *session) kickWriter() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// handle acts on one frame from the Host. It runs on the pump goroutine; a non-nil error
// ends the generation.
func (s *session) handle(f wire.ServerFrame) error {
	if f.T == wire.TypeError {
		// Allowed before ready too: a Host refusing the page (1013) may say why first.
		// Under js/wasm the close code and reason are not visible to the page (the library
		// reports every close alike), so a Host that refuses a page (1013) or stops (1012)
		// says why in an error frame first; natively both routes work.
		if d, ok := wire.ParseRetryAfter(f.Message); ok {
			s.retryAfter.Store(d.Milliseconds())
		}
		if d, ok := wire.ParseRestart(f.Message); ok {
			s.restart.Store(d.Milliseconds())
		}
		if strings.Contains(f.Message, `unknown type "`+wire.TypePing+`"`) {
			s.noPing.Store(true) // an older Host: its answer proved the link, but ask no more
		}
		s.g.log.Warn("gateway: host reported an error", "url", s.target.String(), "message", f.Message)
		return nil
	}
	if !s.gotReady {
		if f.T != wire.TypeReady {
			return fmt.Errorf("%w: expected a ready frame first, got %q", ErrProtocol, f.T)
		}
		s.gotReady = true
		s.readyFrame = f
		if err := s.gen.Ready(nil); err != nil {
			return err
		}
		s.g.mu.Lock()
		s.ready = true
		s.g.mu.Unlock()
		s.kickWriter()
		return nil
	}
	switch f.T {
	case wire.TypeReady:
		return fmt.Errorf("%w: a second ready frame (session %q) on session %q",
			ErrProtocol, f.Session, s.readyFrame.Session)
	case wire.TypeHeartbeat:
		return nil // its arrival already fed the watchdog
	case wire.TypeEvent, wire.TypeReset:
		return s.g.dispatch(s, f)
	case wire.TypeDenied:
		s.g.deny(s, f)
		return nil
	case wire.TypeGoAway:
		uri, err := resolveGoAway(s.target, f.URI)
		if err != nil {
			return err
		}
		// ErrStale: this generation is already draining or replaced; nothing to do.
		_ = s.gen.GoAway(uri)
		return nil
	}
	return fmt.Errorf("%w: unhandled frame type %q", ErrProtocol, f.T)
}

// dispatch applies an event or reset received on s to its stream's subscription.
//
// Dedupe: a subscription's cursor (epoch, last) is shared by every generation, so a replay
// that overlaps what was already delivered is dropped by seq, and the next generation's sub
// carries the latest cursor. Frames of a generation the controller has cancelled are dropped
// too: during a GOAWAY handover the controller cancels the draining generation before the
// new one is told it is ready, and the new one subscribes only then, so at no moment do two
// generations feed a stream.
func (g *Gateway) dispatch(s *session, f wire.ServerFrame) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.ctx.Err() != nil {
		return nil
	}
	sub, w := g.subs[f.Stream], s.wire[f.Stream]
	if sub == nil || w.sub != sub || w.token != sub.token || sub.stalled {
		return nil // not (or no longer) subscribed on this session: late frames of an unsub
	}
	if f.T == wire.TypeReset {
		w.epoch = f.Epoch
		s.wire[f.Stream] = w
		if sub.epoch == f.Epoch && f.Seq <= sub.last {
			sub.dups++
			return nil // a baseline older than what was delivered from the same log
		}
		sub.epoch, sub.last = f.Epoch, f.Seq
		g.enqueue(sub, Delivery{Stream: f.Stream, Seq: f.Seq, Reset: true, Epoch: f.Epoch, Baseline: f.Baseline})
		return nil
	}
	if sub.epoch == "" || w.epoch != sub.epoch {
		return nil // before the first reset, or from a log this subscription no longer follows
	}
	switch {
	case f.Seq <= sub.last:
		sub.dups++
		return nil
	case f.Seq != sub.last+1:
		return fmt.Errorf("%w: stream %q jumped from seq %d to %d without a reset (epoch %q)",
			ErrProtocol, f.Stream, sub.last, f.Seq, sub.epoch)
	}
	sub.last = f.Seq
	g.enqueue(sub, Delivery{Stream: f.Stream, Seq: f.Seq, Data: f.Data, Epoch: sub.epoch})
	return nil
}

// deny ends the subscription the Host's application refused on s. It leaves the gateway's
// desired state, so no session subscribes it again: a refusal is final, not an outage. A
// denial of a sub this session no longer holds (unsubscribed or replaced meanwhile) is late
// and changes nothing.
func (g *Gateway) deny(s *session, f wire.ServerFrame) {
	g.mu.Lock()
	defer g.mu.Unlock()
	sub, w := g.subs[f.Stream], s.wire[f.Stream]
	if s.ctx.Err() != nil || sub == nil || w.sub != sub || w.token != sub.token {
		return
	}
	delete(g.subs, f.Stream)
	delete(s.wire, f.Stream) // the Host holds nothing for it any more: no unsub to send
	g.log.Warn("gateway: the host denied a subscription", "stream", f.Stream, "reason", f.Reason)
	g.end(sub, &DeniedError{Stream: f.Stream, Reason: f.Reason})
}

// reconcile returns the frames that bring what s told the Host in line with the gateway's
// subscriptions, and records them as sent. Every Subscribe and Unsubscribe only changes the
// desired state and kicks the writers, so any number of calls collapses to at most one
// action per stream (unsub, sub, or unsub then a fresh sub for a replaced subscription),
// holding the newest request; a session that is not ready yet sends nothing, and a new
// generation starts from an empty wire state: one sub per stream.
func (g *Gateway) reconcile(s *session) []wire.ClientFrame {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !s.ready || s.ctx.Err() != nil {
		return nil
	}
	var frames []wire.ClientFrame
	names := slices.Sorted(maps.Keys(g.subs))
	for name := range s.wire {
		if g.subs[name] == nil {
			names = append(names, name)
		}
	}
	for _, name := range names {
		sub := g.subs[name]
		w, has := s.wire[name]
		switch {
		case sub == nil:
			frames = append(frames, wire.ClientFrame{T: wire.TypeUnsub, Stream: name})
			delete(s.wire, name)
		case sub.stalled:
			// Its handler is stuck; the resync waits until it returns.
		case has && w.sub == sub && w.token == sub.token:
		default:
			if has {
				frames = append(frames, wire.ClientFrame{T: wire.TypeUnsub, Stream: name})
			}
			f := wire.ClientFrame{T: wire.TypeSub, Stream: name}
			if sub.epoch != "" {
				f.Epoch, f.After = sub.epoch, sub.last
			}
			frames = append(frames, f)
			s.wire[name] = wireSub{sub: sub, token: sub.token, epoch: sub.epoch}
		}
	}
	return frames
}

// resolveGoAway resolves a GOAWAY uri against the URL the session dialed. The controller
// compares endpoints as strings, so a target is normalised like [Gateway.URL]; one that
// names the current URL means "come back here" and becomes "".
func resolveGoAway(base *url.URL, uri string) (string, error) {
	if uri == "" {
		return "", nil
	}
	ref, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("%w: goaway uri %q: %v", ErrProtocol, uri, err)
	}
	u, err := parseURL(base.ResolveReference(ref).String())
	if err != nil {
		return "", fmt.Errorf("%w: goaway uri %q: %w", ErrProtocol, uri, err)
	}
	if t := u.String(); t != base.String() {
		return t, nil
	}
	return "", nil
}
