//go:build !js

package hub_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/wasm/internal/hub"
)

// renewingTab is a tab whose page code set a renewer: asked, it answers with its token (or
// fails, or never answers), as web/lifeline.js does for lifeline.onRenew.
type renewingTab struct {
	*tab
	conn   *hub.Conn
	token  string // "" fails; "silent" never answers
	mu     sync.Mutex
	askedN int
}

func (r *renewingTab) Renew(id int) {
	r.mu.Lock()
	r.askedN++
	r.mu.Unlock()
	switch r.token {
	case "silent":
	case "":
		go r.conn.Handle(hub.In{T: hub.MsgToken, ID: id, Failure: "the page is signed out"})
	default:
		go r.conn.Handle(hub.In{T: hub.MsgToken, ID: id, Token: r.token})
	}
}

func (r *renewingTab) asked() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.askedN
}

func TestEveryTabOfTheHubShowsUnauthorizedWithTheAppsReasonOnOneEnd(t *testing.T) {
	var signedIn atomic.Bool
	signedIn.Store(true)
	x := newHostWith(t, &hostplugin.Options{Logger: quiet, Authorize: hostplugin.PublicStreams,
		Access: func(*http.Request) (hostplugin.Access, error) {
			if !signedIn.Load() {
				return hostplugin.Access{}, fmt.Errorf("%w: sign in", hostplugin.ErrUnauthenticated)
			}
			return hostplugin.Access{Identity: "alice"}, nil
		}})
	h := newHub(t)
	var tabs []*tab
	for range 5 {
		c := newClient()
		h.Attach(c).Handle(hello(x))
		tabs = append(tabs, c)
	}
	for _, c := range tabs {
		c.wait(t, "connected", func(c *tab) bool { return c.state() == "connected" })
	}
	signedIn.Store(false)
	if n, err := x.h.EndSessions(context.Background(), "alice", hostplugin.EndOptions{Reason: "You signed out."}); n != 1 || err != nil {
		t.Fatalf("EndSessions = %d, %v; want the one session of five tabs", n, err)
	}
	for i, c := range tabs {
		c.wait(t, "unauthorized", func(c *tab) bool { return c.state() == "unauthorized" })
		c.mu.Lock()
		st := c.statuses[len(c.statuses)-1]
		c.mu.Unlock()
		if gateway.Reason(st.Err) != "You signed out." || hub.Kind(st.Err) != "unauthorized" {
			t.Fatalf("tab %d: %v (reason %q), want unauthorized with the app's reason", i, st.Err, gateway.Reason(st.Err))
		}
	}
}

func TestARenewalAsksATabThatSetARenewerForItsToken(t *testing.T) {
	var renewed atomic.Int32
	x := newHostWith(t, &hostplugin.Options{Logger: quiet, Authorize: hostplugin.PublicStreams,
		Access: func(r *http.Request) (hostplugin.Access, error) {
			tok, hasToken := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			switch {
			case !hasToken && renewed.Load() == 0: // the first connect: a cookie, say
			case tok == "tok-b":
				renewed.Add(1)
			default:
				return hostplugin.Access{}, fmt.Errorf("%w: a token is needed", hostplugin.ErrUnauthenticated)
			}
			return hostplugin.Access{Identity: "alice", Until: time.Now().Add(time.Second)}, nil
		}})
	h := newHub(t)
	plain := newClient()
	h.Attach(plain).Handle(hello(x))
	// Two tabs set a renewer: the latest is asked first; it fails, so the other is asked.
	b := &renewingTab{tab: newClient(), token: "tok-b"}
	b.conn = h.Attach(b)
	b.conn.Handle(hello(x))
	b.conn.Handle(hub.In{T: hub.MsgRenewer, On: true})
	hub.Sync(b.conn) // a tab's messages are acted on by its own goroutine: b's renewer first
	c := &renewingTab{tab: newClient(), token: ""}
	c.conn = h.Attach(c)
	c.conn.Handle(hello(x))
	c.conn.Handle(hub.In{T: hub.MsgRenewer, On: true})
	plain.wait(t, "connected", func(c *tab) bool { return c.state() == "connected" })
	plain.mu.Lock()
	first := plain.statuses[len(plain.statuses)-1].Attempt
	plain.mu.Unlock()
	time.Sleep(2500 * time.Millisecond) // two and a half lives of the credential
	if renewed.Load() < 2 || c.asked() < 2 || b.asked() < 2 {
		t.Fatalf("renewed %d times; tab c asked %d times, tab b %d: want each renewal to ask c, then b", renewed.Load(), c.asked(), b.asked())
	}
	plain.mu.Lock()
	last := plain.statuses[len(plain.statuses)-1]
	plain.mu.Unlock()
	if last.State != controller.Connected || last.Attempt != first {
		t.Fatalf("after 2.5 s: %+v, want the first session still connected", last)
	}
	// A tab that removes its renewer is asked no more.
	c.conn.Handle(hub.In{T: hub.MsgRenewer, On: false})
	n := c.asked()
	time.Sleep(1200 * time.Millisecond)
	if c.asked() != n {
		t.Fatalf("a tab without a renewer was asked %d times more", c.asked()-n)
	}
}
