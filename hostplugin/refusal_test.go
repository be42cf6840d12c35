//go:build !js

package hostplugin_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lifeline-go/lifeline/hostplugin"
)

// The refusal query: a page's plain GET of the endpoint, asking why its upgrade failed.

// refusalQuery sends the page's refusal query: a plain GET of the endpoint with header.
func refusalQuery(t *testing.T, f *fixture, method string, header http.Header) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, f.Srv.URL+f.H.Config().Endpoint(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("refusal query: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestTheRefusalQueryAnswersWhatTheUpgradeWouldNot(t *testing.T) {
	const allowed = "https://app.example.com"
	tests := []struct {
		name   string
		hooks  bool   // Authenticate set (byCookie)
		user   string // cookie
		origin string // "" = none (a same-origin GET)
		method string // "" = GET
		status int
		body   string // the JSON answer, exactly; "" for HEAD
		cors   bool   // CORS headers expected
		calls  int    // Authenticate calls expected
	}{
		{name: "without hooks a plain GET is 426 upgrade required", status: 426,
			body: `{"error":"upgrade required","carriers":["stream","poll"]}`},
		{name: "a page Authenticate lets in is 426", hooks: true, user: "alice", status: 426,
			body: `{"error":"upgrade required","carriers":["stream","poll"]}`, calls: 1},
		{name: "a page without a credential is 401 with the reason", hooks: true, status: 401,
			body: `{"error":"unauthorized","reason":"hostplugin: unauthenticated: sign in first"}`, calls: 1},
		{name: "a forbidden page is 403 with the reason", hooks: true, user: "mallory", status: 403,
			body: `{"error":"forbidden","reason":"hostplugin: forbidden: mallory is banned"}`, calls: 1},
		{name: "a panicking Authenticate is 500", hooks: true, user: "crash", status: 500,
			body: `{"error":"internal error","reason":"internal error"}`, calls: 1},
		{name: "an allowed cross-origin page gets CORS on a refusal", hooks: true, origin: allowed, status: 401,
			body: `{"error":"unauthorized","reason":"hostplugin: unauthenticated: sign in first"}`, cors: true, calls: 1},
		{name: "an allowed cross-origin page gets CORS on a 426", hooks: true, user: "alice", origin: allowed, status: 426,
			body: `{"error":"upgrade required","carriers":["stream","poll"]}`, cors: true, calls: 1},
		{name: "a foreign origin gets no CORS and Authenticate is not asked", hooks: true, origin: "https://evil.example", status: 403,
			body: `{"error":"origin not allowed"}`},
		{name: "a lookalike origin gets no CORS", hooks: true, user: "alice", origin: "https://app.example.com.evil.net", status: 403,
			body: `{"error":"origin not allowed"}`},
		{name: "HEAD answers the status without a body", hooks: true, method: "HEAD", status: 401, calls: 1},
		{name: "a PUT is 405", hooks: true, method: "PUT", status: 405,
			body: `{"error":"method not allowed"}`},
		{name: "a POST is the HTTP carrier's, and one with no envelope is 400", hooks: true, method: "POST", status: 400,
			body: `{"error":"bad envelope","reason":"wire: bad frame: the document ends too soon (in a POST's envelope)"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			var opts hostplugin.Options
			if tt.hooks {
				opts.Authenticate = func(r *http.Request) (string, error) {
					calls.Add(1)
					return byCookie(r)
				}
			}
			f := newFixtureWith(t, `{"allowedOrigins":["`+allowed+`"]}`, true, opts)
			header := cookie(tt.user)
			if header == nil {
				header = http.Header{}
			}
			if tt.origin != "" {
				header.Set("Origin", tt.origin)
			}
			method := tt.method
			if method == "" {
				method = http.MethodGet
			}
			resp, body := refusalQuery(t, f, method, header)
			if resp.StatusCode != tt.status || strings.TrimSpace(body) != tt.body {
				t.Fatalf("%s: %d %q, want %d %q", method, resp.StatusCode, body, tt.status, tt.body)
			}
			if ct := resp.Header.Get("Content-Type"); tt.body != "" && !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control %q, want no-store", cc)
			}
			if v := resp.Header.Values("Vary"); !strings.Contains(strings.Join(v, ","), "Origin") {
				t.Errorf("Vary %q, want Origin", v)
			}
			acao, acac := resp.Header.Get("Access-Control-Allow-Origin"), resp.Header.Get("Access-Control-Allow-Credentials")
			if tt.cors && (acao != tt.origin || acac != "true") {
				t.Errorf("CORS %q %q, want %q true", acao, acac, tt.origin)
			}
			if !tt.cors && (acao != "" || acac != "") {
				t.Errorf("CORS %q %q for origin %q, want none", acao, acac, tt.origin)
			}
			if tt.status == 426 && resp.Header.Get("Upgrade") != "websocket" {
				t.Errorf("426 without Upgrade: websocket (headers %v)", resp.Header)
			}
			if n := int(calls.Load()); n != tt.calls {
				t.Errorf("Authenticate called %d times, want %d", n, tt.calls)
			}
			if st := f.H.Stats(); st.Accepted != 0 || st.Open != 0 || st.Sessions != 0 {
				t.Errorf("Stats after a refusal query %+v: a query is no socket", st)
			}
		})
	}
}

func TestTheRefusalQueryAndTheUpgradeRefuseAlike(t *testing.T) {
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{Authenticate: byCookie})
	for _, user := range []string{"", "mallory", "eve", "crash"} {
		up, upBody := refusedDial(t, f, cookie(user))
		h := cookie(user)
		if h == nil {
			h = http.Header{}
		}
		q, qBody := refusalQuery(t, f, http.MethodGet, h)
		if up.StatusCode != q.StatusCode || strings.TrimSpace(upBody) != strings.TrimSpace(qBody) {
			t.Errorf("user %q: upgrade %d %q, refusal query %d %q: want the same answer", user, up.StatusCode, upBody, q.StatusCode, qBody)
		}
	}
}
