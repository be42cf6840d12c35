package controller_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/internal/test/testlog"
)

// fakeSource is a generation source made of channels: every Run announces itself as an
// attempt and then does what the test tells it. It counts how many Runs are alive at once.
type fakeSource struct {
	attempts chan *attempt
	// settleDelay is how long Run keeps running after its ctx is cancelled, as a source that
	// is slow to release its socket would.
	settleDelay atomic.Int64
	alive       atomic.Int32
	maxAlive    atomic.Int32
	runs        atomic.Int32
}

type attempt struct {
	ctx     context.Context
	gen     *controller.Generation
	end     chan error // send to make Run return this error
	started time.Time
	ended   chan struct{} // closed when Run returned
}

func newFakeSource() *fakeSource {
	return &fakeSource{attempts: make(chan *attempt, 4096)}
}

func (f *fakeSource) Run(ctx context.Context, gen *controller.Generation) error {
	n := f.alive.Add(1)
	defer f.alive.Add(-1)
	for {
		m := f.maxAlive.Load()
		if n <= m || f.maxAlive.CompareAndSwap(m, n) {
			break
		}
	}
	f.runs.Add(1)
	a := &attempt{ctx: ctx, gen: gen, end: make(chan error, 1), started: time.Now(), ended: make(chan struct{})}
	defer close(a.ended)
	f.attempts <- a
	select {
	case err := <-a.end:
		return err
	case <-ctx.Done():
		if d := time.Duration(f.settleDelay.Load()); d > 0 {
			time.Sleep(d) // ignores cancellation for a while, then settles
		}
		return context.Cause(ctx)
	}
}

// carrier stands for the socket a source would bring with its ready.
type carrier struct{ closed atomic.Bool }

func (c *carrier) Close() error { c.closed.Store(true); return nil }

// recorder collects every status delivered to OnChange.
type recorder struct {
	mu       sync.Mutex
	statuses []controller.Status
}

func (r *recorder) onChange(s controller.Status) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statuses = append(r.statuses, s)
}

func (r *recorder) Statuses() []controller.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]controller.Status(nil), r.statuses...)
}

func (r *recorder) States() []string {
	var out []string
	for _, s := range r.Statuses() {
		name := s.State.String()
		if s.Slow {
			name = "slow"
		}
		if len(out) == 0 || out[len(out)-1] != name {
			out = append(out, name)
		}
	}
	return out
}

type harness struct {
	ctl  *controller.Controller
	src  *fakeSource
	rec  *recorder
	logs *testlog.Recorder
}

// newHarness builds a controller over a fake source with a fixed jitter draw u (so delays are
// exact) unless u < 0, which keeps the random default.
func newHarness(t *testing.T, r controller.Recovery, u float64) *harness {
	t.Helper()
	cfg := mustResolve(t, r)
	h := &harness{src: newFakeSource(), rec: &recorder{}, logs: &testlog.Recorder{}}
	opts := &controller.Options{Logger: slog.New(h.logs), OnChange: h.rec.onChange}
	if u >= 0 {
		opts.Rand = constant(u)
	}
	ctl, err := controller.New(h.src, cfg, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.ctl = ctl
	return h
}

// next returns the attempt that has started; the bubble must be idle (call synctest.Wait
// first, or let this do it).
func (h *harness) next(t *testing.T) *attempt {
	t.Helper()
	select {
	case a := <-h.src.attempts:
		return a
	default:
		t.Fatalf("no attempt started (status %s)", describe(h.ctl.Status()))
		return nil
	}
}

// none asserts that no attempt has started.
func (h *harness) none(t *testing.T) {
	t.Helper()
	select {
	case a := <-h.src.attempts:
		t.Fatalf("attempt %d started at %v, want none", a.gen.Number(), a.started)
	default:
	}
}

// failAndWait fails attempt a, lets the controller react, and returns how long it then waits
// before the next attempt (it must be Reconnecting).
func (h *harness) failAndWait(t *testing.T, a *attempt) time.Duration {
	t.Helper()
	a.end <- errRefused
	synctest.Wait()
	return time.Until(h.wantState(t, controller.Reconnecting).NextAttempt)
}

// failDue fails the next n attempts, each as it starts, and sleeps until the one after it is
// due: n failures up the ladder.
func (h *harness) failDue(t *testing.T, n int) {
	t.Helper()
	for range n {
		synctest.Wait()
		h.failAndWait(t, h.next(t))
		time.Sleep(time.Until(h.ctl.Status().NextAttempt))
	}
}

// readyNext lets the bubble idle, takes the attempt that has started and makes it ready.
func (h *harness) readyNext(t *testing.T) *attempt {
	t.Helper()
	synctest.Wait()
	a := h.next(t)
	if err := a.gen.Ready(&carrier{}); err != nil {
		t.Fatalf("Ready of attempt %d: %v", a.gen.Number(), err)
	}
	return a
}

func (h *harness) wantState(t *testing.T, want controller.State) controller.Status {
	t.Helper()
	s := h.ctl.Status()
	if s.State != want {
		t.Fatalf("state = %s, want %s", describe(s), want)
	}
	return s
}

func describe(s controller.Status) string {
	return fmt.Sprintf("%s(attempt=%d failures=%d slow=%v next=%v err=%v)",
		s.State, s.Attempt, s.Failures, s.Slow, s.NextAttempt, s.Err)
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }
