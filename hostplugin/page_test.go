//go:build !js

package hostplugin_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/test/pagetest"
)

// The page's bootstrap as the Host makes it from its config, and what Handler does with it.
// How a page gets it (where in the head, its encoding, its caching headers) is package
// internal/inject's, tested there.

var (
	htmlPage    = pagetest.HTML
	writeChunks = pagetest.WriteChunks
	get         = pagetest.Get
	bootstrapIn = pagetest.BootstrapIn
)

func TestBootstrapCarriesTheResolvedTimingAndEndpoint(t *testing.T) {
	h, _ := newHost(t, `{"recovery":{"deadlineMs":9000,"jitter":0.25},"heartbeatMs":2000,"endpoint":"/ws","callTimeoutMs":4000}`)
	var got struct {
		Recovery      controller.Recovery `json:"recovery"`
		Endpoint      string              `json:"endpoint"`
		HeartbeatMs   int64               `json:"heartbeatMs"`
		CallTimeoutMs int64               `json:"callTimeoutMs"`
	}
	dec := json.NewDecoder(bytes.NewReader(hostplugin.BootstrapJSON(h.Config())))
	dec.DisallowUnknownFields() // nothing but timing and the endpoint may reach the page
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	rec, err := controller.Resolve(got.Recovery)
	if err != nil {
		t.Fatalf("the page's resolver refuses the bootstrap: %v", err)
	}
	if rec != h.Config().Recovery() || got.Endpoint != "/ws" || got.HeartbeatMs != 2000 || got.CallTimeoutMs != 4000 {
		t.Errorf("bootstrap = %+v (recovery %+v), want the config's", got, rec)
	}
	if got.Recovery.SlowAfterMs == nil || *got.Recovery.SlowAfterMs != 3000 {
		t.Errorf("defaults are not spelled out for the page: slowAfterMs = %v", got.Recovery.SlowAfterMs)
	}
}

func TestInjectEscapesHostileValuesForTheScriptContext(t *testing.T) {
	const hostile = `/x</script><script>alert(1)</script><!--&amp;-->`
	h, _ := newHost(t, `{"endpoint":`+strconv.Quote(hostile)+`}`)
	rec := get(t, h.Handler(htmlPage("<head></head><body>", 0)), httptest.NewRequest("GET", "/", nil))
	page := rec.Body.String()
	text, _, found := bootstrapIn(t, page)
	if !found {
		t.Fatalf("no bootstrap element in %q", page)
	}
	if strings.ContainsAny(text, "<>&\u2028\u2029") {
		t.Errorf("bootstrap holds raw script-breaking characters: %q", text)
	}
	var got struct{ Endpoint string }
	if err := json.Unmarshal([]byte(text), &got); err != nil || got.Endpoint != hostile {
		t.Errorf("bootstrap endpoint = %q (%v), want %q", got.Endpoint, err, hostile)
	}
	// Three scripts: the bootstrap, the client's boot and its tab script; the hostile value
	// reaches the client's URLs only percent-encoded.
	if strings.Count(page, "<script") != 3 || strings.Contains(page, "alert(1)<") {
		t.Errorf("the hostile value opened a script: %q", page)
	}
}

func TestConfigRefusesLineSeparatorsInTheEndpoint(t *testing.T) {
	for _, ep := range []string{"/a\u2028b", "/a\u2029b", "/a b", "/a\x00b"} {
		if _, err := hostplugin.ParseConfig([]byte(`{"endpoint":` + strconv.Quote(ep) + `}`)); err == nil {
			t.Errorf("endpoint %q was accepted", ep)
		}
	}
}

func TestClosedHostServesPagesByteForByte(t *testing.T) {
	h, _ := newHost(t, `{}`)
	const page = "<!doctype html><head><title>t</title></head><body>x"
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		w.Header().Set("Etag", `"v1"`)
		_, _ = io.WriteString(w, page)
	})
	handler := h.Handler(upstream)
	if rec := get(t, handler, httptest.NewRequest("GET", "/", nil)); rec.Body.String() == page {
		t.Fatalf("the open Host did not inject")
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	rec := get(t, handler, httptest.NewRequest("GET", "/", nil))
	if rec.Body.String() != page || rec.Header().Get("Etag") != `"v1"` || rec.Header().Get("Content-Length") != strconv.Itoa(len(page)) {
		t.Errorf("after Close: %q, Etag %q, Content-Length %q; want the upstream page byte for byte",
			rec.Body.String(), rec.Header().Get("Etag"), rec.Header().Get("Content-Length"))
	}
	rec = get(t, handler, httptest.NewRequest("GET", h.Config().Endpoint(), nil))
	if rec.Body.String() != page {
		t.Errorf("after Close the endpoint path still reaches the Host: %d %q", rec.Code, rec.Body.String())
	}
}

func TestReloadAppliesToPagesLoadedAfterwards(t *testing.T) {
	h, _ := newHost(t, `{}`)
	handler := h.Handler(htmlPage("<head></head>", 0))
	before := get(t, handler, httptest.NewRequest("GET", "/", nil)).Body.String()
	if err := h.Apply(mustConfig(t, `{"recovery":{"deadlineMs":4000}}`)); err != nil {
		t.Fatal(err)
	}
	after := get(t, handler, httptest.NewRequest("GET", "/", nil)).Body.String()
	if !strings.Contains(before, `"deadlineMs":15000`) || !strings.Contains(after, `"deadlineMs":4000`) {
		t.Errorf("before: %s\nafter: %s\nwant deadline 15000 then 4000", before, after)
	}
}
