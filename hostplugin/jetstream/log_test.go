//go:build !js

package jetstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/hostplugin/jetstream"
	"github.com/lifeline-go/lifeline/internal/test/hosttest"
)

// natsServer is an embedded NATS server with JetStream on a loopback port.
type natsServer struct {
	t    testing.TB
	srv  *server.Server
	dir  string
	port int
}

func startNATS(t testing.TB) *natsServer {
	t.Helper()
	ns := &natsServer{t: t, dir: t.TempDir(), port: -1}
	ns.start()
	t.Cleanup(ns.stop)
	return ns
}

func (ns *natsServer) start() {
	ns.t.Helper()
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: ns.port, JetStream: true, StoreDir: ns.dir,
		NoLog: true, NoSigs: true,
	})
	if err != nil {
		ns.t.Fatalf("nats server: %v", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		ns.t.Fatal("nats server not ready within 10 s")
	}
	ns.srv = srv
	ns.port = srv.Addr().(*net.TCPAddr).Port
}

func (ns *natsServer) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", ns.port) }

func (ns *natsServer) stop() {
	if ns.srv != nil {
		ns.srv.Shutdown()
		ns.srv.WaitForShutdown()
		ns.srv = nil
	}
}

// connect returns a JetStream log on ns, closed with the test.
func (ns *natsServer) connect(t testing.TB, l *logs) *jetstream.Log {
	t.Helper()
	var logger *slog.Logger
	if l != nil {
		logger = slog.New(l)
	} else {
		logger = slog.New(slog.DiscardHandler)
	}
	log, err := jetstream.Connect(ns.url(), &jetstream.Options{Logger: logger, MaxEvents: 64, Timeout: time.Second})
	if err != nil {
		t.Fatalf("jetstream.Connect: %v", err)
	}
	t.Cleanup(func() { _ = log.Close() })
	return log
}

func jsAppendN(t testing.TB, log hostplugin.StreamLog, stream string, from, n int) []hostplugin.Event {
	t.Helper()
	var out []hostplugin.Event
	for i := from; i < from+n; i++ {
		ev, err := log.Append(context.Background(), stream, json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)))
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		out = append(out, ev)
	}
	return out
}

func TestJetStreamLogsOfTwoHostsShareSequencesAndTheEpoch(t *testing.T) {
	ns := startNATS(t)
	a, b := ns.connect(t, nil), ns.connect(t, nil)
	ctx := context.Background()

	var all []hostplugin.Event
	for i := range 6 {
		log := a
		if i%2 == 1 {
			log = b
		}
		all = append(all, jsAppendN(t, log, "s", i, 1)...)
	}
	for i, ev := range all {
		if ev.Seq != uint64(i+1) || ev.Epoch != all[0].Epoch || ev.Epoch == "" {
			t.Fatalf("event %d = seq %d epoch %q, want seq %d epoch %q", i, ev.Seq, ev.Epoch, i+1, all[0].Epoch)
		}
	}
	for name, log := range map[string]*jetstream.Log{"a": a, "b": b} {
		events, head, ok, err := log.Since(ctx, "s", hostplugin.Cursor{Epoch: all[0].Epoch, Seq: 2})
		if err != nil || !ok || head != (hostplugin.Cursor{Epoch: all[0].Epoch, Seq: 6}) || len(events) != 4 {
			t.Fatalf("%s.Since(seq 2) = %d events, head %+v, ok %v, err %v; want 4, seq 6, true", name, len(events), head, ok, err)
		}
		for i, ev := range events {
			if ev.Seq != uint64(i+3) || string(ev.Data) != string(all[i+2].Data) {
				t.Fatalf("%s.Since: event %d = %d %s, want %d %s", name, i, ev.Seq, ev.Data, i+3, all[i+2].Data)
			}
		}
	}
}

