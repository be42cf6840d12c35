package controller_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifeline-go/lifeline/controller"
)

// pingPong drives two Hosts, A (the page's endpoint) and B, that each say ready and redirect
// the page to the other after session: the storm redirect-loop damping exists to stop. It
// returns when each dial started, relative to the first, until window has passed.
func pingPong(t *testing.T, h *harness, session, window time.Duration) []time.Duration {
	t.Helper()
	h.ctl.Start()
	t0 := time.Now()
	var dials []time.Duration
	for time.Since(t0) <= window {
		synctest.Wait()
		var a *attempt
		select {
		case a = <-h.src.attempts:
		default:
			// Nothing started yet: let the clock run to the next timer.
			time.Sleep(time.Millisecond)
			continue
		}
		dials = append(dials, a.started.Sub(t0))
		if err := a.gen.Ready(&carrier{}); err != nil {
			t.Fatalf("Ready of dial %d = %v", len(dials), err)
		}
		other := "B"
		if a.gen.Target() == "B" {
			other = A
		}
		time.Sleep(session)
		// ErrStale: the generation was replaced meanwhile; nothing to redirect.
		_ = a.gen.GoAway(other)
	}
	h.ctl.Stop()
	return dials
}

func TestRedirectLoopDampingHoldsAtEveryStableAfter(t *testing.T) {
	// PROTOCOL.md §5.3: two Hosts that say ready and redirect to each other after 40 ms, with a 10 ms
	// first cap, get at most 6 dials a second, whatever stableAfterMs is (undamped, every
	// 40 ms: 26). u = 0.999… is the draw that makes every delay shortest at jitter 0.5.
	for _, stable := range []float64{0, 1, 20, 40, 100, 1000, 10000, math.MaxInt32} {
		for _, u := range []float64{0, 0.5, 0.999999} {
			t.Run(fmt.Sprintf("stableAfterMs=%v/u=%v", stable, u), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					h := newHarness(t, controller.Recovery{
						InitialDelayMs: new(10.0), StableAfterMs: new(stable), Jitter: new(0.5),
					}, u)
					dials := pingPong(t, h, 40*time.Millisecond, time.Second)
					t.Logf("%d dials in 1 s", len(dials))
					if len(dials) > 6 {
						t.Fatalf("%d dials in 1 s (at %v), want at most 6", len(dials), dials)
					}
					if len(dials) < 3 {
						t.Fatalf("%d dials in 1 s (at %v): the loop must be slowed, not stopped", len(dials), dials)
					}
				})
			})
		}
	}
}

func TestOneWayMovesAndEmptyGoAwaysStayImmediateAtStableAfterZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{InitialDelayMs: new(10.0), StableAfterMs: new(0.0)}, fullCap)
		h.ctl.Start()
		a := h.readyNext(t)
		// A → B → C → D: each a new place, none a loop.
		prev := a
		for _, to := range []string{"B", "C", "D"} {
			t0 := time.Now()
			prev.gen.GoAway(to)
			synctest.Wait()
			n := h.next(t)
			if n.gen.Target() != to || !n.started.Equal(t0) {
				t.Fatalf("move to %s dialed %q after %v, want %s at once", to, n.gen.Target(), n.started.Sub(t0), to)
			}
			n.gen.Ready(&carrier{})
			prev = n
		}
		// Restarts in place, again and again: never a loop.
		for range 5 {
			t0 := time.Now()
			prev.gen.GoAway(prev.gen.Target()) // the protocol's empty uri: come back here
			synctest.Wait()
			n := h.next(t)
			if n.gen.Target() != "D" || !n.started.Equal(t0) {
				t.Fatalf("empty goaway dialed %q after %v, want D at once", n.gen.Target(), n.started.Sub(t0))
			}
			n.gen.Ready(&carrier{})
			prev = n
		}
		h.ctl.Stop()
	})
}

