//go:build !js

package client_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/lifeline-go/lifeline/hostplugin/internal/client"
)

func load(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.Load()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// urls returns the asset URLs the page tags name.
func urls(t *testing.T, c *client.Client) (wasm, script, run string) {
	t.Helper()
	tags := string(c.Tags("/_lifeline/client/"))
	find := func(attr string) string {
		m := regexp.MustCompile(attr + `="([^"]+)"`).FindStringSubmatch(tags)
		if m == nil {
			t.Fatalf("no %s in %s", attr, tags)
		}
		return m[1]
	}
	return find("data-wasm"), find("src"), find("data-run")
}

func get(c *client.Client, method, url string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	c.ServeHTTP(w, r)
	return w
}

func TestTheWasmIsServedInTheEncodingTheBrowserTakes(t *testing.T) {
	c := load(t)
	wasm, _, _ := urls(t, c)
	br := get(c, "GET", wasm, "Accept-Encoding", "gzip, deflate, br")
	gz := get(c, "GET", wasm, "Accept-Encoding", "gzip")
	id := get(c, "GET", wasm, "Accept-Encoding", "br;q=0, gzip;q=0")
	for _, w := range []*httptest.ResponseRecorder{br, gz, id} {
		if w.Code != 200 || w.Header().Get("Content-Type") != "application/wasm" ||
			w.Header().Get("Cache-Control") != "public, max-age=31536000, immutable" || w.Header().Get("Vary") != "Accept-Encoding" {
			t.Fatalf("wasm: %d %v", w.Code, w.Header())
		}
	}
	if br.Header().Get("Content-Encoding") != "br" || gz.Header().Get("Content-Encoding") != "gzip" || id.Header().Get("Content-Encoding") != "" {
		t.Fatalf("encodings: br %q, gzip %q, identity %q", br.Header().Get("Content-Encoding"), gz.Header().Get("Content-Encoding"), id.Header().Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(zr)
	if !bytes.Equal(raw, id.Body.Bytes()) || !bytes.HasPrefix(raw, []byte("\x00asm")) {
		t.Fatalf("identity (%d bytes) is not the gzip's content (%d bytes) or not wasm", id.Body.Len(), len(raw))
	}
	if br.Body.Len() >= gz.Body.Len() {
		t.Errorf("brotli %d bytes, gzip %d: the .br should be the smaller", br.Body.Len(), gz.Body.Len())
	}
}

func TestScriptsAreServedImmutableAndRevalidateByName(t *testing.T) {
	c := load(t)
	_, script, run := urls(t, c)
	for _, u := range []string{script, run} {
		w := get(c, "GET", u)
		if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/javascript") ||
			w.Header().Get("Cache-Control") != "public, max-age=31536000, immutable" || w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("%s: %d %v", u, w.Code, w.Header())
		}
		etag := w.Header().Get("Etag")
		if nm := get(c, "GET", u, "If-None-Match", etag); nm.Code != http.StatusNotModified {
			t.Errorf("%s with its ETag: %d, want 304", u, nm.Code)
		}
		if h := get(c, "HEAD", u); h.Code != 200 || h.Body.Len() != 0 || h.Header().Get("Content-Length") != w.Header().Get("Content-Length") {
			t.Errorf("HEAD %s: %d, %d bytes, length %q", u, h.Code, h.Body.Len(), h.Header().Get("Content-Length"))
		}
	}
	if !strings.Contains(get(c, "GET", run).Body.String(), "globalThis.Go = class") {
		t.Errorf("the runner does not carry wasm_exec.js")
	}
}

func TestUnknownNamesAndMethodsAreRefused(t *testing.T) {
	c := load(t)
	_, script, _ := urls(t, c)
	if w := get(c, "GET", "/_lifeline/client/lifeline.0000000000000000.js"); w.Code != 404 {
		t.Errorf("another build's name: %d, want 404", w.Code)
	}
	if w := get(c, "POST", script); w.Code != 405 || w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d %v", w.Code, w.Header())
	}
}

func TestTagsBootInlineThenStartTheScriptAsyncWithoutAPreload(t *testing.T) {
	c := load(t)
	tags := string(c.Tags("/app/client/"))
	for _, want := range []string{`<script data-wasm="/app/client/lifeline.`, `<script src="/app/client/lifeline.`, `data-worker="/app/client/worker.`, ` async>`} {
		if !strings.Contains(tags, want) {
			t.Errorf("tags %s lack %q", tags, want)
		}
	}
	boot := regexp.MustCompile(`(?s)^<script [^>]*>(.*?)</script><script src=`).FindStringSubmatch(tags)
	if boot == nil || !strings.Contains(boot[1], "globalThis.__lifelineBoot") {
		t.Fatalf("tags %.300s… do not begin with the inline boot", tags)
	}
	// The hash a Content-Security-Policy lists is the inline script's, byte for byte.
	sum := sha256.Sum256([]byte(boot[1]))
	if want := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; c.BootHash() != want {
		t.Errorf("BootHash() = %s, want %s", c.BootHash(), want)
	}
	// A preloaded wasm response never reaches V8's code cache: the repeat visit would compile
	// again; a prefetch reads the cached wasm again on every load.
	if strings.Contains(tags, "preload") || strings.Contains(tags, "prefetch") {
		t.Errorf("tags %s preload the wasm", tags)
	}
	if hostile := string(c.Tags(`/x"><script>alert(1)</`)); strings.Contains(hostile, `"><script>`) || strings.Count(hostile, "<script") != 2 {
		t.Errorf("a hostile prefix left its attribute: %s", hostile)
	}
}

func TestScriptsGoOutGzippedToABrowserThatTakesIt(t *testing.T) {
	c := load(t)
	_, script, run := urls(t, c)
	for _, u := range []string{script, run} {
		id := get(c, "GET", u)
		gz := get(c, "GET", u, "Accept-Encoding", "gzip, deflate, br")
		if gz.Header().Get("Content-Encoding") != "gzip" || gz.Header().Get("Vary") != "Accept-Encoding" || id.Header().Get("Content-Encoding") != "" {
			t.Fatalf("%s: encodings gzip %q (Vary %q), identity %q", u, gz.Header().Get("Content-Encoding"), gz.Header().Get("Vary"), id.Header().Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(bytes.NewReader(gz.Body.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(zr)
		if !bytes.Equal(raw, id.Body.Bytes()) || gz.Body.Len()*2 > id.Body.Len() {
			t.Errorf("%s: gzip %d bytes of %d, want the same script in less than half", u, gz.Body.Len(), id.Body.Len())
		}
	}
}

// The loader opens the Host's socket while the wasm loads, in the page (web/boot.js) and in a
// shared hub's worker (web/worker.js), which cannot share a script without a request more: the
// two copies of openEarly must stay one function.
func TestTheTabScriptAndTheWorkerOpenTheEarlySocketAlike(t *testing.T) {
	c := load(t)
	_, script, _ := urls(t, c)
	worker := regexp.MustCompile(`data-worker="([^"]+)"`).FindStringSubmatch(string(c.Tags("/_lifeline/client/")))
	if worker == nil {
		t.Fatal("no data-worker in the tags")
	}
	fn := func(name, body string) string {
		m := regexp.MustCompile(`(?s)// openEarly BEGIN.*?// openEarly END`).FindString(body)
		if m == "" {
			t.Fatalf("%s has no openEarly between its markers", name)
		}
		var lines []string
		for l := range strings.SplitSeq(m, "\n") {
			lines = append(lines, strings.TrimSpace(l))
		}
		return strings.Join(lines, "\n")
	}
	tab := fn("the tab script", get(c, "GET", script).Body.String())
	hub := fn("the worker", get(c, "GET", worker[1]).Body.String())
	if tab != hub {
		t.Fatalf("openEarly differs between web/boot.js and web/worker.js:\n--- tab script\n%s\n--- worker\n%s", tab, hub)
	}
}

// wasmBudget is the most the page's wasm may weigh as a browser takes it (brotli, bytes): a
// first visit over a slow link waits for every byte (1.6 Mbit/s carries 700 KB in 3.5 s).
const wasmBudget = 700_000

// TestTheWasmIsWithinItsBudget weighs the wasm the plugin serves, which scripts/check-assets.sh
// holds to a fresh build of the source. Over it: `go run ./bench/cmd/wasmsize` says where the
// bytes go, and internal/test's import rules name what the wasm must not link.
func TestTheWasmIsWithinItsBudget(t *testing.T) {
	c := load(t)
	wasm, _, _ := urls(t, c)
	w := get(c, http.MethodGet, wasm, "Accept-Encoding", "br")
	if enc := w.Header().Get("Content-Encoding"); enc != "br" {
		t.Fatalf("the wasm went out as %q, want br", enc)
	}
	if n := w.Body.Len(); n > wasmBudget {
		t.Errorf("the wasm is %d bytes of brotli, over its budget of %d", n, wasmBudget)
	}
}