// TestHostsAppendingAtOnceToStreamsNewToThemNumberEveryEventOnce has three Hosts append at once
// to streams none of them knows the head of: each one's first append to a stream is published
// on no head, refused when another Host stored first, and numbered again from the head it read
// alongside the publish, which may already be stale. Whatever the interleaving, each stream's
// events are numbered 1…n in one epoch, each number once.
func TestHostsAppendingAtOnceToStreamsNewToThemNumberEveryEventOnce(t *testing.T) {
	ns := startNATS(t)
	hosts := []*jetstream.Log{ns.connect(t, nil), ns.connect(t, nil), ns.connect(t, nil)}
	const streams, each = 4, 8
	var mu sync.Mutex
	got := map[string][]hostplugin.Event{}
	var wg sync.WaitGroup
	for h, log := range hosts {
		wg.Go(func() {
			for i := range each {
				for k := range streams {
					stream := fmt.Sprintf("s%d", (k+h)%streams) // each Host in another order
					ev, err := log.Append(context.Background(), stream, json.RawMessage(fmt.Sprintf(`{"h":%d,"i":%d}`, h, i)))
					if err != nil {
						t.Errorf("Host %d: Append to %s: %v", h, stream, err)
						return
					}
					mu.Lock()
					got[stream] = append(got[stream], ev)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for k := range streams {
		stream := fmt.Sprintf("s%d", k)
		evs := got[stream]
		seen := map[uint64]bool{}
		for _, ev := range evs {
			if ev.Epoch != evs[0].Epoch || ev.Seq < 1 || ev.Seq > uint64(len(hosts)*each) || seen[ev.Seq] {
				t.Fatalf("%s: event seq %d epoch %q among %d events of epoch %q: want 1…%d once each, one epoch", stream, ev.Seq, ev.Epoch, len(evs), evs[0].Epoch, len(hosts)*each)
			}
			seen[ev.Seq] = true
		}
		if len(seen) != len(hosts)*each {
			t.Fatalf("%s: %d events stored, want %d", stream, len(seen), len(hosts)*each)
		}
	}
}

func TestJetStreamLogResetsCursorsItCannotVouchFor(t *testing.T) {
	ns := startNATS(t)
	log := ns.connect(t, nil) // keeps 64 events
	ctx := context.Background()

	if _, head, ok, err := log.Since(ctx, "never", hostplugin.Cursor{}); ok || err != nil || head.Seq != 0 || !strings.HasPrefix(head.Epoch, jetstream.UnbornPrefix) {
		t.Fatalf("Since on a stream never written = head %+v ok %v err %v, want a reset to the unborn epoch", head, ok, err)
	}
	evs := jsAppendN(t, log, "s", 0, 100)
	epoch := evs[0].Epoch
	tests := []struct {
		name string
		cur  hostplugin.Cursor
		ok   bool
		n    int
	}{
		{"a fresh subscription is reset", hostplugin.Cursor{}, false, 0},
		{"a cursor of another epoch is reset", hostplugin.Cursor{Epoch: "other", Seq: 90}, false, 0},
		{"a cursor from the future is reset", hostplugin.Cursor{Epoch: epoch, Seq: 101}, false, 0},
		{"a cursor older than the log keeps is reset", hostplugin.Cursor{Epoch: epoch, Seq: 30}, false, 0},
		{"the oldest kept cursor replays everything kept", hostplugin.Cursor{Epoch: epoch, Seq: 36}, true, 64},
		{"a cursor at the head replays nothing", hostplugin.Cursor{Epoch: epoch, Seq: 100}, true, 0},
		{"a short replay", hostplugin.Cursor{Epoch: epoch, Seq: 97}, true, 3},
	}
	for _, tt := range tests {
		events, head, ok, err := log.Since(ctx, "s", tt.cur)
		if err != nil || ok != tt.ok || len(events) != tt.n || head != (hostplugin.Cursor{Epoch: epoch, Seq: 100}) {
			t.Errorf("%s: Since(%+v) = %d events, head %+v, ok %v, err %v; want %d, seq 100, %v", tt.name, tt.cur, len(events), head, ok, err, tt.n, tt.ok)
			continue
		}
		for i, ev := range events {
			if want := tt.cur.Seq + uint64(i) + 1; ev.Seq != want {
				t.Errorf("%s: event %d has seq %d, want %d", tt.name, i, ev.Seq, want)
			}
		}
	}
}

func TestJetStreamLogEpochChangesWhenTheStreamIsRecreated(t *testing.T) {
	ns := startNATS(t)
	log := ns.connect(t, nil)
	first := jsAppendN(t, log, "s", 0, 3)

	nc, err := nats.Connect(ns.url())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := natsjs.New(nc)
	names := js.StreamNames(context.Background())
	for name := range names.Name() {
		if err := js.DeleteStream(context.Background(), name); err != nil {
			t.Fatal(err)
		}
	}

	again := jsAppendN(t, log, "s", 0, 1)
	if again[0].Epoch == first[0].Epoch || again[0].Seq != 1 {
		t.Fatalf("after the stream was recreated: epoch %q seq %d, want a new epoch (not %q) and seq 1", again[0].Epoch, again[0].Seq, first[0].Epoch)
	}
	if _, head, ok, _ := log.Since(context.Background(), "s", hostplugin.Cursor{Epoch: first[0].Epoch, Seq: 3}); ok || head.Epoch != again[0].Epoch {
		t.Fatalf("Since with the old epoch: head %+v ok %v, want a reset to epoch %q", head, ok, again[0].Epoch)
	}
}

func TestJetStreamFollowDeliversEveryHostsEventsInOrder(t *testing.T) {
	ns := startNATS(t)
	a, b := ns.connect(t, nil), ns.connect(t, nil)
	jsAppendN(t, a, "s", 0, 2) // before Follow: not delivered

	var mu sync.Mutex
	var got []uint64
	stop := b.Follow("s", func(ev hostplugin.Event) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, ev.Seq)
	})
	defer stop()
	waitFor(t, "the follow to start", func() bool { return jetstream.Started(b, "s") })
	for i := range 20 {
		log := a
		if i%3 == 0 {
			log = b
		}
		jsAppendN(t, log, "s", i, 1)
	}
	waitFor(t, "20 followed events", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 20
	})
	mu.Lock()
	defer mu.Unlock()
	for i, seq := range got {
		if seq != uint64(i+3) {
			t.Fatalf("followed seqs %v: want 3..22 in order", got)
		}
	}
}

func TestJetStreamFollowWaitsForAStreamThatDoesNotExistYet(t *testing.T) {
	ns := startNATS(t)
	a, b := ns.connect(t, nil), ns.connect(t, nil)
	got := make(chan hostplugin.Event, 4)
	stop := b.Follow("later", func(ev hostplugin.Event) { got <- ev })
	defer stop()
	waitFor(t, "the follow to start", func() bool { return jetstream.Started(b, "later") })
	jsAppendN(t, a, "later", 0, 1)
	select {
	case ev := <-got:
		if ev.Seq != 1 || ev.Epoch == "" {
			t.Fatalf("first followed event = %+v, want seq 1 with an epoch", ev)
		}
	case <-time.After(bound):
		t.Fatal("the event of a stream created after Follow never arrived")
	}
}

// followed collects what a Follow delivers.
type followed struct {
	mu     sync.Mutex
	events []hostplugin.Event
}

func follow(t testing.TB, log hostplugin.StreamLog, stream string) *followed {
	t.Helper()
	f := &followed{}
	t.Cleanup(log.Follow(stream, func(ev hostplugin.Event) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.events = append(f.events, ev)
	}))
	if js, ok := log.(*jetstream.Log); ok {
		waitFor(t, "the follow of "+stream+" to start", func() bool { return jetstream.Started(js, stream) })
	}
	return f
}

// wait returns the first n events delivered, failing the test after d.
func (f *followed) wait(t testing.TB, d time.Duration, n int) []hostplugin.Event {
	t.Helper()
	waitUntil(t, d, fmt.Sprintf("%d followed events", n), func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.events) >= n
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]hostplugin.Event(nil), f.events[:n]...)
}

