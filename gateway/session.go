package gateway

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/internal/tinyfmt"
	"github.com/lifeline-go/lifeline/internal/weburl"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// session is one generation: one socket, from dial to close. Its frame handling (handle,
// dispatch, reconcile) is plain logic over the gateway's state; run.go carries it over a
// socket.
type session struct {
	g      *Gateway
	gen    *controller.Generation
	target *weburl.URL
	// ctx ends with the generation's context or with Close; set by register.
	ctx      context.Context
	cancel   context.CancelCauseFunc
	stopLife func() bool

	kick   chan struct{} // wakes the writer to reconcile subscriptions (capacity 1)
	probes chan struct{} // a liveness probe is wanted (capacity 1): run sends it and times it
	retry  chan struct{} // on the HTTP carrier: the world changed, try a WebSocket now (capacity 1)

	noPing atomic.Bool // the Host does not know the ping frame (an older Host)

	readied  chan struct{} // closed once the ready frame came and the controller took it
	carrier  carrier       // the carrier in use, set before its pump starts
	kind     string        // the carrier of the session (run's)
	fellBack bool          // the attempt moved to it from a carrier the path held back (run's)

	// Owned by the pump goroutine.
	readyFrame wire.HostFrame
	gotReady   bool

	// Guarded by g.mu.
	ready    bool               // gen.Ready succeeded: subscriptions and calls may be sent
	wire     map[string]wireSub // what this session told the Host, per stream
	draining bool               // the controller took its goaway: no new call goes on it
	dedup    string             // the ready frame's dedup epoch ("": the Host takes no calls)
	maxFrame int64              // the ready frame's maxFrameBytes (0: not said)
	nextCall uint64             // the id of the last call sent
	inflight map[uint64]*call   // calls sent on it without their reply, by id
	callsOn  callSession        // the rest of what the ready frame said of calls (call.go)
	report   *wire.PageFrame    // the report of the outage it ended, until written (report.go)
	reportOK bool               // the ready frame asked for reports
	presence bool               // the ready frame says the Host carries presence

	drained chan struct{} // signalled when inflight empties (capacity 1)

	// refusal is the last error frame of a Host that ended the session before its ready
	// frame (1008 origin, 1013 overloaded, 1012 restarting): the page's reason, which says
	// more than a close reason may (123 bytes) and comes even when the close frame does not.
	// nil when none.
	refusal atomic.Pointer[string]

	retryAfter atomic.Int64 // ms from an error frame "retry-after=<ms>"; -1 when none
	restart    atomic.Int64 // ms from an error frame or close reason "service-restart[ retry-after=<ms>]"; -1 when none

	ended     atomic.Pointer[accessEnd] // the Host ended the session's access (access.go); nil when not
	stopRenew func()                    // ends its renewals and waits for them (access.go); set by the pump
}

// wireSub is one stream as a session subscribed it.
type wireSub struct {
	sub   *Subscription
	token uint64 // sub.token when the sub frame was sent
	epoch string // the log this session serves the stream from: the cursor's, then each reset's
	// presence: the sub frame asked for presence; batch is a presence batch whose last frame
	// has not come yet (presence.go).
	presence bool
	batch    *presBatch
}

func newSession(g *Gateway, gen *controller.Generation, target *weburl.URL) *session {
	s := &session{
		g:        g,
		gen:      gen,
		target:   target,
		kick:     make(chan struct{}, 1),
		probes:   make(chan struct{}, 1),
		retry:    make(chan struct{}, 1),
		wire:     make(map[string]wireSub),
		inflight: make(map[uint64]*call),
		drained:  make(chan struct{}, 1),
		readied:  make(chan struct{}),
	}
	s.retryAfter.Store(-1)
	s.restart.Store(-1)
	return s
}

// probe asks run for a liveness probe; one already wanted or outstanding absorbs it. A session
// on the HTTP carrier also tries a WebSocket again soon: the world may have changed (another
// network, a page woken up), and the path with it.
func (s *session) probe() {
	select {
	case s.retry <- struct{}{}:
	default:
	}
	if s.noPing.Load() {
		return
	}
	select {
	case s.probes <- struct{}{}:
	default:
	}
}

// isDraining reports whether the controller took the session's goaway.
func (s *session) isDraining() bool {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	return s.draining
}

// hasInflight reports whether calls sent on the session wait for their replies.
func (s *session) hasInflight() bool {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	return len(s.inflight) > 0
}

