package gateway

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/internal/tinyfmt"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// run carries the session: over a WebSocket first, or over the HTTP carrier where the gateway
// has found (or the page remembers) that the path does not carry one (PROTOCOL.md §11.3). A
// carrier that fails the way a network fails, before its ready frame, is followed within the
// same attempt by the next (websocket, then stream, then poll) if the Host, asked with the
// refusal query, says it is up and has them: a Host that is down is no blocked path, and its
// failure stays the attempt's, on the ladder.
func (s *session) run() error {
	g := s.g
	if s.ctx.Err() != nil {
		return context.Cause(s.ctx)
	}
	target := g.dialURL(s.target)
	kind := g.startCarrier()
	if kind != wire.CarrierWebSocket && earlyOpen(target) {
		// The page remembers a path that did not carry WebSockets, but the socket its loader
		// opened while the wasm loaded is open: the path carries them now.
		kind = wire.CarrierWebSocket
	}
	if kind == wire.CarrierWebSocket && g.checksFirst() {
		if err := s.checkFirst(target); err != nil {
			return err
		}
	}
	confirmed := false   // an unopened dial's failure was seen twice, with the Host up between
	var asked *hostCheck // the Host's answer between the two
	for {
		err := s.over(kind, target)
		var sus *suspect
		if !errors.As(err, &sus) {
			return err
		}
		next := nextCarrier(kind)
		hc := sus.check
		if hc == nil && confirmed && asked != nil {
			// The Host said it is up a round trip ago, before the confirming dial: not asked
			// again (a first visit behind a path that refuses WebSockets pays for one query).
			hc = asked
		}
		if hc == nil && next != "" {
			c := g.checkHost(s.ctx, target)
			hc = &c
		}
		if next == "" || !hc.up || !hc.carriers || s.ctx.Err() != nil {
			if hc != nil {
				return explain(s.ctx, sus.err, *hc)
			}
			return sus.err
		}
		if sus.unopened && !confirmed {
			// A browser tells a network that refuses WebSockets from one that just failed
			// (a reset, the end of a blip the Host has come back from) by nothing: the same
			// error event. A path that refuses them refuses the next one too, at once.
			confirmed, asked = true, hc
			continue
		}
		g.log.Warn("gateway: the path to the host does not carry this carrier; trying the next",
			"url", s.target.String(), "carrier", kind, "next", next, "err", sus.err)
		s.fellBack = true
		kind = next
	}
}

// nextCarrier is the carrier tried when kind does not get through: a stream after a
// WebSocket, long polls after a stream a proxy holds back; none after polls.
func nextCarrier(kind string) string {
	switch kind {
	case wire.CarrierWebSocket:
		return wire.CarrierStream
	case wire.CarrierStream:
		return wire.CarrierPoll
	}
	return ""
}

// suspect is the failure of a carrier before its ready frame in a way a network fails rather
// than the Host (no answer in time, an answer that is not a Lifeline Host's, a socket that
// ended with no word from the Host). check is the refusal query's answer if it was asked.
// unopened: a browser's dial that failed before anything answered, which says nothing more.
type suspect struct {
	err      error
	check    *hostCheck
	unopened bool
}

func (e *suspect) Error() string { return e.err.Error() }
func (e *suspect) Unwrap() error { return e.err }

// roundTrips is how many of the path's round trips a carrier is given to bring its ready frame
// before the path is taken to hold it back: TCP's handshake, the upgrade (or the GET) and its
// answer, the ready frame, and as much again for a loaded Host.
const roundTrips = 6

// errPathHolds is why a carrier was given up on when the Host said it is up while the
// carrier's ready frame had not come in Options.FallbackAfter.
var errPathHolds = errors.New("gateway: the host is up, but its ready frame did not come through this path")

// checkPatience bounds checkFirst's wait for the refusal query's answer.
const checkPatience = time.Second

