package controller_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifeline-go/lifeline/controller"
)

var errRefused = errors.New("test: connection refused")

// u=0 draws the full cap, so every delay below is exact.
const fullCap = 0.0

// A is the page's home in these tests, the source's own endpoint: a generation names it as the
// empty target (see Generation.Target). B, C, D and X are other places.
const A = ""

func TestSlowWarningAtThreeSecondsAndCancellationAtFifteen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		synctest.Wait()
		a := h.next(t)
		t0 := time.Now()

		time.Sleep(3*time.Second - time.Nanosecond)
		synctest.Wait()
		if s := h.wantState(t, controller.Connecting); s.Slow {
			t.Fatalf("slow before 3 s: %s", describe(s))
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if s := h.wantState(t, controller.Connecting); !s.Slow {
			t.Fatalf("not slow at exactly 3 s: %s", describe(s))
		}
		if got := h.logs.Messages("slow"); len(got) != 1 || got[0] != "WARN lifeline: host is slow to respond" {
			t.Fatalf("slow logs = %q, want one WARN", got)
		}

		time.Sleep(12*time.Second - time.Nanosecond)
		synctest.Wait()
		if a.ctx.Err() != nil {
			t.Fatalf("attempt cancelled before 15 s")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if !errors.Is(context.Cause(a.ctx), controller.ErrDeadline) {
			t.Fatalf("at 15 s the attempt's cause = %v, want ErrDeadline", context.Cause(a.ctx))
		}
		if got := time.Since(t0); got != 15*time.Second {
			t.Fatalf("cancelled after %v, want exactly 15s", got)
		}
		s := h.wantState(t, controller.Reconnecting)
		if !errors.Is(s.Err, controller.ErrDeadline) || s.Failures != 1 {
			t.Fatalf("after the deadline: %s, want the deadline error and 1 failure", describe(s))
		}
		if want := t0.Add(15*time.Second + 500*time.Millisecond); !s.NextAttempt.Equal(want) {
			t.Fatalf("next attempt at +%v, want +15.5s (the first cap)", s.NextAttempt.Sub(t0))
		}
		if got := h.logs.Messages("deadline"); len(got) != 1 || got[0] != "WARN lifeline: handshake cancelled at deadline" {
			t.Fatalf("deadline logs = %q, want one WARN", got)
		}
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		if b := h.next(t); b.gen.Number() != 2 || time.Since(t0) != 15500*time.Millisecond {
			t.Fatalf("attempt %d at +%v, want attempt 2 at +15.5s", b.gen.Number(), time.Since(t0))
		}
		h.ctl.Stop()
	})
}

func TestWarningDueAfterTheHandshakeSettledNeverFires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		synctest.Wait()
		a := h.next(t)
		time.Sleep(2 * time.Second)
		if err := a.gen.Ready(&carrier{}); err != nil {
			t.Fatalf("Ready = %v", err)
		}
		time.Sleep(20 * time.Second) // past both the warning and the deadline
		synctest.Wait()
		h.wantState(t, controller.Connected)
		if a.ctx.Err() != nil {
			t.Fatalf("a ready generation was cancelled: %v", context.Cause(a.ctx))
		}
		for _, s := range h.rec.Statuses() {
			if s.Slow {
				t.Fatalf("a slow status was delivered: %s", describe(s))
			}
		}
		if got := h.logs.Messages("slow"); len(got) != 0 {
			t.Fatalf("slow logs = %q, want none", got)
		}
		h.ctl.Stop()
	})
}

func TestSlowAfterAtOrBeyondTheDeadlineNeverWarns(t *testing.T) {
	for _, slow := range []float64{15000, 20000} {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, controller.Recovery{SlowAfterMs: new(slow), DeadlineMs: new(15000.0)}, fullCap)
			h.ctl.Start()
			synctest.Wait()
			a := h.next(t)
			time.Sleep(15 * time.Second)
			synctest.Wait()
			if !errors.Is(context.Cause(a.ctx), controller.ErrDeadline) {
				t.Fatalf("slowAfter %v: not cancelled at the deadline", slow)
			}
			for _, s := range h.rec.Statuses() {
				if s.Slow {
					t.Fatalf("slowAfter %v: a slow status was delivered: %s", slow, describe(s))
				}
			}
			h.ctl.Stop()
		})
	}
}

func TestNextAttemptWaitsForASlowSettle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.src.settleDelay.Store(int64(7 * time.Second))
		h.ctl.Start()
		synctest.Wait()
		a := h.next(t)
		t0 := time.Now()
		time.Sleep(15 * time.Second) // the deadline cancels; the source ignores it for 7 s
		synctest.Wait()
		h.wantState(t, controller.Reconnecting)
		time.Sleep(7*time.Second - time.Nanosecond) // the 500 ms wait is long over
		synctest.Wait()
		h.none(t)
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		<-a.ended
		b := h.next(t)
		if got := b.started.Sub(t0); got != 22*time.Second {
			t.Fatalf("next attempt started at +%v, want +22s (the settle)", got)
		}
		if m := h.src.maxAlive.Load(); m != 1 {
			t.Fatalf("%d generations were alive at once, want 1", m)
		}
		h.ctl.Stop()
		if m := h.src.maxAlive.Load(); m != 1 {
			t.Fatalf("%d generations were alive at once, want 1", m)
		}
	})
}