func TestRedirectChainClearsAfterMaxDelayAtStableAfterZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{StableAfterMs: new(0.0), MaxDelayMs: new(4000.0)}, fullCap)
		h.ctl.Start()
		a := h.readyNext(t)
		a.gen.GoAway("B")
		b := h.readyNext(t)
		time.Sleep(4*time.Second - time.Nanosecond)
		synctest.Wait()
		if s := h.ctl.Status(); s.Failures == 0 {
			t.Fatalf("ladder reset inside an open redirect chain: %s", describe(s))
		}
		time.Sleep(time.Nanosecond) // B has lived maxDelay: the chain ends, the ladder resets
		synctest.Wait()
		if s := h.ctl.Status(); s.Failures != 0 {
			t.Fatalf("after B lived maxDelay: %s, want the ladder reset", describe(s))
		}
		t0 := time.Now()
		b.gen.GoAway(A) // would be a loop had the chain not ended
		synctest.Wait()
		if c := h.next(t); c.gen.Target() != A || !c.started.Equal(t0) {
			t.Fatalf("hop to %q after %v, want A at once", c.gen.Target(), c.started.Sub(t0))
		}
		h.ctl.Stop()
	})
}

var errNoHost = errors.New("test: connection refused")

func TestRedirectToADeadTargetGoesBackHome(t *testing.T) {
	// A Host drains to a URI where nothing listens. The page tries it, then comes home to its
	// own endpoint, where a fresh Host answers; before, it dialled the dead URI forever.
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		a := h.readyNext(t)
		time.Sleep(time.Minute) // a stable session
		a.gen.GoAway("X")
		t0 := time.Now()
		synctest.Wait()
		x1 := h.next(t)
		if x1.gen.Target() != "X" {
			t.Fatalf("first hop to %q, want X", x1.gen.Target())
		}
		a.end <- errors.New("test: drained") // the draining Host closes the old session
		x1.end <- errNoHost
		synctest.Wait()
		time.Sleep(time.Until(h.ctl.Status().NextAttempt))
		synctest.Wait()
		x2 := h.next(t)
		if x2.gen.Target() != "X" {
			t.Fatalf("second attempt to %q, want X once more", x2.gen.Target())
		}
		x2.end <- errNoHost
		synctest.Wait()
		s := h.wantState(t, controller.Reconnecting)
		if s.Failures != 2 {
			t.Fatalf("after two failures at X: %s, want the ladder at 2 (the draining session's end is no failure)", describe(s))
		}
		time.Sleep(time.Until(s.NextAttempt))
		synctest.Wait()
		home := h.next(t)
		if home.gen.Target() != A {
			t.Fatalf("third attempt to %q, want home (A)", home.gen.Target())
		}
		if err := home.gen.Ready(&carrier{}); err != nil {
			t.Fatal(err)
		}
		// fullCap: 500 ms after X's first failure, 1 s after its second.
		if got := time.Since(t0); got != 1500*time.Millisecond {
			t.Fatalf("home again after %v, want 1.5s", got)
		}
		if got := h.logs.Messages("going back"); len(got) != 1 {
			t.Fatalf("logs %q, want one warning that the page goes home", got)
		}
		h.ctl.Stop()
	})
}

func TestRedirectTargetThatStallsPastMaxDelayGoesHomeAfterOneTry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		a := h.readyNext(t)
		time.Sleep(time.Minute)
		a.gen.GoAway("X")
		synctest.Wait()
		x := h.next(t)
		a.end <- errors.New("test: drained")
		time.Sleep(15 * time.Second) // X never answers: cancelled at the deadline, past maxDelay
		synctest.Wait()
		if x.ctx.Err() == nil {
			t.Fatal("the stalled attempt at X was not cancelled at the deadline")
		}
		time.Sleep(time.Until(h.ctl.Status().NextAttempt))
		synctest.Wait()
		if home := h.next(t); home.gen.Target() != A {
			t.Fatalf("next attempt to %q, want home (A)", home.gen.Target())
		}
		h.ctl.Stop()
	})
}