// checkFirst asks the Host, before a WebSocket is dialed again after a failure, whether there
// is any point: a browser may hold a WebSocket back after failures of its own accord (Firefox
// delays each new one more, network.websocket.delay-failed-reconnects), and would then make the
// page wait for itself and blame the Host. Only a Host that is up (or up and gated) is dialed;
// one that refuses the page is refused at once, and one that did not answer is down, without
// a WebSocket that fails.
//
// A query that has no answer within checkPatience is no verdict: the WebSocket is dialed all the
// same, and the attempt's own warning and deadline judge the Host (the browser may have sent the
// query on a pooled connection that went half-open; a Host that holds it is slow, not down).
func (s *session) checkFirst(target string) error {
	ctx, cancel := context.WithTimeoutCause(s.ctx, checkPatience, errQueryTimeout)
	hc := s.g.askHost(ctx, target)
	cancel()
	switch {
	case s.ctx.Err() != nil:
		return context.Cause(s.ctx)
	case errors.Is(context.Cause(ctx), errQueryTimeout):
		return nil
	case hc.refused != nil:
		return tinyfmt.Errorf("%w: %s: %w", ErrDial, s.target, hc.refused)
	case hc.up || hc.gated:
		return nil
	}
	return tinyfmt.Errorf("%w: %s: the host cannot be reached: %w", ErrDial, s.target, hc.seen)
}

// over carries the session over one carrier of kind. A carrier whose ready frame has not come
// in Options.FallbackAfter has the Host asked, on the side, whether it is up: if it is (and has
// the HTTP carrier), and the carrier still has no ready frame when it has had roundTrips of the
// path's round trip (the query's own time tells it), the path holds this carrier back and over
// gives it up (a *suspect carrying the check). A slow path is given the time a slow path needs:
// a WebSocket that is merely slow is not sent to HTTP.
func (s *session) over(kind, target string) error {
	g := s.g
	pctx, stop := context.WithCancel(s.ctx)
	holds := make(chan struct{}) // closed when the path holds the carrier back
	var check *hostCheck
	checked := make(chan struct{})
	dialed := time.Now()
	go func() {
		defer close(checked)
		if nextCarrier(kind) == "" {
			return
		}
		t := time.NewTimer(g.fallbackAfter)
		defer t.Stop()
		select {
		case <-t.C:
		case <-pctx.Done():
			return
		case <-s.readied:
			return
		}
		asked := time.Now()
		hc := g.checkHost(pctx, target)
		if !hc.up || !hc.carriers {
			return
		}
		// A healthy carrier is ready within a few of the path's round trips of its dial.
		t.Reset(time.Until(dialed.Add(roundTrips * time.Since(asked))))
		select {
		case <-t.C:
		case <-pctx.Done():
			return
		case <-s.readied:
			return
		}
		check = &hc
		close(holds)
	}()
	defer func() {
		stop()
		<-checked
	}()
	dctx, cancelDial := context.WithCancelCause(s.ctx)
	defer cancelDial(nil)
	go func() {
		select {
		case <-holds:
			cancelDial(errPathHolds)
		case <-dctx.Done():
		}
	}()
	c, err := s.dial(dctx, kind, target)
	if err != nil {
		switch {
		case s.ctx.Err() != nil:
			return context.Cause(s.ctx)
		case errors.Is(context.Cause(dctx), errPathHolds):
			<-checked
			return &suspect{err: tinyfmt.Errorf("%w: %s: %w", ErrDial, s.target, errPathHolds), check: check}
		case isRefusal(err), unanswered(err):
			// The Host's refusal, or a dial nothing answered (refused, reset, no route): the
			// network or the Host is down, which no other carrier mends.
			return tinyfmt.Errorf("%w: %s: %w", ErrDial, s.target, err)
		}
		return &suspect{err: tinyfmt.Errorf("%w: %s: %w", ErrDial, s.target, err), unopened: kind == wire.CarrierWebSocket && dialOpaque}
	}
	cancelDial(nil)
	err = s.carry(c, holds)
	if sus := (*suspect)(nil); errors.As(err, &sus) && errors.Is(err, errPathHolds) {
		<-checked
		sus.check = check
	}
	return err
}

