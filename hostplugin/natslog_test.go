//go:build !js

package hostplugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lifeline-go/lifeline/hostplugin"
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
func (ns *natsServer) connect(t testing.TB, l *logs) *hostplugin.JetStreamLog {
	t.Helper()
	var logger *slog.Logger
	if l != nil {
		logger = slog.New(l)
	} else {
		logger = slog.New(slog.DiscardHandler)
	}
	log, err := hostplugin.ConnectJetStream(ns.url(), &hostplugin.JetStreamOptions{Logger: logger, MaxEvents: 64, Timeout: time.Second})
	if err != nil {
		t.Fatalf("ConnectJetStream: %v", err)
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
	for name, log := range map[string]*hostplugin.JetStreamLog{"a": a, "b": b} {
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

func TestJetStreamLogResetsCursorsItCannotVouchFor(t *testing.T) {
	ns := startNATS(t)
	log := ns.connect(t, nil) // keeps 64 events
	ctx := context.Background()

	if _, head, ok, err := log.Since(ctx, "never", hostplugin.Cursor{}); ok || err != nil || head.Seq != 0 || !strings.HasPrefix(head.Epoch, hostplugin.UnbornPrefix) {
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
	js, _ := jetstream.New(nc)
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

func TestAppendUniqueStoresOneEventPerIDAcrossHosts(t *testing.T) {
	ns := startNATS(t)
	a, b := ns.connect(t, nil), ns.connect(t, nil)
	ctx := context.Background()
	build := func(seq uint64) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"n":%d}`, seq)) }
	stored := 0
	for sec := range 5 {
		for _, log := range []*hostplugin.JetStreamLog{a, b, a} {
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
	if !l.has("ERROR", "lost the NATS connection") {
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
	if !l.has("INFO", "NATS connection is back") {
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
	if _, err := hostA.h.Publish(ctx, "s", json.RawMessage(`{"i":1}`)); err != nil {
		t.Fatal(err)
	}

	c := hostB.dial(t)
	c.expect("ready")
	c.send(`{"t":"sub","stream":"s"}`)
	reset := c.expect("reset")
	if reset.Seq != 1 || reset.Epoch == "" {
		t.Fatalf("fresh sub on host B = %+v, want a reset at seq 1 with the shared epoch", reset)
	}
	for i := 2; i <= 4; i++ {
		if _, err := hostA.h.Publish(ctx, "s", json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))); err != nil {
			t.Fatal(err)
		}
		if ev := c.expect("event"); ev.Seq != uint64(i) {
			t.Fatalf("event from host A via host B: seq %d, want %d", ev.Seq, i)
		}
	}
	_ = c.conn.CloseNow()
	for i := 5; i <= 6; i++ {
		if _, err := hostB.h.Publish(ctx, "s", json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	c = hostA.dial(t)
	c.expect("ready")
	c.send(fmt.Sprintf(`{"t":"sub","stream":"s","epoch":%q,"after":4}`, reset.Epoch))
	for i := 5; i <= 6; i++ {
		if ev := c.expect("event"); ev.Seq != uint64(i) || string(ev.Data) != fmt.Sprintf(`{"i":%d}`, i) {
			t.Fatalf("replay on host A: %+v, want seq %d", ev, i)
		}
	}
}

func newLogFixture(t testing.TB, log hostplugin.StreamLog) *fixture {
	t.Helper()
	l := &logs{}
	h, err := hostplugin.New(hostplugin.DefaultConfig(), &hostplugin.Options{Logger: slog.New(l), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	h.SetReady(true)
	srv := httptest.NewServer(h.Handler(http.NotFoundHandler()))
	t.Cleanup(func() {
		_ = h.Close()
		srv.Close()
	})
	return &fixture{h: h, srv: srv, logs: l}
}
