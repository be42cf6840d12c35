package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway/wire"
)

// run carries the session over one socket. Three goroutines live per socket: run itself
// (owns the watchdog and the end), the pump (the only reader: one context for the whole
// connection, never a per-read timeout, since a cancelled read closes the socket under
// js/wasm) and the writer (reconciles subscriptions). run returns after both others are gone.
func (s *session) run() error {
	g := s.g
	if s.ctx.Err() != nil {
		return context.Cause(s.ctx)
	}
	c, err := dial(s.ctx, g.dialURL(s.target), g.handshake)
	if err != nil {
		if s.ctx.Err() != nil {
			return context.Cause(s.ctx)
		}
		return fmt.Errorf("%w: %s: %w", ErrDial, s.target, err)
	}
	c.setReadLimit(g.readLimit)
	if p := c.subprotocol(); p != wire.Subprotocol {
		c.hangup("lifeline: subprotocol "+wire.Subprotocol+" required", false, g.grace)
		return fmt.Errorf("%w: host did not agree on subprotocol %q, got %q", ErrProtocol, wire.Subprotocol, p)
	}

	l := &link{start: time.Now(), fail: make(chan error, 1), armed: make(chan time.Duration, 1), ping: make(chan struct{}, 1)}
	quit := make(chan struct{})
	pumpDone, writerDone := make(chan struct{}), make(chan struct{})
	go s.pump(c, l, pumpDone)
	go s.writer(c, l, quit, writerDone)

	watchdog := time.NewTimer(time.Hour)
	watchdog.Stop()
	probeT := time.NewTimer(time.Hour)
	probeT.Stop()
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
		case <-watchdog.C:
			quiet := time.Duration(since(l.start) - l.lastFrame.Load())
			if quiet >= limit {
				err = fmt.Errorf("%w: no frame for %v (heartbeat %v)", ErrLinkDead, quiet.Round(time.Millisecond), heartbeat)
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
			err = fmt.Errorf("%w: no answer to a liveness probe within %v", ErrLinkDead, g.probeBound(heartbeat, time.Duration(probeSent-l.lastFrame.Load())))
			force = true
			break loop
		}
		if probeSent >= 0 && l.frames.Load() > probeMark {
			probeT.Stop()
			probeSent = -1
		}
	}
	watchdog.Stop()
	probeT.Stop()
	s.cancel(err) // from here on, frames still in flight are dropped, not dispatched
	close(quit)
	c.hangup(closeReason(err), force, g.grace)
	c.settle(g.grace, force, pumpDone, writerDone)
	return s.outcome(err)
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
func (s *session) pump(c *carrier, l *link, done chan<- struct{}) {
	defer close(done)
	failed := false
	fail := func(err error) {
		failed = true
		l.report(err)
	}
	for {
		typ, b, err := c.read()
		if err != nil {
			if !failed {
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
			fail(fmt.Errorf("%w: a binary message of %d bytes", ErrProtocol, len(b)))
			continue
		}
		f, err := wire.DecodeHost(b)
		if err != nil {
			fail(fmt.Errorf("%w: %w", ErrProtocol, err))
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
func (s *session) writer(c *carrier, l *link, quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	ping, _ := wire.PageFrame{T: wire.TypePing}.Encode()
	for {
		select {
		case <-quit:
			return
		case <-l.ping:
			if err := c.write(ping); err != nil {
				l.report(fmt.Errorf("%w: writing a ping: %w", ErrSessionClosed, err))
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
				l.report(fmt.Errorf("%w: writing %s %q: %w", ErrSessionClosed, f.T, f.Stream, err))
				return
			}
		}
		frames, onSent := s.g.sendable(s)
		for i, b := range frames {
			if onSent[i] != nil {
				onSent[i]() // before the write: "sent" is an upper bound, never news after a crash
			}
			if err := c.write(b); err != nil {
				l.report(fmt.Errorf("%w: writing a call: %w", ErrSessionClosed, err))
				return
			}
		}
		if b := s.g.takeReport(s); b != nil {
			if err := c.write(b); err != nil {
				l.report(fmt.Errorf("%w: writing a report: %w", ErrSessionClosed, err))
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
	switch {
	case errors.Is(err, errMessageTooBig):
		return fmt.Errorf("%w: a frame exceeded the read limit of %d bytes: %w", ErrProtocol, s.g.readLimit, err)
	case closed && code == wire.CloseOverloaded:
		e := fmt.Errorf("%w: close %d %q", ErrOverloaded, code, reason)
		if d, ok := wire.ParseRetryAfter(reason); ok {
			return &controller.RetryAfterError{After: d, Err: e}
		}
		return e
	case closed && code == wire.CloseServiceRestart:
		if d, ok := wire.ParseRestart(reason); ok {
			s.restart.CompareAndSwap(-1, d.Milliseconds())
		} else {
			s.restart.CompareAndSwap(-1, 0)
		}
		return fmt.Errorf("%w: the host closed it with %d %q", ErrSessionClosed, code, reason)
	case closed:
		return fmt.Errorf("%w: the host closed it with %d %q", ErrSessionClosed, code, reason)
	}
	return fmt.Errorf("%w: %w", ErrSessionClosed, err)
}

// outcome is what Run returns for a session that ended with err, with what the Host said on
// its way out: a restart (controller.ErrHostRestarting, with its minimum wait as a
// *controller.RetryAfterError) or a retry-after (see overload).
func (s *session) outcome(err error) error {
	// What the Host said before it closed, unless its close frame said it already (a 1013's
	// retry-after is in both): once is enough for the person reading it.
	if m := s.refusal.Load(); m != nil && !strings.Contains(err.Error(), *m) {
		err = fmt.Errorf("%w (the host said: %s)", err, clip(*m, maxSaid))
	}
	ms := s.restart.Load()
	if ms < 0 {
		return s.overload(err)
	}
	err = fmt.Errorf("%w: %w", controller.ErrHostRestarting, err)
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
		err = fmt.Errorf("%w: %w", ErrOverloaded, err)
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