// dial opens a carrier of kind.
func (s *session) dial(ctx context.Context, kind, target string) (carrier, error) {
	g := s.g
	if kind != wire.CarrierWebSocket {
		return dialHTTP(ctx, target, kind, g.handshake, g.readLimit)
	}
	c, err := dial(ctx, target, g.handshake)
	if err != nil {
		return nil, err
	}
	c.setReadLimit(g.readLimit)
	if p := c.subprotocol(); p != wire.Subprotocol {
		// Whatever answered, it is not a Lifeline Host (a proxy's own WebSocket, say).
		c.hangup("lifeline: subprotocol "+wire.Subprotocol+" required", false, g.grace)
		return nil, tinyfmt.Errorf("%w: host did not agree on subprotocol %q, got %q", ErrProtocol, wire.Subprotocol, p)
	}
	return c, nil
}

// isRefusal reports whether err is the Host's refusal of the page before a session: its
// credential (401, 403), its rate (429).
func isRefusal(err error) bool {
	var ra *controller.RetryAfterError
	return errors.Is(err, controller.ErrUnauthorized) || errors.As(err, &ra)
}

// carry runs the session over c until it ends. Three goroutines live per carrier: carry
// itself (owns the watchdog and the end), the pump (the only reader: one context for the
// whole connection, never a per-read timeout, since a cancelled read closes the socket under
// js/wasm) and the writer (reconciles subscriptions). carry returns after both others are
// gone. holds closes when the path holds the carrier back (see over).
func (s *session) carry(c carrier, holds <-chan struct{}) error {
	g := s.g
	var err error
	s.kind, s.carrier = c.kind(), c
	l := &link{start: time.Now(), fail: make(chan error, 1), armed: make(chan time.Duration, 1), ping: make(chan struct{}, 1)}
	quit := make(chan struct{})
	pumpDone, writerDone := make(chan struct{}), make(chan struct{})
	go s.pump(c, l, pumpDone)
	go s.writer(c, l, quit, writerDone)

	watchdog := time.NewTimer(time.Hour)
	watchdog.Stop()
	probeT := time.NewTimer(time.Hour)
	probeT.Stop()
	// On the HTTP carrier, a WebSocket is tried now and then on the side (probeUpgrade): once
	// one gets through, the page moves back to it, make-before-break.
	upgradeT := time.NewTimer(time.Hour)
	upgradeT.Stop()
	var upgrade <-chan bool
	var lastTry time.Time    // when the session became ready on HTTP, or last tried a WebSocket
	retry := false           // a retry was asked for while a try was under way
	var probeSent int64 = -1 // since(l.start) when the outstanding probe went out; -1 for none
	// probeMark is l.frames when the probe went out: any frame read since answers it. A count,
	// not the clock, which need not tick between a ping and its answer (a browser's clock is
	// coarsened, a synctest bubble's stands still).
	var probeMark uint64
	var limit, heartbeat time.Duration
	force := false
loop:
	for {
		probes := s.probes
		if probeSent >= 0 || heartbeat == 0 {
			// One probe at a time: later requests wait for this one's answer. And none before
			// the ready frame (which arms the heartbeat): the handshake has its own deadline.
			probes = nil
		}
		select {
		case <-s.ctx.Done():
			err = context.Cause(s.ctx)
			// A handshake that hit the deadline, or a browser gone offline, has nobody to
			// answer a close handshake: tear the socket down at once.
			force = errors.Is(err, controller.ErrDeadline) || errors.Is(err, controller.ErrOffline)
			if errors.Is(err, controller.ErrReplaced) {
				if ferr := s.finishCalls(l); ferr != nil {
					err, force = ferr, true
				}
			}
			break loop
		case err = <-l.fail:
			break loop
		case heartbeat = <-l.armed:
			limit = heartbeat * 5 / 2
			watchdog.Reset(limit)
			if c.kind() != wire.CarrierWebSocket {
				upgradeT.Reset(g.upgradeWait())
				lastTry = time.Now()
			}
		case <-watchdog.C:
			quiet := time.Duration(since(l.start) - l.lastFrame.Load())
			if quiet >= limit {
				err = tinyfmt.Errorf("%w: no frame for %v (heartbeat %v)", ErrLinkDead, quiet.Round(time.Millisecond), heartbeat)
				force = true
				break loop
			}
			watchdog.Reset(limit - quiet)
		case <-probes:
			probeSent, probeMark = since(l.start), l.frames.Load()
			probeT.Reset(g.probeBound(heartbeat, time.Duration(probeSent-l.lastFrame.Load())))
			l.ping <- struct{}{} // the writer sends it; its capacity is this one probe
		case <-probeT.C:
			if l.frames.Load() > probeMark {
				probeSent = -1 // answered: the link is alive
				continue
			}
			err = tinyfmt.Errorf("%w: no answer to a liveness probe within %v", ErrLinkDead, g.probeBound(heartbeat, time.Duration(probeSent-l.lastFrame.Load())))
			force = true
			break loop
		case <-holds:
			if heartbeat == 0 {
				err, force = errPathHolds, true
				break loop
			}
			holds = nil
		case <-upgradeT.C:
			upgrade, lastTry = s.probeUpgrade(quit), time.Now()
		case <-s.retry:
			// The schedule starts over, and the next try comes at most UpgradeAfter after the
			// last: a page shown again and again tries no more often than that. A try under
			// way is waited for.
			switch {
			case c.kind() == wire.CarrierWebSocket || heartbeat == 0:
			case upgrade != nil:
				retry = true
			default:
				g.retryUpgrades()
				upgradeT.Reset(max(0, g.upgradeAfter-time.Since(lastTry)))
			}
		case ok := <-upgrade:
			upgrade = nil
			switch {
			case ok:
				g.log.Info("gateway: a WebSocket gets through again; moving the session to one, make-before-break", "url", s.target.String(), "from", c.kind())
				s.upgrade()
			case retry:
				retry = false
				g.retryUpgrades()
				upgradeT.Reset(g.upgradeAfter)
			default:
				upgradeT.Reset(g.upgradeWait())
			}
		}
		if probeSent >= 0 && l.frames.Load() > probeMark {
			probeT.Stop()
			probeSent = -1
		}
	}
	watchdog.Stop()
	probeT.Stop()
	upgradeT.Stop()
	// A carrier the path held back leaves the session to the next one; any other end is the
	// session's: from here on, frames still in flight are dropped, not dispatched.
	suspected := heartbeat == 0 && s.ctx.Err() == nil && s.networkish(err)
	if !suspected {
		s.cancel(err)
	}
	close(quit)
	c.hangup(closeReason(err), force, g.grace)
	if upgrade != nil {
		<-upgrade // the probe ends with quit
	}
	c.settle(g.grace, force, pumpDone, writerDone)
	if suspected {
		return &suspect{err: s.outcome(err)}
	}
	return s.outcome(err)
}

