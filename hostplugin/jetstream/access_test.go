//go:build !js

package jetstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/hostplugin/jetstream"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// userOf is the Access of the fleet's tests: the cookie "user" names the identity, for a
// minute.
func userOf(r *http.Request) (hostplugin.Access, error) {
	c, err := r.Cookie("user")
	if err != nil {
		return hostplugin.Access{}, fmt.Errorf("%w: sign in first", hostplugin.ErrUnauthenticated)
	}
	return hostplugin.Access{Identity: c.Value, Until: time.Now().Add(time.Minute)}, nil
}

// accessHost is a Host of a fleet on ns with its bus and relay, over loopback.
func accessHost(t *testing.T, ns *natsServer) *fixture {
	t.Helper()
	log := ns.connect(t, nil)
	h, err := hostplugin.New(hostplugin.DefaultConfig(), &hostplugin.Options{
		Logger: slog.New(slog.DiscardHandler), Log: log, Relay: jetstream.NewRelay(log), Bus: jetstream.NewBus(log),
		Access: userOf, Authorize: hostplugin.PublicStreams, NoClient: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.SetReady(true)
	srv := httptest.NewServer(h.Handler(http.NotFoundHandler()))
	t.Cleanup(func() { _ = h.Close(); srv.Close() })
	return &fixture{H: h, Srv: srv}
}

// dialAs opens a socket to f as user and reads its ready frame.
func dialAs(f *fixture, t *testing.T, user string) (*client, wire.HostFrame) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	url := "ws" + strings.TrimPrefix(f.Srv.URL, "http") + wire.DefaultPath
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		Subprotocols: []string{wire.Subprotocol}, HTTPHeader: http.Header{"Cookie": {"user=" + user}}})
	if err != nil {
		t.Fatalf("dial as %s: %v", user, err)
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	c := &client{T: t, Conn: conn}
	return c, c.Expect(wire.TypeReady)
}

// closedWith reads c until its close, failing unless it is code with reason's words.
func closedWith(c *client, code websocket.StatusCode, want string) time.Time {
	c.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for {
		_, b, err := c.Conn.Read(ctx)
		if err == nil {
			if f, _ := wire.DecodeHost(b); f.T == wire.TypeError && f.Message != want {
				c.T.Fatalf("error frame %q, want %q", f.Message, want)
			}
			continue
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != code || ce.Reason != want {
			c.T.Fatalf("the socket ended with %v, want close %d %q", err, code, want)
		}
		return time.Now()
	}
}

func TestOneEndSessionsOnOneHostEndsTheIdentitysPagesOnEveryHost(t *testing.T) {
	ns := startNATS(t)
	hosts := []*fixture{accessHost(t, ns), accessHost(t, ns), accessHost(t, ns)}
	var alice []*client
	for _, f := range hosts {
		for range 2 {
			c, _ := dialAs(f, t, "alice")
			alice = append(alice, c)
		}
	}
	bob, _ := dialAs(hosts[2], t, "bob")
	start := time.Now()
	n, err := hosts[0].H.EndSessions(context.Background(), "alice", hostplugin.EndOptions{Reason: "Signed out everywhere."})
	if err != nil || n != 2 {
		t.Fatalf("EndSessions = %d, %v; want this Host's 2 sessions, no error", n, err)
	}
	want := wire.AccessEndedReason("Signed out everywhere.", false)
	var last time.Duration
	for _, c := range alice {
		last = max(last, closedWith(c, wire.CloseAccessEnded, want).Sub(start))
	}
	if last > time.Second {
		t.Fatalf("the last page of the identity was ended %v after the call, want within 1 s", last)
	}
	t.Logf("the last of alice's 6 pages on 3 Hosts was ended %v after the call", last)
	bob.Send(`{"t":"ping"}`)
	bob.Expect(wire.TypeHeartbeat)
}

func TestOneEndSubscriptionEndsTheStreamOnEveryHost(t *testing.T) {
	ns := startNATS(t)
	a, b := accessHost(t, ns), accessHost(t, ns)
	for _, s := range []string{"team", "own"} {
		if _, err := a.H.Publish(context.Background(), s, json.RawMessage(`0`)); err != nil {
			t.Fatal(err) // the streams' logs are born: the next events follow the subscriptions' resets
		}
	}
	var pages []*client
	for _, f := range []*fixture{a, b} {
		c, _ := dialAs(f, t, "alice")
		for _, s := range []string{"team", "own"} {
			c.Send(`{"t":"sub","stream":"` + s + `"}`)
			c.Expect(wire.TypeReset)
		}
		pages = append(pages, c)
	}
	if _, err := a.H.EndSubscription(context.Background(), "alice", "team", "You left the team."); err != nil {
		t.Fatal(err)
	}
	for _, c := range pages {
		if d := c.Expect(wire.TypeDenied); d.Stream != "team" || d.Reason != "You left the team." {
			t.Fatalf("denied %+v", d)
		}
	}
	// The rest carries on: an event of "own" is the next frame, none of "team".
	for _, s := range []string{"team", "own"} {
		if _, err := a.H.Publish(context.Background(), s, json.RawMessage(`1`)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range pages {
		if e := c.Expect(wire.TypeEvent); e.Stream != "own" {
			t.Fatalf("after the end: %+v, want the event of own", e)
		}
	}
}

func TestARenewalAtAnotherHostIsCarriedOverNATSToItsSessions(t *testing.T) {
	ns := startNATS(t)
	a, b := accessHost(t, ns), accessHost(t, ns)
	_, ready := dialAs(a, t, "alice")
	if ready.ExpiresMs <= 0 || ready.Secret == "" {
		t.Fatalf("ready %+v, want an expiry and a secret", ready)
	}
	renew := func(user, secret string) int {
		body := wire.Renewal{Session: ready.Session, Secret: secret}.Encode()
		req, _ := http.NewRequest(http.MethodPost, b.Srv.URL+wire.DefaultPath+"?"+wire.RenewParam+"=1", bytes.NewReader(body))
		req.Header.Set("Cookie", "user="+user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		ans, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == 200 {
			if r, err := wire.DecodeRenewed(bytes.TrimSpace(ans)); err != nil || r.ExpiresMs <= 0 {
				t.Fatalf("answer %s: %v", ans, err)
			}
		}
		return resp.StatusCode
	}
	if s := renew("alice", ready.Secret); s != 200 {
		t.Fatalf("renewal at the other Host: %d, want 200", s)
	}
	if s := renew("bob", ready.Secret); s != 409 {
		t.Fatalf("renewal as another identity: %d, want 409", s)
	}
	if s := renew("alice", "feedfacefeedface"); s != 404 {
		t.Fatalf("renewal with another secret: %d, want 404", s)
	}
}