func seqsOf(events []hostplugin.Event) []uint64 {
	var out []uint64
	for _, ev := range events {
		out = append(out, ev.Seq)
	}
	return out
}

// shardOf returns the JetStream stream (the shard) that holds stream, through a connection
// of the test's own.
func shardOf(t testing.TB, ns *natsServer, log *jetstream.Log, stream string) natsjs.Stream {
	t.Helper()
	nc, err := nats.Connect(ns.url())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := natsjs.New(nc)
	s, err := js.Stream(context.Background(), jetstream.ShardOf(log, stream))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// republishTo points the RePublish of the shard holding stream at dest (nil: none) and
// returns what it was.
func republishTo(t testing.TB, ns *natsServer, log *jetstream.Log, stream string, dest *natsjs.RePublish) *natsjs.RePublish {
	t.Helper()
	s := shardOf(t, ns, log, stream)
	nc, err := nats.Connect(ns.url())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := natsjs.New(nc)
	cfg := s.CachedInfo().Config
	was := cfg.RePublish
	cfg.RePublish = dest
	if _, err := js.UpdateStream(context.Background(), cfg); err != nil {
		t.Fatalf("UpdateStream: %v", err)
	}
	return was
}

// Follow hears the copies JetStream republishes; an event whose copy never reached the Host
// (lost with a NATS node or the connection) is read from the stream: before the next copy
// when one comes (its Nats-Last-Sequence shows the gap), and when the stream has been quiet
// for a while (5 s) when none does.
func TestJetStreamFollowReadsTheEventsWhoseLiveCopiesWereLost(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the quiet check, 5 s after the last event, to find copies lost with nothing after them (make test runs it)")
	}
	ns := startNATS(t)
	a, b := ns.connect(t, nil), ns.connect(t, nil)
	jsAppendN(t, a, "s", 0, 1)
	got := follow(t, b, "s")

	var lose atomic.Bool
	jetstream.DropCopies(b, func(string) bool { return lose.Load() })
	lose.Store(true)
	jsAppendN(t, a, "s", 1, 3) // seqs 2–4: their copies are lost
	lose.Store(false)
	jsAppendN(t, a, "s", 4, 1) // seq 5: its copy shows the gap
	if seqs := seqsOf(got.wait(t, bound, 4)); fmt.Sprint(seqs) != "[2 3 4 5]" {
		t.Fatalf("followed %v, want [2 3 4 5]", seqs)
	}

	lose.Store(true)
	jsAppendN(t, a, "s", 5, 2) // seqs 6–7, and nothing after them
	lose.Store(false)
	events := got.wait(t, 5*time.Second+bound, 6)
	if seqs := seqsOf(events); fmt.Sprint(seqs) != "[2 3 4 5 6 7]" {
		t.Fatalf("followed %v, want [2 3 4 5 6 7]", seqs)
	}
	for _, ev := range events {
		if string(ev.Data) != fmt.Sprintf(`{"i":%d}`, ev.Seq-1) {
			t.Fatalf("seq %d delivered with %s, want {\"i\":%d}", ev.Seq, ev.Data, ev.Seq-1)
		}
	}
}