// networkish reports whether err, ending a carrier before its ready frame, is how a network
// fails rather than the Host: the Host refuses in words first (an error frame: origin, overload,
// restart) or with its own close codes, and turns a page away with a goaway.
func (s *session) networkish(err error) bool {
	if errors.Is(err, errPathHolds) {
		return true
	}
	if s.refusal.Load() != nil || s.ended.Load() != nil || errors.Is(err, controller.ErrHostRestarting) {
		return false
	}
	var re *controller.RedirectError
	var ra *controller.RetryAfterError
	if errors.As(err, &re) || errors.As(err, &ra) {
		return false
	}
	if code, _, ok := closeStatus(err); ok {
		switch code {
		case wire.CloseOrigin, wire.CloseServiceRestart, wire.CloseOverloaded, wire.CloseTooBig, wire.CloseAccessEnded:
			return false
		}
	}
	return errors.Is(err, ErrSessionClosed) || errors.Is(err, ErrProtocol)
}

// finishCalls keeps a session the controller replaced after its goaway open until the calls
// in flight on it have their replies (make-before-break: PROTOCOL.md §9), the link fails
// (its error is returned), the gateway closes, or the call timeout passes. The session's
// context has ended, so its events are dropped meanwhile: the new session carries the
// streams. A session replaced by ReconnectNow is not waited for: the page asked for a new
// link now, and its keyed calls go there.
func (s *session) finishCalls(l *link) error {
	if !s.isDraining() {
		return nil
	}
	t := time.NewTimer(s.g.callTimeout)
	defer t.Stop()
	for s.hasInflight() {
		select {
		case <-s.drained:
		case err := <-l.fail:
			return err
		case <-t.C:
			return nil
		case <-s.g.life.Done():
			return nil
		}
	}
	return nil
}

