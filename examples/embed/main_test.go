//go:build !js

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// serve returns the whole application as main runs it, behind the Host plugin.
func serve(t *testing.T, a *app) http.Handler {
	t.Helper()
	h, handler, err := withLifeline(hostplugin.DefaultConfig(), a)
	if err != nil {
		t.Fatal(err)
	}
	a.host = h
	t.Cleanup(func() { _ = h.Close() })
	return handler
}

func get(t *testing.T, handler http.Handler, target, cookie string) *http.Response {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, target, nil)
	if cookie != "" {
		r.Header.Set("Cookie", cookie)
	}
	w := httptest.NewRecorder()
	handler.ServeHTTP(w, r)
	return w.Result()
}

func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestThePageAsWrittenHasNoLifelineMarkup(t *testing.T) {
	for _, s := range []string{"connection-status", "lifeline-bootstrap", "/_lifeline/", "wasm", "data-lifeline"} {
		if strings.Contains(indexHTML, s) {
			t.Errorf("index.html contains %q: the page must carry no Lifeline markup (the plugin injects it)", s)
		}
	}
}

func TestThePageIsServedWithTheClientInjectedIntoItsHead(t *testing.T) {
	handler := serve(t, newApp())
	for _, tc := range []struct {
		name, cookie, shows string
	}{
		{"a visitor is offered the sign-in", "", `<a href="/login?user=alice">`},
		{"a signed-in user is named, and the page subscribes to their stream", "user=alice", `<body data-user="alice">`},
		{"a cookie that names no valid user counts as signed out", "user=Alice%3Cscript%3E", `<body data-user="">`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := get(t, handler, "/", tc.cookie)
			page := body(t, res)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("GET / = %d, want 200", res.StatusCode)
			}
			if got := res.Header.Get("Cache-Control"); got != "no-cache" {
				t.Errorf("Cache-Control = %q, want no-cache: the page is per user", got)
			}
			if !strings.Contains(page, tc.shows) {
				t.Errorf("the page does not contain %s:\n%s", tc.shows, page)
			}
			head, _, ok := strings.Cut(page, "</head>")
			if !ok {
				t.Fatalf("no </head> in the page:\n%s", page)
			}
			for _, re := range []string{
				`<script type="application/json" id="lifeline-bootstrap">\{"recovery":`,
				`<script src="/_lifeline/client/lifeline\.[0-9a-f]{16}\.js" [^>]*async></script>`,
			} {
				if n := len(regexp.MustCompile(re).FindAllString(head, -1)); n != 1 {
					t.Errorf("the head has %d matches of %s, want 1:\n%s", n, re, head)
				}
			}
		})
	}
}

// The page runs under a Content-Security-Policy that allows no inline script but the boot's
// hash: every inline script the page has is Lifeline's boot, and the app's own code is a file
// of its origin (e2e embed.spec.js runs the page under it in Chromium).
func TestThePageRunsUnderAPolicyOfItsOwnScriptsAndTheBootsHash(t *testing.T) {
	a := newApp()
	handler := serve(t, a)
	res := get(t, handler, "/", "user=alice")
	page := body(t, res)
	csp := res.Header.Get("Content-Security-Policy")
	boot := regexp.MustCompile(`'sha256-[A-Za-z0-9+/]{43}='`).FindString(csp)
	if !strings.HasPrefix(csp, "script-src 'self' 'wasm-unsafe-eval' ") || boot == "" {
		t.Fatalf("Content-Security-Policy = %q, want script-src 'self' 'wasm-unsafe-eval' and the boot's hash", csp)
	}
	for _, m := range regexp.MustCompile(`(?s)<script([^>]*)>(.*?)</script>`).FindAllStringSubmatch(page, -1) {
		if strings.Contains(m[1], "src=") || strings.Contains(m[1], `type="application/json"`) {
			continue
		}
		sum := sha256.Sum256([]byte(m[2]))
		if got := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; got != boot {
			t.Errorf("an inline script of the page hashes to %s, not the policy's %s: the browser refuses it:\n%.200s", got, boot, m[2])
		}
	}
	js := get(t, handler, appJSPath, "")
	if ct := js.Header.Get("Content-Type"); js.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/javascript") {
		t.Errorf("GET %s = %d %q, want 200 text/javascript", appJSPath, js.StatusCode, ct)
	}
}