// callsDone wakes a draining session that waits for the replies of its calls.
func (s *session) callsDone() {
	select {
	case s.drained <- struct{}{}:
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
func (s *session) handle(f wire.HostFrame) error {
	if f.T == wire.TypeError {
		// Allowed before ready too: a Host that refuses a page (1013) or stops (1012) says
		// why in an error frame first, and again in its close frame; either is enough (the
		// close reason is cut to 123 bytes, the frame is not).
		if d, ok := wire.ParseRetryAfter(f.Message); ok {
			s.retryAfter.Store(d.Milliseconds())
		}
		if d, ok := wire.ParseRestart(f.Message); ok {
			s.restart.Store(d.Milliseconds())
		}
		if !s.gotReady {
			s.refusal.Store(&f.Message)
		}
		if strings.Contains(f.Message, `unknown type "`+wire.TypePing+`"`) {
			s.noPing.Store(true) // an older Host: its answer proved the link, but ask no more
		}
		if reason, reauth, ok := wire.ParseAccessEnded(f.Message); ok {
			// access.go. Ended for good, the session ends now, not at the close that follows:
			// the page shows unauthorized as soon as it can.
			if s.endedBy(reason, reauth); !reauth {
				return errAccessEnded
			}
		}
		s.g.log.Warn("gateway: host reported an error", "url", s.target.String(), "message", f.Message)
		return nil
	}
	if !s.gotReady {
		if f.T == wire.TypeGoAway {
			return s.turnedAway(f.URI)
		}
		if f.T != wire.TypeReady {
			return tinyfmt.Errorf("%w: expected a ready frame first, got %q", ErrProtocol, f.T)
		}
		s.gotReady = true
		s.readyFrame = f
		// The carrier is told before the controller hears of the ready frame: the status
		// that says connected then says what carries it, and the indicator never shows a
		// connection without its carrier. (If the generation is stale after all, the next
		// ready one says what carries it.)
		s.g.carried(s)
		if err := s.gen.Ready(nil); err != nil {
			return err
		}
		s.g.readied(s, f)
		close(s.readied)
		s.kickWriter()
		s.startRenewals(f) // access.go: when the ready frame says the credential expires
		return nil
	}
	switch f.T {
	case wire.TypeReady:
		return tinyfmt.Errorf("%w: a second ready frame (session %q) on session %q",
			ErrProtocol, f.Session, s.readyFrame.Session)
	case wire.TypeHeartbeat:
		return nil // its arrival already fed the watchdog
	case wire.TypeEvent, wire.TypeReset:
		return s.g.dispatch(s, f)
	case wire.TypeDenied:
		s.g.deny(s, f)
		return nil
	case wire.TypeGoAway:
		to, err := s.goAwayPlace(f.URI)
		if err != nil {
			return err
		}
		// Draining before the controller hears of it: once it has, the page's next session may
		// be ready and this one replaced at any moment, and its calls in flight must then be
		// waited for (finishCalls), never orphaned. New calls wait for the session the page
		// moves to. ErrStale: this generation is already draining or replaced; nothing to do.
		s.g.mu.Lock()
		was := s.draining
		s.draining = true
		s.g.mu.Unlock()
		s.drainCarrier()
		if s.gen.GoAway(to) != nil && !was {
			s.g.mu.Lock()
			s.draining = false
			s.g.mu.Unlock()
		}
		return nil
	case wire.TypeReply:
		s.g.replied(s, f)
		return nil
	case wire.TypeFenced:
		s.g.fenced(s, f)
		return nil
	case wire.TypePresence:
		s.g.onPresence(s, f)
		return nil
	}
	return tinyfmt.Errorf("%w: unhandled frame type %q", ErrProtocol, f.T)
}

// dispatch applies an event or reset received on s to its stream's subscription.
//
// Dedupe: a subscription's cursor (epoch, last) is shared by every generation, so a replay
// that overlaps what was already delivered is dropped by seq, and the next generation's sub
// carries the latest cursor. Frames of a generation the controller has cancelled are dropped
// too: during a GOAWAY handover the controller cancels the draining generation before the
// new one is told it is ready, and the new one subscribes only then, so at no moment do two
// generations feed a stream.
func (g *Gateway) dispatch(s *session, f wire.HostFrame) error {
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
		sub.epoch, sub.last, sub.rewound = f.Epoch, f.Seq, false
		g.enqueue(sub, Delivery{Stream: f.Stream, Seq: f.Seq, Reset: true, Epoch: f.Epoch, Baseline: f.Baseline})
		return nil
	}
	if sub.epoch == "" || w.epoch != sub.epoch {
		return nil // before the first reset, or from a log this subscription no longer follows
	}
	switch {
	case f.Seq <= sub.last, sub.rewound && f.Seq > sub.last+1:
		sub.dups++
		return nil
	case f.Seq != sub.last+1:
		return tinyfmt.Errorf("%w: stream %q jumped from seq %d to %d without a reset (epoch %q)",
			ErrProtocol, f.Stream, sub.last, f.Seq, sub.epoch)
	}
	sub.last, sub.rewound = f.Seq, false
	g.enqueue(sub, Delivery{Stream: f.Stream, Seq: f.Seq, Data: f.Data, Epoch: sub.epoch})
	return nil
}

// deny ends the subscription the Host's application refused on s. It leaves the gateway's
// desired state, so no session subscribes it again: a refusal is final, not an outage. A
// denial of a sub this session no longer holds (unsubscribed or replaced meanwhile) is late
// and changes nothing.
func (g *Gateway) deny(s *session, f wire.HostFrame) {
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
func (g *Gateway) reconcile(s *session) []wire.PageFrame {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !s.ready || s.ctx.Err() != nil {
		return nil
	}
	var frames []wire.PageFrame
	names := sortedKeys(g.subs)
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
			frames = append(frames, wire.PageFrame{T: wire.TypeUnsub, Stream: name})
			delete(s.wire, name)
		case sub.stalled:
			// Its handler is stuck; the resync waits until it returns.
		case has && w.sub == sub && w.token == sub.token:
		default:
			if has {
				frames = append(frames, wire.PageFrame{T: wire.TypeUnsub, Stream: name})
			}
			f := wire.PageFrame{T: wire.TypeSub, Stream: name}
			if sub.epoch != "" {
				f.Epoch, f.After = sub.epoch, sub.last
			}
			switch {
			case sub.pres != nil && s.presence:
				sub.presenceAsk(&f)
			case sub.pres != nil:
				g.noPresenceHere(sub)
			}
			frames = append(frames, f)
			s.wire[name] = wireSub{sub: sub, token: sub.token, epoch: sub.epoch, presence: f.Presence}
		}
	}
	return frames
}

