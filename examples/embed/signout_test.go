//go:build !js

package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// A sign-out everywhere ends every page of the user (every tab, every browser) at once with
// the reason, and no other user's; the sign-ins it ended are refused from then on, and a new
// sign-in counts.
func TestSignOutEverywhereEndsEveryPageOfTheUser(t *testing.T) {
	t.Cleanup(func() { signOuts.mu.Lock(); delete(signOuts.at, "erin"); signOuts.mu.Unlock() })
	a := newApp()
	srv := httptest.NewServer(serve(t, a))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	login := func(user string) string { // a browser's cookies after /login
		t.Helper()
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		res, err := c.Get(srv.URL + "/login?user=" + user)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		var parts []string
		for _, ck := range res.Cookies() {
			parts = append(parts, ck.Name+"="+ck.Value)
		}
		return strings.Join(parts, "; ")
	}
	dial := func(cookie string) (*websocket.Conn, *http.Response, error) {
		return websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+wire.DefaultPath, &websocket.DialOptions{
			Subprotocols: []string{wire.Subprotocol}, HTTPHeader: http.Header{"Cookie": {cookie}}})
	}
	page := func(cookie string) *websocket.Conn {
		t.Helper()
		c, _, err := dial(cookie)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.CloseNow() })
		return c
	}
	laptop, phone, other := login("erin"), login("erin"), login("frank")
	pages := []*websocket.Conn{page(laptop), page(laptop), page(phone)}
	frank := page(other)

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/signout", nil)
	req.Header.Set("Cookie", laptop)
	res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil || res.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST /signout: %v %v, want 303", res, err)
	}
	res.Body.Close()
	want := wire.AccessEndedReason("You signed out everywhere.", false)
	for i, c := range pages {
		for {
			_, b, err := c.Read(ctx)
			if err == nil {
				if f, _ := wire.DecodeHost(b); f.T == wire.TypeError && f.Message != want {
					t.Fatalf("page %d: error frame %q, want %q", i, f.Message, want)
				}
				continue
			}
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != wire.CloseAccessEnded || ce.Reason != want {
				t.Fatalf("page %d ended with %v, want close %d %q", i, err, wire.CloseAccessEnded, want)
			}
			break
		}
	}
	// frank's page carries on: a ping is answered.
	if err := frank.Write(ctx, websocket.MessageText, []byte(`{"t":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	for {
		_, b, err := frank.Read(ctx)
		if err != nil {
			t.Fatalf("frank's page: %v", err)
		}
		if f, _ := wire.DecodeHost(b); f.T == wire.TypeHeartbeat {
			break
		}
	}
	// The phone's sign-in no longer counts; a new one does.
	if _, res, err := dial(phone); err == nil || res == nil || res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a page of a sign-in ended everywhere: %v, want 401", err)
	}
	page(login("erin"))
}

// docs/access.md shows the example's sign-out handler: it is this file's, verbatim.
func TestAccessGuideCodeIsTheExample(t *testing.T) {
	const begin = "<!-- access-code: examples/embed/signout.go, verbatim (TestAccessGuideCodeIsTheExample) -->\n```go\n"
	guide, err := os.ReadFile("../../docs/access.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(guide, []byte(begin))
	code, _, ok2 := bytes.Cut(rest, []byte("```\n"))
	if !ok || !ok2 {
		t.Fatalf("docs/access.md lacks the example's code after %q", begin)
	}
	src, err := os.ReadFile("signout.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(src, code) {
		t.Errorf("docs/access.md's Go is not a verbatim excerpt of examples/embed/signout.go; it reads:\n%s", code)
	}
}
