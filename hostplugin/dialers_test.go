//go:build !js

package hostplugin_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// A handshake the page gave up on but could not end (Firefox leaves a connecting socket's
// upgrade pending when the page closes it) is ended by the page's next one: every dial names
// its dialer, and the Host holds one handshake per dialer (dialers.go).

// holdingAuth is an Authenticate, the generation source here, that holds a request with the
// header "Hold" until its context ends, and logs when each request enters and leaves it.
type holdingAuth struct {
	mu     sync.Mutex
	events []string
	held   map[string]chan struct{} // closed when the request named by Hold is in the hook
}

func newHoldingAuth() *holdingAuth { return &holdingAuth{held: map[string]chan struct{}{}} }

func (a *holdingAuth) log(s string) {
	a.mu.Lock()
	a.events = append(a.events, s)
	a.mu.Unlock()
}

func (a *holdingAuth) entered(name string) chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.held[name]
	if !ok {
		c = make(chan struct{})
		a.held[name] = c
	}
	return c
}

func (a *holdingAuth) Authenticate(r *http.Request) (string, error) {
	name := r.Header.Get("Hold")
	if name == "" {
		a.log("passed")
		return "alice", nil
	}
	a.log(name + " held")
	close(a.entered(name))
	<-r.Context().Done()
	a.log(name + " released: " + r.Context().Err().Error())
	return "", r.Context().Err()
}

func (a *holdingAuth) Events() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.events...)
}

// dialWithDialer dials the fixture's endpoint with dialer id ("" for none), and the header Hold when
// hold is not "". It returns the socket, or the HTTP answer of a refused handshake. The URL
// holds a dialer ahead of the page's own, as a config's endpoint could: the last one counts.
func dialWithDialer(ctx context.Context, f *fixture, id, hold string) (*websocket.Conn, *http.Response, error) {
	u := f.WSURL()
	if id != "" {
		u += "?" + wire.DialerParam + "=from-the-config&" + wire.DialerParam + "=" + id
	}
	h := http.Header{}
	if hold != "" {
		h.Set("Hold", hold)
	}
	return websocket.Dial(ctx, u, &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}, HTTPHeader: h})
}

// heldDial starts a dial that the hook holds, and returns once the hook has it: its result
// comes on the channel. The dial ends with the test.
func heldDial(t *testing.T, f *fixture, a *holdingAuth, id, name string) <-chan *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	out := make(chan *http.Response, 1)
	go func() {
		defer cancel()
		c, resp, err := dialWithDialer(ctx, f, id, name)
		if err == nil {
			c.CloseNow()
			t.Errorf("the held dial %s was upgraded", name)
		}
		out <- resp
	}()
	select {
	case <-a.entered(name):
	case <-ctx.Done():
		t.Fatalf("the dial %s did not reach Authenticate", name)
	}
	return out
}

func TestANewerHandshakeOfTheSamePageEndsTheOlderBeforeItGoesOn(t *testing.T) {
	a := newHoldingAuth()
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{Authenticate: a.Authenticate})
	first := heldDial(t, f, a, "page-1", "first")
	if got := f.H.Stats().Open; got != 1 {
		t.Fatalf("open with the first handshake held: %d, want 1", got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	c, _, err := dialWithDialer(ctx, f, "page-1", "")
	if err != nil {
		t.Fatalf("the newer dial: %v", err)
	}
	defer c.CloseNow()
	// The older one was cancelled, and had let go, before the newer one reached the hook.
	want := []string{"first held", "first released: context canceled", "passed"}
	if got := a.Events(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the hook saw %q, want %q", got, want)
	}
	var resp *http.Response
	select {
	case resp = <-first:
	case <-ctx.Done():
		t.Fatal("the older handshake was not answered")
	}
	if resp == nil {
		t.Fatal("the older handshake got no HTTP answer")
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusConflict || !resp.Close || !strings.Contains(string(body), "newer handshake of the same page") {
		t.Errorf("the older handshake was answered %d (Connection: close %v) %q, want 409, closing, saying it was replaced", resp.StatusCode, resp.Close, body)
	}
	waitFor(t, "only the new session open", func() bool { return f.H.Stats().Open == 1 && f.H.Sessions() == 1 })
}

func TestHandshakesOfOtherPagesOrOfNoDialerAreNotEnded(t *testing.T) {
	a := newHoldingAuth()
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{Authenticate: a.Authenticate})
	mine := heldDial(t, f, a, "page-1", "mine")
	heldDial(t, f, a, "page-2", "other")
	heldDial(t, f, a, "", "anonymous")

	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	c, _, err := dialWithDialer(ctx, f, "page-1", "")
	if err != nil {
		t.Fatalf("the newer dial of page-1: %v", err)
	}
	defer c.CloseNow()
	if resp := <-mine; resp == nil || resp.StatusCode != http.StatusConflict {
		t.Errorf("page-1's older handshake was answered %v, want 409", resp)
	}
	for _, e := range a.Events() {
		if strings.HasPrefix(e, "other released") || strings.HasPrefix(e, "anonymous released") {
			t.Errorf("page-1's dial ended another's handshake: %q", a.Events())
		}
	}
	// The session, and the two held handshakes of others (the replaced one's handler returns
	// a moment after its answer).
	waitFor(t, "three open", func() bool { return f.H.Stats().Open == 3 })
}

func TestAMalformedDialerIsRefusedByName(t *testing.T) {
	f := newFixture(t, `{}`, true)
	for _, id := range []string{"", strings.Repeat("a", wire.MaxDialer+1), "a%20b", "%C3%A9", "a.b"} {
		t.Run(id, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			c, resp, err := websocket.Dial(ctx, f.WSURL()+"?"+wire.DialerParam+"="+id, &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
			if err == nil {
				c.CloseNow()
				t.Fatal("upgraded")
			}
			if resp == nil {
				t.Fatalf("no HTTP answer: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), wire.DialerParam) {
				t.Errorf("answered %d %q, want 400 naming %s", resp.StatusCode, body, wire.DialerParam)
			}
		})
	}
}