// turnedAway is how a session ends that got a goaway before its ready frame: a draining Host
// turns away the sockets that reach it, naming where to go (PROTOCOL.md §5.1). Elsewhere: the
// attempt fails with a *controller.RedirectError, and the next one goes there on the ladder.
// The same place: the Host is going away and coming back, a restart.
func (s *session) turnedAway(uri string) error {
	to, err := s.goAwayPlace(uri)
	if err != nil {
		return err
	}
	cause := tinyfmt.Errorf("%w: the host turned the session away before it was ready (goaway %q)", ErrSessionClosed, uri)
	if to == s.gen.Target() {
		return tinyfmt.Errorf("%w: %w", controller.ErrHostRestarting, cause)
	}
	return &controller.RedirectError{To: to, Err: cause}
}

// goAwayPlace names the place a GOAWAY uri sends the page to as the controller names places
// (see controller.Generation.GoAway): the generation's own target for "come back here" (an
// empty uri, or the URL the session dialed), "" for the gateway's own URL (the page's home,
// which the controller knows by no other name), or the normalised URL of a place elsewhere.
// So each place has one name, and the gateway's URL is never spelled twice.
func (s *session) goAwayPlace(uri string) (string, error) {
	u, err := resolveGoAway(s.target, uri)
	switch {
	case err != nil:
		return "", err
	case u == "":
		return s.gen.Target(), nil
	case u == s.g.url:
		return "", nil
	}
	return u, nil
}

// resolveGoAway resolves a GOAWAY uri against the URL the session dialed. A target is
// normalised like [Gateway.URL], so that a place has one spelling; one that names the current
// URL means "come back here" and becomes "".
func resolveGoAway(base *weburl.URL, uri string) (string, error) {
	if uri == "" {
		return "", nil
	}
	ref, err := weburl.Parse(uri)
	if err != nil {
		return "", tinyfmt.Errorf("%w: goaway uri %q: %v", ErrProtocol, uri, err)
	}
	u, err := parseURL(base.ResolveReference(ref).String())
	if err != nil {
		return "", tinyfmt.Errorf("%w: goaway uri %q: %w", ErrProtocol, uri, err)
	}
	if t := u.String(); t != base.String() {
		return t, nil
	}
	return "", nil
}

// drainCarrier tells the session's carrier that the session is leaving.
func (s *session) drainCarrier() {
	if d, ok := s.carrier.(interface{ drain() }); ok {
		d.drain()
	}
}
