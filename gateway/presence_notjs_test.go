//go:build !js

package gateway_test

// Presence against the real Host (hostplugin with Options.Presence): two pages see each other
// join, a reconnect within the grace window tells nobody anything, and a page that stops
// leaves after the window. In a bubble (the Host in memory, exact time) and over loopback TCP.

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/test/wstest"
)

// presenceHost is a Host whose every stream carries presence; a page's identity is its
// X-Who header, and its metadata names it.
func presenceHost(t *testing.T, doc string) *hostplugin.Host {
	t.Helper()
	cfg, err := hostplugin.ParseConfig([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	h, err := hostplugin.New(cfg, &hostplugin.Options{
		Logger: quiet, Authorize: hostplugin.PublicStreams, NoClient: true,
		Authenticate: func(r *http.Request) (string, error) { return r.Header.Get("X-Who"), nil },
		Presence: &hostplugin.Presence{
			Streams: func(string) bool { return true },
			Meta: func(id string) (json.RawMessage, error) {
				return json.RawMessage(`{"name":"` + strings.ToUpper(id) + `"}`), nil
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.SetReady(true)
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// presencePage is a page of identity who following room's presence.
func presencePage(t *testing.T, url, who string) (*rig, *presenceRec) {
	t.Helper()
	r := newRig(t, url, controller.Recovery{InitialDelayMs: new(50.0)},
		&gateway.Options{Handshake: gateway.Handshake{Header: http.Header{"X-Who": {who}}}})
	rec := newPresenceRec()
	r.gw.SubscribeWith("room", newRecorder().handle, gateway.SubscribeOptions{Presence: rec.fn})
	r.ctl.Start()
	return r, rec
}

// waitMembers waits for a report whose members are want (ids joined by spaces), from report
// from on, and returns its number.
func (r *presenceRec) waitMembers(t *testing.T, from int, want string) int {
	t.Helper()
	for n := from; ; n++ {
		p := r.wait(t, n)
		var ids []string
		for _, m := range p.Members {
			ids = append(ids, m.ID)
		}
		if strings.Join(ids, " ") == want {
			return n
		}
	}
}

func TestPresenceTwoPagesSeeEachOtherAndAReconnectShowsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := presenceHost(t, `{"presenceGraceMs":2000}`)
		gateway.UseHandshakeClient(t, wstest.Client(h.Handler(http.NotFoundHandler())))
		const url = "ws://a.invalid/_lifeline/events"
		alice, aliceSees := presencePage(t, url, "alice")
		alice.waitConnected()
		aliceSees.waitMembers(t, 1, "alice")
		bob, bobSees := presencePage(t, url, "bob")
		bob.waitConnected()
		n := aliceSees.waitMembers(t, 1, "alice bob")
		p := aliceSees.wait(t, n)
		if len(p.Joined) != 1 || p.Joined[0].ID != "bob" || string(p.Joined[0].Meta) != `{"name":"BOB"}` || p.Total != 2 {
			t.Fatalf("alice was told %s (joined %v), want bob joining with his metadata", show(p), p.Joined)
		}
		m := bobSees.waitMembers(t, 1, "alice bob")

		// Bob's page reconnects: within the grace window, nobody is told anything.
		bob.ctl.ReconnectNow()
		bob.waitRuns(1)
		bob.waitConnected()
		time.Sleep(5 * time.Second) // past the grace window and every batch
		synctest.Wait()
		if got := aliceSees.count(); got != n {
			t.Fatalf("alice was told %d more times across bob's reconnect: %s", got-n, show(aliceSees.wait(t, got)))
		}
		if got := bobSees.count(); got != m {
			t.Fatalf("bob was told %d more times across his own reconnect: %s", got-m, show(bobSees.wait(t, got)))
		}

		// Bob's page stops: alice sees him leave once the grace window has passed.
		start := time.Now()
		bob.ctl.Stop()
		n = aliceSees.waitMembers(t, n+1, "alice")
		if took := time.Since(start); took < 2*time.Second || took > 3*time.Second {
			t.Fatalf("bob left %v after his page stopped, want within the grace window (2 s) plus a second, not before it", took)
		}
		if p := aliceSees.wait(t, n); len(p.Left) != 1 || p.Left[0] != "bob" {
			t.Fatalf("alice was told %s, want bob leaving", show(p))
		}
		alice.ctl.Stop()
	})
}

// Over loopback TCP, as a browser meets a Host: both pages see each other join.
func TestPresenceOverLoopback(t *testing.T) {
	h := presenceHost(t, `{}`)
	srv := httptest.NewServer(h.Handler(http.NotFoundHandler()))
	t.Cleanup(srv.Close)
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/_lifeline/events"
	alice, aliceSees := presencePage(t, url, "alice")
	bob, bobSees := presencePage(t, url, "bob")
	alice.waitConnected()
	bob.waitConnected()
	aliceSees.waitMembers(t, 1, "alice bob")
	bobSees.waitMembers(t, 1, "alice bob")
}
