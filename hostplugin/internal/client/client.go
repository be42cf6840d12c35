//go:build !js

// Package client holds the page side of Lifeline as the Host plugin serves it: the wasm hub
// (pre-compressed), the tab script (the JS API and the Settings indicator), the boot the page's
// head carries inline (web/boot.js), the shared hub's worker script and the runner (Go's
// wasm_exec.js of the Go that built the wasm, and web/runner.js). They are built by
// scripts/assets.sh and committed in dist/, so that an embedder who only ran `go get` serves
// the same client the project tests; CI checks they match a fresh build.
//
// Every asset is served under a name that carries a hash of its content, with
// Cache-Control: public, max-age=31536000, immutable: a returning browser fetches nothing, and
// V8 can reuse its compiled wasm. A name with another hash is not found: it belongs to
// another build.
package client

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed dist
var dist embed.FS

// asset is one file served under its hashed name.
type asset struct {
	name     string // "lifeline.<hash>.js"
	ctype    string
	identity []byte // nil for the wasm until first needed (see wasm)
	br, gz   []byte // compressed forms: the wasm's pre-compressed (both), a script's gzip
}

// Client is the set of assets, read once.
type Client struct {
	wasm, script, run, worker *asset
	byName                    map[string]*asset
	boot                      []byte // the inline boot

	identityOnce sync.Once
	identityErr  error
}

var (
	loadOnce sync.Once
	loaded   *Client
	loadErr  error
)

// Load returns the embedded client. It fails only on a broken build (an asset missing).
func Load() (*Client, error) {
	loadOnce.Do(func() {
		sub, _ := fs.Sub(dist, "dist")
		loaded, loadErr = LoadFS(sub, "the embedded client")
	})
	return loaded, loadErr
}

// LoadFS reads a client from fsys, a directory laid out as scripts/assets.sh writes it (what
// names fsys in errors). It is for trying another build of the client without rebuilding the
// Host (the page-load benchmark's levers); the embedded one is what Load serves.
func LoadFS(fsys fs.FS, what string) (*Client, error) {
	read := func(name string) ([]byte, error) {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("hostplugin: %s lacks %s (scripts/assets.sh writes it): %w", what, name, err)
		}
		return b, nil
	}
	c := &Client{byName: map[string]*asset{}}
	for _, f := range []struct {
		dst   **asset
		base  string
		file  string
		ctype string
	}{
		{&c.script, "lifeline", "lifeline.js", "text/javascript; charset=utf-8"},
		{&c.run, "run", "run.js", "text/javascript; charset=utf-8"},
		{&c.worker, "worker", "worker.js", "text/javascript; charset=utf-8"},
	} {
		b, err := read(f.file)
		if err != nil {
			return nil, err
		}
		gz, err := gzipped(b)
		if err != nil {
			return nil, fmt.Errorf("hostplugin: compressing %s of %s: %w", f.file, what, err)
		}
		a := &asset{name: hashed(f.base, ".js", b), ctype: f.ctype, identity: b, gz: gz}
		*f.dst = a
		c.byName[a.name] = a
	}
	boot, err := read("boot.js")
	if err != nil {
		return nil, err
	}
	if bytes.Contains(bytes.ToLower(boot), []byte("</script")) {
		return nil, fmt.Errorf("hostplugin: %s's boot.js contains </script: it cannot be inlined", what)
	}
	c.boot = boot
	br, err := read("lifeline.wasm.br")
	if err != nil {
		return nil, err
	}
	gz, err := read("lifeline.wasm.gz")
	if err != nil {
		return nil, err
	}
	// The hash of the gzip stands for the wasm: it changes whenever the wasm does.
	c.wasm = &asset{name: hashed("lifeline", ".wasm", gz), ctype: "application/wasm", br: br, gz: gz}
	c.byName[c.wasm.name] = c.wasm
	return c, nil
}

