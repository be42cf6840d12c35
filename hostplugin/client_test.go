//go:build !js

package hostplugin_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/lifeline-go/lifeline/hostplugin"
)

func TestHandlerServesTheClientBesideTheEndpointAndInjectsIt(t *testing.T) {
	h, _ := newHost(t, `{"endpoint":"/app/ws"}`)
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<!doctype html><head><title>app</title></head><body>app</body>"))
	})
	srv := httptest.NewServer(h.Handler(app))
	defer srv.Close()
	page := fetch(t, srv.URL+"/")
	if page.Header.Get("Cache-Control") != "" {
		t.Errorf("the page got Cache-Control %q: HTML is never cached as immutable", page.Header.Get("Cache-Control"))
	}
	body := page.body
	m := regexp.MustCompile(`<script src="(/app/client/lifeline\.[0-9a-f]{16}\.js)" data-wasm="(/app/client/lifeline\.[0-9a-f]{16}\.wasm)" data-run="(/app/client/run\.[0-9a-f]{16}\.js)" data-worker="(/app/client/worker\.[0-9a-f]{16}\.js)" async></script></head>`).FindStringSubmatch(body)
	if m == nil || !strings.Contains(m[0], `<script src="`+hostplugin.ClientPrefix("/app/ws")) {
		t.Fatalf("the page lacks the client's tags at the end of its head: %s", body)
	}
	for _, u := range m[1:] {
		r := fetch(t, srv.URL+u)
		if r.StatusCode != 200 || r.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Errorf("%s: %d %q", u, r.StatusCode, r.Header.Get("Cache-Control"))
		}
	}
	// Pages loaded before a reload keep their URLs: the client stays served under the old
	// prefix too.
	cfg, err := hostplugin.ParseConfig([]byte(`{"endpoint":"/v2/events"}`))
	if err != nil {
		t.Fatal(err)
	}
	h.Apply(cfg)
	if r := fetch(t, srv.URL+m[1]); r.StatusCode != 200 {
		t.Errorf("after a reload the old prefix answers %d", r.StatusCode)
	}
	if !strings.Contains(fetch(t, srv.URL+"/").body, `src="/v2/client/lifeline.`) {
		t.Errorf("after a reload pages do not get the new prefix")
	}
}

func TestNoClientInjectsTheBootstrapOnly(t *testing.T) {
	h, err := hostplugin.New(hostplugin.DefaultConfig(), &hostplugin.Options{Logger: slog.New(slog.DiscardHandler), NoClient: true, Authorize: hostplugin.PublicStreams})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<head></head>" + r.URL.Path))
	})
	srv := httptest.NewServer(h.Handler(app))
	defer srv.Close()
	if body := fetch(t, srv.URL+"/").body; strings.Contains(body, "<link") || strings.Count(body, "<script") != 1 {
		t.Errorf("NoClient page: %s", body)
	}
	if r := fetch(t, srv.URL+"/_lifeline/client/x.js"); !strings.Contains(r.body, "/_lifeline/client/x.js") {
		t.Errorf("NoClient: the client prefix did not reach the app: %d %s", r.StatusCode, r.body)
	}
}

func TestClientPrefix(t *testing.T) {
	for ep, want := range map[string]string{
		"/_lifeline/events": "/_lifeline/client/",
		"/events":           "/_lifeline/client/",
		"/app/v1/ws":        "/app/v1/client/",
	} {
		if got := hostplugin.ClientPrefix(ep); got != want {
			t.Errorf("ClientPrefix(%q) = %q, want %q", ep, got, want)
		}
	}
}

type fetched struct {
	*http.Response
	body string
}

func fetch(t *testing.T, url string) fetched {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, r.Body)
	return fetched{r, b.String()}
}