func TestLoginSetsTheCookieOfAValidNameOnly(t *testing.T) {
	handler := serve(t, newApp())
	for _, tc := range []struct {
		name, user string
		status     int
	}{
		{"a lower-case name signs in", "alice", http.StatusSeeOther},
		{"digits are letters too", "user42", http.StatusSeeOther},
		{"an empty name is refused", "", http.StatusBadRequest},
		{"an upper-case name is refused", "Alice", http.StatusBadRequest},
		{"a dot would make another stream name: refused", "alice.x", http.StatusBadRequest},
		{"a name longer than 32 is refused", strings.Repeat("a", 33), http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := get(t, handler, "/login?user="+tc.user, "")
			if res.StatusCode != tc.status {
				t.Fatalf("GET /login?user=%s = %d, want %d (%s)", tc.user, res.StatusCode, tc.status, body(t, res))
			}
			cookies := res.Cookies()
			if tc.status != http.StatusSeeOther {
				if len(cookies) != 0 {
					t.Errorf("a refused sign-in set cookies %v", cookies)
				}
				return
			}
			if loc := res.Header.Get("Location"); loc != "/" {
				t.Errorf("Location = %q, want /", loc)
			}
			// The user's name, and when this browser signed in (a sign-out everywhere ends the
			// sign-ins made before it: signout.go).
			if len(cookies) != 2 || cookies[0].Name != "user" || cookies[0].Value != tc.user || !cookies[0].HttpOnly || cookies[0].Path != "/" ||
				cookies[1].Name != sinceCookie || !cookies[1].HttpOnly {
				t.Errorf("cookies = %v, want HttpOnly user=%s and since for /", cookies, tc.user)
			}
		})
	}
}

func TestLogoutClearsTheCookie(t *testing.T) {
	res := get(t, serve(t, newApp()), "/logout", "user=alice")
	c := res.Cookies()
	if res.StatusCode != http.StatusSeeOther || len(c) != 2 || c[0].Name != "user" || c[0].MaxAge >= 0 || c[1].MaxAge >= 0 {
		t.Fatalf("GET /logout = %d with cookies %v, want 303 expiring user and since", res.StatusCode, c)
	}
}

func TestTheStubPublishesForABoundedNumberOfUsers(t *testing.T) {
	a := newApp()
	for i := range maxUsers {
		if err := a.signIn(fmt.Sprintf("u%d", i)); err != nil {
			t.Fatalf("signIn #%d: %v", i, err)
		}
	}
	if err := a.signIn("u0"); err != nil {
		t.Errorf("signing in again as a known user: %v, want nil", err)
	}
	if err := a.signIn("onetoomany"); !errors.Is(err, errTooManyUsers) {
		t.Errorf("signIn beyond %d users = %v, want errTooManyUsers", maxUsers, err)
	}
	res := get(t, serve(t, a), "/login?user=onetoomany", "")
	if res.StatusCode != http.StatusServiceUnavailable || len(res.Cookies()) != 0 {
		t.Errorf("GET /login beyond the cap = %d with cookies %v, want 503 and none", res.StatusCode, res.Cookies())
	}
}

// The events endpoint answers a plain GET (the page's refusal query after a refused upgrade)
// with the status the upgrade got: that is how Authenticate's verdict reaches the page.
func TestAuthenticateRefusesAPageWithoutAValidCookie(t *testing.T) {
	handler := serve(t, newApp())
	for _, tc := range []struct {
		name, cookie string
		status       int
		error        string
	}{
		{"no cookie: sign-in required", "", http.StatusUnauthorized, "unauthorized"},
		{"a cookie naming no valid user: sign-in required", "user=Bob!", http.StatusUnauthorized, "unauthorized"},
		{"a signed-in user may connect", "user=alice", http.StatusUpgradeRequired, "upgrade required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := get(t, handler, "/_lifeline/events", tc.cookie)
			var got struct{ Error string }
			b := body(t, res)
			if err := json.Unmarshal([]byte(b), &got); err != nil {
				t.Fatalf("body %q: %v", b, err)
			}
			if res.StatusCode != tc.status || got.Error != tc.error {
				t.Errorf("GET /_lifeline/events with %q = %d %s, want %d with error %q", tc.cookie, res.StatusCode, b, tc.status, tc.error)
			}
		})
	}
}

func TestAuthorizeLetsAUserReadTheirOwnStreamOnly(t *testing.T) {
	for _, tc := range []struct {
		name, user, stream string
		ok                 bool
	}{
		{"alice reads user.alice", "alice", "user.alice", true},
		{"alice may not read user.bob", "alice", "user.bob", false},
		{"nor a stream that merely begins with hers", "alice", "user.alice2", false},
		{"nor another application stream", "alice", "ticks", false},
		{"no identity reads nothing, not even user.", "", "user.", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := authorize(tc.user, tc.stream)
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, errNotYours)) {
				t.Errorf("authorize(%q, %q) = %v, want ok=%v", tc.user, tc.stream, err, tc.ok)
			}
		})
	}
}

func TestPublishOnceSendsEverySignedInUserTheirNextEvent(t *testing.T) {
	ring := hostplugin.NewRing(16)
	h, err := hostplugin.New(hostplugin.DefaultConfig(), &hostplugin.Options{Log: ring, NoClient: true, Authorize: authorize})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	a := newApp()
	ctx := t.Context()
	for _, u := range []string{"alice", "bob"} {
		if err := a.signIn(u); err != nil {
			t.Fatal(err)
		}
	}
	at := time.UnixMilli(1_700_000_000_000)
	for range 2 {
		if err := a.publishOnce(ctx, h, at); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []string{"alice", "bob"} {
		events, _, ok, err := ring.Since(ctx, "user."+u, hostplugin.Cursor{Epoch: ring.Epoch()})
		if err != nil || !ok || len(events) != 2 {
			t.Fatalf("Since(user.%s) = %d events, ok %v, err %v; want 2", u, len(events), ok, err)
		}
		for i, ev := range events {
			want := fmt.Sprintf(`{"n":%d,"text":"hello %s, this is your event %d","at":1700000000000}`, i+1, u, i+1)
			if string(ev.Data) != want {
				t.Errorf("user.%s event %d = %s, want %s", u, i+1, ev.Data, want)
			}
		}
	}
	if _, head, _, _ := ring.Since(ctx, "user.carol", hostplugin.Cursor{}); head.Seq != 0 {
		t.Errorf("user.carol, who never signed in, has %d events, want none", head.Seq)
	}
}

// Authorization of a call is the handler's own: saveMemo writes the memo of the session's
// identity, and refuses a page that names another user's.
func TestSaveMemoWritesTheCallersOwnMemoOnly(t *testing.T) {
	a := newApp()
	save := func(identity, data string) (memo, error) {
		t.Helper()
		reply, err := a.saveMemo(t.Context(), &hostplugin.Call{Identity: identity, Name: "memo.save", Data: json.RawMessage(data)})
		if err != nil {
			return memo{}, err
		}
		var m memo
		if err := json.Unmarshal(reply, &m); err != nil {
			t.Fatalf("reply %s: %v", reply, err)
		}
		return m, nil
	}
	for _, tc := range []struct {
		name, identity, data string
		version              int   // of the memo saved; 0: refused
		err                  error // when refused, if a sentinel
	}{
		{"alice saves her memo", "alice", `{"user":"alice","text":"milk"}`, 1, nil},
		{"and again: the next version", "alice", `{"user":"alice","text":"milk, eggs"}`, 2, nil},
		{"alice may not write bob's", "alice", `{"user":"bob","text":"hacked"}`, 0, errNotYourMemo},
		{"nor may a page with no identity", "", `{"user":"","text":"x"}`, 0, errNotYourMemo},
		{"a memo that is no object is refused", "alice", `"milk"`, 0, errMemoData},
		{"so is one over the bound", "alice", fmt.Sprintf(`{"user":"alice","text":%q}`, strings.Repeat("x", maxMemo+1)), 0, nil},
		{"bob saves his own", "bob", `{"user":"bob","text":"bread"}`, 1, nil},
	} {
		m, err := save(tc.identity, tc.data)
		switch {
		case tc.version == 0 && err == nil:
			t.Errorf("%s: saved %+v, want a refusal", tc.name, m)
		case tc.version == 0 && tc.err != nil && !errors.Is(err, tc.err):
			t.Errorf("%s: %v, want %v", tc.name, err, tc.err)
		case tc.version != 0 && (err != nil || m.Version != tc.version):
			t.Errorf("%s: %+v, %v; want version %d", tc.name, m, err, tc.version)
		}
	}
	if a.memos["alice"].Text != "milk, eggs" || a.memos["bob"].Text != "bread" {
		t.Fatalf("memos %+v: want alice's and bob's own, untouched by the refusals", a.memos)
	}
	res := get(t, serve(t, a), "/", "user=alice")
	if page := body(t, res); !strings.Contains(page, `<textarea id="memo-text" rows="3" cols="50">milk, eggs</textarea>`) {
		t.Errorf("alice's page does not show her memo:\n%s", page)
	}
}

// The page's save is a keyed call: sent twice with one key (as after a reconnect), it is
// saved once, and both are answered with the first reply.
func TestAKeyedSaveSentTwiceIsSavedOnce(t *testing.T) {
	a := newApp()
	srv := httptest.NewServer(serve(t, a))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+wire.DefaultPath, &websocket.DialOptions{
		Subprotocols: []string{wire.Subprotocol},
		HTTPHeader:   http.Header{"Cookie": {"user=alice"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	read := func() wire.HostFrame {
		t.Helper()
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			f, err := wire.DecodeHost(b)
			if err != nil {
				t.Fatal(err)
			}
			if f.T != wire.TypeHeartbeat {
				return f
			}
		}
	}
	if f := read(); f.T != wire.TypeReady {
		t.Fatalf("first frame %+v, want ready", f)
	}
	var replies []string
	for id := 1; id <= 2; id++ {
		call := fmt.Sprintf(`{"t":"call","id":%d,"name":"memo.save","key":"save-1","data":{"user":"alice","text":"once"}}`, id)
		if err := c.Write(ctx, websocket.MessageText, []byte(call)); err != nil {
			t.Fatal(err)
		}
		f := read()
		if f.T != wire.TypeReply || f.ID != uint64(id) || f.Code != "" {
			t.Fatalf("call %d: %+v, want its reply", id, f)
		}
		replies = append(replies, string(f.Data))
	}
	a.mu.Lock()
	version := a.memos["alice"].Version
	a.mu.Unlock()
	if replies[0] != replies[1] || version != 1 {
		t.Fatalf("replies %q, alice's memo at version %d: want one save and the first reply twice", replies, version)
	}
}

func TestRunRefusesAnInvalidConfigNamingTheField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lifeline.json")
	if err := os.WriteFile(path, []byte(`{"recovery":{"maxDelayMs":0}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	err := run([]string{"-addr", "127.0.0.1:0", "-config", path}, &stderr)
	if err == nil || !strings.Contains(err.Error(), "recovery.maxDelayMs") || !strings.Contains(err.Error(), "got 0") {
		t.Fatalf("run with maxDelayMs 0 = %v, want the field and the value named", err)
	}
}

// run serves until SIGINT or SIGTERM, or returns the listener's error: here, an address in use.
func TestRunReportsAnAddressInUse(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run([]string{"-addr", srv.Listener.Addr().String()}, io.Discard) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "address already in use") {
			t.Fatalf("run on a taken address = %v, want address already in use", err)
		}
	case <-ctx.Done():
		t.Fatal("run on a taken address did not return within 10 s")
	}
}
