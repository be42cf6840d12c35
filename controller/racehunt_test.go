package controller_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifeline-go/lifeline/controller"
)

// huntSource tracks every Run so that invariants can be checked from outside the controller.
type huntSource struct {
	mu     sync.Mutex
	runs   []*huntRun
	settle time.Duration // how long a cancelled Run ignores its ctx
	maxHS  int           // most handshakes alive at once
	maxRun int           // most Runs alive at once
}

type huntRun struct {
	ctx   context.Context
	gen   *controller.Generation
	end   chan error
	ready bool
	done  bool
}

func (s *huntSource) Run(ctx context.Context, gen *controller.Generation) error {
	r := &huntRun{ctx: ctx, gen: gen, end: make(chan error, 1)}
	s.mu.Lock()
	s.runs = append(s.runs, r)
	settle := s.settle
	s.check()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		r.done = true
		s.mu.Unlock()
	}()
	select {
	case err := <-r.end:
		return err
	case <-ctx.Done():
		time.Sleep(settle)
		return context.Cause(ctx)
	}
}

// check records how many Runs and handshakes are alive; called with mu held.
func (s *huntSource) check() {
	alive, hs := 0, 0
	s.runs = slices.DeleteFunc(s.runs, func(r *huntRun) bool { return r.done })
	for _, r := range s.runs {
		alive++
		if !r.ready && r.ctx.Err() == nil {
			hs++
		}
	}
	s.maxRun = max(s.maxRun, alive)
	s.maxHS = max(s.maxHS, hs)
}

func (s *huntSource) alive() []*huntRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*huntRun
	for _, r := range s.runs {
		if !r.done {
			out = append(out, r)
		}
	}
	return out
}

// TestRaceHunt drives the controller with seeded random operations and checks its invariants
// after every step. LIFELINE_RACE_OPS sets the count (default 100,000);
// LIFELINE_RACE_SEED replays one seed.
func TestRaceHunt(t *testing.T) {
	ops := 100_000
	if v, err := strconv.Atoi(os.Getenv("LIFELINE_RACE_OPS")); err == nil && v > 0 {
		ops = v
	}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("LIFELINE_RACE_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d, %d operations (replay: LIFELINE_RACE_SEED=%d)", seed, ops, seed)
	synctest.Test(t, func(t *testing.T) {
		rnd := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		src := &huntSource{}
		cfg := mustResolve(t, controller.Recovery{SlowAfterMs: new(30.0), DeadlineMs: new(100.0),
			InitialDelayMs: new(5.0), MaxDelayMs: new(80.0), StableAfterMs: new(50.0)})
		var states atomic.Int64
		ctl, err := controller.New(src, cfg, &controller.Options{OnChange: func(controller.Status) { states.Add(1) }, Logger: slog.New(slog.DiscardHandler), Rand: rand.New(rand.NewPCG(seed, 1)).Float64})
		if err != nil {
			t.Fatal(err)
		}
		running, online, started := false, true, false
		fail := func(step int, op string, format string, args ...any) {
			t.Helper()
			msg := fmt.Sprintf("seed %d step %d after %s: %s (replay: LIFELINE_RACE_SEED=%d)", seed, step, op, fmt.Sprintf(format, args...), seed)
			fmt.Fprintln(os.Stderr, "TestRaceHunt:", msg)
			ctl.Stop() // end the bubble's goroutines so the failure is reported, not a deadlock
			t.Fatal(msg)
		}
		for step := range ops {
			var op string
			switch k := rnd.IntN(100); {
			case k < 8:
				op = "Start"
				ctl.Start()
				running, started = true, true
			case k < 14:
				op = "Stop"
				ctl.Stop()
				running, started = false, true
			case k < 24:
				op = "ReconnectNow"
				ctl.ReconnectNow()
				if !started { // on an idle controller ReconnectNow is Start
					running, started = true, true
				}
			case k < 29:
				op = "offline"
				ctl.SetOnline(false)
				online = false
			case k < 36:
				op = "online"
				ctl.SetOnline(true)
				online = true
			case k < 38:
				op = "settle slowly"
				src.mu.Lock()
				src.settle = time.Duration(rnd.IntN(40)) * time.Millisecond
				src.mu.Unlock()
			case k < 60:
				op = "ready"
				if rs := src.alive(); len(rs) > 0 {
					r := rs[rnd.IntN(len(rs))]
					c := &carrier{}
					err := r.gen.Ready(c)
					src.mu.Lock()
					if err == nil {
						if r.ctx.Err() != nil {
							src.mu.Unlock()
							fail(step, op, "a cancelled generation %d was accepted", r.gen.Number())
						}
						r.ready = true
					} else if !c.closed.Load() {
						src.mu.Unlock()
						fail(step, op, "a refused ready's carrier was left open")
					}
					src.check()
					src.mu.Unlock()
				}
			case k < 70:
				op = "goaway"
				if rs := src.alive(); len(rs) > 0 {
					r := rs[rnd.IntN(len(rs))]
					r.gen.GoAway([]string{r.gen.Target(), A, "B"}[rnd.IntN(3)]) // the same place, home, elsewhere
				}
			case k < 85:
				op = "fail"
				if rs := src.alive(); len(rs) > 0 {
					r := rs[rnd.IntN(len(rs))]
					select {
					case r.end <- errRefused:
					default:
					}
				}
			default:
				op = "advance"
				time.Sleep(time.Duration(rnd.IntN(60)) * time.Millisecond)
			}
			synctest.Wait()

			s := ctl.Status()
			src.mu.Lock()
			src.check()
			maxHS, maxRun := src.maxHS, src.maxRun
			var readyAlive, handshakes int
			for _, r := range src.runs {
				if !r.done && r.ctx.Err() == nil {
					if r.ready {
						readyAlive++
					} else {
						handshakes++
					}
				}
			}
			src.mu.Unlock()
			switch {
			case maxHS > 1:
				fail(step, op, "%d handshakes alive at once", maxHS)
			case maxRun > 2:
				fail(step, op, "%d generations alive at once (at most a draining one beside a handshake)", maxRun)
			case !running && s.State != controller.Stopped && s.State != controller.Idle:
				fail(step, op, "not running but state %s", describe(s))
			case running && !online && s.State != controller.Offline:
				fail(step, op, "offline but state %s", describe(s))
			case running && online && s.State == controller.Connected && readyAlive == 0:
				fail(step, op, "connected without a ready generation alive")
			case running && online && s.State == controller.Connecting && handshakes != 1:
				fail(step, op, "connecting with %d handshakes alive", handshakes)
			case running && online && s.State == controller.Reconnecting && (handshakes != 0 || readyAlive != 0):
				fail(step, op, "reconnecting with %d handshakes and %d ready generations alive", handshakes, readyAlive)
			case (!running || !online) && (handshakes != 0 || readyAlive != 0):
				fail(step, op, "%d handshakes and %d ready generations alive while stopped or offline", handshakes, readyAlive)
			}
		}
		ctl.Stop()
		t.Logf("%d generations started, %d states delivered", ctl.Status().Attempt, states.Load())
		if rs := src.alive(); len(rs) != 0 {
			t.Fatalf("seed %d: %d generations alive after Stop", seed, len(rs))
		}
	})
}
