package gateway

import (
	"context"
	"errors"
	"github.com/lifeline-go/lifeline/internal/tinyfmt"
	"math/rand/v2"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// Access that ends (PROTOCOL.md §13), the page's side: the Host's application ended the
// session's access (a sign-out, a revocation, a credential that expired), said so in an
// error frame and closed it with 4401; or the ready frame said when the credential expires,
// and the page renews it before then with a request of its own.

// AccessEndedError is how a session ends whose access the Host's application ended. Without
// Reauth, errors.Is(err, controller.ErrUnauthorized) holds: the controller shows
// [controller.Unauthorized] and tries again at the top of its ladder only, and in the browser
// each try asks the refusal query first, so no socket is dialed that Authenticate would not
// let through. With Reauth the page connected again at once (make-before-break, through
// Authenticate): the end is that of a replaced generation.
type AccessEndedError struct {
	Reason string // the application's sentence, as the Host sent it; may be empty
	Reauth bool
	Err    error // how the session ended
}

func (e *AccessEndedError) Error() string {
	what := "the host ended the session's access"
	if e.Reauth {
		what = "the host asked the page to sign in again"
	}
	if e.Reason != "" {
		what += ": " + e.Reason
	}
	return "gateway: " + what
}

func (e *AccessEndedError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, controller.ErrUnauthorized) hold for an end without Reauth.
func (e *AccessEndedError) Is(target error) bool {
	return target == controller.ErrUnauthorized && !e.Reauth
}

// CallAccessEnded is a call's failure when its session's access ended: the Host had it and
// refused it before it ran (Sent: true, Code access-ended), or it was never sent (Sent:
// false) and is not sent on a later session, which may be another identity's.
const CallAccessEnded = "access-ended"

// Reason is the Host application's own words in err, for a person: the reason of an
// [AccessEndedError] or an [UnauthorizedError]; "" when err carries none.
func Reason(err error) string {
	var ae *AccessEndedError
	if errors.As(err, &ae) {
		return ae.Reason
	}
	var ue *UnauthorizedError
	if errors.As(err, &ue) {
		return ue.Reason
	}
	return ""
}

// errAccessEnded ends a session at the error frame that says its access ended for good: its
// outcome is the AccessEndedError (accessOutcome).
var errAccessEnded = tinyfmt.Errorf("%w: the host ended the session's access", ErrSessionClosed)

// accessEndedRefusal is the HTTP carrier's end when the Host refused a POST because the
// session's access ended (wire.RefusalAccessEnded): the page may not have read the end's
// frames yet, and is told the same by the refusal (readError).
type accessEndedRefusal struct {
	reason string
	reauth bool
	status int
}

func (e *accessEndedRefusal) Error() string {
	return tinyfmt.Sprintf("gateway: the host refused a POST of the session (HTTP %d): %s", e.status,
		wire.AccessEndedReason(e.reason, e.reauth))
}

func (e *accessEndedRefusal) Unwrap() error { return ErrSessionClosed }

// accessEnd is what the Host said when it ended the session's access.
type accessEnd struct {
	reason string
	reauth bool
}

// endedBy notes the Host's end of the session's access (its error frame, or its 4401 close
// when the frame did not come). From then on the session writes nothing more; asked to
// reauthenticate, the page connects again at once, the old session kept until the new one is
// ready (it delivers nothing meanwhile: the Host ended it).
func (s *session) endedBy(reason string, reauth bool) {
	if !s.ended.CompareAndSwap(nil, &accessEnd{reason: reason, reauth: reauth}) {
		return
	}
	g := s.g
	g.log.Warn("gateway: the host ended the session's access", "url", s.target.String(), "reason", reason, "reauth", reauth)
	g.mu.Lock()
	was := s.draining
	s.draining = true // no call goes out on it any more
	g.mu.Unlock()
	if reauth && s.gotReady && s.gen.Replace() != nil && !was {
		g.mu.Lock()
		s.draining = false
		g.mu.Unlock()
	}
}

// accessOutcome is the error of a session whose access the Host ended, or err.
func (s *session) accessOutcome(err error) error {
	e := s.ended.Load()
	if e == nil {
		return err
	}
	return &AccessEndedError{Reason: e.reason, Reauth: e.reauth, Err: err}
}

// closeAccess settles the calls of a session whose access ended for good (not to
// reauthenticate): none is sent again, since the next session may be another identity's.
// A call in flight without its reply is interrupted (it may have run, once); a call not sent
// yet fails access-ended. g.mu is held.
func (g *Gateway) closeAccess(s *session, err error) {
	var ae *AccessEndedError
	if !errors.As(err, &ae) || ae.Reauth {
		return
	}
	for _, c := range s.inflight {
		// Settled: the Host closed the session, so nothing of it starts after this.
		g.settle(c, nil, callErr(CallInterrupted, true, "the session's access ended before the reply: it ran at most once, and nothing of it starts after: "+ae.Error()))
	}
	for len(g.calls.queued) > 0 {
		c := g.calls.queued[0]
		g.settle(c, nil, &CallError{Kind: CallAccessEnded, Sent: c.sent, Message: ae.Error()})
	}
}

// Renewal's timing.
const (
	// renewTimeout bounds one renewal: the token, the request and its answer.
	renewTimeout = 10 * time.Second
	// renewFloor is the least time before the expiry worth another try.
	renewFloor = 500 * time.Millisecond
	// longestWait keeps a renewal's timer within what a browser's timers hold (2^31 ms, about
	// 24.8 days): a longer wait is waited in turns.
	longestWait = 24 * time.Hour
)

// renewIn is when to renew a credential that holds for left: at 70–80% of it, spread by
// jitter (pages that connected together do not all renew together), so that a renewal that
// fails has time to be tried again.
func renewIn(left time.Duration, rnd func() float64) time.Duration {
	return time.Duration(float64(left) * (0.7 + 0.1*rnd()))
}

// renewals renews the session's access before it expires, until the session ends. left is
// what the ready frame said. A renewal the Host refuses (the credential, another identity,
// an ended session) is final: the Host ends the session at its expiry, and the page shows
// unauthorized then. One that fails on the way (the network, a 5xx, a token the page's code
// could not give) is tried again, halfway to the expiry, while there is time.
func (s *session) renewals(ctx context.Context, left time.Duration, secret string) {
	g := s.g
	expiry := time.Now().Add(left)
	wait := renewIn(left, rand.Float64)
	for {
		if !sleep(ctx, wait) {
			return
		}
		next, final, err := s.renew(ctx, secret)
		switch {
		case ctx.Err() != nil:
			return
		case final:
			g.log.Warn("gateway: the host refused to renew the session's access; it ends at its expiry",
				"url", s.target.String(), "expiresIn", time.Until(expiry).Round(time.Millisecond), "err", err)
			return
		case err != nil:
			left := time.Until(expiry)
			g.log.Warn("gateway: renewing the session's access failed; trying again", "url", s.target.String(), "expiresIn", left.Round(time.Millisecond), "err", err)
			if left < 2*renewFloor {
				return
			}
			wait = max(left/2, renewFloor)
			var ra *controller.RetryAfterError
			if errors.As(err, &ra) {
				wait = max(wait, min(ra.After, left-renewFloor))
			}
		case next == 0:
			return // the credential no longer expires
		default:
			expiry = time.Now().Add(next)
			wait = renewIn(next, rand.Float64)
		}
	}
}

// sleep waits d (in turns of at most longestWait) and reports false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	for {
		t := time.NewTimer(min(d, longestWait))
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		if d <= longestWait {
			return true
		}
		d -= longestWait
	}
}

