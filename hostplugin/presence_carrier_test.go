//go:build !js

package hostplugin_test

import (
	"context"
	"maps"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// A page whose network stops carrying its WebSocket moves to the HTTP carrier make-before-break
// (PROTOCOL.md §11.3, §11.4): its new session is subscribed before the old one ends. Over
// loopback, with real sockets and the HTTP carrier's stream: no one sees it.
func TestACarrierChangeFromWebSocketToHTTPShowsNothing(t *testing.T) {
	const graceMs = 1500
	f := newFixtureWith(t, `{"presenceGraceMs":1500}`, true, hostplugin.Options{
		Authenticate: func(r *http.Request) (string, error) { return r.Header.Get("X-User"), nil },
		Presence:     &hostplugin.Presence{Streams: roomStreams},
	})
	alice, err := f.TryDial(t, http.Header{"X-User": {"alice"}})
	if err != nil {
		t.Fatal(err)
	}
	alice.Expect(wire.TypeReady)
	alice.Send(`{"t":"sub","stream":"room.1","presence":true}`)
	w := watchLoopback(t, alice)
	bob, err := f.TryDial(t, http.Header{"X-User": {"bob"}})
	if err != nil {
		t.Fatal(err)
	}
	bob.Expect(wire.TypeReady)
	bob.Send(`{"t":"sub","stream":"room.1"}`)
	waitFor(t, "alice to show alice and bob", func() bool { return maps.Equal(w.who(), map[string]int{"alice": 1, "bob": 1}) })
	seen := w.batches()

	// bob's page moves to the HTTP carrier's stream, then lets its WebSocket go.
	p, resp := openHTTP(f, t, false, http.Header{"X-User": {"bob"}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("opening GET: %d", resp.StatusCode)
	}
	p.ready = p.expect(wire.TypeReady)
	p.send(`{"t":"sub","stream":"room.1"}`)
	p.expect(wire.TypeReset)
	_ = bob.Conn.CloseNow()
	// The settle of a second session and the grace window of the one that ended, and some.
	time.Sleep(time.Second + graceMs*time.Millisecond + 500*time.Millisecond)
	if n := w.batches(); n != seen {
		t.Errorf("alice was sent %d batches while bob changed carriers (showing %v), want none", n-seen, w.who())
	}
	list, err := f.H.Members(context.Background(), "room.1")
	if err != nil || len(list) != 2 || list[1].Identity != "bob" || list[1].Count != 1 {
		t.Errorf("Host.Members = %+v, %v; want alice and bob, once", list, err)
	}
}

// loopbackWatch applies a real socket's presence frames.
type loopbackWatch struct {
	mu    sync.Mutex
	shows map[string]int
	n     int // batches applied
}

func watchLoopback(t *testing.T, c *client) *loopbackWatch {
	w := &loopbackWatch{shows: map[string]int{}}
	done := make(chan struct{})
	t.Cleanup(func() { _ = c.Conn.CloseNow(); <-done })
	go func() {
		defer close(done)
		for {
			_, b, err := c.Conn.Read(context.Background())
			if err != nil {
				return
			}
			f, err := wire.DecodeHost(b)
			if err != nil || f.T != wire.TypePresence {
				continue
			}
			w.mu.Lock()
			if f.Snapshot {
				w.shows = map[string]int{}
			}
			for _, m := range f.Members {
				w.shows[m.ID] = m.Count
			}
			for _, id := range f.Left {
				delete(w.shows, id)
			}
			if !f.More {
				w.n++
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *loopbackWatch) who() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.shows)
}

func (w *loopbackWatch) batches() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}