// link is what run shares with its pump and writer.
type link struct {
	start     time.Time
	lastFrame atomic.Int64       // since(start) at the last frame read
	frames    atomic.Uint64      // frames read
	fail      chan error         // the first error ending the session (capacity 1)
	armed     chan time.Duration // the heartbeat, once ready arrived (capacity 1)
	ping      chan struct{}      // a probe for the writer to send (capacity 1)
}

func (l *link) report(err error) {
	select {
	case l.fail <- err:
	default: // an earlier error is already ending the session
	}
}

// pump reads every frame of the connection. After the first failure it keeps reading, and
// discarding, until the socket is closed, so that the close handshake is still served.
func (s *session) pump(c carrier, l *link, done chan<- struct{}) {
	defer close(done)
	failed := false
	fail := func(err error) {
		failed = true
		l.report(err)
	}
	for {
		typ, b, err := c.read()
		if err != nil {
			if !failed && !s.movedOnGone(err) {
				fail(s.readError(err))
			}
			return
		}
		l.lastFrame.Store(since(l.start))
		l.frames.Add(1)
		if failed {
			continue
		}
		if typ != textFrame {
			fail(tinyfmt.Errorf("%w: a binary message of %d bytes", ErrProtocol, len(b)))
			continue
		}
		f, err := wire.DecodeHost(b)
		if err != nil {
			fail(tinyfmt.Errorf("%w: %w", ErrProtocol, err))
			continue
		}
		wasReady := s.gotReady
		if err := s.handle(f); err != nil {
			fail(err)
			continue
		}
		if !wasReady && s.gotReady {
			l.armed <- f.Heartbeat()
		}
	}
}

// writer sends what reconcile asks for, each time it is kicked.
func (s *session) writer(c carrier, l *link, quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	ping, _ := wire.PageFrame{T: wire.TypePing}.Encode()
	for {
		select {
		case <-quit:
			return
		case <-l.ping:
			if err := c.write(ping); err != nil {
				l.report(tinyfmt.Errorf("%w: writing a ping: %w", ErrSessionClosed, err))
				return
			}
			continue
		case <-s.kick:
		}
		for _, f := range s.g.reconcile(s) {
			b, err := f.Encode()
			if err == nil {
				err = c.write(b)
			}
			if err != nil {
				l.report(tinyfmt.Errorf("%w: writing %s %q: %w", ErrSessionClosed, f.T, f.Stream, err))
				return
			}
		}
		frames, onSent := s.g.sendable(s)
		for i, b := range frames {
			if onSent[i] != nil {
				onSent[i]() // before the write: "sent" is an upper bound, never news after a crash
			}
			if err := c.write(b); err != nil {
				l.report(tinyfmt.Errorf("%w: writing a call: %w", ErrSessionClosed, err))
				return
			}
		}
		if b := s.g.takeReport(s); b != nil {
			if err := c.write(b); err != nil {
				l.report(tinyfmt.Errorf("%w: writing a report: %w", ErrSessionClosed, err))
				return
			}
		}
	}
}

// since returns the monotonic time elapsed since start, as the watchdog stores it.
func since(start time.Time) int64 { return int64(time.Since(start)) }