func TestLateReadyFromCancelledGenerationIsDiscarded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.src.settleDelay.Store(int64(time.Second))
		h.ctl.Start()
		synctest.Wait()
		a := h.next(t)
		time.Sleep(15 * time.Second)
		synctest.Wait() // cancelled at the deadline; still settling
		c := &carrier{}
		if err := a.gen.Ready(c); !errors.Is(err, controller.ErrStale) {
			t.Fatalf("late Ready = %v, want ErrStale", err)
		}
		if !c.closed.Load() {
			t.Fatalf("the late ready's carrier was left open")
		}
		synctest.Wait()
		if s := h.ctl.Status(); s.State == controller.Connected {
			t.Fatalf("a cancelled generation established a connection: %s", describe(s))
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		b := h.next(t)
		// After it settled, a ready from it is still refused.
		c2 := &carrier{}
		if err := a.gen.Ready(c2); !errors.Is(err, controller.ErrStale) || !c2.closed.Load() {
			t.Fatalf("Ready after settle = %v (closed=%v), want ErrStale and closed", err, c2.closed.Load())
		}
		if err := b.gen.Ready(&carrier{}); err != nil {
			t.Fatalf("current Ready = %v", err)
		}
		h.wantState(t, controller.Connected)
		h.ctl.Stop()
	})
}

// ladderCap is the default ladder's cap after n failures.
func ladderCap(n int) time.Duration {
	c := 500 * time.Millisecond << (n - 1)
	if n > 6 || c > 10*time.Second {
		return 10 * time.Second
	}
	return c
}

func TestFiftyFailuresThenSuccessUsesEveryCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, -1) // real jitter
		h.ctl.Start()
		var gaps []time.Duration
		prevEnd := time.Time{}
		for i := 1; i <= 51; i++ {
			synctest.Wait()
			if i > 1 {
				// Sleep until the attempt is due, checking the delay against the ladder.
				s := h.wantState(t, controller.Reconnecting)
				time.Sleep(time.Until(s.NextAttempt))
				synctest.Wait()
			}
			a := h.next(t)
			if i > 1 {
				gap := a.started.Sub(prevEnd)
				c := ladderCap(i - 1)
				if gap < c/2 || gap > c {
					t.Fatalf("wait before attempt %d = %v, want within [%v, %v]", i, gap, c/2, c)
				}
				gaps = append(gaps, gap)
			}
			if i == 51 {
				if err := a.gen.Ready(&carrier{}); err != nil {
					t.Fatalf("Ready after 50 failures = %v", err)
				}
				break
			}
			a.end <- errRefused
			<-a.ended
			prevEnd = time.Now()
		}
		synctest.Wait()
		s := h.wantState(t, controller.Connected)
		if s.Attempt != 51 {
			t.Fatalf("connected on attempt %d, want 51", s.Attempt)
		}
		for i, c := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second} {
			if gaps[i] < c/2 || gaps[i] > c {
				t.Errorf("gap %d = %v, want on cap %v", i+1, gaps[i], c)
			}
		}
		h.ctl.Stop()
	})
}

func TestFactorOneGivesFixedCapRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{Factor: new(1.0), InitialDelayMs: new(800.0)}, fullCap)
		h.ctl.Start()
		for i := range 10 {
			synctest.Wait()
			a := h.next(t)
			a.end <- errRefused
			synctest.Wait()
			s := h.wantState(t, controller.Reconnecting)
			if got := time.Until(s.NextAttempt); got != 800*time.Millisecond {
				t.Fatalf("wait after failure %d = %v, want 800ms", i+1, got)
			}
			time.Sleep(800 * time.Millisecond)
		}
		h.ctl.Stop()
	})
}

// flap makes the attempt ready, then ends it after lived.
func flap(t *testing.T, a *attempt, lived time.Duration) {
	t.Helper()
	if err := a.gen.Ready(&carrier{}); err != nil {
		t.Fatalf("Ready = %v", err)
	}
	time.Sleep(lived)
	a.end <- errRefused
	synctest.Wait()
}

func TestFlapDampingClimbsTheLadderUntilAGenerationIsStable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		var waits []time.Duration
		for range 4 {
			synctest.Wait()
			flap(t, h.next(t), 200*time.Millisecond)
			s := h.wantState(t, controller.Reconnecting)
			waits = append(waits, time.Until(s.NextAttempt))
			time.Sleep(time.Until(s.NextAttempt))
		}
		if want := []time.Duration{ms(500), ms(1000), ms(2000), ms(4000)}; !slices.Equal(waits, want) {
			t.Fatalf("waits after ready-then-drop = %v, want %v (climbing)", waits, want)
		}
		// A generation that lives stableAfter (10 s) resets the ladder.
		a := h.readyNext(t)
		time.Sleep(10*time.Second - time.Nanosecond)
		synctest.Wait()
		if s := h.ctl.Status(); s.Failures != 4 {
			t.Fatalf("before stableAfter failures = %d, want 4", s.Failures)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if s := h.ctl.Status(); s.Failures != 0 {
			t.Fatalf("at stableAfter failures = %d, want 0", s.Failures)
		}
		if w := h.failAndWait(t, a); w != ms(500) {
			t.Fatalf("after a stable generation dropped: wait %v, want the first cap 500ms", w)
		}
		h.ctl.Stop()
	})
}

func TestStableAfterZeroResetsOnReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{StableAfterMs: new(0.0)}, fullCap)
		h.ctl.Start()
		for range 4 {
			synctest.Wait()
			flap(t, h.next(t), 200*time.Millisecond)
			s := h.wantState(t, controller.Reconnecting)
			if w := time.Until(s.NextAttempt); w != ms(500) {
				t.Fatalf("wait after ready-then-drop = %v, want 500ms with stableAfterMs 0", w)
			}
			time.Sleep(time.Until(s.NextAttempt))
		}
		h.ctl.Stop()
	})
}

func TestReconnectNowDuringAHandshakeCancelsWaitsForSettleAndAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		synctest.Wait()
		a := h.next(t)
		a.end <- errRefused // climb the ladder first
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		b := h.next(t)
		h.src.settleDelay.Store(int64(2 * time.Second))
		h.ctl.ReconnectNow()
		synctest.Wait()
		if !errors.Is(context.Cause(b.ctx), controller.ErrReplaced) {
			t.Fatalf("ReconnectNow did not cancel the handshake: cause %v", context.Cause(b.ctx))
		}
		h.none(t) // still settling
		t0 := time.Now()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		c := h.next(t)
		if c.started.Sub(t0) != 2*time.Second {
			t.Fatalf("next attempt at +%v after ReconnectNow, want at the settle (+2s)", c.started.Sub(t0))
		}
		if s := h.ctl.Status(); s.Failures != 0 {
			t.Fatalf("failures after ReconnectNow = %d, want 0 (first cap)", s.Failures)
		}
		if m := h.src.maxAlive.Load(); m != 1 {
			t.Fatalf("%d generations alive at once", m)
		}
		if w := h.failAndWait(t, c); w != ms(500) {
			t.Fatalf("wait after the first failure following ReconnectNow = %v, want 500ms", w)
		}
		h.ctl.Stop()
	})
}

func TestReconnectNowDuringAWaitSkipsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		h.failDue(t, 5)
		synctest.Wait()
		h.next(t).end <- errRefused
		synctest.Wait()
		s := h.wantState(t, controller.Reconnecting)
		if time.Until(s.NextAttempt) != 10*time.Second {
			t.Fatalf("wait = %v, want the 10s top cap", time.Until(s.NextAttempt))
		}
		t0 := time.Now()
		h.ctl.ReconnectNow()
		synctest.Wait()
		a := h.next(t)
		if !a.started.Equal(t0) {
			t.Fatalf("attempt started %v after ReconnectNow, want at once", a.started.Sub(t0))
		}
		if s := h.wantState(t, controller.Connecting); s.Failures != 0 {
			t.Fatalf("failures = %d, want 0", s.Failures)
		}
		h.ctl.Stop()
	})
}

func TestReconnectNowWhileConnectedReplacesTheGeneration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		a := h.readyNext(t)
		synctest.Wait()
		h.wantState(t, controller.Connected)
		h.ctl.ReconnectNow()
		synctest.Wait()
		if !errors.Is(context.Cause(a.ctx), controller.ErrReplaced) {
			t.Fatalf("connected generation not replaced: cause %v", context.Cause(a.ctx))
		}
		b := h.next(t)
		if b.gen.Number() != 2 {
			t.Fatalf("replacement is attempt %d, want 2", b.gen.Number())
		}
		if err := b.gen.Ready(&carrier{}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if s := h.wantState(t, controller.Connected); s.Failures != 0 {
			t.Fatalf("failures = %d, want 0", s.Failures)
		}
		h.ctl.Stop()
	})
}

func TestStopDuringAHandshakeDiscardsALateReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.src.settleDelay.Store(int64(3 * time.Second))
		h.ctl.Start()
		synctest.Wait()
		a := h.next(t)
		stopped := make(chan struct{})
		go func() { h.ctl.Stop(); close(stopped) }()
		synctest.Wait()
		h.wantState(t, controller.Stopped)
		select {
		case <-stopped:
			t.Fatal("Stop returned before the source settled")
		default:
		}
		c := &carrier{}
		if err := a.gen.Ready(c); !errors.Is(err, controller.ErrStale) || !c.closed.Load() {
			t.Fatalf("Ready during Stop = %v (closed=%v), want ErrStale and its carrier closed", err, c.closed.Load())
		}
		time.Sleep(3 * time.Second)
		<-stopped
		c2 := &carrier{}
		if err := a.gen.Ready(c2); !errors.Is(err, controller.ErrStale) || !c2.closed.Load() {
			t.Fatalf("Ready after Stop = %v (closed=%v), want ErrStale and closed", err, c2.closed.Load())
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		h.none(t)
		h.wantState(t, controller.Stopped)
	})
}

func TestStopDuringAWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		synctest.Wait()
		h.next(t).end <- errRefused
		synctest.Wait()
		h.wantState(t, controller.Reconnecting)
		h.ctl.Stop()
		h.wantState(t, controller.Stopped)
		time.Sleep(time.Minute)
		synctest.Wait()
		h.none(t)
	})
}

func TestStopWhileConnectedThenStartBeginsAFreshSequence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		h.ctl.Start() // idempotent
		synctest.Wait()
		a := h.next(t)
		a.end <- errRefused
		time.Sleep(500 * time.Millisecond)
		b := h.readyNext(t)
		synctest.Wait()
		h.wantState(t, controller.Connected)
		h.ctl.Stop()
		h.ctl.Stop() // idempotent
		if !errors.Is(context.Cause(b.ctx), controller.ErrStopped) {
			t.Fatalf("connected generation cause = %v, want ErrStopped", context.Cause(b.ctx))
		}
		<-b.ended
		h.wantState(t, controller.Stopped)
		h.ctl.ReconnectNow() // does nothing once stopped
		synctest.Wait()
		h.none(t)

		h.ctl.Start()
		synctest.Wait()
		c := h.next(t)
		if s := h.wantState(t, controller.Connecting); s.Failures != 0 || c.gen.Number() != 3 {
			t.Fatalf("after Start: %s attempt %d, want a fresh sequence (0 failures) with attempt 3", describe(s), c.gen.Number())
		}
		if w := h.failAndWait(t, c); w != ms(500) {
			t.Fatalf("first wait after Start = %v, want 500ms", w)
		}
		h.ctl.Stop()
	})
}

