package gateway_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/internal/test/testserver"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// serverURL is the test Host's base URL: in-process natively (main_notjs_test.go), from
// LIFELINE_TEST_SERVER under js/wasm (main_js_test.go), in memory inside a bubble
// (bubble_notjs_test.go), where serverDial carries the control socket (nil: the defaults).
var (
	serverURL  string
	serverDial *websocket.DialOptions
)

// ctxT shortens the control calls' signatures.
type ctxT = context.Context

// bound is the hard limit of every wait on the network. Generous: the race detector on two
// shared cores is slow, and a wait that hits it is a failure, not a retry.
const bound = 10 * time.Second

// quiet discards logs: tests provoke the errors they log.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newScenario opens an isolated scenario on the test Host, or skips the test without one.
func newScenario(t *testing.T) *testserver.Scenario {
	t.Helper()
	if serverURL == "" {
		t.Skip("no test Host: set " + testserver.EnvServer + " to the URL printed by " +
			"`go run ./internal/test/testserver/cmd/testserver` (scripts/wasmtest.sh does)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	sc, err := testserver.DialWith(ctx, serverURL, serverDial)
	if err != nil {
		t.Fatalf("newScenario: %v", err)
	}
	t.Cleanup(func() { sc.Close() })
	return sc
}

// do runs a control call with a hard bound and fails the test on error.
func do[T any](t *testing.T, what string, f func(ctx context.Context) (T, error)) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound+5*time.Second)
	defer cancel()
	v, err := f(ctx)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

func do0(t *testing.T, what string, f func(ctx context.Context) error) {
	t.Helper()
	do(t, what, func(ctx context.Context) (struct{}, error) { return struct{}{}, f(ctx) })
}

// waitClosed waits, up to bound, until ch is closed.
func waitClosed(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(bound):
		t.Fatalf("waiting for %s: not within %v", what, bound)
	}
}

// waitHost waits until host's field compares to value.
func waitHost(t *testing.T, sc *testserver.Scenario, host, field, cmp string, value int) testserver.HostStats {
	t.Helper()
	return do(t, fmt.Sprintf("wait %s.%s %s %d", host, field, cmp, value), func(ctx context.Context) (testserver.HostStats, error) {
		return sc.Wait(ctx, host, field, cmp, value, bound)
	})
}

func stats(t *testing.T, sc *testserver.Scenario) testserver.Reply {
	t.Helper()
	return do(t, "stats", sc.Stats)
}

// pingsReceived counts the liveness probes the host got.
func pingsReceived(t *testing.T, sc *testserver.Scenario, host string) int {
	t.Helper()
	n := 0
	for _, f := range stats(t, sc).Hosts[host].Received {
		if f.T == wire.TypePing {
			n++
		}
	}
	return n
}