// readError explains why reading the socket failed.
func (s *session) readError(err error) error {
	code, reason, closed := closeStatus(err)
	var refused *accessEndedRefusal
	switch {
	case errors.As(err, &refused):
		s.endedBy(refused.reason, refused.reauth) // its frames may not have been read yet
		return err
	case errors.Is(err, errMessageTooBig):
		return tinyfmt.Errorf("%w: a frame exceeded the read limit of %d bytes: %w", ErrProtocol, s.g.readLimit, err)
	case closed && code == wire.CloseOverloaded:
		e := tinyfmt.Errorf("%w: close %d %q", ErrOverloaded, code, reason)
		if d, ok := wire.ParseRetryAfter(reason); ok {
			return &controller.RetryAfterError{After: d, Err: e}
		}
		return e
	case closed && code == wire.CloseAccessEnded:
		if r, reauth, ok := wire.ParseAccessEnded(reason); ok {
			s.endedBy(r, reauth) // the error frame that says it in full may not have come
		}
		return tinyfmt.Errorf("%w: the host closed it with %d %q", ErrSessionClosed, code, reason)
	case closed && code == wire.CloseServiceRestart:
		if d, ok := wire.ParseRestart(reason); ok {
			s.restart.CompareAndSwap(-1, d.Milliseconds())
		} else {
			s.restart.CompareAndSwap(-1, 0)
		}
		return tinyfmt.Errorf("%w: the host closed it with %d %q", ErrSessionClosed, code, reason)
	case closed:
		return tinyfmt.Errorf("%w: the host closed it with %d %q", ErrSessionClosed, code, reason)
	}
	return tinyfmt.Errorf("%w: %w", ErrSessionClosed, err)
}

// outcome is what Run returns for a session that ended with err, with what the Host said on
// its way out: a restart (controller.ErrHostRestarting, with its minimum wait as a
// *controller.RetryAfterError) or a retry-after (see overload).
func (s *session) outcome(err error) error {
	if s.ended.Load() != nil {
		return s.accessOutcome(err) // it says what the Host said
	}
	// What the Host said before it closed, unless its close frame said it already (a 1013's
	// retry-after is in both): once is enough for the person reading it.
	if m := s.refusal.Load(); m != nil && !strings.Contains(err.Error(), *m) {
		err = tinyfmt.Errorf("%w (the host said: %s)", err, clip(*m, maxSaid))
	}
	ms := s.restart.Load()
	if ms < 0 {
		return s.overload(err)
	}
	err = tinyfmt.Errorf("%w: %w", controller.ErrHostRestarting, err)
	if ms == 0 {
		return err
	}
	return &controller.RetryAfterError{After: time.Duration(ms) * time.Millisecond, Err: err}
}

// overload turns the end of a session whose Host said retry-after in an error frame into a
// *controller.RetryAfterError (the close frame may not have come: a dropped link).
func (s *session) overload(err error) error {
	ms := s.retryAfter.Load()
	if ms < 0 {
		return err
	}
	if ra := (*controller.RetryAfterError)(nil); errors.As(err, &ra) {
		return err
	}
	if !errors.Is(err, ErrOverloaded) {
		err = tinyfmt.Errorf("%w: %w", ErrOverloaded, err)
	}
	return &controller.RetryAfterError{After: time.Duration(ms) * time.Millisecond, Err: err}
}

// maxSaid bounds what of a Host's error frame a failure quotes: a sentence, not a dump.
const maxSaid = 200

// clip cuts s to at most n bytes, at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// closeReason is the reason the page gives in its close frame: at most 123 bytes of text.
func closeReason(err error) string {
	r := "lifeline"
	if err != nil {
		r = err.Error()
	}
	for len(r) > 123 {
		_, n := utf8.DecodeLastRuneInString(r)
		r = r[:len(r)-n]
	}
	return r
}

// heartbeatSlack is how late a heartbeat may be before it counts as missing.
const heartbeatSlack = time.Second