func TestOfflineDuringAHandshakeCancelsAndArmsNoTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		synctest.Wait()
		a := h.next(t)
		h.ctl.SetOnline(false)
		synctest.Wait()
		if !errors.Is(context.Cause(a.ctx), controller.ErrOffline) {
			t.Fatalf("cause = %v, want ErrOffline", context.Cause(a.ctx))
		}
		h.wantState(t, controller.Offline)
		time.Sleep(time.Hour)
		synctest.Wait()
		h.none(t)
		h.wantState(t, controller.Offline)
		t0 := time.Now()
		h.ctl.SetOnline(true)
		synctest.Wait()
		b := h.next(t)
		if !b.started.Equal(t0) {
			t.Fatalf("online attempted after %v, want at once", b.started.Sub(t0))
		}
		h.ctl.Stop()
	})
}

func TestOfflineWhileConnectedEndsTheGeneration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		a := h.readyNext(t)
		h.ctl.SetOnline(false)
		synctest.Wait()
		<-a.ended
		h.wantState(t, controller.Offline)
		time.Sleep(time.Hour)
		synctest.Wait()
		h.none(t)
		h.ctl.SetOnline(true)
		h.readyNext(t)
		synctest.Wait()
		h.wantState(t, controller.Connected)
		h.ctl.Stop()
		// Offline outlives Stop/Start: the browser still says offline.
		h.ctl.SetOnline(false)
		h.ctl.Start()
		synctest.Wait()
		h.none(t)
		h.wantState(t, controller.Offline)
		h.ctl.Stop()
	})
}

func TestEveryStateChangeIsDeliveredInOrderUnderABurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		h.readyNext(t)
		// 1,000 calls, and every hundred of them a pause that lets the cancelled generations
		// settle and a new attempt start: settles, attempts and calls interleave.
		for i := range 1000 {
			h.ctl.ReconnectNow()
			if i%100 == 99 {
				synctest.Wait()
			}
		}
		synctest.Wait()
		var started []uint64
		for {
			select {
			case a := <-h.src.attempts:
				started = append(started, a.gen.Number())
				continue
			default:
			}
			break
		}
		h.ctl.Stop()
		synctest.Wait()
		st := h.rec.Statuses()
		// Each attempt started must appear as Connecting, in order, and nothing else may be
		// numbered: no status lost, none reordered.
		var connecting []uint64
		for i, s := range st {
			if s.State == controller.Connecting {
				connecting = append(connecting, s.Attempt)
			}
			if i > 0 && s.Attempt < st[i-1].Attempt {
				t.Fatalf("status %d attempt %d after attempt %d: out of order", i, s.Attempt, st[i-1].Attempt)
			}
		}
		want := append([]uint64{1}, started...)
		if !slices.Equal(connecting, want) {
			t.Fatalf("connecting statuses for attempts %v, want %v", connecting, want)
		}
		if len(started) < 10 {
			t.Fatalf("only %d attempts after 1000 ReconnectNow calls with 10 pauses", len(started))
		}
		if last := st[len(st)-1]; last.State != controller.Stopped || last.State != h.ctl.Status().State {
			t.Fatalf("last delivered %s, Status() %s", describe(last), describe(h.ctl.Status()))
		}
		if got := h.rec.States(); got[0] != "connecting" || got[1] != "connected" {
			t.Fatalf("states begin %v, want connecting, connected", got[:2])
		}
		if m := h.src.maxAlive.Load(); m != 1 {
			t.Fatalf("%d generations alive at once", m)
		}
	})
}

func TestLogsFirstFailureAtErrorLaterAtWarnRecoveryAtInfo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		h.failDue(t, 3)
		synctest.Wait()
		if err := h.next(t).gen.Ready(&carrier{}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		got := h.logs.Messages("")
		want := []string{
			"ERROR lifeline: connection failed",
			"WARN lifeline: connection failed again",
			"WARN lifeline: connection failed again",
			"INFO lifeline: connection recovered",
		}
		if !slices.Equal(got, want) {
			t.Fatalf("logs = %q, want %q", got, want)
		}
		rec, _ := h.logs.Record("recovered")
		var outage time.Duration
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == "outage" {
				outage = a.Value.Duration()
			}
			return true
		})
		if outage != 3500*time.Millisecond { // 0.5 + 1 + 2 s of waits
			t.Fatalf("recovery outage = %v, want 3.5s", outage)
		}
		h.ctl.Stop()
	})
}

