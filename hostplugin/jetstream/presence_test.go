//go:build !js

package jetstream_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/hostplugin/jetstream"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// presenceHost is a Host with presence on room.* whose sessions are who their X-User header
// says, on its own connection to NATS at url, over loopback. It returns the Host, its events
// URL and its log (its stream log's shards have replicas; closing the log cuts the Host off NATS the way a SIGKILL looks to the
// others: no goodbye, no heartbeat).
func presenceHost(t *testing.T, url string, graceMs, replicas int) (*hostplugin.Host, string, *jetstream.Log) {
	t.Helper()
	log, err := jetstream.Connect(url, &jetstream.Options{Logger: slog.New(slog.DiscardHandler), MaxEvents: 64, Timeout: time.Second, Replicas: replicas})
	if err != nil {
		t.Fatalf("jetstream.Connect: %v", err)
	}
	cfg, err := hostplugin.ParseConfig(fmt.Appendf(nil, `{"presenceGraceMs":%d}`, graceMs))
	if err != nil {
		t.Fatal(err)
	}
	h, err := hostplugin.New(cfg, &hostplugin.Options{
		Logger: slog.New(slog.DiscardHandler), Log: log, NoClient: true, Authorize: hostplugin.PublicStreams,
		Authenticate: func(r *http.Request) (string, error) { return r.Header.Get("X-User"), nil },
		Presence: &hostplugin.Presence{
			Streams: func(s string) bool { return strings.HasPrefix(s, "room.") },
			Fleet:   jetstream.NewPresence(log),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.SetReady(true)
	srv := httptest.NewServer(h.Handler(http.NotFoundHandler()))
	t.Cleanup(func() { _ = h.Close(); srv.Close(); _ = log.Close() })
	return h, "ws" + strings.TrimPrefix(srv.URL, "http") + wire.DefaultPath, log
}

// presencePage is a page of user watching a stream's presence: what it shows, and every
// identity it was ever told left.
type presencePage struct {
	mu    sync.Mutex
	shows map[string]int
	left  []string
	batch []wire.HostFrame
}

func watchPresence(t *testing.T, url, user, stream string) *presencePage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		Subprotocols: []string{wire.Subprotocol}, HTTPHeader: http.Header{"X-User": {user}}})
	if err != nil {
		t.Fatalf("dial %s as %s: %v", url, user, err)
	}
	conn.SetReadLimit(1 << 20)
	p := &presencePage{shows: map[string]int{}}
	done := make(chan struct{})
	t.Cleanup(func() { _ = conn.CloseNow(); <-done })
	b, _ := wire.PageFrame{T: wire.TypeSub, Stream: stream, Presence: true}.Encode()
	if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(done)
		for {
			_, b, err := conn.Read(context.Background())
			if err != nil {
				return
			}
			f, err := wire.DecodeHost(b)
			if err != nil {
				t.Errorf("DecodeHost(%s): %v", b, err)
				return
			}
			if f.T == wire.TypePresence {
				p.apply(f)
			}
		}
	}()
	return p
}

// apply applies a presence frame as the page's gateway does: a batch once its last frame is in.
func (p *presencePage) apply(f wire.HostFrame) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.batch = append(p.batch, f)
	if f.More {
		return
	}
	next := maps.Clone(p.shows)
	if p.batch[0].Snapshot {
		next = map[string]int{}
	}
	for _, fr := range p.batch {
		for _, m := range fr.Members {
			next[m.ID] = m.Count
		}
		for _, id := range fr.Left {
			delete(next, id)
		}
	}
	for id := range p.shows {
		if _, ok := next[id]; !ok {
			p.left = append(p.left, id)
		}
	}
	p.shows, p.batch = next, nil
}

func (p *presencePage) who() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.shows)
}

func (p *presencePage) leaves() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.left...)
}

func sameWho(got map[string]int, want ...string) bool {
	if len(got) != len(want) {
		return false
	}
	for _, id := range want {
		if got[id] != 1 {
			return false
		}
	}
	return true
}