func TestRedirectTargetThatAnswersIsKept(t *testing.T) {
	// A target that failed once and then answers is where the page stays; a later failure
	// there starts a fresh count.
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		a := h.readyNext(t)
		a.gen.GoAway("B")
		synctest.Wait()
		b1 := h.next(t)
		b1.end <- errNoHost
		synctest.Wait()
		h.wantState(t, controller.Connected) // A is still draining: the page keeps it
		time.Sleep(500 * time.Millisecond)   // the first cap
		synctest.Wait()
		b2 := h.next(t)
		if b2.gen.Target() != "B" {
			t.Fatalf("retry to %q, want B", b2.gen.Target())
		}
		if err := b2.gen.Ready(&carrier{}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		h.wantState(t, controller.Connected)
		b2.gen.GoAway(b2.gen.Target()) // B restarts in place: the page comes back to B
		synctest.Wait()
		b3 := h.next(t)
		if b3.gen.Target() != "B" {
			t.Fatalf("restart hop to %q, want B", b3.gen.Target())
		}
		b3.end <- errNoHost
		synctest.Wait()
		time.Sleep(2 * time.Second) // failure 3 (B's first, A's handover, B's restart): cap 2 s
		synctest.Wait()
		if b4 := h.next(t); b4.gen.Target() != "B" {
			t.Fatalf("after one failure of the restarted B: %q, want B again", b4.gen.Target())
		}
		h.ctl.Stop()
	})
}

// TestAGoAwayBeforeReadyAimsTheNextAttemptThereOnTheLadder: a draining Host turns away the
// sockets that reach it with a goaway naming another place (PROTOCOL.md §5.1). The page was not
// connected, so it follows at the ladder's pace, not at once: two Hosts that turn arriving
// pages away to each other climb the ladder like any outage instead of storming.
func TestAGoAwayBeforeReadyAimsTheNextAttemptThereOnTheLadder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		cfg := h.ctl.Config()
		h.ctl.Start()
		synctest.Wait()
		a := h.next(t)
		turnAway := func(at *attempt, to string) time.Time {
			at.end <- &controller.RedirectError{To: to, Err: errors.New("turned away")}
			synctest.Wait()
			return time.Now()
		}
		// home → B → home → B: each hop one rung further up the ladder.
		prev, targets := a, []string{"B", A, "B"}
		for i, to := range targets {
			t0 := turnAway(prev, to)
			want := controller.Delay(cfg, i+1, func() float64 { return fullCap })
			time.Sleep(want)
			synctest.Wait()
			n := h.next(t)
			if n.gen.Target() != to || n.started.Sub(t0) != want {
				t.Fatalf("hop %d: dialed %q after %v, want %q after %v (the ladder's rung %d)",
					i+1, n.gen.Target(), n.started.Sub(t0), to, want, i+1)
			}
			prev = n
		}
		if err := prev.gen.Ready(&carrier{}); err != nil {
			t.Fatalf("Ready at B = %v", err)
		}
		if s := h.ctl.Status(); s.State != controller.Connected {
			t.Fatalf("state %v after the redirected attempt's ready, want connected", s.State)
		}
		h.ctl.Stop()
	})
}

// A draining session lost before its successor is ready leaves the page not connected: its
// status says why, as for any lost session, while the successor's attempt goes on.
func TestADrainingSessionLostBeforeItsSuccessorIsReadySaysWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		a := h.readyNext(t)
		if err := a.gen.GoAway("wss://b.example/_lifeline/events"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		b := h.next(t) // the successor, handshaking
		a.end <- errRefused
		synctest.Wait()
		st := h.wantState(t, controller.Connecting)
		if st.Err != errRefused || st.Attempt != b.gen.Number() {
			t.Fatalf("status %s, want connecting attempt %d with the lost session's error", describe(st), b.gen.Number())
		}
		if err := b.gen.Ready(&carrier{}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if st := h.wantState(t, controller.Connected); st.Err != nil {
			t.Fatalf("connected with %v", st.Err)
		}
		h.ctl.Stop()
		synctest.Wait()
	})
}
