//go:build !js

package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// The demo's sign-in: two Hosts share the sign-outs file; a sign-out asked of one refuses the
// user's credential on both, ends the user's page, and leaves other users and anonymous pages
// alone.
func TestTheDemoSignOutRefusesTheUserOnEveryHostSharingTheFileAndEndsTheirPages(t *testing.T) {
	file := filepath.Join(t.TempDir(), "signouts")
	var srvs []*httptest.Server
	for range 2 {
		si, err := newSignIns(file)
		if err != nil {
			t.Fatal(err)
		}
		h, err := hostplugin.New(hostplugin.DefaultConfig(), &hostplugin.Options{
			Logger: slog.New(slog.DiscardHandler), Authorize: hostplugin.PublicStreams, NoClient: true, Authenticate: si.authenticate})
		if err != nil {
			t.Fatal(err)
		}
		h.SetReady(true)
		mux := http.NewServeMux()
		mux.Handle(signoutPath, si.serveSignOut(h))
		mux.Handle("/", h.Handler(http.NotFoundHandler()))
		srv := httptest.NewServer(mux)
		t.Cleanup(func() { _ = h.Close(); srv.Close() })
		srvs = append(srvs, srv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dial := func(srv *httptest.Server, user string) (*websocket.Conn, *http.Response, error) {
		o := &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}}
		if user != "" {
			o.HTTPHeader = http.Header{"Cookie": {userCookie + "=" + user}}
		}
		return websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+wire.DefaultPath, o)
	}
	alice, _, err := dial(srvs[0], "alice")
	if err != nil {
		t.Fatal(err)
	}
	defer alice.CloseNow()
	anon, _, err := dial(srvs[0], "")
	if err != nil {
		t.Fatal(err)
	}
	defer anon.CloseNow()
	// The Host counts a session from just after the upgrade's 101, which is when Dial returns:
	// its ready frame is the sign that it is counted (the sign-out asked sooner ends nothing).
	for _, c := range []*websocket.Conn{alice, anon} {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if f, err := wire.DecodeHost(b); err != nil || f.T != "ready" {
			t.Fatalf("the first frame: %s %v, want ready", b, err)
		}
	}

	res, err := http.Post(srvs[0].URL+signoutPath+"?user=alice&reason=bye", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var ans struct{ Ended int }
	_ = json.NewDecoder(res.Body).Decode(&ans)
	res.Body.Close()
	if res.StatusCode != 200 || ans.Ended != 1 {
		t.Fatalf("sign-out: %d %+v, want 200 and 1 session ended", res.StatusCode, ans)
	}
	for {
		_, _, err := alice.Read(ctx)
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != wire.CloseAccessEnded || ce.Reason != wire.AccessEndedReason("bye", false) {
			t.Fatalf("alice's page: %v, want the end", err)
		}
		break
	}
	for _, srv := range srvs {
		if _, res, err := dial(srv, "alice"); err == nil || res == nil || res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("alice after her sign-out: %v, want 401 on every Host", err)
		}
		c, _, err := dial(srv, "bob")
		if err != nil {
			t.Fatalf("bob: %v", err)
		}
		c.CloseNow()
	}
	if err := anon.Write(ctx, websocket.MessageText, []byte(`{"t":"ping"}`)); err != nil {
		t.Fatalf("the anonymous page: %v", err)
	}
	if res, _ := http.Post(srvs[1].URL+signoutPath+"?user=ALICE!", "", nil); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("a bad name: %d, want 400", res.StatusCode)
	}
}