// Pages on two Hosts of a fleet on NATS see each other; a Host that dies (cut off NATS with
// no goodbye) has its members leave the other's pages a grace window after its last word, so
// within the grace window and a heartbeat of its death.
func TestPresenceOnNATSPagesOnTwoHostsSeeEachOtherAndADeadHostsMembersLeave(t *testing.T) {
	ns := startNATS(t)
	const graceMs = 5000
	a, urlA, _ := presenceHost(t, ns.url(), graceMs, 1)
	b, urlB, logB := presenceHost(t, ns.url(), graceMs, 1)
	alice := watchPresence(t, urlA, "alice", "room.1")
	bob := watchPresence(t, urlB, "bob", "room.1")
	waitUntil(t, 3*time.Second, "both pages to show alice and bob", func() bool {
		return sameWho(alice.who(), "alice", "bob") && sameWho(bob.who(), "alice", "bob")
	})
	for _, h := range []*hostplugin.Host{a, b} {
		list, err := h.Members(context.Background(), "room.1")
		if err != nil || len(list) != 2 || list[0].Identity != "alice" || list[1].Identity != "bob" {
			t.Errorf("Host.Members = %+v, %v; want alice and bob", list, err)
		}
	}

	_ = logB.Close() // b dies as a SIGKILL looks to a: it stops saying anything
	died := time.Now()
	grace := graceMs * time.Millisecond
	waitUntil(t, grace+2*time.Second, "bob to leave alice's page", func() bool { return sameWho(alice.who(), "alice") })
	after := time.Since(died)
	t.Logf("a dead Host's member left %v after its death (grace window %v, heartbeat 1 s)", after.Round(time.Millisecond), grace)
	if after < grace-time.Second || after > grace+time.Second+200*time.Millisecond {
		t.Errorf("bob left %v after his Host died, want within the grace window and a heartbeat (%v ± 1 s)", after, grace)
	}
}

// A NATS node dies, the one the Host of bob is connected to and the JetStream meta leader: the
// Host reconnects to another node and nobody leaves, on either Host.
func TestPresenceOnNATSSurvivesTheLossOfANodeAndLeaderWithNoLeave(t *testing.T) {
	if testing.Short() {
		t.Skip("runs and SIGKILLs a node of a 3-node NATS cluster: about 15 s")
	}
	c := startNATSCluster(t)
	meta := c.node(c.meta(c.nodes[0]).Leader)
	var other *natsNode
	for _, n := range c.nodes {
		if n != meta {
			other = n
			break
		}
	}
	const graceMs = 4000
	_, urlA, _ := presenceHost(t, other.addrs.Client, graceMs, 3)
	_, urlB, _ := presenceHost(t, meta.addrs.Client, graceMs, 3)
	alice := watchPresence(t, urlA, "alice", "room.1")
	bob := watchPresence(t, urlB, "bob", "room.1")
	waitUntil(t, 3*time.Second, "both pages to show alice and bob", func() bool {
		return sameWho(alice.who(), "alice", "bob") && sameWho(bob.who(), "alice", "bob")
	})
	t.Logf("killing %s, the meta leader, which bob's Host is connected to", meta.name)
	c.kill(meta)
	// Whatever the reconnect takes, a leave would show within the grace window and a
	// heartbeat of the kill: watch past it.
	time.Sleep(graceMs*time.Millisecond + 2*time.Second)
	carol := watchPresence(t, urlB, "carol", "room.1") // and bob's Host still tells the fleet
	waitUntil(t, 3*time.Second, "alice's page to show carol, who joined on bob's Host after the kill", func() bool {
		return sameWho(alice.who(), "alice", "bob", "carol")
	})
	_ = carol
	for _, p := range []*presencePage{alice, bob} {
		if l := p.leaves(); len(l) > 0 {
			t.Errorf("a page saw %v leave through the loss of a NATS node", l)
		}
	}
}
