//go:build !js

package hub_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/wasm/internal/hub"
)

// presenceHost is a Host whose streams carry presence, with a short grace window.
func presenceHost(t *testing.T, graceMs int) *host {
	t.Helper()
	cfg, err := hostplugin.ParseConfig(fmt.Appendf(nil, `{"presenceGraceMs":%d}`, graceMs))
	if err != nil {
		t.Fatal(err)
	}
	h, err := hostplugin.New(cfg, &hostplugin.Options{Logger: quiet, Authorize: hostplugin.PublicStreams,
		Presence: &hostplugin.Presence{Streams: func(string) bool { return true }}})
	if err != nil {
		t.Fatal(err)
	}
	h.SetReady(true)
	srv := httptest.NewServer(h.Handler(http.NotFoundHandler()))
	t.Cleanup(func() { h.Close(); srv.Close() })
	return &host{h: h, srv: srv}
}

// counts is the Host's view of a stream: each member's count.
func (x *host) counts(t *testing.T, stream string) []int {
	t.Helper()
	ms, err := x.h.Members(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, m := range ms {
		out = append(out, m.Count)
	}
	return out
}

// The tabs of one hub (one browser) are one session of one member: a tab that closes while
// another lives makes nobody leave, and the last tab closed makes the member leave within the
// grace window and a second.
func TestTabsAreOneMembershipAndTheLastTabLeaves(t *testing.T) {
	const grace = 300 * time.Millisecond
	x := presenceHost(t, int(grace.Milliseconds()))
	h := newHub(t)
	a, b := newClient(), newClient()
	ca, cb := h.Attach(a), h.Attach(b)
	ca.Handle(hello(x))
	cb.Handle(hello(x))
	// b follows the stream's events first: a's presence turns presence on for it.
	cb.Handle(hub.In{T: hub.MsgSubscribe, ID: 1, Stream: "room"})
	b.wait(t, "b's baseline", func(c *tab) bool { return len(c.got[1]) > 0 })
	ca.Handle(hub.In{T: hub.MsgSubscribe, ID: 2, Stream: "room", Presence: true})
	a.wait(t, "a told who is there", func(c *tab) bool {
		r := c.presence[2]
		return len(r) > 0 && len(r[len(r)-1].p.Members) == 1
	})
	if r := a.presence[2][0]; !r.first || len(r.p.Joined) != len(r.p.Members) {
		t.Fatalf("a's first report = %+v, want first with every member joined", r)
	}
	if got := len(a.deliveries(2)); got != 0 {
		t.Fatalf("a's presence subscription was delivered %d events, want none", got)
	}
	// A tab that asks later is given the list whole at once.
	cb.Handle(hub.In{T: hub.MsgSubscribe, ID: 3, Stream: "room", Presence: true})
	b.wait(t, "b told who is there", func(c *tab) bool { return len(c.presence[3]) > 0 })
	if r := b.presence[3][0]; !r.first || len(r.p.Members) != 1 || r.p.Members[0].Count != 1 {
		t.Fatalf("b's first report = %+v, want the one member with one session (the hub's)", r.p)
	}
	if got := x.counts(t, "room"); !slices.Equal(got, []int{1}) {
		t.Fatalf("the Host counts %v, want one member of one session for two tabs", got)
	}

	// a closes: b's subscription keeps the membership; nobody is told anything.
	ca.Detach()
	<-ca.Done()
	told := len(b.presence[3])
	time.Sleep(grace + 500*time.Millisecond)
	if got := x.counts(t, "room"); !slices.Equal(got, []int{1}) {
		t.Fatalf("after a tab closed the Host counts %v, want the member still there", got)
	}
	b.mu.Lock()
	n := len(b.presence[3])
	b.mu.Unlock()
	if n != told {
		t.Fatalf("b was told %d more times after a closed, want none", n-told)
	}

	// The last tab closes: the member leaves within the grace window and a second.
	start := time.Now()
	cb.Detach()
	<-cb.Done()
	for len(x.counts(t, "room")) != 0 {
		if time.Since(start) > grace+time.Second {
			t.Fatalf("the member is still there %v after the last tab closed", time.Since(start))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