// probeBound is how long a probe waits for a frame when the last one came quiet ago. A
// heartbeat already missing (none for longer than the heartbeat and its slack: a page that
// slept or was frozen past one) is half the evidence that the link is dead, since a healthy
// link's frames would have been waiting in the socket when the page woke: the probe only
// confirms it, and waits half as long. Either way a healthy link answers within one round
// trip.
func (g *Gateway) probeBound(heartbeat, quiet time.Duration) time.Duration {
	if heartbeat > 0 && quiet > heartbeat+heartbeatSlack {
		return g.probeWait / 2
	}
	return g.probeWait
}

// probeWait bounds a probe of the path (probeUpgrade).
const probeWait = 5 * time.Second

// probeUpgrade asks, on the side of a session on the HTTP carrier, whether a WebSocket gets
// through now: a socket marked as a probe (wire.ProbeParam), which the Host answers with a
// heartbeat for its ping, and closes; it is no session. The answer comes on the channel
// returned, once, after the socket is gone; quit ends the probe early.
func (s *session) probeUpgrade(quit <-chan struct{}) <-chan bool {
	g := s.g
	out := make(chan bool, 1)
	go func() {
		ctx, cancel := context.WithTimeout(s.ctx, probeWait)
		defer cancel()
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			select {
			case <-quit:
				cancel()
			case <-stop:
			}
		}()
		out <- probePath(ctx, probeURL(g.dialURL(s.target)), g.handshake)
	}()
	return out
}

// probePath dials url, sends a ping and reports whether the Host's heartbeat came back.
func probePath(ctx context.Context, url string, h Handshake) bool {
	c, err := dial(ctx, url, h)
	if err != nil {
		return false
	}
	c.setReadLimit(512)
	answered := make(chan bool, 1)
	go func() {
		typ, b, err := c.read()
		answered <- err == nil && typ == textFrame && strings.HasPrefix(string(b), `{"t":"`+wire.TypeHeartbeat+`"`)
	}()
	ok, read := false, false
	if c.subprotocol() == wire.Subprotocol && c.write(pingFrame) == nil {
		select {
		case ok = <-answered:
			read = true
		case <-ctx.Done():
		}
	}
	c.hangup("probe", true, 0)
	c.settle(0, true)
	if !read {
		<-answered // the hangup ended the read
	}
	return ok
}

// probeURL marks the events URL u as a probe's.
func probeURL(u string) string {
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + wire.ProbeParam + "=1"
}

// movedOnGone handles a session on the HTTP carrier that a Host says it does not have (404 to
// a poll or a POST) while the page holds it ready. That is, most often, a Host that restarted
// and handed its listening socket to a successor before its goaway reached this page: the
// successor takes the new requests and knows no session of its predecessor. The page moves as
// after an empty goaway, make-before-break: the connection it shows holds until the next
// session is ready, or for goneHold at most, after which the failure stands. It reports
// whether the session was replaced.
func (s *session) movedOnGone(err error) bool {
	if !errors.Is(err, errSessionGone) || !s.gotReady {
		return false
	}
	g := s.g
	g.mu.Lock()
	was := s.draining
	s.draining = true
	g.mu.Unlock()
	if s.gen.GoAway("") != nil {
		g.mu.Lock()
		s.draining = was
		g.mu.Unlock()
		return false
	}
	t := time.NewTimer(goneHold)
	defer t.Stop()
	select {
	case <-s.ctx.Done(): // replaced (or closed)
		return true
	case <-t.C:
		return false
	}
}

// goneHold is how long a session whose Host no longer has it is shown as connected while the
// page makes its next one: a restart's successor answers within a handshake's slow warning.
const goneHold = 3 * time.Second

// upgrade moves the page from this session on the HTTP carrier to a WebSocket, which a probe
// found gets through: the next attempt dials one, and this session keeps delivering until it
// is ready (make-before-break, as after a goaway back to the same place); its calls in flight
// finish on it, and new calls wait for the new one.
func (s *session) upgrade() {
	g := s.g
	g.mu.Lock()
	g.prefer = wire.CarrierWebSocket
	was := s.draining
	s.draining = true
	g.mu.Unlock()
	s.drainCarrier()
	if s.gen.Replace() != nil && !was {
		g.mu.Lock()
		s.draining = false
		g.mu.Unlock()
	}
}
