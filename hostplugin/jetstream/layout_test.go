//go:build !js

package jetstream_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/hostplugin/jetstream"
)

// connectWith returns a log on ns with opts (a quiet logger and a 1 s timeout unless set),
// closed with the test, or Connect's error.
func (ns *natsServer) connectWith(t testing.TB, opts jetstream.Options) (*jetstream.Log, error) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Timeout == 0 {
		opts.Timeout = time.Second
	}
	log, err := jetstream.Connect(ns.url(), &opts)
	if err == nil {
		t.Cleanup(func() { _ = log.Close() })
	}
	return log, err
}

// testJS is a JetStream connection of the test's own.
func testJS(t testing.TB, ns *natsServer) natsjs.JetStream {
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

func TestTwoHostsAppendingToOneStreamAtOnceNeverShareASeqNorLeaveAGap(t *testing.T) {
	ns := startNATS(t)
	// A Host whose append was refused reads the head and tries again, while the other,
	// which knows its head from its own ack, goes on: it may wait for the other's queue of
	// appends. The timeout is for a loaded machine; what is tested is the numbering.
	connect := func() *jetstream.Log {
		log, err := ns.connectWith(t, jetstream.Options{Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return log
	}
	a, b := connect(), connect()
	const perWriter, writers = 25, 4
	var mu sync.Mutex
	var seqs []uint64
	var epochs = map[string]bool{}
	var wg sync.WaitGroup
	for w := range writers {
		log := a
		if w%2 == 1 {
			log = b
		}
		wg.Go(func() {
			for i := range perWriter {
				ev, err := log.Append(context.Background(), "shared", json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)))
				if err != nil {
					t.Errorf("writer %d, append %d: %v", w, i, err)
					return
				}
				mu.Lock()
				seqs = append(seqs, ev.Seq)
				epochs[ev.Epoch] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(seqs)
	for i, seq := range seqs {
		if seq != uint64(i+1) {
			t.Fatalf("%d appends from two Hosts got seqs %v: want 1..%d, each once", len(seqs), seqs, writers*perWriter)
		}
	}
	if len(epochs) != 1 {
		t.Fatalf("appends of one stream got epochs %v, want one", epochs)
	}
}

// A stream's events are scattered over its shard among other streams' events: Since finds
// the first one a cursor misses wherever it lies.
func TestSinceReplaysFromEveryCursorAmongOtherStreamsEvents(t *testing.T) {
	ns := startNATS(t)
	log := ns.connect(t, nil) // keeps 64 events per stream
	ctx := context.Background()
	var mine []hostplugin.Event
	// Bursts of other streams' events of uneven lengths between this stream's.
	for i := range 40 {
		for j := range (i * 7) % 11 {
			jsAppendN(t, log, fmt.Sprintf("other-%d", j%3), 0, 1)
		}
		mine = append(mine, jsAppendN(t, log, "mine", i, 1)...)
	}
	epoch := mine[0].Epoch
	for c := range uint64(len(mine)) {
		events, head, ok, err := log.Since(ctx, "mine", hostplugin.Cursor{Epoch: epoch, Seq: c})
		if err != nil || !ok || head.Seq != 40 || len(events) != 40-int(c) {
			t.Fatalf("Since(seq %d) = %d events, head %+v, ok %v, err %v; want %d events up to 40", c, len(events), head, ok, err, 40-c)
		}
		for i, ev := range events {
			if want := mine[int(c)+i]; ev.Seq != want.Seq || string(ev.Data) != string(want.Data) {
				t.Fatalf("Since(seq %d): event %d = %d %s, want %d %s", c, i, ev.Seq, ev.Data, want.Seq, want.Data)
			}
		}
	}
}

// Every event of a stream expired by MaxAge: the numbers start over, in a new epoch, and a
// cursor of the old one is reset.
func TestAStreamWhoseEventsExpiredStartsANewEpoch(t *testing.T) {
	ns := startNATS(t)
	log, err := ns.connectWith(t, jetstream.Options{MaxAge: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	old := jsAppendN(t, log, "s", 0, 2)
	waitUntil(t, 5*time.Second, "the events to expire", func() bool {
		_, head, _, _ := log.Since(context.Background(), "s", hostplugin.Cursor{})
		return strings.HasPrefix(head.Epoch, jetstream.UnbornPrefix)
	})
	again := jsAppendN(t, log, "s", 0, 1)[0]
	if again.Seq != 1 || again.Epoch == old[0].Epoch {
		t.Fatalf("after expiry: seq %d epoch %q, want seq 1 in a new epoch (not %q)", again.Seq, again.Epoch, old[0].Epoch)
	}
	if _, head, ok, _ := log.Since(context.Background(), "s", hostplugin.Cursor{Epoch: old[0].Epoch, Seq: 2}); ok || head != (hostplugin.Cursor{Epoch: again.Epoch, Seq: 1}) {
		t.Fatalf("Since with the expired epoch: head %+v ok %v, want a reset to seq 1 of %q", head, ok, again.Epoch)
	}
}

func TestConnectRefusesShardsMadeForAnotherCount(t *testing.T) {
	ns := startNATS(t)
	if _, err := ns.connectWith(t, jetstream.Options{Shards: 2}); err != nil {
		t.Fatal(err)
	}
	_, err := ns.connectWith(t, jetstream.Options{Shards: 3})
	if !errors.Is(err, jetstream.ErrLayout) || !strings.Contains(err.Error(), "LIFELINE_SHARD_0") {
		t.Fatalf("Connect with 3 shards on 2 = %v, want ErrLayout naming the shards found", err)
	}
}

// oldStream makes a stream of the previous layout (a JetStream stream per Lifeline stream)
// holding n events, as that layout wrote them, and returns its JetStream name.
func oldStream(t testing.TB, js natsjs.JetStream, name, epoch string, n int) string {
	t.Helper()
	sum := sha256.Sum256([]byte(name))
	h := hex.EncodeToString(sum[:16])
	ctx := context.Background()
	_, err := js.CreateStream(ctx, natsjs.StreamConfig{
		Name: "LIFELINE_" + h, Subjects: []string{"lifeline.s." + h}, MaxMsgs: 4,
		Metadata: map[string]string{"lifeline_epoch": epoch, "lifeline_stream": name},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if _, err := js.Publish(ctx, "lifeline.s."+h, fmt.Appendf(nil, `{"i":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	return "LIFELINE_" + h
}

func TestConnectRefusesThePreviousLayout(t *testing.T) {
	ns := startNATS(t)
	name := oldStream(t, testJS(t, ns), "user.1", "e1", 3)
	_, err := ns.connectWith(t, jetstream.Options{})
	if !errors.Is(err, jetstream.ErrOldLayout) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "Migrate") {
		t.Fatalf("Connect on the previous layout = %v, want ErrOldLayout naming %s and the way out", err, name)
	}
}

// Migrate copies the previous layout's streams into the shards with their epochs and seqs:
// a page resumes by the cursor it holds, and the stream goes on from there.
func TestConnectMigratesThePreviousLayoutKeepingEpochsAndSeqs(t *testing.T) {
	ns := startNATS(t)
	js := testJS(t, ns)
	a := oldStream(t, js, "user.1", "e1", 6) // keeps seqs 3–6
	b := oldStream(t, js, "user.2", "e2", 1)
	log, err := ns.connectWith(t, jetstream.Options{Migrate: true})
	if err != nil {
		t.Fatalf("Connect with Migrate: %v", err)
	}
	for _, name := range []string{a, b} {
		if _, err := js.Stream(context.Background(), name); !errors.Is(err, natsjs.ErrStreamNotFound) {
			t.Fatalf("stream %s of the previous layout after the migration: %v, want it deleted", name, err)
		}
	}
	ctx := context.Background()
	events, head, ok, err := log.Since(ctx, "user.1", hostplugin.Cursor{Epoch: "e1", Seq: 3})
	if err != nil || !ok || head != (hostplugin.Cursor{Epoch: "e1", Seq: 6}) || fmt.Sprint(seqsOf(events)) != "[4 5 6]" || string(events[0].Data) != `{"i":4}` {
		t.Fatalf("Since(e1, 3) after the migration = %v, head %+v, ok %v, err %v; want 4 5 6 of e1", seqsOf(events), head, ok, err)
	}
	if _, _, ok, _ := log.Since(ctx, "user.1", hostplugin.Cursor{Epoch: "e1", Seq: 1}); ok {
		t.Fatal("Since(e1, 1) replayed: the previous layout no longer held seq 2")
	}
	if ev := jsAppendN(t, log, "user.1", 6, 1)[0]; ev.Seq != 7 || ev.Epoch != "e1" {
		t.Fatalf("Append after the migration = %+v, want seq 7 of e1", ev)
	}
	if _, head, _, _ := log.Since(ctx, "user.2", hostplugin.Cursor{}); head != (hostplugin.Cursor{Epoch: "e2", Seq: 1}) {
		t.Fatalf("user.2 after the migration: head %+v, want seq 1 of e2", head)
	}
}
