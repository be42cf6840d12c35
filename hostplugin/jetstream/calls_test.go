//go:build !js

package jetstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/hostplugin/jetstream"
	"github.com/lifeline-go/lifeline/internal/test/hosttest"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// callsStream is the JetStream stream of the default bucket of a log with the default Prefix.
const callsStream = "KV_LIFELINE_calls"

// newCallStore returns a call store on log, closed with the test (before the log).
func newCallStore(t testing.TB, log *jetstream.Log, o *jetstream.CallOptions) *jetstream.CallStore {
	t.Helper()
	s, err := jetstream.NewCallStore(context.Background(), log, o)
	if err != nil {
		t.Fatalf("NewCallStore: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// natsAdmin is the test's own JetStream connection to ns, as an operator's.
func natsAdmin(t testing.TB, ns *natsServer) natsjs.JetStream {
	t.Helper()
	nc, err := nats.Connect(ns.url())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// consumers is how many consumers the bucket's stream has: one per call waiting on a watch.
func consumers(t testing.TB, js natsjs.JetStream) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	s, err := js.Stream(ctx, callsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Consumers
}

// runner is a call's handler that counts its runs.
type runner struct {
	runs atomic.Int32
	out  hostplugin.CallOutcome
}

func (r *runner) run() hostplugin.CallOutcome {
	r.runs.Add(1)
	return r.out
}

func reply(s string) hostplugin.CallOutcome { return hostplugin.CallOutcome{Reply: json.RawMessage(s)} }

// do calls s.Do within bound and fails the test on an error.
func do(t testing.TB, s *jetstream.CallStore, identity, key string, run func() hostplugin.CallOutcome) hostplugin.CallOutcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	out, err := s.Do(ctx, identity, key, run)
	if err != nil {
		t.Fatalf("Do(%q, %q): %v", identity, key, err)
	}
	return out
}

func sameOutcome(a, b hostplugin.CallOutcome) bool {
	return string(a.Reply) == string(b.Reply) && a.Code == b.Code && a.Message == b.Message
}

// Many calls of the same keys at once, half on each of two Hosts: each key runs once in the
// fleet, and every call of it gets that run's outcome.
func TestCallStoresOfTwoHostsRunEachKeyOnce(t *testing.T) {
	ns := startNATS(t)
	stores := []*jetstream.CallStore{newCallStore(t, ns.connect(t, nil), nil), newCallStore(t, ns.connect(t, nil), nil)}
	if a, b := stores[0].Epoch(), stores[1].Epoch(); a == "" || a != b {
		t.Fatalf("epochs of the two Hosts' stores: %q and %q, want one, not empty", a, b)
	}
	const keys, callsPerKey = 4, 8
	runs := make([]atomic.Int32, keys)
	outs := make([][]hostplugin.CallOutcome, keys)
	for k := range outs {
		outs[k] = make([]hostplugin.CallOutcome, callsPerKey)
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, keys*callsPerKey)
	for k := range keys {
		for c := range callsPerKey {
			wg.Go(func() {
				<-start
				ctx, cancel := context.WithTimeout(context.Background(), bound)
				defer cancel()
				out, err := stores[c%2].Do(ctx, "alice", fmt.Sprint("key-", k), func() hostplugin.CallOutcome {
					runs[k].Add(1)
					return reply(fmt.Sprintf(`{"key":%d,"by":%d}`, k, c))
				})
				if err != nil {
					errs <- fmt.Errorf("key %d, call %d: %w", k, c, err)
				}
				outs[k][c] = out
			})
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for k := range keys {
		if n := runs[k].Load(); n != 1 {
			t.Errorf("key %d ran %d times, want 1", k, n)
		}
		for c, out := range outs[k] {
			if !sameOutcome(out, outs[k][0]) || len(out.Reply) == 0 {
				t.Errorf("key %d: call %d got %+v, call 0 %+v: want one outcome with a reply", k, c, out, outs[k][0])
			}
		}
	}
}

// A call whose key another Host's run holds waits on a watch of that key, and gets the run's
// outcome once it is stored, without running.
func TestCallStoreWaitsForTheRunOfAnotherHost(t *testing.T) {
	ns := startNATS(t)
	admin := natsAdmin(t, ns)
	a, b := newCallStore(t, ns.connect(t, nil), nil), newCallStore(t, ns.connect(t, nil), nil)
	gate, running := make(chan struct{}), make(chan struct{})
	aDone := make(chan hostplugin.CallOutcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*bound)
		defer cancel()
		out, _ := a.Do(ctx, "alice", "k", func() hostplugin.CallOutcome {
			close(running)
			<-gate
			return reply(`"from a"`)
		})
		aDone <- out
	}()
	<-running
	other := &runner{out: reply(`"from b"`)}
	bDone := make(chan hostplugin.CallOutcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*bound)
		defer cancel()
		out, err := b.Do(ctx, "alice", "k", other.run)
		if err != nil {
			t.Errorf("b.Do: %v", err)
		}
		bDone <- out
	}()
	waitFor(t, "b's call to watch the key", func() bool { return consumers(t, admin) == 1 })
	select {
	case out := <-bDone:
		t.Fatalf("b's call returned %+v while a's run held the key", out)
	default:
	}
	close(gate)
	if out := <-aDone; string(out.Reply) != `"from a"` {
		t.Errorf("a's call: %+v, want its own run's reply", out)
	}
	if out := <-bDone; string(out.Reply) != `"from a"` {
		t.Errorf("b's call: %+v, want a's run's reply", out)
	}
	if n := other.runs.Load(); n != 0 {
		t.Errorf("b's handler ran %d times, want 0", n)
	}
}

// A re-send, to the same Host or another, gets the first outcome (an error as a reply), and
// runs nothing; the same key of another identity, and another key, are calls of their own.
func TestCallStoreAnswersAReSendWithTheFirstOutcome(t *testing.T) {
	ns := startNATS(t)
	a, b := newCallStore(t, ns.connect(t, nil), nil), newCallStore(t, ns.connect(t, nil), nil)
	first := &runner{out: hostplugin.CallOutcome{Code: wire.CodeApp, Message: "no such order"}}
	if out := do(t, a, "alice", "order-1", first.run); !sameOutcome(out, first.out) {
		t.Fatalf("first call: %+v, want %+v", out, first.out)
	}
	again := &runner{out: reply(`"other"`)}
	for _, s := range []*jetstream.CallStore{a, b} {
		if out := do(t, s, "alice", "order-1", again.run); !sameOutcome(out, first.out) {
			t.Errorf("re-send: %+v, want the first outcome %+v", out, first.out)
		}
	}
	if n := again.runs.Load(); n != 0 {
		t.Errorf("re-sends ran the handler %d times, want 0", n)
	}
	for _, c := range []struct{ identity, key string }{{"bob", "order-1"}, {"alice", "order-2"}, {"alice:", "order-1"}, {"", "aliceorder-1"}} {
		r := &runner{out: reply(`"own"`)}
		if out := do(t, b, c.identity, c.key, r.run); string(out.Reply) != `"own"` || r.runs.Load() != 1 {
			t.Errorf("Do(%q, %q): %+v after %d runs, want its own run's reply after 1", c.identity, c.key, out, r.runs.Load())
		}
	}
}

// A Host that died while its call ran (its NATS connection gone, no outcome stored): another
// Host's re-send waits out the claim's lease, then answers interrupted, and so does every
// later re-send; the call never runs again.
func TestCallStoreAnswersInterruptedForARunWhoseHostDied(t *testing.T) {
	ns := startNATS(t)
	dying := ns.connect(t, nil)
	a := newCallStore(t, dying, nil)
	b, c := newCallStore(t, ns.connect(t, nil), nil), newCallStore(t, ns.connect(t, nil), nil)
	// The Host's call timeout: the claim stands for it and the log's Timeout (1 s) more.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	claimed := time.Now()
	if _, err := a.Do(ctx, "alice", "k", func() hostplugin.CallOutcome {
		_ = dying.Close()
		return reply(`"ran"`)
	}); err != nil {
		t.Fatalf("a.Do: %v", err)
	}
	r := &runner{out: reply(`"again"`)}
	for i, s := range []*jetstream.CallStore{b, c, b} {
		out := do(t, s, "alice", "k", r.run)
		if out.Code != wire.CodeInterrupted {
			t.Errorf("re-send %d: %+v, want code %q", i, out, wire.CodeInterrupted)
		}
		if i == 0 {
			if waited := time.Since(claimed); waited < time.Second {
				t.Errorf("the first re-send was answered %v after the claim, inside its lease (200 ms + 1 s)", waited)
			}
		}
	}
	if n := r.runs.Load(); n != 0 {
		t.Errorf("the re-sends ran the handler %d times, want 0", n)
	}
}

// A waiting call whose own deadline comes before the claim's lease is over says the run is
// still going (hostplugin.ErrCallRunning: the Host answers timeout, never busy) and stores
// nothing: the claimant's outcome, stored later, is the one every later re-send gets, and the
// call runs once.
func TestCallStoreTellsAWaiterAtItsDeadlineThatTheRunIsStillGoing(t *testing.T) {
	ns := startNATS(t)
	admin := natsAdmin(t, ns)
	a, b := newCallStore(t, ns.connect(t, nil), nil), newCallStore(t, ns.connect(t, nil), nil)
	gate, running := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	aDone := make(chan hostplugin.CallOutcome, 1)
	go func() {
		// No deadline: the claim's lease is the default 30 s.
		out, _ := a.Do(context.Background(), "alice", "k", func() hostplugin.CallOutcome {
			close(running)
			<-gate
			return reply(`"late"`)
		})
		aDone <- out
	}()
	<-running
	r := &runner{out: reply(`"again"`)}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if out, err := b.Do(ctx, "alice", "k", r.run); !errors.Is(err, hostplugin.ErrCallRunning) {
		t.Errorf("a waiter at its deadline: %+v, %v; want ErrCallRunning (the run is still going)", out, err)
	}
	release()
	if out := <-aDone; string(out.Reply) != `"late"` {
		t.Errorf("the claimant's own caller: %+v, want its run's reply", out)
	}
	if out := do(t, b, "alice", "k", r.run); string(out.Reply) != `"late"` {
		t.Errorf("a re-send after the run: %+v, want its outcome", out)
	}
	if n := r.runs.Load(); n != 0 {
		t.Errorf("the waiters ran the handler %d times, want 0", n)
	}
	if n := consumers(t, admin); n != 0 {
		t.Errorf("%d watches left on the bucket, want 0", n)
	}
}

// Through two Hosts of the fleet: a keyed call re-sent to the other Host while its first run
// outlasts the re-send's call timeout is answered timeout, never busy, and a re-send after the
// run gets its reply; it ran once.
func TestAReSendToAnotherHostWhileTheFirstRunIsStillGoingIsATimeoutNeverBusy(t *testing.T) {
	ns := startNATS(t)
	var runs atomic.Int32
	entered, gate := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	cfg, err := hostplugin.ParseConfig([]byte(`{"callTimeoutMs":200}`))
	if err != nil {
		t.Fatal(err)
	}
	host := func() *fixture {
		log := ns.connect(t, nil)
		calls := newCallStore(t, log, &jetstream.CallOptions{Lease: cfg.CallTimeout()})
		f := hosttest.New(t, `{"callTimeoutMs":200}`, true, hostplugin.Options{Log: log, Calls: calls})
		t.Cleanup(release) // before the Host's Close, which waits for the run
		h := f.H
		h.HandleCall("overrun", func(context.Context, *hostplugin.Call) (json.RawMessage, error) {
			if runs.Add(1) == 1 {
				close(entered)
			}
			<-gate // past the call timeout: it ignores its context
			return json.RawMessage(`"done"`), nil
		})
		return f
	}
	hostA, hostB := host(), host()
	const call = `{"t":"call","id":1,"name":"overrun","key":"k"}`
	a := hostA.Dial(t)
	a.Expect("ready")
	a.Send(call)
	<-entered
	b := hostB.Dial(t)
	b.Expect("ready")
	b.Send(call)
	if r := b.Expect("reply"); r.Code != wire.CodeTimeout || !strings.Contains(r.Error, "still running") {
		t.Fatalf("the re-send on the other Host: %+v, want timeout saying it is still running", r)
	}
	release()
	if r := a.Expect("reply"); string(r.Data) != `"done"` {
		t.Fatalf("the first run's own page: %+v, want its reply", r)
	}
	b.Send(call)
	if r := b.Expect("reply"); string(r.Data) != `"done"` || runs.Load() != 1 {
		t.Fatalf("a re-send after the run: %+v after %d runs, want the first reply and one run", r, runs.Load())
	}
}

// An outcome is kept for the window from its run's end: a re-send within it runs nothing,
// one after it runs the call again.
func TestCallStoreRunsAKeyAgainAfterTheWindow(t *testing.T) {
	ns := startNATS(t)
	s := newCallStore(t, ns.connect(t, nil), &jetstream.CallOptions{Window: time.Second})
	r := &runner{out: reply(`1`)}
	do(t, s, "alice", "k", r.run)
	do(t, s, "alice", "k", r.run)
	if n := r.runs.Load(); n != 1 {
		t.Fatalf("a re-send at once ran the call: %d runs, want 1", n)
	}
	waitFor(t, "a re-send after the window to run the call", func() bool {
		do(t, s, "alice", "k", r.run)
		return r.runs.Load() == 2
	})
}

// The epoch is the bucket's: every Host reads the one its maker wrote, and a bucket deleted
// and made again (its outcomes gone) has a new one, which every Host announces soon after.
func TestCallStoreEpochIsTheBucketsAndNewWhenItIsMadeAgain(t *testing.T) {
	ns := startNATS(t)
	admin := natsAdmin(t, ns)
	a, b := newCallStore(t, ns.connect(t, nil), nil), newCallStore(t, ns.connect(t, nil), nil)
	old := a.Epoch()
	if old == "" || b.Epoch() != old {
		t.Fatalf("epochs %q and %q, want one, not empty", old, b.Epoch())
	}
	r := &runner{out: reply(`1`)}
	do(t, a, "alice", "k", r.run)

	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := admin.DeleteKeyValue(ctx, "LIFELINE_calls"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both Hosts to announce a new epoch", func() bool {
		e := a.Epoch()
		return e != old && b.Epoch() == e
	})
	if c := newCallStore(t, ns.connect(t, nil), nil); c.Epoch() != a.Epoch() {
		t.Errorf("a third Host's epoch %q, want the fleet's %q", c.Epoch(), a.Epoch())
	}
	do(t, b, "alice", "k", r.run)
	if n := r.runs.Load(); n != 2 {
		t.Errorf("the call in the new bucket: %d runs in all, want 2 (the old outcome is gone with its epoch)", n)
	}
}

// While NATS is down a call is refused with an error (the Host answers busy) and does not
// run; once NATS is back it runs, once, and the bucket (on disk) has kept its epoch.
func TestCallStoreRefusesCallsWhileNATSIsDown(t *testing.T) {
	ns := startNATS(t)
	s := newCallStore(t, ns.connect(t, nil), nil)
	epoch := s.Epoch()
	ns.stop()
	r := &runner{out: reply(`1`)}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if _, err := s.Do(ctx, "alice", "k", r.run); !errors.Is(err, jetstream.ErrCallStoreUnavailable) {
		t.Errorf("Do with NATS down: %v, want ErrCallStoreUnavailable", err)
	}
	if ctx.Err() != nil {
		t.Errorf("Do with NATS down took the whole %v", bound)
	}
	if n := r.runs.Load(); n != 0 {
		t.Fatalf("the call ran %d times with NATS down, want 0", n)
	}
	ns.start()
	waitFor(t, "the call to go through once NATS is back", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		_, err := s.Do(ctx, "alice", "k", r.run)
		return err == nil
	})
	if n := r.runs.Load(); n != 1 {
		t.Errorf("the call ran %d times, want 1", n)
	}
	if s.Epoch() != epoch {
		t.Errorf("epoch after NATS restarted %q, want the bucket's %q", s.Epoch(), epoch)
	}
}

// A store that cannot make its bucket (NATS gone since the log connected: the log itself
// waits for JetStream at Connect) starts without it, with an epoch of its own, refusing
// calls; once NATS is back it makes the bucket in the background and takes its epoch.
func TestCallStoreStartsWithoutJetStreamAndMakesTheBucketLater(t *testing.T) {
	ns := startNATS(t)
	log := ns.connect(t, nil)
	ns.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	s, err := jetstream.NewCallStore(ctx, log, nil)
	if err != nil {
		t.Fatalf("NewCallStore without JetStream: %v, want a store that waits for it", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	own := s.Epoch()
	if !strings.HasPrefix(own, jetstream.UnbornPrefix) {
		t.Errorf("epoch without the bucket %q, want one of the store's own (%s…)", own, jetstream.UnbornPrefix)
	}
	r := &runner{out: reply(`1`)}
	if _, err := s.Do(context.Background(), "alice", "k", r.run); !errors.Is(err, jetstream.ErrCallStoreUnavailable) {
		t.Errorf("Do without the bucket: %v, want ErrCallStoreUnavailable", err)
	}
	ns.start()
	waitFor(t, "the store to make its bucket", func() bool { return !strings.HasPrefix(s.Epoch(), jetstream.UnbornPrefix) })
	do(t, s, "alice", "k", r.run)
	if n := r.runs.Load(); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
}

// A bucket name JetStream refuses is an error at once.
func TestNewCallStoreRefusesABucketNameJetStreamRefuses(t *testing.T) {
	ns := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if _, err := jetstream.NewCallStore(ctx, ns.connect(t, nil), &jetstream.CallOptions{Bucket: "calls.v1"}); err == nil || !strings.Contains(err.Error(), `"calls.v1"`) || ctx.Err() != nil {
		t.Errorf("NewCallStore with bucket calls.v1: %v, want an error naming it at once", err)
	}
}

// An outcome over MaxOutcomeBytes reaches its own caller, and is stored as an internal error
// for a re-send: the run happened, its reply was not kept.
func TestCallStoreKeepsAnOutcomeTooBigAsAnInternalError(t *testing.T) {
	ns := startNATS(t)
	o := &jetstream.CallOptions{MaxOutcomeBytes: 512}
	a, b := newCallStore(t, ns.connect(t, nil), o), newCallStore(t, ns.connect(t, nil), o)
	big := &runner{out: reply(`"` + strings.Repeat("x", 1024) + `"`)}
	if out := do(t, a, "alice", "k", big.run); !sameOutcome(out, big.out) {
		t.Errorf("the run's own caller got %.40q…, want its reply", out.Reply)
	}
	if out := do(t, b, "alice", "k", big.run); out.Code != wire.CodeInternal {
		t.Errorf("re-send: %+v, want code %q", out, wire.CodeInternal)
	}
	if n := big.runs.Load(); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
}

// A Host holds at most MaxWaiters calls waiting for other runs; one more is refused with
// ErrCallStoreFull (the Host answers busy).
func TestCallStoreRefusesAWaiterOverMaxWaiters(t *testing.T) {
	ns := startNATS(t)
	admin := natsAdmin(t, ns)
	a := newCallStore(t, ns.connect(t, nil), nil)
	b := newCallStore(t, ns.connect(t, nil), &jetstream.CallOptions{MaxWaiters: 1})
	gate, running := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(gate)
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*bound)
		defer cancel()
		_, _ = a.Do(ctx, "alice", "k", func() hostplugin.CallOutcome {
			close(running)
			<-gate
			return reply(`1`)
		})
	})
	<-running
	r := &runner{out: reply(`2`)}
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*bound)
		defer cancel()
		_, _ = b.Do(ctx, "alice", "k", r.run)
	})
	waitFor(t, "b's first call to wait", func() bool { return consumers(t, admin) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if _, err := b.Do(ctx, "bob", "k2", r.run); err != nil {
		t.Errorf("a call of another key, not waiting: %v", err)
	}
	if _, err := b.Do(ctx, "alice", "k", r.run); !errors.Is(err, hostplugin.ErrCallStoreFull) {
		t.Errorf("a second waiter: %v, want ErrCallStoreFull", err)
	}
}

// Through two Hosts' events endpoints: both announce the bucket's epoch in their ready
// frames, and a keyed call the page re-sends to the other Host gets the first reply.
func TestPagesKeyedCallReSentToAnotherHostGetsTheFirstReply(t *testing.T) {
	ns := startNATS(t)
	var runs atomic.Int32
	host := func() (*fixture, *jetstream.CallStore) {
		log := ns.connect(t, nil)
		calls := newCallStore(t, log, nil)
		f := hosttest.New(t, `{}`, true, hostplugin.Options{Log: log, Calls: calls})
		f.H.HandleCall("order.place", func(context.Context, *hostplugin.Call) (json.RawMessage, error) {
			return json.RawMessage(fmt.Sprintf(`{"order":%d}`, runs.Add(1))), nil
		})
		return f, calls
	}
	hostA, calls := host()
	hostB, _ := host()
	const call = `{"t":"call","id":7,"name":"order.place","key":"cart-42","data":{"sku":"x"}}`
	var replies, tags []string
	for _, f := range []*fixture{hostA, hostB} {
		c := f.Dial(t)
		ready := c.Expect("ready")
		if ready.Dedup != calls.Epoch() || ready.DedupMs != calls.Window().Milliseconds() {
			t.Errorf("ready frame's dedup %q, window %d ms; want the bucket's epoch %q and the store's window %v", ready.Dedup, ready.DedupMs, calls.Epoch(), calls.Window())
		}
		tags = append(tags, ready.Who)
		c.Send(call)
		r := c.Expect("reply")
		if r.ID != 7 || r.Code != "" {
			t.Fatalf("reply %+v, want id 7 with data", r)
		}
		replies = append(replies, string(r.Data))
		_ = c.Conn.CloseNow()
	}
	if want := []string{`{"order":1}`, `{"order":1}`}; !slices.Equal(replies, want) {
		t.Errorf("replies on host A then host B: %q, want %q", replies, want)
	}
	if tags[0] == "" || tags[0] != tags[1] {
		t.Errorf("the two Hosts tag one identity %q and %q, want one tag: a re-send to the other Host goes as the same identity", tags[0], tags[1])
	}
}

// A session's calls start through the store of the fleet, and a fence written by any Host
// stops them on every other: Start and Fence write only over the revision they read, so a
// call either started before the fence (and the fence says so) or never starts.
func TestCallStoreFencesASessionFleetWide(t *testing.T) {
	ns := startNATS(t)
	a, b := newCallStore(t, ns.connect(t, nil), nil), newCallStore(t, ns.connect(t, nil), nil)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for _, id := range []uint64{1, 2} {
		if err := a.Start(ctx, "x", id); err != nil {
			t.Fatalf("a.Start(x, %d): %v", id, err)
		}
	}
	if started, err := b.Fence(ctx, "x"); err != nil || started != 2 {
		t.Fatalf("b.Fence(x): %d, %v; want 2", started, err)
	}
	if err := a.Start(ctx, "x", 3); !errors.Is(err, hostplugin.ErrSessionFenced) {
		t.Fatalf("a.Start(x, 3) after b's fence: %v, want ErrSessionFenced", err)
	}
	if started, err := a.Fence(ctx, "x"); err != nil || started != 2 {
		t.Fatalf("the fence again, from a: %d, %v; want 2", started, err)
	}
	if started, err := b.Fence(ctx, "y"); err != nil || started != 0 {
		t.Fatalf("b.Fence(y) of a session none of whose calls started: %d, %v; want 0", started, err)
	}
	if err := a.Start(ctx, "y", 1); !errors.Is(err, hostplugin.ErrSessionFenced) {
		t.Fatalf("a.Start(y, 1) after its fence: %v, want ErrSessionFenced", err)
	}

	// Starts and fences at once, on two Hosts, a session each: every fence says exactly
	// whether its session's call started.
	const sessions = 40
	var wg sync.WaitGroup
	startErr, fenced := make([]error, sessions), make([]uint64, sessions)
	for i := range sessions {
		session := fmt.Sprint("race-", i)
		wg.Go(func() { startErr[i] = a.Start(ctx, session, 1) })
		wg.Go(func() {
			var err error
			if fenced[i], err = b.Fence(ctx, session); err != nil {
				t.Errorf("b.Fence(%s): %v", session, err)
			}
		})
	}
	wg.Wait()
	for i := range sessions {
		switch err := startErr[i]; {
		case err == nil && fenced[i] != 1:
			t.Errorf("session %d: its call started, and the fence says %d started", i, fenced[i])
		case errors.Is(err, hostplugin.ErrSessionFenced) && fenced[i] != 0:
			t.Errorf("session %d: its call was refused, and the fence says %d started", i, fenced[i])
		case err != nil && !errors.Is(err, hostplugin.ErrSessionFenced):
			t.Errorf("session %d: Start: %v", i, err)
		}
	}
}

// Through two Hosts of the fleet: a page's session on one Host runs a slow call with another
// waiting behind it; the page, on a session of the other Host now, fences the first; the Host
// answers that call 1 started, and call 2 never does.
func TestAFenceOnOneHostStopsTheSessionsCallsOnAnother(t *testing.T) {
	ns := startNATS(t)
	var mu sync.Mutex
	ran := map[string]int{}
	entered, gate := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	host := func() *fixture {
		log := ns.connect(t, nil)
		calls := newCallStore(t, log, nil)
		f := hosttest.New(t, `{}`, true, hostplugin.Options{Log: log, Calls: calls})
		t.Cleanup(release) // before the Host's Close, which waits for the run
		h := f.H
		h.HandleCall("slow", func(context.Context, *hostplugin.Call) (json.RawMessage, error) {
			close(entered)
			<-gate
			return nil, nil
		})
		h.HandleCall("note", func(_ context.Context, c *hostplugin.Call) (json.RawMessage, error) {
			mu.Lock()
			defer mu.Unlock()
			ran[string(c.Data)]++
			return nil, nil
		})
		return f
	}
	hostA, hostB := host(), host()
	old := hostA.Dial(t)
	x := old.Expect("ready").Session
	old.Send(`{"t":"call","id":1,"name":"slow"}`)
	<-entered
	old.Send(`{"t":"call","id":2,"name":"note","data":"behind"}`)
	now := hostB.Dial(t)
	now.Expect("ready")
	now.Send(`{"t":"fence","session":"` + x + `"}`)
	if r := now.Expect("fenced"); r.Session != x || r.Started != 1 {
		t.Fatalf("the fence on host B: %+v, want session %q with call 1 started", r, x)
	}
	release()
	if r := old.Expect("reply"); r.ID != 1 {
		t.Fatalf("host A's session: %+v, want call 1's reply", r)
	}
	waitFor(t, "host A to refuse the fenced session's next call", func() bool { return hostA.Logs.Has("fenced it") })
	mu.Lock()
	defer mu.Unlock()
	if n := ran[`"behind"`]; n != 0 {
		t.Fatalf("host A ran the call behind the fence %d times, want 0", n)
	}
}

// BenchmarkCallStore reports how long a keyed call spends in a call store on a JetStream of
// its own (an embedded server on loopback): "first" claims the key, runs nothing and stores
// the outcome (two writes); "re-send" reads the outcome back (one read).
func BenchmarkCallStore(b *testing.B) {
	ns := startNATS(b)
	s := newCallStore(b, ns.connect(b, nil), nil)
	done := func() hostplugin.CallOutcome { return reply(`{}`) }
	var n atomic.Int64
	for _, bc := range []struct {
		name string
		key  func() string
	}{
		{"first", func() string { return fmt.Sprint("first-", n.Add(1)) }},
		{"re-send", func() string { return "again" }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			if _, err := s.Do(ctx, "bench", "again", done); err != nil {
				b.Fatal(err)
			}
			var took []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, err := s.Do(ctx, "bench", bc.key(), done); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(t0))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
		})
	}
}
