//go:build !js

package hostplugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// byCookie is an Authenticate that takes the identity from the cookie "user": none is
// unauthenticated, "mallory" is forbidden, "eve" fails for a reason of its own, "crash"
// panics, "talker" fails with a long, multi-line error.
func byCookie(r *http.Request) (string, error) {
	c, err := r.Cookie("user")
	if err != nil {
		return "", fmt.Errorf("%w: sign in first", hostplugin.ErrUnauthenticated)
	}
	switch c.Value {
	case "mallory":
		return "", fmt.Errorf("%w: mallory is banned", hostplugin.ErrForbidden)
	case "eve":
		return "", errors.New("session store unavailable")
	case "crash":
		panic("secret-token-123 leaked into a panic")
	case "talker":
		return "", errors.New(strings.Repeat("é", 200) + "\ngoroutine 1 [running]:\nmain.main()")
	}
	return c.Value, nil
}

func cookie(user string) http.Header {
	if user == "" {
		return nil
	}
	return http.Header{"Cookie": {"user=" + user}}
}

// refusedDial dials with header and returns the HTTP answer of the refused handshake.
func refusedDial(t *testing.T, f *fixture, header http.Header) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, f.WSURL(), &websocket.DialOptions{
		Subprotocols: []string{wire.Subprotocol},
		HTTPHeader:   header,
	})
	if err == nil {
		conn.CloseNow()
		t.Fatalf("dial with %v was upgraded, want a refusal", header)
	}
	if resp == nil {
		t.Fatalf("dial with %v: %v, and no HTTP answer", header, err)
	}
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// decodeBody decodes the endpoint's JSON answer.
func decodeBody(t *testing.T, body string) (kind, reason string) {
	t.Helper()
	var b struct {
		Error  string `json:"error"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		t.Fatalf("body %q is not the JSON answer: %v", body, err)
	}
	return b.Error, b.Reason
}

func TestAuthenticateRefusesBeforeTheUpgrade(t *testing.T) {
	tests := []struct {
		name   string
		user   string
		status int
		kind   string
		reason string // the body's reason, exactly
		log    string // a line that must be logged
	}{
		{name: "no credential is 401 with the app's reason", user: "", status: 401, kind: "unauthorized",
			reason: "hostplugin: unauthenticated: sign in first", log: "refused a socket (401)"},
		{name: "an error wrapping ErrForbidden is 403", user: "mallory", status: 403, kind: "forbidden",
			reason: "hostplugin: forbidden: mallory is banned", log: "refused a socket (403)"},
		{name: "any other error is 403", user: "eve", status: 403, kind: "forbidden",
			reason: "session store unavailable", log: "refused a socket (403)"},
		{name: "a long multi-line error is cut to its first line, then to 160 bytes", user: "talker", status: 403, kind: "forbidden",
			reason: strings.Repeat("é", 78) + "…", log: "refused a socket (403)"},
		{name: "a panicking Authenticate is 500, never with the panic's text", user: "crash", status: 500, kind: "internal error",
			reason: "internal error", log: "Authenticate panicked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixtureWith(t, `{"acceptRate":1,"acceptBurst":1}`, true, hostplugin.Options{Authenticate: byCookie})
			for range 3 {
				resp, body := refusedDial(t, f, cookie(tt.user))
				if resp.StatusCode != tt.status {
					t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tt.status)
				}
				if kind, reason := decodeBody(t, body); kind != tt.kind || reason != tt.reason {
					t.Fatalf("body error %q reason %q, want %q %q", kind, reason, tt.kind, tt.reason)
				}
				if strings.Contains(body, "secret") || strings.Contains(body, "goroutine") {
					t.Fatalf("body %q shows a panic or a stack", body)
				}
				if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
					t.Errorf("Cache-Control %q, want no-store", cc)
				}
			}
			if got := f.H.Sessions(); got != 0 {
				t.Errorf("Sessions() = %d after refused dials", got)
			}
			// Three refusals at an accept rate of one a second with a burst of one: had
			// any of them taken the token, the bucket would not be full again yet.
			if tok := hostplugin.AcceptTokens(f.H); tok < 1 {
				t.Errorf("accept tokens %.3f after refused dials, want the full burst of 1", tok)
			}
			waitFor(t, "the refusal to be logged", func() bool { return f.Logs.Has(tt.log) })
			if tt.user == "crash" && !f.Logs.Has("Authenticate panicked", "stack=goroutine") {
				t.Errorf("the panic was logged without its stack:\n%s", f.Logs)
			}
			// The Host carries on, and the token is there for the first page it lets in.
			c, err := f.TryDial(t, cookie("alice"))
			if err != nil {
				t.Fatalf("dial as alice after the refusals: %v", err)
			}
			c.Expect(wire.TypeReady)
		})
	}
}

func TestARefusedCredentialCostsNoSessionSlot(t *testing.T) {
	f := newFixtureWith(t, `{"maxSessions":1}`, true, hostplugin.Options{Authenticate: byCookie})
	dialAs(t, f, "alice").Expect(wire.TypeReady)
	// The Host is full: a page it would let in is told to come back (1013), but a page it
	// refuses learns that first, and takes nothing.
	if resp, body := refusedDial(t, f, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a page without a credential at a full Host: %d %s, want 401", resp.StatusCode, body)
	}
	c, err := f.TryDial(t, cookie("bob"))
	if err != nil {
		t.Fatalf("dial as bob: %v", err)
	}
	if code, _ := c.Closed(); code != wire.CloseOverloaded {
		t.Fatalf("bob at a full Host: close %d, want %d", code, wire.CloseOverloaded)
	}
	if got := f.H.Sessions(); got != 1 {
		t.Errorf("Sessions() = %d, want alice's only", got)
	}
}

func TestAuthenticateIsNotAskedForAForeignOrigin(t *testing.T) {
	var calls atomic.Int32
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{Authenticate: func(r *http.Request) (string, error) {
		calls.Add(1)
		return byCookie(r)
	}})
	for _, user := range []string{"", "alice"} {
		h := cookie(user)
		if h == nil {
			h = http.Header{}
		}
		h.Set("Origin", "https://evil.example")
		c, err := f.TryDial(t, h)
		if err != nil {
			t.Fatalf("dial from a foreign origin as %q: %v, want an upgrade closed with 1008", user, err)
		}
		if code, _ := c.Closed(); code != wire.CloseOrigin {
			t.Fatalf("foreign origin as %q: close %d, want %d, the same signed in or not", user, code, wire.CloseOrigin)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("Authenticate was called %d times for a foreign origin", n)
	}
}

func dialAs(t *testing.T, f *fixture, user string) *client {
	t.Helper()
	c, err := f.TryDial(t, cookie(user))
	if err != nil {
		t.Fatalf("dial as %q: %v", user, err)
	}
	return c
}

// access is an Authorize that lets identity "x" read the streams "x", "x.*" and "public", and
// whatever grant holds; it records every call.
type access struct {
	mu      sync.Mutex
	calls   []string // identity/stream
	revoked map[string]bool
}

func (a *access) authorize(identity, stream string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, identity+"/"+stream)
	switch {
	case stream == "boom":
		panic("secret-token-123 leaked into a panic")
	case a.revoked[identity+"/"+stream]:
		return errors.New("access revoked")
	case stream == "public", stream == identity, strings.HasPrefix(stream, identity+"."):
		return nil
	}
	return fmt.Errorf("%s may not read %s\nsecond line", identity, stream)
}

func (a *access) revoke(identity, stream string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.revoked == nil {
		a.revoked = map[string]bool{}
	}
	a.revoked[identity+"/"+stream] = true
}

func (a *access) called(call string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, c := range a.calls {
		if c == call {
			n++
		}
	}
	return n
}

func authFixture(t *testing.T) (*fixture, *access) {
	t.Helper()
	a := &access{}
	f := newFixtureWith(t, `{"ringSize":16}`, true, hostplugin.Options{Authenticate: byCookie, Authorize: a.authorize})
	return f, a
}

func TestAuthorizeDeniesOneStreamAndTheOthersCarryOn(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		reason string
	}{
		{"another user's stream is denied with the app's first line", "bob.inbox", "alice may not read bob.inbox"},
		{"a panicking Authorize denies that stream only, without the panic's text", "boom", "internal error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, a := authFixture(t)
			c := dialAs(t, f, "alice")
			c.Expect(wire.TypeReady)
			c.Send(`{"t":"sub","stream":"alice.inbox"}`)
			c.Expect(wire.TypeReset)
			c.Send(`{"t":"sub","stream":"` + tt.stream + `"}`)
			d := c.Expect(wire.TypeDenied)
			if d.Stream != tt.stream || d.Reason != tt.reason {
				t.Fatalf("denied frame %+v, want stream %q reason %q", d, tt.stream, tt.reason)
			}
			if a.called("alice/"+tt.stream) != 1 {
				t.Errorf("Authorize calls %v, want one with alice's identity for %s", a.calls, tt.stream)
			}
			// Nothing of the denied stream follows; the allowed one keeps its events and
			// the session takes new subscriptions.
			publish(t, f.H, tt.stream, `{"for":"bob"}`)
			seq := publish(t, f.H, "alice.inbox", `{"for":"alice"}`)
			if ev := c.Expect(wire.TypeEvent); ev.Stream != "alice.inbox" || ev.Seq != seq {
				t.Fatalf("after the denial got %+v, want alice.inbox event %d", ev, seq)
			}
			c.Send(`{"t":"sub","stream":"public"}`)
			if r := c.Expect(wire.TypeReset); r.Stream != "public" {
				t.Fatalf("sub public after the denial: %+v", r)
			}
			if tt.stream == "boom" && !f.Logs.Has("Authorize panicked", "stack=goroutine") {
				t.Errorf("the panic was not logged with its stack:\n%s", f.Logs)
			}
			if tt.stream != "boom" && !f.Logs.Has("denied a subscription", tt.stream) {
				t.Errorf("the denial was not logged:\n%s", f.Logs)
			}
			if got := f.H.Sessions(); got != 1 {
				t.Errorf("Sessions() = %d, want the one session carrying on", got)
			}
		})
	}
}

func TestAStreamDeniedWhileFollowedStopsAtTheDeniedFrame(t *testing.T) {
	f, a := authFixture(t)
	c := dialAs(t, f, "alice")
	c.Expect(wire.TypeReady)
	c.Send(`{"t":"sub","stream":"alice.doc"}`)
	c.Send(`{"t":"sub","stream":"public"}`)
	c.Expect(wire.TypeReset)
	c.Expect(wire.TypeReset)
	seq := publish(t, f.H, "alice.doc", `1`)
	c.Expect(wire.TypeEvent)
	a.revoke("alice", "alice.doc")
	c.Send(`{"t":"sub","stream":"alice.doc","epoch":"x","after":1}`)
	if d := c.Expect(wire.TypeDenied); d.Stream != "alice.doc" || d.Reason != "access revoked" {
		t.Fatalf("got %+v, want alice.doc denied: access revoked", d)
	}
	publish(t, f.H, "alice.doc", `2`)
	pub := publish(t, f.H, "public", `3`)
	if ev := c.Expect(wire.TypeEvent); ev.Stream != "public" || ev.Seq != pub {
		t.Fatalf("after the denial got %+v, want public event %d (alice.doc had %d)", ev, pub, seq)
	}
}

func TestAResubscriptionByCursorIsAuthorizedAgain(t *testing.T) {
	f, a := authFixture(t)
	c := dialAs(t, f, "alice")
	c.Expect(wire.TypeReady)
	c.Send(`{"t":"sub","stream":"alice.doc"}`)
	c.Send(`{"t":"sub","stream":"public"}`)
	docEpoch := c.Expect(wire.TypeReset).Epoch
	pubEpoch := c.Expect(wire.TypeReset).Epoch
	publish(t, f.H, "alice.doc", `1`)
	c.Expect(wire.TypeEvent)
	c.Conn.CloseNow()
	waitFor(t, "the session to end", func() bool { return f.H.Sessions() == 0 })

	// While the page was away it lost access, and the stream moved on: the page must not
	// resume, not even the events logged after its cursor.
	a.revoke("alice", "alice.doc")
	publish(t, f.H, "alice.doc", `2`)
	publish(t, f.H, "public", `3`)
	c = dialAs(t, f, "alice")
	c.Expect(wire.TypeReady)
	c.Send(`{"t":"sub","stream":"alice.doc","epoch":"` + docEpoch + `","after":1}`)
	c.Send(`{"t":"sub","stream":"public","epoch":"` + pubEpoch + `","after":0}`)
	if d := c.Expect(wire.TypeDenied); d.Stream != "alice.doc" {
		t.Fatalf("resubscription by cursor after revocation: %+v, want denied", d)
	}
	if ev := c.Expect(wire.TypeEvent); ev.Stream != "public" || ev.Seq != 1 {
		t.Fatalf("public's replay: %+v, want its event 1", ev)
	}
	if n := a.called("alice/alice.doc"); n != 2 {
		t.Errorf("Authorize asked %d times for alice.doc, want once per sub (2)", n)
	}
}

// No Authenticate and Authorize PublicStreams: every page may connect and read every stream.
func TestNoAuthenticateAndPublicStreamsLetEveryoneConnectAndReadEverything(t *testing.T) {
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{Authorize: hostplugin.PublicStreams})
	c := f.Dial(t) // no credential at all
	c.Expect(wire.TypeReady)
	c.Send(`{"t":"sub","stream":"bob.inbox"}`)
	c.Expect(wire.TypeReset)
}

func TestRefusalLogsAreThinned(t *testing.T) {
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{Authenticate: byCookie})
	const n = 20
	for range n {
		refusedDial(t, f, nil)
		refusalQuery(t, f, http.MethodGet, http.Header{})
	}
	if got := f.Logs.Count("refused a socket (401)"); got == 0 || got >= n {
		t.Errorf("%d log lines for %d refused sockets, want some, thinned:\n%s", got, n, f.Logs)
	}
}