// A shard whose RePublish was taken away (an operator's update) is given it back, as soon as
// NATS advises the update.
func TestJetStreamLogGivesAShardWithoutRePublishItBack(t *testing.T) {
	ns := startNATS(t)
	a, b := ns.connect(t, nil), ns.connect(t, nil)
	jsAppendN(t, a, "s", 0, 1)
	live := republishTo(t, ns, a, "s", nil)
	got := follow(t, b, "s")
	waitFor(t, "the shard to republish again", func() bool {
		rp := shardOf(t, ns, a, "s").CachedInfo().Config.RePublish
		return rp != nil && rp.Destination == live.Destination
	})
	jsAppendN(t, a, "s", 1, 3)
	if seqs := seqsOf(got.wait(t, bound, 3)); fmt.Sprint(seqs) != "[2 3 4]" {
		t.Fatalf("followed %v, want [2 3 4]", seqs)
	}
}

// A shard deleted and made again starts its sequences over, and its streams start new
// epochs: Follow moves to the new epoch instead of taking its first events for copies it has
// seen.
func TestJetStreamFollowMovesToAStreamMadeAgain(t *testing.T) {
	ns := startNATS(t)
	a, b := ns.connect(t, nil), ns.connect(t, nil)
	old := jsAppendN(t, a, "s", 0, 3)
	got := follow(t, b, "s")
	jsAppendN(t, a, "s", 3, 1)
	got.wait(t, bound, 1)

	s := shardOf(t, ns, a, "s")
	nc, err := nats.Connect(ns.url())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := natsjs.New(nc)
	if err := js.DeleteStream(context.Background(), s.CachedInfo().Config.Name); err != nil {
		t.Fatal(err)
	}
	again := jsAppendN(t, a, "s", 0, 2)
	events := got.wait(t, bound, 3)
	if events[0].Seq != 4 || events[0].Epoch != old[0].Epoch {
		t.Fatalf("first followed event %+v, want seq 4 of epoch %q", events[0], old[0].Epoch)
	}
	for i, ev := range events[1:] {
		if ev.Seq != uint64(i+1) || ev.Epoch != again[0].Epoch || ev.Epoch == old[0].Epoch {
			t.Fatalf("after the stream was made again: %+v, want seq %d of the new epoch %q", ev, i+1, again[0].Epoch)
		}
	}
}