func TestRetryAfterSlowsTheLadderButNeverShortensIt(t *testing.T) {
	tests := []struct {
		name  string
		after time.Duration
		want  time.Duration
	}{
		{"a retry-after longer than the cap is honoured", 5 * time.Second, 5 * time.Second},
		{"a retry-after shorter than the cap keeps the cap", 100 * time.Millisecond, 500 * time.Millisecond},
		{"a retry-after beyond 60 s is capped at 60 s", 10 * time.Minute, time.Minute},
	}
	for _, tt := range tests {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, controller.Recovery{}, fullCap)
			h.ctl.Start()
			synctest.Wait()
			h.next(t).end <- &controller.RetryAfterError{After: tt.after, Err: errRefused}
			synctest.Wait()
			if got := time.Until(h.wantState(t, controller.Reconnecting).NextAttempt); got != tt.want {
				t.Errorf("%s: wait = %v, want %v", tt.name, got, tt.want)
			}
			h.ctl.Stop()
		})
	}
}

func TestGoAwayToANewEndpointMigratesAtOnceMakeBeforeBreak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		synctest.Wait()
		a := h.next(t)
		if a.gen.Target() != A {
			t.Fatalf("first target %q, want the endpoint A", a.gen.Target())
		}
		if err := a.gen.Ready(&carrier{}); err != nil {
			t.Fatal(err)
		}
		if err := a.gen.GoAway("B"); err != nil {
			t.Fatalf("GoAway = %v", err)
		}
		synctest.Wait()
		b := h.next(t)
		if b.gen.Target() != "B" {
			t.Fatalf("migration target %q, want B", b.gen.Target())
		}
		if a.ctx.Err() != nil {
			t.Fatal("the draining generation was cancelled before its successor was ready")
		}
		h.wantState(t, controller.Connected)
		if err := b.gen.Ready(&carrier{}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if !errors.Is(context.Cause(a.ctx), controller.ErrReplaced) {
			t.Fatalf("old generation cause %v, want ErrReplaced", context.Cause(a.ctx))
		}
		if got := h.rec.States(); !slices.Equal(got, []string{"connecting", "connected"}) {
			t.Fatalf("states %v, want connecting, connected (never leaving connected)", got)
		}
		h.ctl.Stop()
	})
}

func TestRedirectLoopIsSlowedThroughTheLadder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{InitialDelayMs: new(10.0)}, fullCap)
		h.ctl.Start()
		a := h.readyNext(t)
		a.gen.GoAway("B") // A→B: at once
		b := h.readyNext(t)
		t0 := time.Now()
		b.gen.GoAway(A) // B→A: a loop, slowed
		synctest.Wait()
		h.none(t)
		h.wantState(t, controller.Connected) // B keeps delivering
		// A was handed over after 0 s (a flap: failure 1), and the loop is failure 2: cap 20 ms.
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		c := h.next(t)
		if c.gen.Target() != A || c.started.Sub(t0) != 20*time.Millisecond {
			t.Fatalf("loop hop to %q after %v, want A after 20ms", c.gen.Target(), c.started.Sub(t0))
		}
		c.gen.Ready(&carrier{})
		t1 := time.Now()
		c.gen.GoAway("B") // A→B again: B handed over (failure 3), the loop is failure 4: 80 ms
		synctest.Wait()
		time.Sleep(80*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		h.none(t)
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if d := h.next(t); d.started.Sub(t1) != 80*time.Millisecond || d.gen.Target() != "B" {
			t.Fatalf("second loop hop to %q after %v, want B after 80ms", d.gen.Target(), d.started.Sub(t1))
		}
		h.ctl.Stop()
	})
}

func TestEmptyGoAwayIsNeverALoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		for range 3 {
			a := h.readyNext(t)
			t0 := time.Now()
			a.gen.GoAway(a.gen.Target()) // the protocol's empty uri: come back here
			synctest.Wait()
			b := h.next(t)
			if b.gen.Target() != A || !b.started.Equal(t0) {
				t.Fatalf("empty goaway redialed %q after %v, want A at once", b.gen.Target(), b.started.Sub(t0))
			}
			b.end <- nil // hand the next round a fresh attempt
			a.end <- nil
			synctest.Wait()
			time.Sleep(time.Until(h.ctl.Status().NextAttempt))
		}
		synctest.Wait()
		h.ctl.Stop()
	})
}

func TestNewRefusesAnUnresolvedConfig(t *testing.T) {
	if _, err := controller.New(newFakeSource(), controller.Config{}, nil); !errors.Is(err, controller.ErrUnresolvedConfig) {
		t.Fatalf("New(zero Config) = %v, want ErrUnresolvedConfig", err)
	}
	if _, err := controller.New(nil, controller.DefaultConfig(), nil); !errors.Is(err, controller.ErrNilSource) {
		t.Fatalf("New(nil source) = %v, want ErrNilSource", err)
	}
}

func TestRedirectChainClearsAfterAStableSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		a := h.readyNext(t)
		a.gen.GoAway("B")
		b := h.readyNext(t)
		time.Sleep(10 * time.Second) // B lives stableAfter: the chain is cleared
		synctest.Wait()
		t0 := time.Now()
		b.gen.GoAway(A) // would be a loop without the reset
		synctest.Wait()
		c := h.next(t)
		if c.gen.Target() != A || !c.started.Equal(t0) {
			t.Fatalf("hop to %q after %v, want A at once", c.gen.Target(), c.started.Sub(t0))
		}
		h.ctl.Stop()

		// A new sequence starts with an empty chain too.
		h.ctl.Start()
		d := h.readyNext(t)
		t1 := time.Now()
		d.gen.GoAway("B")
		synctest.Wait()
		if e := h.next(t); e.gen.Target() != "B" || !e.started.Equal(t1) {
			t.Fatalf("after Stop/Start hop to %q after %v, want B at once", e.gen.Target(), e.started.Sub(t1))
		}
		h.ctl.Stop()
	})
}