// renew sends one renewal and returns how long the credential holds from now (0: it no longer
// expires), or why not: final when another try would not change it (Authenticate refused it,
// 401 or 403; it named another identity, 409; the session is no longer the Host's, 404).
func (s *session) renew(ctx context.Context, secret string) (next time.Duration, final bool, err error) {
	g := s.g
	ctx, cancel := context.WithTimeout(ctx, renewTimeout)
	defer cancel()
	rn := wire.Renewal{Session: s.readyFrame.Session, Secret: secret}
	if g.renewToken != nil {
		tok, err := g.renewToken(ctx)
		if err != nil {
			return 0, false, tinyfmt.Errorf("gateway: the page's code gave no token for the renewal: %w", err)
		}
		rn.Token = tok
	}
	u := httpURL(s.target.String())
	sep := "?"
	if s.target.RawQuery != "" {
		sep = "&"
	}
	a, err := doHTTP(ctx, httpRequest{method: methodPost, url: u + sep + wire.RenewParam + "=1",
		body: rn.Encode(), contentType: wire.SendType, header: g.handshake.header()})
	if err != nil {
		return 0, false, err
	}
	body := a.readAll(ctx, wire.MaxRefusalBody)
	switch a.status {
	case statusOK:
		r, err := wire.DecodeRenewed(body)
		return time.Duration(r.ExpiresMs) * time.Millisecond, false, err
	case 401, 403, statusNotFound, 409:
		return 0, true, tinyfmt.Errorf("gateway: the host refused the renewal (%d): %s", a.status, clip(string(body), maxSaid))
	}
	if refused := refusedBy(a.status, a.retryAfter, body); refused != nil {
		return 0, false, refused // a 429's wait
	}
	return 0, false, tinyfmt.Errorf("gateway: the renewal was answered %d", a.status)
}

// startRenewals starts renewing the access of a session whose ready frame said it expires.
func (s *session) startRenewals(f wire.HostFrame) {
	if f.ExpiresMs <= 0 || f.Secret == "" {
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	done := make(chan struct{})
	s.stopRenew = func() { cancel(); <-done }
	go func() {
		defer close(done)
		s.renewals(ctx, time.Duration(f.ExpiresMs)*time.Millisecond, f.Secret)
	}()
}

// stopRenewals ends the session's renewals and waits for them: Run leaves no goroutine behind.
func (s *session) stopRenewals() {
	if s.stopRenew != nil {
		s.stopRenew()
	}
}