// gzipped is b compressed once, at load: a script's 40 KB are 10 on the wire, which a slow link
// feels (about 150 ms at 1.6 Mbit/s).
func gzipped(b []byte) ([]byte, error) {
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func hashed(base, ext string, content []byte) string {
	sum := sha256.Sum256(content)
	return base + "." + hex.EncodeToString(sum[:8]) + ext
}

// identity decompresses the wasm for the rare client that accepts neither br nor gzip.
func (c *Client) identity() ([]byte, error) {
	c.identityOnce.Do(func() {
		zr, err := gzip.NewReader(bytes.NewReader(c.wasm.gz))
		if err != nil {
			c.identityErr = err
			return
		}
		c.wasm.identity, c.identityErr = io.ReadAll(zr)
	})
	return c.wasm.identity, c.identityErr
}

// Tags are what the plugin inserts into a page's head after the bootstrap, with prefix the
// URL path the assets are served under ("/_lifeline/client/"): the boot, inline, which starts
// loading the hub as soon as the page is parsed that far (the SharedWorker, or in-page the
// wasm's streaming compile and the runner), then the tab script, async, which carries the same
// boot for a page whose Content-Security-Policy refuses the inline one (see BootHash).
//
// There is deliberately no <link rel="preload"> (nor prefetch) of the wasm: a module compiled
// from a preloaded response never enters V8's code cache (bench/PAGELOAD.md, measured: 18
// stores, 0 hits with a preload; 3 of 3 hits without), in shared mode the worker, not the page,
// compiles the wasm, and a prefetch reads the cached wasm again on every load of every tab
// (tabs 2–5 of a first visit over 4G: connected 83 → 252 ms).
func (c *Client) Tags(prefix string) []byte {
	// The prefix comes from the configured endpoint: percent-encoded as a URL path, then
	// escaped for an HTML attribute, so no value of it can leave the attribute.
	attr := func(s string) string { return html.EscapeString((&url.URL{Path: s}).EscapedPath()) }
	data := fmt.Sprintf(`data-wasm="%s" data-run="%s" data-worker="%s"`, attr(prefix+c.wasm.name), attr(prefix+c.run.name), attr(prefix+c.worker.name))
	var b strings.Builder
	fmt.Fprintf(&b, `<script %s>%s</script>`, data, c.boot)
	fmt.Fprintf(&b, `<script src="%s" %s async></script>`, attr(prefix+c.script.name), data)
	return []byte(b.String())
}

// BootHash is the inline boot's hash as a Content-Security-Policy source ('sha256-…'): a page
// whose policy allows no inline script lists it in script-src to let the boot run. Without
// it the browser refuses the boot (and says so on the console), and the tab script boots
// instead, when it has come.
func (c *Client) BootHash() string {
	sum := sha256.Sum256(c.boot)
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// immutable is the caching of every hashed asset.
const immutable = "public, max-age=31536000, immutable"

// modTime dates every asset for conditional requests; the hashed name does the rest.
var modTime = time.Unix(0, 0)

// ServeHTTP serves the asset named by the last element of the request path.
func (c *Client) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "hostplugin: client assets answer GET and HEAD", http.StatusMethodNotAllowed)
		return
	}
	a := c.byName[path.Base(r.URL.Path)]
	if a == nil {
		http.Error(w, "hostplugin: no such client asset (a page of another build asked for it)", http.StatusNotFound)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("Cache-Control", immutable)
	h.Set("X-Content-Type-Options", "nosniff")
	// The name is the content: its hash is as good an ETag as any.
	h.Set("Etag", strconv.Quote(strings.TrimSuffix(a.name, path.Ext(a.name))))
	body := a.identity
	h.Add("Vary", "Accept-Encoding")
	ae := r.Header.Get("Accept-Encoding")
	if a != c.wasm && accepts(ae, "gzip") {
		h.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	if a == c.wasm {
		switch {
		case accepts(ae, "br"):
			h.Set("Content-Encoding", "br")
			body = a.br
		case accepts(ae, "gzip"):
			h.Set("Content-Encoding", "gzip")
			body = a.gz
		default:
			b, err := c.identity()
			if err != nil {
				http.Error(w, "hostplugin: the embedded wasm is damaged: "+err.Error(), http.StatusInternalServerError)
				return
			}
			body = b
		}
	}
	http.ServeContent(w, r, a.name, modTime, bytes.NewReader(body))
}

// accepts reports whether an Accept-Encoding header admits token: listed (or "*") with a
// q-value above zero.
func accepts(header, token string) bool {
	star := false
	for part := range strings.SplitSeq(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		q := 1.0
		for p := range strings.SplitSeq(params, ";") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(p), "q="); ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					q = f
				}
			}
		}
		switch coding {
		case token:
			return q > 0
		case "*":
			star = q > 0
		}
	}
	return star
}