func TestAttemptNumbersRunOnForTheControllersLife(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		h.failDue(t, 4)
		synctest.Wait()
		a5 := h.next(t) // attempt 5 is in flight
		h.ctl.SetOnline(false)
		if s := h.wantState(t, controller.Offline); s.Attempt != 5 {
			t.Fatalf("offline: %s, want attempt 5", describe(s))
		}
		h.ctl.Stop()
		h.ctl.Start() // still offline: no attempt yet, but the number is the last one made
		if s := h.wantState(t, controller.Offline); s.Attempt != 5 {
			t.Fatalf("after Stop, Start while offline: %s, want attempt 5, not 0", describe(s))
		}
		h.ctl.SetOnline(true)
		synctest.Wait()
		if a := h.next(t); a.gen.Number() != 6 || h.ctl.Status().Attempt != 6 {
			t.Fatalf("online: attempt %d (status %s), want 6", a.gen.Number(), describe(h.ctl.Status()))
		}
		_ = a5
		h.ctl.Stop()
	})
}

func TestStatusReflectsEveryCallOnceItReturns(t *testing.T) {
	// Ready, GoAway and every command publish before they return, so a caller that reads
	// Status right away (no synctest.Wait, no sleep) sees what it did. Settles take a second
	// here, so that nothing else can move the state on before the test reads it.
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.src.settleDelay.Store(int64(time.Second))
		h.ctl.Start()
		h.wantState(t, controller.Connecting)
		for i := range 200 {
			synctest.Wait()
			var a *attempt
			for len(h.src.attempts) > 0 { // the latest: earlier ones were replaced
				a = h.next(t)
			}
			if err := a.gen.Ready(&carrier{}); err != nil {
				t.Fatalf("round %d: Ready = %v", i, err)
			}
			h.wantState(t, controller.Connected)
			if i%2 == 0 {
				if err := a.gen.GoAway("B"); err != nil {
					t.Fatalf("round %d: GoAway = %v", i, err)
				}
				h.wantState(t, controller.Connected) // make-before-break
			}
			h.ctl.SetOnline(false)
			h.wantState(t, controller.Offline)
			time.Sleep(time.Second) // every generation settles
			synctest.Wait()
			h.ctl.SetOnline(true)
			h.wantState(t, controller.Connecting)
			h.ctl.ReconnectNow()
			h.wantState(t, controller.Reconnecting) // due at once, waiting for the settle
			time.Sleep(time.Second)
		}
		h.ctl.Stop()
		h.wantState(t, controller.Stopped)
	})
}

func TestRefusedCredentialsRetryAtTheTopCapOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		refused := fmt.Errorf("gateway: dial: %w: 401 sign in", controller.ErrUnauthorized)
		for i := range 5 {
			synctest.Wait()
			a := h.next(t)
			a.end <- refused
			synctest.Wait()
			s := h.wantState(t, controller.Unauthorized)
			if d := time.Until(s.NextAttempt); d != 10*time.Second {
				t.Fatalf("refusal %d: next attempt in %v, want the top cap (10s) from the first refusal on", i+1, d)
			}
			if !errors.Is(s.Err, controller.ErrUnauthorized) {
				t.Fatalf("status error %v, want ErrUnauthorized", s.Err)
			}
			time.Sleep(10 * time.Second)
		}
		// ReconnectNow stays: the user may have signed in meanwhile.
		synctest.Wait()
		a := h.next(t)
		a.end <- refused
		synctest.Wait()
		h.ctl.ReconnectNow()
		b := h.readyNext(t)
		h.wantState(t, controller.Connected)
		// A plain failure after that climbs the ladder from its first cap again.
		b.end <- errRefused
		synctest.Wait()
		if s := h.wantState(t, controller.Reconnecting); time.Until(s.NextAttempt) != 500*time.Millisecond {
			t.Fatalf("after a connection: %s, want the first cap", describe(s))
		}
		h.ctl.Stop()
	})
}

func TestARestartingHostIsRetriedAtTheFirstCapForMaxDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		a := h.readyNext(t)
		time.Sleep(time.Minute)
		restarting := fmt.Errorf("gateway: session closed: 1012: %w", controller.ErrHostRestarting)
		a.end <- restarting
		t0 := time.Now()
		synctest.Wait()
		// While the Host restarts, its port is closed: every attempt fails, and every wait is
		// the first cap, for maxDelay after the restart.
		var waits []time.Duration
		for time.Since(t0) < 10*time.Second {
			s := h.wantState(t, controller.Reconnecting)
			waits = append(waits, time.Until(s.NextAttempt))
			time.Sleep(time.Until(s.NextAttempt))
			synctest.Wait()
			h.next(t).end <- errRefused
			synctest.Wait()
		}
		for i, w := range waits {
			if w != 500*time.Millisecond {
				t.Fatalf("wait %d in the restart window = %v (all %v), want the first cap", i, w, waits)
			}
		}
		// After the window the Host is not coming back soon: the ladder climbs again.
		if s := h.wantState(t, controller.Reconnecting); time.Until(s.NextAttempt) != time.Second || s.Failures != 2 {
			t.Fatalf("after the window: %s, want the second cap", describe(s))
		}
		h.ctl.Stop()
	})
}

