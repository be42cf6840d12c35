//go:build !js

package hostplugin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// Access that ends on the HTTP carrier: the page is told as a WebSocket's is (the calls it
// had queued refused, the error frame, the close 4401, nothing after), and what it POSTs
// after the end is refused with the same words and never applied.

func TestAnHTTPSessionWhoseAccessEndedIsToldTheSameWayAndItsPOSTsAreRefused(t *testing.T) {
	bothCarriers(t, func(t *testing.T, poll bool) {
		f := newFixtureWith(t, `{}`, true, hostplugin.Options{Authenticate: byCookie})
		started := make(chan string, 8)
		release := make(chan struct{})
		var releaseOnce sync.Once
		free := func() { releaseOnce.Do(func() { close(release) }) }
		t.Cleanup(free)
		var ran atomic.Int32
		f.H.HandleCall("slow", func(ctx context.Context, c *hostplugin.Call) (json.RawMessage, error) {
			ran.Add(1)
			started <- string(c.Data)
			<-release
			return json.RawMessage(`"done"`), nil
		})
		p := dialHTTPAs(f, t, "alice", poll)
		p.send(`{"t":"sub","stream":"ticks"}`)
		p.expect(wire.TypeReset)
		p.send(`{"t":"call","id":1,"name":"slow","data":1}`)
		select {
		case got := <-started:
			if got != "1" {
				t.Fatalf("call %s started, want 1", got)
			}
		case <-time.After(bound):
			t.Fatal("call 1 never started")
		}
		p.send(`{"t":"call","id":2,"name":"slow","data":2}`, `{"t":"ping"}`)
		p.expect(wire.TypeHeartbeat) // call 2 waits on the Host by now

		if n, err := f.H.EndSessions(context.Background(), "alice", hostplugin.EndOptions{Reason: "revoked"}); err != nil || n != 1 {
			t.Fatalf("EndSessions = %d, %v; want 1", n, err)
		}
		want := wire.AccessEndedReason("revoked", false)

		// A send after the end, before the page read it: refused, with the end's words, and
		// its call never runs. (A stream's session may be gone already: then it is no
		// session; polls keep it until the page polls its close.)
		p.seq++
		resp := p.post(wire.Envelope{T: wire.EnvelopeSend, Seq: p.seq},
			[]string{`{"t":"call","id":3,"name":"slow","data":3}`, `{"t":"sub","stream":"other"}`})
		switch r := refusalOf(t, resp); {
		case resp.StatusCode == http.StatusUnauthorized && r.Error == wire.RefusalAccessEnded && r.Reason == want:
		case !poll && resp.StatusCode == http.StatusNotFound && r.Error == wire.RefusalSession:
		default:
			t.Fatalf("a send after the end: %d %+v, want 401 %q %q", resp.StatusCode, r, wire.RefusalAccessEnded, want)
		}
		if _, err := f.H.Publish(context.Background(), "ticks", json.RawMessage(`1`)); err != nil {
			t.Fatal(err)
		}

		// What the page reads: call 2 refused, the error frame, the close. Nothing else.
		if r := p.next(); r.T != wire.TypeReply || r.ID != 2 || r.Code != wire.CodeAccessEnded {
			t.Fatalf("frame %+v, want call 2 refused %s", r, wire.CodeAccessEnded)
		}
		if e := p.next(); e.T != wire.TypeError || e.Message != want {
			t.Fatalf("frame %+v, want the error frame %q", e, want)
		}
		if c := p.next(); c.T != wire.TypeClose || c.Status != wire.CloseAccessEnded || c.Reason != want {
			t.Fatalf("frame %+v, want close %d %q", c, wire.CloseAccessEnded, want)
		}
		free()
		waitFor(t, "the session to end", func() bool { return f.H.Sessions() == 0 })
		select {
		case got := <-started:
			t.Fatalf("call %s ran after the session's access ended", got)
		case <-time.After(50 * time.Millisecond):
		}
		if n := ran.Load(); n != 1 {
			t.Fatalf("the handler ran %d times, want once (the call already running)", n)
		}
		// Once the session is gone its POSTs are no session's.
		p.seq++
		resp = p.post(wire.Envelope{T: wire.EnvelopeSend, Seq: p.seq}, []string{`{"t":"ping"}`})
		if r := refusalOf(t, resp); resp.StatusCode != http.StatusNotFound || r.Error != wire.RefusalSession {
			t.Fatalf("a send after the session ended: %d %+v, want 404 %q", resp.StatusCode, r, wire.RefusalSession)
		}
	})
}

func TestAnHTTPSessionEndsAtItsExpiryToldTheSameWay(t *testing.T) {
	bothCarriers(t, func(t *testing.T, poll bool) {
		const life = 300 * time.Millisecond
		f := newFixtureWith(t, `{}`, true, hostplugin.Options{Access: expiring(life)})
		start := time.Now()
		p := dialHTTPAs(f, t, "alice", poll)
		if p.ready.ExpiresMs <= 0 || p.ready.ExpiresMs > life.Milliseconds() || p.ready.Secret == "" {
			t.Fatalf("ready %+v, want expiresMs in (0, %d] and a secret", p.ready, life.Milliseconds())
		}
		want := wire.AccessEndedReason("your sign-in has expired", false)
		e := p.next()
		if e.T != wire.TypeError || e.Message != want {
			t.Fatalf("frame %+v, want the error frame %q", e, want)
		}
		// Never before the expiry (the bubble's tests hold it to the instant on a socket;
		// both carriers share the one expiry heap).
		if took := time.Since(start); took < life {
			t.Fatalf("ended after %v, before the credential's %v", took, life)
		}
		if c := p.next(); c.T != wire.TypeClose || c.Status != wire.CloseAccessEnded || !strings.HasPrefix(c.Reason, "access-ended") {
			t.Fatalf("frame %+v, want close %d", c, wire.CloseAccessEnded)
		}
		waitFor(t, "the session to end", func() bool { return f.H.Sessions() == 0 })
		if status, body := renewal(t, http.DefaultClient, f.Srv.URL, "alice", p.ready.Session, p.ready.Secret, ""); status != http.StatusNotFound {
			t.Fatalf("renewal after the expiry: %d %s, want 404", status, body)
		}
	})
}