func TestAppendUniqueStoresOneEventPerIDAcrossHosts(t *testing.T) {
	ns := startNATS(t)
	a, b := ns.connect(t, nil), ns.connect(t, nil)
	ctx := context.Background()
	build := func(seq uint64) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"n":%d}`, seq)) }
	stored := 0
	for sec := range 5 {
		for _, log := range []*jetstream.Log{a, b, a} {
			ev, ok, err := log.AppendUnique(ctx, "ticks", fmt.Sprintf("tick-%d", sec), build)
			if err != nil {
				t.Fatalf("AppendUnique second %d: %v", sec, err)
			}
			if ok {
				stored++
				if string(ev.Data) != fmt.Sprintf(`{"n":%d}`, ev.Seq) {
					t.Fatalf("stored %s as seq %d: the data was built for another seq", ev.Data, ev.Seq)
				}
			}
		}
	}
	_, head, _, _ := b.Since(ctx, "ticks", hostplugin.Cursor{})
	if stored != 5 || head.Seq != 5 {
		t.Fatalf("5 ids from 3 publishers: %d stored, head %d; want 5 and 5", stored, head.Seq)
	}
}

func TestJetStreamLogDegradesToResetsWhileNATSIsDownAndRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("stops and restarts a NATS server and waits out the client's real reconnect: about 5 s (make test runs it)")
	}
	ns := startNATS(t)
	l := &logs{}
	log := ns.connect(t, l)
	evs := jsAppendN(t, log, "s", 0, 3)
	cur := hostplugin.Cursor{Epoch: evs[0].Epoch, Seq: 1}

	ns.stop()
	waitFor(t, "the log to report the lost connection", func() bool { return !log.Health().Connected })
	events, head, ok, err := log.Since(context.Background(), "s", cur)
	if err != nil || ok || len(events) != 0 || head != (hostplugin.Cursor{Epoch: evs[0].Epoch, Seq: 3}) {
		t.Fatalf("Since while NATS is down = %d events, head %+v, ok %v, err %v; want a reset to the last known head", len(events), head, ok, err)
	}
	if _, err := log.Append(context.Background(), "s", json.RawMessage(`1`)); err == nil {
		t.Fatal("Append while NATS is down succeeded")
	}
	if !l.Has("ERROR", "lost the NATS connection") {
		t.Fatalf("no error logged for the lost connection:\n%s", l)
	}
	if h := log.Health(); h.Outages != 1 || h.DownSince.IsZero() {
		t.Fatalf("Health while down = %+v, want 1 outage with its start", h)
	}

	ns.start() // same port, same store
	waitFor(t, "the log to reconnect", func() bool { return log.Health().Connected })
	events, _, ok, err = log.Since(context.Background(), "s", cur)
	if err != nil || !ok || len(events) != 2 {
		t.Fatalf("Since after recovery = %d events, ok %v, err %v; want the 2-event replay", len(events), ok, err)
	}
	if ev := jsAppendN(t, log, "s", 3, 1)[0]; ev.Seq != 4 || ev.Epoch != evs[0].Epoch {
		t.Fatalf("Append after recovery = %+v, want seq 4 in the same epoch", ev)
	}
	if !l.Has("INFO", "NATS connection is back") {
		t.Fatalf("no recovery logged:\n%s", l)
	}
}

// A page on one Host receives what another Host publishes, and resumes on the other Host by
// its cursor: the fleet's promise, end to end through two Hosts' events endpoints.
func TestPagesResumeAcrossHostsSharingAJetStreamLog(t *testing.T) {
	ns := startNATS(t)
	hostA := newLogFixture(t, ns.connect(t, nil))
	hostB := newLogFixture(t, ns.connect(t, nil))
	ctx := context.Background()
	if _, err := hostA.H.Publish(ctx, "s", json.RawMessage(`{"i":1}`)); err != nil {
		t.Fatal(err)
	}

	c := hostB.Dial(t)
	c.Expect("ready")
	c.Send(`{"t":"sub","stream":"s"}`)
	reset := c.Expect("reset")
	if reset.Seq != 1 || reset.Epoch == "" {
		t.Fatalf("fresh sub on host B = %+v, want a reset at seq 1 with the shared epoch", reset)
	}
	for i := 2; i <= 4; i++ {
		if _, err := hostA.H.Publish(ctx, "s", json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))); err != nil {
			t.Fatal(err)
		}
		if ev := c.Expect("event"); ev.Seq != uint64(i) {
			t.Fatalf("event from host A via host B: seq %d, want %d", ev.Seq, i)
		}
	}
	_ = c.Conn.CloseNow()
	for i := 5; i <= 6; i++ {
		if _, err := hostB.H.Publish(ctx, "s", json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	c = hostA.Dial(t)
	c.Expect("ready")
	c.Send(fmt.Sprintf(`{"t":"sub","stream":"s","epoch":%q,"after":4}`, reset.Epoch))
	for i := 5; i <= 6; i++ {
		if ev := c.Expect("event"); ev.Seq != uint64(i) || string(ev.Data) != fmt.Sprintf(`{"i":%d}`, i) {
			t.Fatalf("replay on host A: %+v, want seq %d", ev, i)
		}
	}
}

// newLogFixture is a ready Host with the default config on log.
func newLogFixture(t testing.TB, log hostplugin.StreamLog) *fixture {
	t.Helper()
	return hosttest.New(t, `{}`, true, hostplugin.Options{Log: log})
}

// failoverBound is how soon publishing and live delivery must resume on every Host after a
// NATS node is SIGKILLed, counted from the moment the stream has a leader again.
const failoverBound = 3 * time.Second

// A SIGKILLed node of a 3-node NATS cluster costs the Hosts of a fleet no more than the
// stream's own failover: whichever node dies, every surviving Host publishes and delivers
// live again within failoverBound of the stream having a leader (at once when the stream
// kept its leader; after JetStream elected a new one when the leader died), and each Host's
// Follow delivers every stored event exactly once, in order. One Host is connected to the
// node that dies (it reconnects), one to a node that lives; both publish the same ids every
// 100 ms, as fleet ticks do.
func TestJetStreamLogResumesWithinThreeSecondsOfANATSNodeCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("SIGKILLs a node of a 3-node NATS cluster in three cases: about 40 s")
	}
	tests := []struct {
		name   string
		victim func(streamLeader, metaLeader, other string) string
	}{
		{"the stream leader dies", func(sl, _, _ string) string { return sl }},
		{"the meta leader, leading no stream, dies", func(_, ml, _ string) string { return ml }},
		{"a node leading nothing dies", func(_, _, o string) string { return o }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startNATSCluster(t)
			stream := arrangeLeaders(t, c)
			sl, ml := stream.leader(t), c.meta(c.nodes[0]).Leader
			other := ""
			for _, n := range c.nodes {
				if n.name != sl && n.name != ml {
					other = n.name
				}
			}
			victim := c.node(tt.victim(sl, ml, other))
			var survivor *natsNode
			for _, n := range c.nodes {
				if n != victim {
					survivor = n
					break
				}
			}
			t.Logf("stream leader %s, meta leader %s; killing %s", sl, ml, victim.name)
			elected := watchLeaderElections(t, survivor, stream.name)

			hosts := []*failoverHost{
				newFailoverHost(t, "the Host on the dying node", victim),
				newFailoverHost(t, "the Host on a living node", survivor),
			}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for _, h := range hosts {
				wg.Go(func() { h.publish(ctx) })
			}
			defer func() {
				cancel()
				wg.Wait()
			}()
			waitUntil(t, 10*time.Second, "both Hosts to deliver 5 live events", func() bool {
				return hosts[0].delivered() >= 5 && hosts[1].delivered() >= 5
			})

			killed := time.Now()
			c.kill(victim)
			leaderBack := killed
			if victim.name == sl {
				leaderBack = elected.wait(t, killed)
				t.Logf("kill → new stream leader elected: %v", leaderBack.Sub(killed).Round(time.Millisecond))
			}
			waitUntil(t, failoverBound+5*time.Second, "both Hosts to deliver 20 events published after the stream had a leader", func() bool {
				return hosts[0].deliveredAfter(leaderBack) >= 20 && hosts[1].deliveredAfter(leaderBack) >= 20
			})
			cancel()
			wg.Wait()
			if at, ok := elected.firstAfter(killed); ok && victim.name != sl {
				t.Errorf("the stream's leader lived, yet JetStream elected one %v after %s died: the 3 s are the server's to lose", at.Sub(killed).Round(time.Millisecond), victim.name)
			}
			_, head, _, _ := hosts[1].log.Since(context.Background(), "ticks", hostplugin.Cursor{})
			for _, h := range hosts {
				waitUntil(t, bound, h.name+" to deliver up to the head "+fmt.Sprint(head.Seq), func() bool { return h.last().Seq >= head.Seq })
			}
			allowed := leaderBack.Sub(killed) + failoverBound
			for _, h := range hosts {
				h.check(t, head)
				pub, live := h.silences(killed)
				t.Logf("%s: kill → first publish %v, first live delivery %v; longest silence: publishing %v, delivery %v",
					h.name, h.firstPublish(killed).Round(time.Millisecond), h.firstDelivery(killed).Round(time.Millisecond),
					pub.Round(time.Millisecond), live.Round(time.Millisecond))
				if pub > allowed || live > allowed {
					t.Errorf("%s stopped for %v (publishing) and %v (delivery) after %s died; want at most %v (%v after the stream had a leader again)",
						h.name, pub.Round(time.Millisecond), live.Round(time.Millisecond), victim.name, allowed.Round(time.Millisecond), failoverBound)
				}
			}
		})
	}
}

// waitUntil polls cond until it holds, failing the test after d.
func waitUntil(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// clusterStream is the ticks stream of a natsCluster, read through a connection of its own.
type clusterStream struct {
	js   natsjs.JetStream
	name string
}

func (s clusterStream) leader(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := s.js.Stream(ctx, s.name)
	if err != nil {
		return ""
	}
	if info := st.CachedInfo(); info.Cluster != nil {
		return info.Cluster.Leader
	}
	return ""
}

// arrangeLeaders appends to the ticks stream (its shard is R3) and, if the shard's leader is
// the meta leader, asks it to step down until the two are different nodes, so that each role
// can be killed alone.
func arrangeLeaders(t testing.TB, c *natsCluster) clusterStream {
	t.Helper()
	setup, err := jetstream.Connect(c.nodes[0].addrs.Client, &jetstream.Options{Replicas: 3, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("jetstream.Connect: %v", err)
	}
	defer setup.Close()
	waitUntil(t, 20*time.Second, "the ticks stream to be created", func() bool {
		_, _, err := setup.AppendUnique(context.Background(), "ticks", "setup", func(seq uint64) json.RawMessage {
			return json.RawMessage(fmt.Sprintf(`{"n":%d}`, seq))
		})
		return err == nil
	})
	nc, err := nats.Connect(c.nodes[0].addrs.Client)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := natsjs.New(nc)
	s := clusterStream{js: js, name: jetstream.ShardOf(setup, "ticks")}
	waitUntil(t, 20*time.Second, "the stream leader and the meta leader to be different nodes", func() bool {
		sl, ml := s.leader(t), c.meta(c.nodes[0]).Leader
		if sl == "" || ml == "" {
			return false
		}
		if sl != ml {
			return true
		}
		_, _ = nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+s.name, nil, 2*time.Second)
		return false
	})
	return s
}

// elections records when the leader elections of one JetStream stream advised by JetStream
// were seen.
type elections struct {
	mu sync.Mutex
	at []time.Time
}

func watchLeaderElections(t testing.TB, n *natsNode, stream string) *elections {
	t.Helper()
	nc, err := nats.Connect(n.addrs.Client)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	e := &elections{}
	if _, err := nc.Subscribe("$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED."+stream, func(*nats.Msg) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.at = append(e.at, time.Now())
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return e
}

// electionBound is the longest a JetStream stream may take to elect a leader: its raft
// election timeout is 4–9 s, and a split vote takes another round.
const electionBound = 30 * time.Second

// wait returns when the first election after t0 was seen, failing the test after electionBound.
func (e *elections) wait(t testing.TB, t0 time.Time) time.Time {
	t.Helper()
	var at time.Time
	waitUntil(t, electionBound, "JetStream to elect a new stream leader", func() bool {
		var ok bool
		at, ok = e.firstAfter(t0)
		return ok
	})
	return at
}

func (e *elections) firstAfter(t0 time.Time) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, at := range e.at {
		if at.After(t0) {
			return at, true
		}
	}
	return time.Time{}, false
}

// failoverHost is one Host of the failover test: a JetStreamLog that publishes fleet ticks
// and follows them, with the time of every publish and every delivery.
type failoverHost struct {
	name string
	log  *jetstream.Log

	mu        sync.Mutex
	events    []hostplugin.Event
	eventAt   []time.Time
	published []time.Time // returns of successful AppendUnique calls (stored or duplicate)
	stop      func()
}

func newFailoverHost(t testing.TB, name string, seed *natsNode) *failoverHost {
	t.Helper()
	log, err := jetstream.Connect(seed.addrs.Client, &jetstream.Options{Replicas: 3, Logger: slog.New(slog.DiscardHandler), Name: name})
	if err != nil {
		t.Fatalf("jetstream.Connect: %v", err)
	}
	h := &failoverHost{name: name, log: log}
	h.stop = log.Follow("ticks", func(ev hostplugin.Event) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.events = append(h.events, ev)
		h.eventAt = append(h.eventAt, time.Now())
	})
	t.Cleanup(func() {
		h.stop()
		_ = log.Close()
	})
	return h
}

// publish appends a tick every 100 ms with the slot as its id, until ctx ends.
func (h *failoverHost) publish(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			id := fmt.Sprintf("tick-%d", now.UnixMilli()/100)
			_, _, err := h.log.AppendUnique(ctx, "ticks", id, func(seq uint64) json.RawMessage {
				return json.RawMessage(fmt.Sprintf(`{"n":%d}`, seq))
			})
			if err == nil {
				h.mu.Lock()
				h.published = append(h.published, time.Now())
				h.mu.Unlock()
			}
		}
	}
}

func (h *failoverHost) delivered() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.events)
}

func (h *failoverHost) deliveredAfter(t0 time.Time) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, at := range h.eventAt {
		if at.After(t0) {
			n++
		}
	}
	return n
}

func (h *failoverHost) last() hostplugin.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.events) == 0 {
		return hostplugin.Event{}
	}
	return h.events[len(h.events)-1]
}

// check asserts that the Host delivered every event from its first to head exactly once, in
// order, in one epoch, each with its own data.
func (h *failoverHost) check(t testing.TB, head hostplugin.Cursor) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	first := h.events[0].Seq
	for i, ev := range h.events {
		if want := first + uint64(i); ev.Seq != want || ev.Epoch != head.Epoch || string(ev.Data) != fmt.Sprintf(`{"n":%d}`, ev.Seq) {
			t.Fatalf("%s: delivery %d is seq %d epoch %q data %s; want seq %d of epoch %q: an event was lost or duplicated", h.name, i, ev.Seq, ev.Epoch, ev.Data, want, head.Epoch)
		}
	}
	if last := h.events[len(h.events)-1].Seq; last != head.Seq {
		t.Fatalf("%s delivered up to seq %d; the stream holds %d", h.name, last, head.Seq)
	}
}

// silences returns the longest time without a successful publish, and without a delivery,
// among the intervals that end after t0.
func (h *failoverHost) silences(t0 time.Time) (publish, deliver time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	longest := func(ts []time.Time) time.Duration {
		var d time.Duration
		for i := 1; i < len(ts); i++ {
			if ts[i].After(t0) {
				d = max(d, ts[i].Sub(ts[i-1]))
			}
		}
		return d
	}
	return longest(h.published), longest(h.eventAt)
}

func (h *failoverHost) firstPublish(t0 time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return firstAfter(h.published, t0)
}

// firstDelivery is how long after t0 the Host delivered its first event.
func (h *failoverHost) firstDelivery(t0 time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return firstAfter(h.eventAt, t0)
}

// firstAfter is how long after t0 the first of times came, or -1 if none did.
func firstAfter(times []time.Time, t0 time.Time) time.Duration {
	for _, at := range times {
		if at.After(t0) {
			return at.Sub(t0)
		}
	}
	return -1
}