// config resolves a recovery config from milliseconds; zero fields keep their defaults.
func config(t *testing.T, r controller.Recovery) controller.Config {
	t.Helper()
	c, err := controller.Resolve(r)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fast is a config for tests: short deadline, 5 ms first cap, reset on ready.
func fast() controller.Recovery {
	return controller.Recovery{
		SlowAfterMs: new(100.0), DeadlineMs: new(400.0), InitialDelayMs: new(5.0),
		MaxDelayMs: new(50.0), StableAfterMs: new(0.0),
	}
}

// runRecord is one Run call as the wrapping source saw it.
type runRecord struct {
	err       error
	cancelled time.Time // when ctx ended; zero if it never did before Run returned
	returned  time.Time
}

// rig is a gateway driven by a real controller, with every status and every Run recorded.
type rig struct {
	t   *testing.T
	gw  *gateway.Gateway
	ctl *controller.Controller

	mu       sync.Mutex
	statuses []controller.Status
	runs     []runRecord
	changed  chan struct{}
	seen     int // statuses consumed by waitState
}

func newRig(t *testing.T, url string, rec controller.Recovery, opts *gateway.Options) *rig {
	t.Helper()
	if opts == nil {
		opts = &gateway.Options{}
	}
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	if opts.CloseGrace == 0 {
		opts.CloseGrace = 200 * time.Millisecond
	}
	gw, err := gateway.New(url, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, gw: gw, changed: make(chan struct{})}
	src := controller.SourceFunc(func(ctx context.Context, gen *controller.Generation) error {
		var rec runRecord
		var cmu sync.Mutex
		stop := context.AfterFunc(ctx, func() {
			cmu.Lock()
			rec.cancelled = time.Now()
			cmu.Unlock()
		})
		err := gw.Run(ctx, gen)
		ret := time.Now()
		stop()
		cmu.Lock()
		rec.err, rec.returned = err, ret
		done := rec
		cmu.Unlock()
		r.mu.Lock()
		r.runs = append(r.runs, done)
		r.touch()
		r.mu.Unlock()
		return err
	})
	ctl, err := controller.New(src, config(t, rec), &controller.Options{
		Logger: quiet,
		OnChange: func(s controller.Status) {
			r.mu.Lock()
			r.statuses = append(r.statuses, s)
			r.touch()
			r.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.ctl = ctl
	t.Cleanup(func() {
		ctl.Stop()
		gw.Close(nil)
	})
	return r
}

// touch wakes waiters. r.mu must be held.
func (r *rig) touch() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// waitState consumes statuses until one satisfies pred.
func (r *rig) waitState(what string, pred func(controller.Status) bool) controller.Status {
	r.t.Helper()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		for r.seen < len(r.statuses) {
			s := r.statuses[r.seen]
			r.seen++
			if pred(s) {
				r.mu.Unlock()
				return s
			}
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			r.mu.Lock()
			last := r.statuses[max(len(r.statuses)-1, 0):]
			r.mu.Unlock()
			r.t.Fatalf("waiting for %s: not within %v; last status %+v", what, bound, last)
		}
	}
}

func (r *rig) waitConnected() controller.Status {
	r.t.Helper()
	return r.waitState("connected", func(s controller.Status) bool { return s.State == controller.Connected })
}

// waitFailure waits for the controller to report a failed attempt.
func (r *rig) waitFailure() controller.Status {
	r.t.Helper()
	return r.waitState("a failure", func(s controller.Status) bool {
		return s.State == controller.Reconnecting && s.Err != nil
	})
}

// waitRuns waits until n Run calls have returned and returns them.
func (r *rig) waitRuns(n int) []runRecord {
	r.t.Helper()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		if len(r.runs) >= n {
			out := append([]runRecord(nil), r.runs...)
			r.mu.Unlock()
			return out
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			r.t.Fatalf("waiting for %d Run calls to return: not within %v", n, bound)
		}
	}
}

func (r *rig) allStatuses() []controller.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]controller.Status(nil), r.statuses...)
}

// recorder collects a subscription's deliveries.
type recorder struct {
	mu      sync.Mutex
	got     []gateway.Delivery
	changed chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) handle(d gateway.Delivery) {
	r.mu.Lock()
	r.got = append(r.got, d)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

func (r *recorder) all() []gateway.Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]gateway.Delivery(nil), r.got...)
}

// waitFor waits until pred holds for the deliveries so far.
func (r *recorder) waitFor(t *testing.T, what string, pred func([]gateway.Delivery) bool) []gateway.Delivery {
	t.Helper()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		got := r.got
		ch := r.changed
		ok := pred(got)
		r.mu.Unlock()
		if ok {
			return append([]gateway.Delivery(nil), got...)
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("waiting for %s: not within %v; got %d deliveries: %s", what, bound, len(got), summary(got))
		}
	}
}

// waitSeq waits until an event or reset at seq >= n was delivered.
func (r *recorder) waitSeq(t *testing.T, n uint64) []gateway.Delivery {
	t.Helper()
	return r.waitFor(t, fmt.Sprintf("seq %d", n), func(ds []gateway.Delivery) bool {
		return len(ds) > 0 && ds[len(ds)-1].Seq >= n
	})
}

// checkStream fails unless ds is a consistent stream: a reset first, then events with
// consecutive seqs, each later reset restarting the count. It returns the number of resets.
func checkStream(t *testing.T, ds []gateway.Delivery) int {
	t.Helper()
	resets := 0
	var next uint64
	for i, d := range ds {
		switch {
		case d.Reset:
			resets++
			next = d.Seq + 1
		case i == 0:
			t.Fatalf("delivery 0 is event %d, want a reset first", d.Seq)
		case d.Seq != next:
			t.Fatalf("delivery %d is event %d, want %d (lost or duplicated); around it: %s",
				i, d.Seq, next, summary(ds[max(i-3, 0):min(i+3, len(ds))]))
		default:
			next++
		}
	}
	return resets
}

func summary(ds []gateway.Delivery) string {
	var b strings.Builder
	for i, d := range ds {
		if i > 0 {
			b.WriteString(" ")
		}
		if d.Reset {
			fmt.Fprintf(&b, "R%d", d.Seq)
		} else {
			fmt.Fprintf(&b, "%d", d.Seq)
		}
		if b.Len() > 400 {
			b.WriteString(" …")
			break
		}
	}
	return b.String()
}