func TestAHostFlappingWithServiceRestartClimbsTheLadder(t *testing.T) {
	// A Host that says ready and closes with 1012 after 40 ms, again and again: the first
	// restart holds the first cap (the window); every later one is a flap on the ladder, as a
	// plain drop would be, not a dial every 500 ms forever.
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		restarting := fmt.Errorf("gateway: session closed: 1012: %w", controller.ErrHostRestarting)
		var waits []time.Duration
		for range 6 {
			a := h.readyNext(t)
			time.Sleep(40 * time.Millisecond)
			a.end <- restarting
			synctest.Wait()
			s := h.wantState(t, controller.Reconnecting)
			waits = append(waits, time.Until(s.NextAttempt))
			time.Sleep(time.Until(s.NextAttempt))
		}
		if want := []time.Duration{ms(500), ms(1000), ms(2000), ms(4000), ms(8000), ms(10000)}; !slices.Equal(waits, want) {
			t.Fatalf("waits after ready-then-1012 = %v, want %v (climbing)", waits, want)
		}
		// A session that lives maxDelay earns its restart window again.
		a := h.readyNext(t)
		time.Sleep(10 * time.Second)
		a.end <- restarting
		synctest.Wait()
		if s := h.wantState(t, controller.Reconnecting); time.Until(s.NextAttempt) != ms(500) {
			t.Fatalf("a restart after a session of maxDelay: %s, want the first cap", describe(s))
		}
		h.ctl.Stop()
	})
}

func TestARestartHintIsAMinimumSpreadByJitter(t *testing.T) {
	for _, tc := range []struct {
		u    float64
		want time.Duration
	}{{0, 2 * time.Second}, {0.5, 2500 * time.Millisecond}, {0.999, 2999 * time.Millisecond}} {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, controller.Recovery{}, tc.u)
			h.ctl.Start()
			a := h.readyNext(t)
			time.Sleep(time.Minute)
			a.end <- &controller.RetryAfterError{After: 2 * time.Second, Err: controller.ErrHostRestarting}
			synctest.Wait()
			s := h.wantState(t, controller.Reconnecting)
			if got := time.Until(s.NextAttempt); got != tc.want {
				t.Fatalf("u=%v: first attempt after a restart hinted at 2s: in %v, want %v", tc.u, got, tc.want)
			}
			h.ctl.Stop()
		})
	}
}

func TestDialsFailingDuringASamePlaceHandoverDoNotClimbTheLadder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		a := h.readyNext(t)
		time.Sleep(time.Minute)
		a.gen.GoAway(a.gen.Target()) // come back to the same place; the old session keeps delivering
		for i := range 6 {
			synctest.Wait()
			b := h.next(t)
			b.end <- errRefused // nobody accepts yet
			synctest.Wait()
			if s := h.wantState(t, controller.Connected); s.Failures != 1 {
				t.Fatalf("failure %d during the handover: %s, want the ladder held at 1", i+1, describe(s))
			}
			time.Sleep(500 * time.Millisecond)
		}
		h.readyNext(t)
		if got := h.rec.States(); !slices.Equal(got, []string{"connecting", "connected"}) {
			t.Fatalf("states %v, want the page connected throughout", got)
		}
		h.ctl.Stop()
	})
}

func TestWakeNeverDialsEarlyNorResetsTheLadder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		h.failDue(t, 3)
		synctest.Wait()
		h.failAndWait(t, h.next(t)) // failure 4: a wait of 4 s
		before := h.ctl.Status()
		time.Sleep(time.Second)
		h.ctl.Wake() // the page became visible mid-wait: the wait is kept
		synctest.Wait()
		h.none(t)
		if s := h.wantState(t, controller.Reconnecting); !s.NextAttempt.Equal(before.NextAttempt) || s.Failures != 4 {
			t.Fatalf("after Wake mid-wait: %s, want the same wait and rung as %s", describe(s), describe(before))
		}
		time.Sleep(time.Until(before.NextAttempt))
		synctest.Wait()
		a := h.next(t) // the ladder's attempt, on time
		if !a.started.Equal(before.NextAttempt) {
			t.Fatalf("attempt at %v, want %v", a.started, before.NextAttempt)
		}
		h.ctl.Wake() // during a handshake: nothing to wake
		synctest.Wait()
		h.none(t)
		a.end <- errRefused
		synctest.Wait()
		if s := h.wantState(t, controller.Reconnecting); s.Failures != 5 || time.Until(s.NextAttempt) != 8*time.Second {
			t.Fatalf("after the next failure: %s, want rung 5 (8 s): Wake kept the ladder", describe(s))
		}
		h.ctl.Stop()
		h.ctl.Wake() // stopped: nothing
	})
}

func TestReconnectNowKeepsARestartWindowOpen(t *testing.T) {
	waitsAfterInsideARestartWindow(t, "reconnect now", func(c *controller.Controller) { c.ReconnectNow() })
}

func TestOnlineKeepsARestartWindowOpen(t *testing.T) {
	waitsAfterInsideARestartWindow(t, "offline then online", func(c *controller.Controller) {
		c.SetOnline(false)
		c.SetOnline(true)
	})
}

// waitsAfterInsideARestartWindow checks that act, done while the Host restarts, keeps the
// restart window open. The Host said it is restarting (1012): the attempts that fail meanwhile
// wait the first cap only. Reconnect now, or the browser coming back online, attempts at once;
// neither is news about the Host, so the failures after it still wait the first cap. Ending the
// window there made the button slower than not clicking it (seen in every engine: 585–2,979 ms
// to return with the click, 42–251 ms without).
func waitsAfterInsideARestartWindow(t *testing.T, what string, act func(*controller.Controller)) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		synctest.Wait()
		a := h.next(t)
		a.gen.Ready(&carrier{})
		time.Sleep(time.Minute)
		a.end <- fmt.Errorf("gateway: session closed: 1012: %w", controller.ErrHostRestarting)
		synctest.Wait()
		// Two failures inside the window: the first cap each.
		for range 2 {
			s := h.wantState(t, controller.Reconnecting)
			time.Sleep(time.Until(s.NextAttempt))
			synctest.Wait()
			h.next(t).end <- errRefused
			synctest.Wait()
		}
		act(h.ctl)
		synctest.Wait()
		var waits []time.Duration
		for range 4 {
			h.next(t).end <- errRefused
			synctest.Wait()
			s := h.wantState(t, controller.Reconnecting)
			waits = append(waits, time.Until(s.NextAttempt))
			time.Sleep(time.Until(s.NextAttempt))
			synctest.Wait()
		}
		h.ctl.Stop()
		if want := []time.Duration{ms(500), ms(500), ms(500), ms(500)}; !slices.Equal(waits, want) {
			t.Fatalf("waits after %s inside the restart window = %v, want %v (the first cap)", what, waits, want)
		}
	})
}

func TestReplaceMakesANewGenerationToTheSamePlaceBeforeBreakingTheOld(t *testing.T) {
	// A source that found a better way to the same place (a WebSocket through a path that
	// held one back) replaces its generation: the new one is dialed at once, the old keeps
	// running until it is ready, the page never leaves connected, and since nothing was wrong
	// with the Host, the ladder does not move and no restart window opens.
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{StableAfterMs: new(60000.0)}, fullCap)
		h.ctl.Start()
		synctest.Wait()
		a := h.next(t)
		if err := a.gen.Ready(&carrier{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // younger than stableAfter: a handover now would be a flap
		if err := a.gen.Replace(); err != nil {
			t.Fatalf("Replace = %v", err)
		}
		synctest.Wait()
		b := h.next(t)
		if b.gen.Target() != a.gen.Target() {
			t.Fatalf("replacement target %q, want the same place %q", b.gen.Target(), a.gen.Target())
		}
		if a.ctx.Err() != nil {
			t.Fatal("the old generation was cancelled before its replacement was ready")
		}
		if err := a.gen.Replace(); !errors.Is(err, controller.ErrStale) {
			t.Fatalf("a second Replace of the draining generation = %v, want ErrStale", err)
		}
		if err := b.gen.Ready(&carrier{}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if !errors.Is(context.Cause(a.ctx), controller.ErrReplaced) {
			t.Fatalf("old generation cause %v, want ErrReplaced", context.Cause(a.ctx))
		}
		if s := h.ctl.Status(); s.Failures != 0 {
			t.Fatalf("after the replacement %s, want the ladder untouched (0 failures)", describe(s))
		}
		if got := h.rec.States(); !slices.Equal(got, []string{"connecting", "connected"}) {
			t.Fatalf("states %v, want connecting, connected (never leaving connected)", got)
		}
		// No restart window: failures now climb the ladder as usual, the second one to its
		// second cap instead of staying at the first.
		w0 := h.failAndWait(t, b)
		time.Sleep(w0)
		synctest.Wait()
		w1 := h.failAndWait(t, h.next(t))
		h.ctl.Stop()
		if w0 != 500*time.Millisecond || w1 != time.Second {
			t.Fatalf("waits after the replacement's loss %v then %v, want 500ms then 1s (the ladder, no restart window)", w0, w1)
		}
	})
}

func TestAFailedReplacementKeepsTheOldGenerationConnected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		synctest.Wait()
		a := h.next(t)
		a.gen.Ready(&carrier{})
		if err := a.gen.Replace(); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		h.next(t).end <- errRefused // the better way did not work after all
		synctest.Wait()
		s := h.wantState(t, controller.Connected)
		if a.ctx.Err() != nil {
			t.Fatalf("the old generation ended with the failed replacement: %v", context.Cause(a.ctx))
		}
		// The next attempt comes on the ladder, the old one delivering meanwhile.
		time.Sleep(time.Second)
		synctest.Wait()
		c := h.next(t)
		c.gen.Ready(&carrier{})
		synctest.Wait()
		if !errors.Is(context.Cause(a.ctx), controller.ErrReplaced) {
			t.Fatalf("old generation cause %v, want ErrReplaced once the next attempt was ready", context.Cause(a.ctx))
		}
		_ = s
		h.ctl.Stop()
	})
}

func TestAPageGoingAwayIsNoErrorOnTheConsole(t *testing.T) {
	// A browser that closes the page's sockets as it unloads it (Firefox: 1001, before the
	// page's own stop) ends the generation with ErrLeaving: logged at Info, not as the
	// "connection failed" error a developer would chase on every reload.
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, controller.Recovery{}, fullCap)
		h.ctl.Start()
		synctest.Wait()
		a := h.next(t)
		a.gen.Ready(&carrier{})
		a.end <- fmt.Errorf("gateway: the browser closed the socket (1001): %w", controller.ErrLeaving)
		synctest.Wait()
		h.ctl.Stop()
		if got, want := h.logs.Messages(""), []string{"INFO lifeline: the page is going away; its connection with it"}; !slices.Equal(got, want) {
			t.Fatalf("logs = %q, want %q", got, want)
		}
	})
}
