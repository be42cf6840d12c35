//go:build !js

package inject_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin/internal/inject"
	"github.com/lifeline-go/lifeline/internal/test/pagetest"
	"github.com/lifeline-go/lifeline/internal/test/testlog"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// bound is the longest any test waits for something that should happen.
const bound = 5 * time.Second

// logs records the middleware's log lines for assertions.
type logs = testlog.Recorder

// marker stands for the bootstrap element in expected pages.
const marker = "⟨S⟩"

// plugin stands in for the Host: it holds the Page in force, swaps it when a config is
// applied, and passes everything through once closed, as Host.Handler does.
type plugin struct {
	mw        *inject.Middleware
	page      atomic.Pointer[inject.Page]
	bootstrap string // the bootstrap JSON of the Page in force
	closed    atomic.Bool
}

// defaultBootstrap is the bootstrap of a plugin's first config.
const defaultBootstrap = `{"endpoint":"/_lifeline/events","heartbeatMs":15000}`

// newPlugin returns a plugin whose first config has bootstrap, and its logs.
func newPlugin(t testing.TB, bootstrap string) (*plugin, *logs) {
	t.Helper()
	l := &logs{}
	p := &plugin{}
	p.mw = inject.New(p.page.Load, slog.New(l))
	p.apply(bootstrap)
	return p, l
}

// apply makes a config with bootstrap the one in force, dated as the Host dates it: now, and
// at least a second after the config before.
func (p *plugin) apply(bootstrap string) {
	element := []byte(`<script type="application/json" id="` + wire.BootstrapID + `">` + bootstrap + `</script>` +
		`<script src="/_lifeline/client/lifeline.0123456789abcdef.js" async></script>`)
	sum := sha256.Sum256(element)
	at := time.Now().Truncate(time.Second)
	if old := p.page.Load(); old != nil && !at.After(old.Applied) {
		at = old.Applied.Add(time.Second)
	}
	p.bootstrap = bootstrap
	p.page.Store(&inject.Page{Element: element, Hash: hex.EncodeToString(sum[:4]), Applied: at})
}

// element is what the plugin inserts into pages now.
func (p *plugin) element() []byte { return p.page.Load().Element }

// Inject wraps next in the middleware.
func (p *plugin) Inject(next http.Handler) http.Handler { return p.mw.Wrap(next) }

// Handler is next behind the plugin, which passes everything through once closed.
func (p *plugin) Handler(next http.Handler) http.Handler {
	injected := p.mw.Wrap(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.closed.Load() {
			next.ServeHTTP(w, r)
			return
		}
		injected.ServeHTTP(w, r)
	})
}

// htmlPage serves page as text/html, writing it in chunks of chunk bytes (0: one write).
var (
	htmlPage    = pagetest.HTML
	writeChunks = pagetest.WriteChunks
	get         = pagetest.Get
	bootstrapIn = pagetest.BootstrapIn
)

func TestInjectPutsTheBootstrapAtTheEndOfTheHead(t *testing.T) {
	tests := []struct {
		name, page, want string
	}{
		{"a plain page gets it before </head>",
			"<!doctype html><html><head><title>t</title></head><body>x</body></html>",
			"<!doctype html><html><head><title>t</title>⟨S⟩</head><body>x</body></html>"},
		{"upper-case tags are tags",
			"<!DOCTYPE html><HTML><HEAD><TITLE>t</TITLE></HEAD><BODY>x</BODY></HTML>",
			"<!DOCTYPE html><HTML><HEAD><TITLE>t</TITLE>⟨S⟩</HEAD><BODY>x</BODY></HTML>"},
		{"a head with attributes is a head, even one holding </head> in a value",
			`<html><head lang="en" data-x='</head>'><meta charset="utf-8"></head><body></body></html>`,
			`<html><head lang="en" data-x='</head>'><meta charset="utf-8">⟨S⟩</head><body></body></html>`},
		{"an end tag with spaces and new lines is an end tag",
			"<head><title>t</title></head \n><body>",
			"<head><title>t</title>⟨S⟩</head \n><body>"},
		{"</head> inside a comment is not the end of the head",
			"<head><!-- </head> --><title>t</title></head><body>",
			"<head><!-- </head> --><title>t</title>⟨S⟩</head><body>"},
		{"</head> inside a script string is not the end of the head",
			`<head><script>document.write("</head><body>")</script></head><body>`,
			`<head><script>document.write("</head><body>")</script>⟨S⟩</head><body>`},
		{"a double-escaped script hides its </script> until -->",
			`<head><script><!--<script></script></head>--></script></head><body>`,
			`<head><script><!--<script></script></head>--></script>⟨S⟩</head><body>`},
		{"</head> inside a style or a title is text",
			"<head><style>p::after{content:'</head>'}</style><title></head></title></head><body>",
			"<head><style>p::after{content:'</head>'}</style><title></head></title>⟨S⟩</head><body>"},
		{"noscript in the head holds head elements",
			`<head><noscript><link rel="stylesheet" href="a.css"></noscript></head><body>`,
			`<head><noscript><link rel="stylesheet" href="a.css"></noscript>⟨S⟩</head><body>`},
		{"a template's body elements stay inside it",
			"<head><template><div>x</div></head></template><meta name=a></head><body>",
			"<head><template><div>x</div></head></template><meta name=a>⟨S⟩</head><body>"},
		{"a page without a head gets it before <body>",
			"<!doctype html><html><body><p>x</p></body></html>",
			"<!doctype html><html>⟨S⟩<body><p>x</p></body></html>"},
		{"a page without head or body gets it before the first body element",
			"<!doctype html><p>hello",
			"<!doctype html>⟨S⟩<p>hello"},
		{"text in the head ends it",
			"<head><title>t</title>hello<p>",
			"<head><title>t</title>⟨S⟩hello<p>"},
		{"a body-only raw element ends the head",
			"<head><textarea></head></textarea>",
			"<head>⟨S⟩<textarea></head></textarea>"},
		{"an svg in the head ends it",
			"<head><svg></svg></head>",
			"<head>⟨S⟩<svg></svg></head>"},
		{"a frameset page gets it before the frameset",
			"<html><frameset><frame src=a></frameset></html>",
			"<html>⟨S⟩<frameset><frame src=a></frameset></html>"},
		{"stray end tags in the head are ignored",
			"<head></div><title>t</title></head><body>",
			"<head></div><title>t</title>⟨S⟩</head><body>"},
		{"a byte-order mark and comments before the doctype stay first",
			"\ufeff<!-- c --><!doctype html><head></head><body>",
			"\ufeff<!-- c --><!doctype html><head>⟨S⟩</head><body>"},
		{"text right after a byte-order mark stays after the mark",
			"\ufeffhello<p>x",
			"\ufeff⟨S⟩hello<p>x"},
		{"a byte-order mark alone stays first",
			"\ufeff",
			"\ufeff⟨S⟩"},
		{"a second byte-order mark is text, which ends the head",
			"\ufeff\ufeff<head></head>",
			"\ufeff⟨S⟩\ufeff<head></head>"},
		{"CRLF line ends are whitespace",
			"<!doctype html>\r\n<html>\r\n<head>\r\n<meta charset=utf-8>\r\n</head>\r\n<body>",
			"<!doctype html>\r\n<html>\r\n<head>\r\n<meta charset=utf-8>\r\n⟨S⟩</head>\r\n<body>"},
		{"a head that never ends gets it at the end",
			"<!doctype html><head><title>t</title>",
			"<!doctype html><head><title>t</title>⟨S⟩"},
		{"a lone doctype gets it after the doctype",
			"<!doctype html>",
			"<!doctype html>⟨S⟩"},
		{"an empty page is the bootstrap alone",
			"",
			"⟨S⟩"},
		{"an unterminated comment is not entered",
			"<!doctype html><head><!-- unfinished",
			"<!doctype html><head>⟨S⟩<!-- unfinished"},
		{"an unterminated title is not entered",
			"<head><title>still the title",
			"<head>⟨S⟩<title>still the title"},
		{"an unterminated template is not entered",
			"<head><template><div>x",
			"<head>⟨S⟩<template><div>x"},
		{"an unterminated tag is not entered",
			`<head><meta content="x`,
			`<head>⟨S⟩<meta content="x`},
	}
	p, _ := newPlugin(t, defaultBootstrap)
	script := string(p.element())
	bootstrap := p.bootstrap
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := strings.Replace(tt.want, marker, script, 1)
			// However upstream writes the page, the result is the same.
			for _, chunk := range []int{0, 1, 7, 64} {
				rec := get(t, p.Inject(htmlPage(tt.page, chunk)), httptest.NewRequest("GET", "/", nil))
				if got := rec.Body.String(); got != want {
					t.Fatalf("written in chunks of %d:\n got %q\nwant %q", chunk, got, want)
				}
				// Unless the whole page was held, the length is left to net/http.
				if got := rec.Header().Get("Content-Length"); got != "" && got != strconv.Itoa(len(want)) {
					t.Errorf("Content-Length = %q, want %d", got, len(want))
				}
			}
			text, parent, found := bootstrapIn(t, want)
			if !found || text != bootstrap {
				t.Errorf("a browser parsing the page finds bootstrap %q (found %v), want %q", text, found, bootstrap)
			}
			if parent != "head" {
				t.Errorf("a browser parsing the page puts the bootstrap in <%s>, want <head>", parent)
			}
		})
	}
}

func TestInjectLeavesOtherResponsesUntouched(t *testing.T) {
	const page = "<!doctype html><head></head><body>x</body>"
	tests := []struct {
		name     string
		method   string
		reqHdr   map[string]string
		status   int
		respHdr  map[string]string
		body     string
		wantLogs string
	}{
		{name: "a HEAD of an image passes untouched", method: "HEAD", status: 200,
			respHdr: map[string]string{"Content-Type": "image/png", "Content-Length": "42", "Etag": `"v1"`}},
		{name: "a 304 passes untouched", method: "GET", status: 304,
			reqHdr:  map[string]string{"If-None-Match": `"v1"`},
			respHdr: map[string]string{"Etag": `"v1"`, "Last-Modified": "Mon, 02 Jan 2006 15:04:05 GMT"}},
		{name: "a range passes untouched", method: "GET", status: 206,
			reqHdr:  map[string]string{"Range": "bytes=0-9"},
			respHdr: map[string]string{"Content-Type": "text/html", "Content-Range": "bytes 0-9/42", "Content-Length": "10"},
			body:    page[:10]},
		{name: "an error page passes untouched", method: "GET", status: 404,
			respHdr: map[string]string{"Content-Type": "text/html"}, body: page},
		{name: "JSON passes untouched", method: "GET", status: 200,
			respHdr: map[string]string{"Content-Type": "application/json"}, body: `{"head":"</head>"}`},
		{name: "XHTML is not text/html", method: "GET", status: 200,
			respHdr: map[string]string{"Content-Type": "application/xhtml+xml"}, body: page},
		{name: "a compressed page passes untouched and the reason is logged", method: "GET", status: 200,
			respHdr:  map[string]string{"Content-Type": "text/html", "Content-Encoding": "gzip", "Etag": `"gz"`},
			body:     gzipped(page),
			wantLogs: "not injecting the bootstrap into a compressed HTML page"},
		{name: "a POST that answers with a redirect passes untouched", method: "POST", status: 303,
			respHdr: map[string]string{"Location": "/next", "Content-Type": "text/html"}, body: "<a href=/next>next</a>"},
	}
	p, l := newPlugin(t, defaultBootstrap)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.respHdr {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			req := httptest.NewRequest(tt.method, "/", nil)
			for k, v := range tt.reqHdr {
				req.Header.Set(k, v)
			}
			rec := get(t, p.Inject(upstream), req)
			if rec.Code != tt.status || rec.Body.String() != tt.body {
				t.Errorf("got %d %q, want %d %q", rec.Code, rec.Body.String(), tt.status, tt.body)
			}
			for k, v := range tt.respHdr {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("header %s = %q, want %q untouched", k, got, v)
				}
			}
			if tt.wantLogs != "" && !l.Has(tt.wantLogs) {
				t.Errorf("no log line %q; logs:\n%s", tt.wantLogs, l)
			}
		})
	}
}

func gzipped(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = io.WriteString(zw, s)
	_ = zw.Close()
	return b.String()
}

// TestInjectDoesNotBufferWhatItPassesThrough proves streaming: upstream writes one part,
// flushes, and waits until the client has read it. A buffering middleware would deadlock
// here (and fail at the bound).
func TestInjectDoesNotBufferWhatItPassesThrough(t *testing.T) {
	tests := []struct {
		name, method, contentType, encoding string
		status                              int
	}{
		{name: "an event stream", method: "GET", contentType: "text/event-stream", status: 200},
		{name: "a compressed HTML page", method: "GET", contentType: "text/html", encoding: "gzip", status: 200},
		{name: "an HTML error page", method: "GET", contentType: "text/html", status: 500},
	}
	p, _ := newPlugin(t, defaultBootstrap)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.contentType)
				if tt.encoding != "" {
					w.Header().Set("Content-Encoding", tt.encoding)
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, "part one;")
				http.NewResponseController(w).Flush()
				select {
				case <-release:
				case <-time.After(bound):
				}
				_, _ = io.WriteString(w, "part two")
			})
			srv := httptest.NewServer(p.Inject(upstream))
			defer srv.Close()
			req, _ := http.NewRequest(tt.method, srv.URL, nil)
			req.Header.Set("Accept-Encoding", "identity") // keep the transport from decoding
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			first := make([]byte, len("part one;"))
			start := time.Now()
			if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "part one;" {
				t.Fatalf("first part = %q, %v", first, err)
			}
			if time.Since(start) > bound/2 {
				t.Errorf("the first part waited for the second: the response was buffered")
			}
			close(release)
			rest, _ := io.ReadAll(resp.Body)
			if string(rest) != "part two" {
				t.Errorf("second part = %q", rest)
			}
		})
	}
}

func TestInjectSniffsPagesWithoutAContentType(t *testing.T) {
	p, _ := newPlugin(t, defaultBootstrap)
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "<!doctype html><html><head></head><body>")
	})
	rec := get(t, p.Inject(page), httptest.NewRequest("GET", "/", nil))
	if !strings.Contains(rec.Body.String(), "lifeline-bootstrap") || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Errorf("an unlabelled HTML page was not injected: %q, Content-Type %q", rec.Body.String(), rec.Header().Get("Content-Type"))
	}
	png := "\x89PNG\r\n\x1a\n<head></head>"
	img := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, png) })
	if rec := get(t, p.Inject(img), httptest.NewRequest("GET", "/", nil)); rec.Body.String() != png {
		t.Errorf("an unlabelled image was changed: %q", rec.Body.String())
	}
}

func TestInjectKeepsContentLengthRightOverTheWire(t *testing.T) {
	p, _ := newPlugin(t, defaultBootstrap)
	bigBody := strings.Repeat("<p>lorem ipsum dolor sit amet</p>\n", 40000) // ~1.3 MB
	bigHead := "<style>" + strings.Repeat("p{color:red}\n", 20000) + "</style>"
	tests := []struct {
		name, page string
		declare    bool
		chunk      int
	}{
		{"a large body behind a small head, length declared", "<!doctype html><head><title>t</title></head><body>" + bigBody, true, 32 << 10},
		{"a large body, length not declared", "<!doctype html><head><title>t</title></head><body>" + bigBody, false, 32 << 10},
		{"a large head streamed in small chunks", "<!doctype html><head>" + bigHead + "</head><body>x", true, 1000},
		{"a large head, length not declared", "<!doctype html><head>" + bigHead + "</head><body>x", false, 4096},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				if tt.declare {
					w.Header().Set("Content-Length", strconv.Itoa(len(tt.page)))
				}
				writeChunks(w, []byte(tt.page), tt.chunk)
			})
			srv := httptest.NewServer(p.Inject(upstream))
			defer srv.Close()
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("reading the body: %v", err)
			}
			want := strings.Replace(tt.page, "</head>", string(p.element())+"</head>", 1)
			if string(body) != want {
				t.Fatalf("body of %d bytes differs from the expected %d", len(body), len(want))
			}
			if tt.declare && resp.ContentLength != int64(len(want)) {
				t.Errorf("Content-Length = %d, want %d", resp.ContentLength, len(want))
			}
		})
	}
}

// TestInjectGivesAPageALengthWhereNetHTTPWould: net/http gives a response whose handler
// declared no Content-Length one of its own when the handler wrote it whole within its
// response buffer (2 KiB for HTTP/1.1, 4 KiB for HTTP/2); a longer one goes out chunked. The
// injected page is longer than the page by the element (about 3 KB with the client's boot),
// so a page that was short enough must not lose its length to the element: every page that
// has a Content-Length without the middleware has one with it, and it is the injected page's.
func TestInjectGivesAPageALengthWhereNetHTTPWould(t *testing.T) {
	bootstrap := `<script type="application/json" id="` + wire.BootstrapID + `">` + defaultBootstrap + `</script>`
	elements := []struct {
		name    string
		element []byte
	}{
		{"the bootstrap alone", []byte(bootstrap)},
		{"the bootstrap and a 3 KB boot", []byte(bootstrap + "<script>" + strings.Repeat("/* the boot */", 3<<10/14) + "</script>")},
	}
	// Page sizes at each side of net/http's buffers, and of them less each element.
	var sizes []int
	for _, edge := range []int{2 << 10, 4 << 10} {
		sizes = append(sizes, edge-1, edge, edge+1)
		for _, e := range elements {
			sizes = append(sizes, edge-len(e.element)-1, edge-len(e.element), edge-len(e.element)+1)
		}
	}
	sizes = append(sizes, 100, 8<<10)
	for _, proto := range []string{"HTTP/1.1", "HTTP/2.0"} {
		for _, e := range elements {
			ename, element := e.name, e.element
			mw := inject.New(func() *inject.Page { return &inject.Page{Element: element, Hash: "h"} }, slog.New(&logs{}))
			for _, size := range sizes {
				if size <= 0 {
					continue
				}
				for _, chunk := range []int{0, 500} {
					name := fmt.Sprintf("%s, %s, a page of %d bytes written in chunks of %d", proto, ename, size, chunk)
					t.Run(name, func(t *testing.T) {
						page := "<!doctype html><head><title>t</title></head><body>"
						page += strings.Repeat("x", size-len(page))
						upstream := pagetest.HTML(page, chunk)
						bare := fetchOver(t, proto, upstream)
						injected := fetchOver(t, proto, mw.Wrap(upstream))
						want := strings.Replace(page, "</head>", string(element)+"</head>", 1)
						if injected.body != want {
							t.Fatalf("the injected page is %d bytes, not the expected %d", len(injected.body), len(want))
						}
						if bare.length >= 0 && injected.length != int64(len(want)) {
							t.Errorf("without the middleware the page has Content-Length %d; with it, Content-Length %d (transfer encoding %q), want %d",
								bare.length, injected.length, injected.te, len(want))
						}
					})
				}
			}
		}
	}
}

// TestInjectSendsAPageThatFlushesAtTheFlush: a handler that flushes its head before it has
// the rest of the page wants the head in the browser now, as it would be without the
// middleware: the page is not held back for its length.
func TestInjectSendsAPageThatFlushesAtTheFlush(t *testing.T) {
	p, _ := newPlugin(t, defaultBootstrap)
	const head = "<!doctype html><head><title>t</title></head><body>"
	release := make(chan struct{})
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, head)
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-time.After(bound):
		}
		_, _ = io.WriteString(w, "the rest")
	})
	srv := httptest.NewServer(p.Inject(upstream))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	want := strings.Replace(head, "</head>", string(p.element())+"</head>", 1)
	first := make([]byte, len(want))
	start := time.Now()
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != want {
		t.Fatalf("the head = %q, %v; want %q", first, err, want)
	}
	if time.Since(start) > bound/2 {
		t.Errorf("the flushed head waited for the rest of the page: it was held")
	}
	close(release)
	if rest, _ := io.ReadAll(resp.Body); string(rest) != "the rest" {
		t.Errorf("the rest = %q", rest)
	}
}

// fetched is what a client read of a response: its body and its framing.
type fetched struct {
	body   string
	length int64  // Content-Length, -1 when there was none
	te     string // Transfer-Encoding
}

// fetchOver serves handler over a loopback server speaking proto and GETs it.
func fetchOver(t *testing.T, proto string, handler http.Handler) fetched {
	t.Helper()
	srv := httptest.NewUnstartedServer(handler)
	if proto == "HTTP/2.0" {
		srv.EnableHTTP2 = true
		srv.StartTLS()
	} else {
		srv.Start()
	}
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Proto != proto {
		t.Fatalf("the response came over %s, not %s", resp.Proto, proto)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return fetched{body: string(body), length: resp.ContentLength, te: strings.Join(resp.TransferEncoding, ",")}
}

func TestInjectDerivesETagsAndTranslatesRevalidation(t *testing.T) {
	p, _ := newPlugin(t, defaultBootstrap)
	modTime := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	const page = "<!doctype html><head></head><body>x"
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Etag", `W/"v1"`)
		http.ServeContent(w, r, "index.html", modTime, strings.NewReader(page))
	})
	handler := p.Inject(upstream)
	fetch := func(inm string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("Accept", "text/html")
		if inm != "" {
			req.Header.Set("If-None-Match", inm)
		}
		return get(t, handler, req)
	}

	first := fetch("")
	etag := first.Header().Get("Etag")
	if first.Code != 200 || !strings.HasPrefix(etag, `W/"v1-lifeline.`) || first.Header().Get("Accept-Ranges") != "" {
		t.Fatalf("first fetch: %d, Etag %q, Accept-Ranges %q; want 200, a derived weak ETag and no Accept-Ranges",
			first.Code, etag, first.Header().Get("Accept-Ranges"))
	}
	again := fetch(etag)
	if again.Code != 304 || again.Header().Get("Etag") != etag {
		t.Fatalf("revalidation with %s: %d, Etag %q; want 304 with the same derived ETag", etag, again.Code, again.Header().Get("Etag"))
	}

	p.apply(`{"endpoint":"/_lifeline/events","heartbeatMs":3000}`)
	after := fetch(etag)
	if after.Code != 200 || after.Header().Get("Etag") == etag || !strings.Contains(after.Body.String(), `"heartbeatMs":3000`) {
		t.Errorf("after a config change, revalidating the old page gave %d, Etag %q, body %q; want 200 with the new bootstrap and a new ETag",
			after.Code, after.Header().Get("Etag"), after.Body.String())
	}
}

func TestInjectRevalidatesDateOnlyPagesAfterAConfigChange(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "page.html")
	if err := os.WriteFile(file, []byte("<!doctype html><head></head><body>x"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(file, old, old); err != nil {
		t.Fatal(err)
	}
	p, _ := newPlugin(t, defaultBootstrap)
	handler := p.Inject(http.FileServer(http.Dir(dir))) // FileServer sends Last-Modified, no ETag
	fetch := func(ims string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest("GET", "/page.html", nil)
		req.Header.Set("Accept", "text/html,application/xhtml+xml")
		if ims != "" {
			req.Header.Set("If-Modified-Since", ims)
		}
		return get(t, handler, req)
	}
	first := fetch("")
	lm := first.Header().Get("Last-Modified")
	if first.Code != 200 || lm == old.Format(http.TimeFormat) {
		t.Fatalf("first fetch: %d, Last-Modified %q; want 200 dated by the config, not the file", first.Code, lm)
	}
	if again := fetch(lm); again.Code != 304 || again.Header().Get("Last-Modified") != lm {
		t.Fatalf("revalidation: %d, Last-Modified %q; want 304 keeping %q", again.Code, again.Header().Get("Last-Modified"), lm)
	}
	p.apply(`{"endpoint":"/_lifeline/events","heartbeatMs":3000}`)
	if after := fetch(lm); after.Code != 200 || !strings.Contains(after.Body.String(), `"heartbeatMs":3000`) {
		t.Errorf("after a config change: %d %q; want 200 with the new bootstrap", after.Code, after.Body.String())
	}
}

// reply is a response as it crossed the wire.
type reply struct {
	head   string // status line and header lines as sent, without Date
	status int
	header http.Header
	body   string // decoded from chunks if chunked
}

// exchange sends one request to handler over a real socket, as a browser would, and returns
// the response as it crossed the wire. hdr holds header lines ("If-None-Match: \"v1\"").
func exchange(t testing.TB, handler http.Handler, method, target string, hdr ...string) reply {
	t.Helper()
	srv := httptest.NewServer(handler)
	defer srv.Close()
	c, err := net.DialTimeout("tcp", srv.Listener.Addr().String(), bound)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(bound))
	req := method + " " + target + " HTTP/1.1\r\nHost: lifeline.test\r\nConnection: close\r\n" +
		strings.Join(append(slices.Clone(hdr), ""), "\r\n") + "\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading the response to %s %s: %v", method, target, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("parsing the response to %s %s: %v\n%q", method, target, err, raw)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body of %s %s: %v", method, target, err)
	}
	head, _, _ := strings.Cut(string(raw), "\r\n\r\n")
	var kept []string
	for line := range strings.SplitSeq(head, "\r\n") {
		if !strings.HasPrefix(line, "Date: ") {
			kept = append(kept, line)
		}
	}
	return reply{head: strings.Join(kept, "\r\n"), status: resp.StatusCode, header: resp.Header, body: string(body)}
}

// without returns head without the header lines named.
func without(head string, names ...string) string {
	var kept []string
	for line := range strings.SplitSeq(head, "\r\n") {
		name, _, _ := strings.Cut(line, ":")
		if !slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, name) }) {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "\r\n")
}

// The request headers Chromium sends, besides cookies and client hints, for a top-level
// navigation, a script's fetch() and an <img>.
var (
	chromiumNavigation = []string{
		"Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7",
		"Sec-Fetch-Dest: document", "Sec-Fetch-Mode: navigate",
	}
	chromiumFetch = []string{"Accept: */*", "Sec-Fetch-Dest: empty", "Sec-Fetch-Mode: cors"}
	chromiumImage = []string{"Accept: image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8",
		"Sec-Fetch-Dest: image", "Sec-Fetch-Mode: no-cors"}
)

const (
	testPage = "<!doctype html><html><head><title>t</title></head><body>x</body></html>"
	testPNG  = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR<head></head>"
)

// testModTime is when the upstream files last changed: long before any config was applied.
var testModTime = time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)

// served returns a handler that serves content with http.ServeContent under name (which sets
// the type), with etag as its ETag unless empty, modified at testModTime.
func served(etag, name, content string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if etag != "" {
			w.Header().Set("Etag", etag)
		}
		http.ServeContent(w, r, name, testModTime, strings.NewReader(content))
	})
}

// testFiles returns a FileServer (Last-Modified, no ETag) over page.html and logo.png.
func testFiles(t testing.TB) http.Handler {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{"page.html": testPage, "logo.png": testPNG} {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(file, testModTime, testModTime); err != nil {
			t.Fatal(err)
		}
	}
	return http.FileServer(http.Dir(dir))
}

// counted counts the calls of a handler.
type counted struct {
	next  http.Handler
	calls atomic.Int32
}

func (c *counted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.calls.Add(1)
	c.next.ServeHTTP(w, r)
}

// TestInjectAnswersRevalidationsForTheInjectedPage is the table of what a browser cache sends
// and what it must get back. Chromium revalidates a stored response with If-None-Match set to
// the stored ETag and If-Modified-Since set to the stored Last-Modified, both verbatim and both
// at once (net/http/http_cache_transaction.cc, ConditionalizeRequest). A 304 must therefore
// match the page the browser holds, never the upstream page it was made from: a browser that
// stored the page before the plugin (or under another config) must get the injected page.
// On a 304 Chromium replaces its stored Last-Modified with the 304's but keeps its stored
// ETag (kNonUpdatedHeaders in net/http/http_response_headers.cc), so a 304 for the injected
// page carries its date, and its ETag for caches that select by it (RFC 9111 §4.3.4).
// Responses that are not pages pass byte for byte.
func TestInjectAnswersRevalidationsForTheInjectedPage(t *testing.T) {
	p, _ := newPlugin(t, defaultBootstrap)
	older, _ := newPlugin(t, `{"endpoint":"/_lifeline/events","heartbeatMs":3000}`) // a config pages may have been stored under
	files := testFiles(t)
	upstreams := map[string]struct {
		handler http.Handler
		target  string
	}{
		"strong":     {served(`"v1"`, "index.html", testPage), "/"},
		"weak":       {served(`W/"w1"`, "index.html", testPage), "/"},
		"dates":      {files, "/page.html"},
		"image":      {served(`"img1"`, "logo.png", testPNG), "/logo.png"},
		"imageDates": {files, "/logo.png"},
	}
	injected := strings.Replace(testPage, "</head>", string(p.element())+"</head>", 1)

	// The validators a browser stores, filled into the rows' {placeholders}.
	vals := []string{
		"{mtime}", testModTime.Format(http.TimeFormat),
		"{older}", testModTime.Add(-time.Hour).Format(http.TimeFormat),
		"{future}", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat),
	}
	for _, name := range []string{"strong", "weak", "dates"} {
		up := upstreams[name]
		first := exchange(t, p.Inject(up.handler), "GET", up.target, chromiumNavigation...)
		if first.status != 200 || first.body != injected {
			t.Fatalf("%s: a first visit got %d %q, want the injected page", name, first.status, first.body)
		}
		stale := exchange(t, older.Inject(up.handler), "GET", up.target, chromiumNavigation...)
		vals = append(vals, "{"+name+".etag}", first.header.Get("Etag"), "{"+name+".oldetag}", stale.header.Get("Etag"),
			"{applied}", first.header.Get("Last-Modified"))
	}
	fill := strings.NewReplacer(vals...)
	if tag := fill.Replace("{strong.etag}"); !strings.HasPrefix(tag, `"v1-lifeline.`) {
		t.Fatalf("the injected page's ETag is %s, want one derived from \"v1\"", tag)
	}
	if tag := fill.Replace("{weak.etag}"); !strings.HasPrefix(tag, `W/"w1-lifeline.`) {
		t.Fatalf("the injected page's ETag is %s, want a weak one derived from W/\"w1\"", tag)
	}
	if tag := fill.Replace("{dates.etag}"); !strings.HasPrefix(tag, `W/"lifeline.`) || !strings.HasSuffix(tag, strconv.FormatInt(testModTime.Unix(), 10)+`"`) {
		t.Fatalf("the injected date-only page's ETag is %s, want a weak one made of the config and the date", tag)
	}
	if applied := fill.Replace("{applied}"); applied == testModTime.Format(http.TimeFormat) {
		t.Fatalf("the injected page is dated %s, the upstream date: a date-only cache would keep a page of another config", applied)
	}

	tests := []struct {
		name      string
		upstream  string
		as        []string // the kind of request: chromiumNavigation, chromiumFetch, chromiumImage
		hdr       []string // the validators, with {placeholders}
		status    int
		page      bool   // the body is the injected page
		etag, lm  string // expected values, with {placeholders}; "" means absent
		untouched bool   // the response is byte for byte the one upstream gives alone
		calls     int32  // upstream calls: 2 when a 304 had to be checked against the page
	}{
		{name: "revalidating the injected page gets a 304 with its ETag",
			upstream: "strong", hdr: []string{"If-None-Match: {strong.etag}", "If-Modified-Since: {applied}"},
			status: 304, etag: "{strong.etag}", calls: 1},
		{name: "revalidating a page stored before the plugin gets the injected page",
			upstream: "strong", hdr: []string{`If-None-Match: "v1"`, "If-Modified-Since: {mtime}"},
			status: 200, page: true, etag: "{strong.etag}", lm: "{applied}", calls: 2},
		{name: "revalidating a page stored under an older config gets the injected page",
			upstream: "strong", hdr: []string{"If-None-Match: {strong.oldetag}", "If-Modified-Since: {applied}"},
			status: 200, page: true, etag: "{strong.etag}", lm: "{applied}", calls: 1},
		{name: "revalidating a page stored before it changed gets the injected page",
			upstream: "strong", hdr: []string{`If-None-Match: "v0"`, "If-Modified-Since: {older}"},
			status: 200, page: true, etag: "{strong.etag}", lm: "{applied}", calls: 1},
		{name: "a list holding the injected page's ETag gets a 304",
			upstream: "strong", hdr: []string{`If-None-Match: "v0", {strong.etag}`},
			status: 304, etag: "{strong.etag}", calls: 2},
		{name: "a list of ETags from before the plugin gets the injected page",
			upstream: "strong", hdr: []string{`If-None-Match: "v0", "v1"`},
			status: 200, page: true, etag: "{strong.etag}", lm: "{applied}", calls: 2},
		{name: "If-None-Match * gets a 304 with the injected page's ETag",
			upstream: "strong", hdr: []string{"If-None-Match: *"},
			status: 304, etag: "{strong.etag}", calls: 2},
		{name: "the weak form of the injected page's ETag matches it, as weak comparison says",
			upstream: "strong", hdr: []string{"If-None-Match: W/{strong.etag}"},
			status: 304, etag: "{strong.etag}", calls: 1},
		{name: "a date alone, the injected page's, gets a 304 with the injected page's ETag",
			upstream: "strong", hdr: []string{"If-Modified-Since: {applied}"},
			status: 304, etag: "{strong.etag}", calls: 2},
		{name: "a date alone from before the plugin gets the injected page",
			upstream: "strong", hdr: []string{"If-Modified-Since: {mtime}"},
			status: 200, page: true, etag: "{strong.etag}", lm: "{applied}", calls: 2},
		{name: "a script's fetch of a page stored before the plugin gets the injected page",
			upstream: "strong", as: chromiumFetch, hdr: []string{`If-None-Match: "v1"`, "If-Modified-Since: {mtime}"},
			status: 200, page: true, etag: "{strong.etag}", lm: "{applied}", calls: 2},
		{name: "a weak upstream ETag stays weak in the injected page's, which revalidates",
			upstream: "weak", hdr: []string{"If-None-Match: {weak.etag}", "If-Modified-Since: {applied}"},
			status: 304, etag: "{weak.etag}", calls: 1},
		{name: "the weak ETag from before the plugin gets the injected page",
			upstream: "weak", hdr: []string{`If-None-Match: W/"w1"`, "If-Modified-Since: {mtime}"},
			status: 200, page: true, etag: "{weak.etag}", lm: "{applied}", calls: 2},
		{name: "a date-only page revalidated with its injected date gets a 304 that keeps the date",
			upstream: "dates", hdr: []string{"If-Modified-Since: {applied}"},
			status: 304, lm: "{applied}", calls: 2},
		{name: "a date-only page stored before the plugin gets the injected page",
			upstream: "dates", hdr: []string{"If-Modified-Since: {mtime}"},
			status: 200, page: true, etag: "{dates.etag}", lm: "{applied}", calls: 2},
		{name: "revalidating a date-only injected page by its dated ETag and date gets a 304 that keeps the date",
			upstream: "dates", hdr: []string{"If-None-Match: {dates.etag}", "If-Modified-Since: {applied}"},
			status: 304, lm: "{applied}", calls: 1},
		{name: "revalidating a date-only page stored under an older config gets the injected page",
			upstream: "dates", hdr: []string{"If-None-Match: {dates.oldetag}", "If-Modified-Since: {applied}"},
			status: 200, page: true, etag: "{dates.etag}", lm: "{applied}", calls: 1},
		{name: "a date from a client clock running ahead gets a 304 with the injected date",
			upstream: "dates", hdr: []string{"If-Modified-Since: {future}"},
			status: 304, lm: "{applied}", calls: 2},
		{name: "a script's fetch revalidating a date-only page gets a 304 with the injected date",
			upstream: "dates", as: chromiumFetch, hdr: []string{"If-Modified-Since: {applied}"},
			status: 304, lm: "{applied}", calls: 2},
		{name: "an image revalidated passes untouched",
			upstream: "image", as: chromiumImage, hdr: []string{`If-None-Match: "img1"`, "If-Modified-Since: {mtime}"},
			status: 304, untouched: true, calls: 2},
		{name: "an image opened in a tab and reloaded passes untouched",
			upstream: "image", hdr: []string{`If-None-Match: "img1"`, "If-Modified-Since: {mtime}"},
			status: 304, untouched: true, calls: 2},
		{name: "a changed image passes untouched",
			upstream: "image", as: chromiumImage, hdr: []string{`If-None-Match: "img0"`, "If-Modified-Since: {older}"},
			status: 200, untouched: true, calls: 1},
		{name: "a date-only image revalidated passes untouched",
			upstream: "imageDates", as: chromiumImage, hdr: []string{"If-Modified-Since: {mtime}"},
			status: 304, untouched: true, calls: 2},
		{name: "a date-only image opened in a tab and reloaded passes untouched",
			upstream: "imageDates", hdr: []string{"If-Modified-Since: {mtime}"},
			status: 304, untouched: true, calls: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := upstreams[tt.upstream]
			as := tt.as
			if as == nil {
				as = chromiumNavigation
			}
			hdr := append(slices.Clone(as), strings.Split(fill.Replace(strings.Join(tt.hdr, "\n")), "\n")...)
			c := &counted{next: up.handler}
			got := exchange(t, p.Inject(c), "GET", up.target, hdr...)
			if got.status != tt.status {
				t.Fatalf("status %d, want %d\n%s", got.status, tt.status, got.head)
			}
			if n := c.calls.Load(); n != tt.calls {
				t.Errorf("upstream was called %d times, want %d", n, tt.calls)
			}
			if tt.untouched {
				alone := exchange(t, up.handler, "GET", up.target, hdr...)
				if got.head != alone.head || got.body != alone.body {
					t.Errorf("the response differs from upstream's alone:\n got %q\n%q\nwant %q\n%q", got.head, got.body, alone.head, alone.body)
				}
				return
			}
			if tt.page && got.body != injected {
				t.Errorf("body %q, want the injected page", got.body)
			}
			if !tt.page && got.body != "" {
				t.Errorf("body %q, want none", got.body)
			}
			if want := fill.Replace(tt.etag); got.header.Get("Etag") != want {
				t.Errorf("ETag %q, want %q", got.header.Get("Etag"), want)
			}
			if want := fill.Replace(tt.lm); got.header.Get("Last-Modified") != want {
				t.Errorf("Last-Modified %q, want %q", got.header.Get("Last-Modified"), want)
			}
		})
	}
}

// TestInjectAnswersHeadAsItAnswersGet checks that a HEAD gets what the GET would get (status
// and every header), without a body: a link checker or a cache that asks HEAD first must see
// the injected page's length and validators, not upstream's.
func TestInjectAnswersHeadAsItAnswersGet(t *testing.T) {
	p, _ := newPlugin(t, defaultBootstrap)
	files := testFiles(t)
	large := "<!doctype html><head><title>t</title></head><body>" + strings.Repeat("<p>lorem ipsum dolor</p>\n", 4000)
	naive := func(page string, declare bool) http.Handler { // writes the body whatever the method, as many handlers do
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if declare {
				w.Header().Set("Content-Length", strconv.Itoa(len(page)))
			}
			writeChunks(w, []byte(page), 1000)
		})
	}
	tests := []struct {
		name    string
		handler http.Handler
		target  string
		cond    string // "derived": If-None-Match with the injected page's ETag; "upstream": with upstream's
	}{
		{name: "a page served by ServeContent with an ETag", handler: served(`"v1"`, "index.html", testPage), target: "/"},
		{name: "a date-only page from a FileServer", handler: files, target: "/page.html"},
		{name: "a page written without a Content-Type", handler: naive(testPage, false), target: "/"},
		{name: "a large page with a declared length", handler: served(`"v1"`, "index.html", large), target: "/"},
		{name: "a large page written without a declared length", handler: naive(large, false), target: "/"},
		{name: "a large page written with a declared length", handler: naive(large, true), target: "/"},
		{name: "a page in UTF-16", handler: served(`"v1"`, "index.html", string(utf16Bytes("\ufeff"+testPage, false))), target: "/"},
		{name: "a HEAD revalidating the injected page", handler: served(`"v1"`, "index.html", testPage), target: "/", cond: "derived"},
		{name: "a HEAD revalidating the page stored before the plugin", handler: served(`"v1"`, "index.html", testPage), target: "/", cond: "upstream"},
		{name: "an image", handler: served(`"img1"`, "logo.png", testPNG), target: "/logo.png"},
		{name: "an image written without a Content-Type", handler: naive(testPNG, false), target: "/logo.png"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			handler := p.Inject(tt.handler)
			var hdr []string
			switch tt.cond {
			case "derived":
				hdr = []string{"If-None-Match: " + exchange(t, handler, "GET", tt.target).header.Get("Etag")}
			case "upstream":
				hdr = []string{`If-None-Match: "v1"`}
			}
			get := exchange(t, handler, "GET", tt.target, hdr...)
			head := exchange(t, handler, "HEAD", tt.target, hdr...)
			// Transfer-Encoding frames a body; a HEAD has none to frame.
			if want := without(get.head, "Transfer-Encoding"); head.head != want {
				t.Errorf("HEAD answered\n%s\nwant what GET answered\n%s", head.head, want)
			}
			if head.body != "" {
				t.Errorf("HEAD answered with a body: %q", head.body)
			}
			if strings.HasPrefix(tt.name, "an image") {
				if alone := exchange(t, tt.handler, "HEAD", tt.target, hdr...); head.head != alone.head {
					t.Errorf("HEAD of an image answered\n%s\nwant upstream's\n%s", head.head, alone.head)
				}
			}
		})
	}
}

// TestInjectPassesOtherResponsesByteForByte compares, over the wire, what the middleware sends
// with what upstream sends alone, for responses that are not pages to inject.
func TestInjectPassesOtherResponsesByteForByte(t *testing.T) {
	p, _ := newPlugin(t, defaultBootstrap)
	tests := []struct {
		name    string
		handler http.Handler
		method  string
		hdr     []string
	}{
		{name: "a 304 to a request without validators keeps its Last-Modified",
			handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Last-Modified", testModTime.Format(http.TimeFormat))
				w.WriteHeader(http.StatusNotModified)
			}), method: "GET", hdr: chromiumNavigation},
		{name: "a 304 for a page's own date, from a handler that dates 304s its own way, keeps its headers",
			handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Last-Modified", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
				w.Header().Set("Cache-Control", "no-cache")
				w.WriteHeader(http.StatusNotModified)
			}), method: "GET", hdr: append(slices.Clone(chromiumNavigation), "If-Modified-Since: "+time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))},
		{name: "an image without a Content-Type written a few bytes at a time is typed as net/http would",
			handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				writeChunks(w, []byte(testPNG), 3)
			}), method: "GET", hdr: chromiumImage},
		{name: "a range of a page passes untouched",
			handler: served(`"v1"`, "index.html", testPage), method: "GET", hdr: []string{"Range: bytes=0-9"}},
		{name: "an error page passes untouched",
			handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, testPage)
			}), method: "GET", hdr: chromiumNavigation},
		{name: "a HEAD of an error page passes untouched",
			handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, testPage)
			}), method: "HEAD"},
		{name: "a 304 to a POST passes untouched",
			handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Etag", `"v1"`)
				w.Header().Set("Last-Modified", testModTime.Format(http.TimeFormat))
				w.WriteHeader(http.StatusNotModified)
			}), method: "POST", hdr: []string{`If-None-Match: "v1"`, "Content-Length: 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := exchange(t, p.Inject(tt.handler), tt.method, "/x", tt.hdr...)
			alone := exchange(t, tt.handler, tt.method, "/x", tt.hdr...)
			if got.head != alone.head || got.body != alone.body {
				t.Errorf("the response differs from upstream's alone:\n got %q\n%q\nwant %q\n%q", got.head, got.body, alone.head, alone.body)
			}
		})
	}
}

// utf16Bytes encodes s in UTF-16, without adding a byte-order mark.
func utf16Bytes(s string, bigEndian bool) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		if bigEndian {
			b = binary.BigEndian.AppendUint16(b, u)
		} else {
			b = binary.LittleEndian.AppendUint16(b, u)
		}
	}
	return b
}

// decodeUTF16 decodes b as a browser does: unpaired surrogates and a last odd byte become
// U+FFFD.
func decodeUTF16(b []byte, bigEndian bool) string {
	units := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		if bigEndian {
			units = append(units, binary.BigEndian.Uint16(b[i:]))
		} else {
			units = append(units, binary.LittleEndian.Uint16(b[i:]))
		}
	}
	s := string(utf16.Decode(units))
	if len(b)%2 == 1 {
		s += "\ufffd"
	}
	return s
}

func TestInjectWritesTheBootstrapIntoUTF16PagesInUTF16(t *testing.T) {
	// An endpoint outside ASCII, and outside the BMP, makes the element itself need encoding.
	p, _ := newPlugin(t, `{"endpoint":"/é/😀/events","heartbeatMs":15000}`)
	script := string(p.element())
	bootstrap := p.bootstrap
	tests := []struct {
		name, contentType string
		page, want        string // in UTF-8, encoded to enc for the test
		enc               string // utf-16le, utf-16be or utf-8: what a browser decodes the page as
	}{
		{"a little-endian page with a byte-order mark", "text/html",
			"\ufeff<!doctype html><head><title>t😀</title></head><body>x",
			"\ufeff<!doctype html><head><title>t😀</title>⟨S⟩</head><body>x", "utf-16le"},
		{"a big-endian page with a byte-order mark", "text/html",
			"\ufeff<!doctype html><head><title>t😀</title></head><body>x",
			"\ufeff<!doctype html><head><title>t😀</title>⟨S⟩</head><body>x", "utf-16be"},
		{"text right after the mark ends the head", "text/html",
			"\ufeffhello <p>", "\ufeff⟨S⟩hello <p>", "utf-16le"},
		{"a mark alone", "text/html", "\ufeff", "\ufeff⟨S⟩", "utf-16be"},
		{"a page labelled utf-16 without a mark is little-endian", "text/html; charset=utf-16",
			"<head><meta charset=utf-16></head><body>", "<head><meta charset=utf-16>⟨S⟩</head><body>", "utf-16le"},
		{"a page labelled UTF-16BE without a mark", `text/html; charset="UTF-16BE"`,
			"<head></head><body>", "<head>⟨S⟩</head><body>", "utf-16be"},
		{"a mark overrides the label", "text/html; charset=utf-8",
			"\ufeff<head></head>", "\ufeff<head>⟨S⟩</head>", "utf-16le"},
		{"a UTF-8 mark overrides a utf-16 label", "text/html; charset=utf-16",
			"\ufeff<head></head>", "\ufeff<head>⟨S⟩</head>", "utf-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			encode := func(s string) []byte {
				switch tt.enc {
				case "utf-16le":
					return utf16Bytes(s, false)
				case "utf-16be":
					return utf16Bytes(s, true)
				}
				return []byte(s)
			}
			page := encode(tt.page)
			want := encode(strings.Replace(tt.want, marker, script, 1))
			for _, chunk := range []int{0, 1, 3, 64} {
				upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", tt.contentType)
					w.Header().Set("Content-Length", strconv.Itoa(len(page)))
					writeChunks(w, page, chunk)
				})
				rec := get(t, p.Inject(upstream), httptest.NewRequest("GET", "/", nil))
				if got := rec.Body.Bytes(); !bytes.Equal(got, want) {
					t.Fatalf("written in chunks of %d:\n got %q\nwant %q", chunk, got, want)
				}
				if got := rec.Header().Get("Content-Length"); got != strconv.Itoa(len(want)) {
					t.Errorf("Content-Length = %s, want %d", got, len(want))
				}
			}
			doc := string(want)
			if tt.enc != "utf-8" {
				doc = decodeUTF16(want, tt.enc == "utf-16be")
			}
			text, parent, found := bootstrapIn(t, doc)
			if !found || text != bootstrap || parent != "head" {
				t.Errorf("a browser decoding the page as %s finds bootstrap %q in <%s> (found %v), want %q in <head>",
					tt.enc, text, parent, found, bootstrap)
			}
		})
	}
}

// BenchmarkInjectRevalidation measures a revalidation through the middleware, against an
// http.FileServer (Last-Modified only) and http.ServeContent with an ETag, with the headers
// Chromium sends.
func BenchmarkInjectRevalidation(b *testing.B) {
	p, _ := newPlugin(b, defaultBootstrap)
	files := testFiles(b)
	page := served(`"v1"`, "index.html", testPage)
	image := served(`"img1"`, "logo.png", testPNG)
	pageTag := get(b, p.Inject(page), httptest.NewRequest("GET", "/", nil)).Header().Get("Etag")
	dated := get(b, p.Inject(files), httptest.NewRequest("GET", "/page.html", nil))
	pageDate, datedTag := dated.Header().Get("Last-Modified"), dated.Header().Get("Etag")
	for _, bc := range []struct {
		name, target string
		handler      http.Handler
		hdr          []string
	}{
		{"a page by its derived ETag", "/", page, []string{"If-None-Match", pageTag, "If-Modified-Since", pageDate}},
		{"a date-only page as Chromium revalidates it", "/page.html", files, []string{"If-None-Match", datedTag, "If-Modified-Since", pageDate}},
		{"a date-only page by its date alone", "/page.html", files, []string{"If-Modified-Since", pageDate}},
		{"an image by its ETag", "/logo.png", image, []string{"If-None-Match", `"img1"`, "If-Modified-Since", testModTime.Format(http.TimeFormat)}},
		{"an image by its date alone", "/logo.png", files, []string{"If-Modified-Since", testModTime.Format(http.TimeFormat)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			handler := p.Inject(bc.handler)
			req := httptest.NewRequest("GET", bc.target, nil)
			for i := 0; i < len(bc.hdr); i += 2 {
				if bc.hdr[i+1] != "" {
					req.Header.Set(bc.hdr[i], bc.hdr[i+1])
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusNotModified {
					b.Fatalf("got %d, want 304", rec.Code)
				}
			}
		})
	}
}

// chromiumCache is one entry of a browser cache as Chromium keeps it: a 200 replaces it; a 304
// updates its headers except those Chromium never takes from a 304 (kNonUpdatedHeaders and
// kNonUpdatedHeaderPrefixes in net/http/http_response_headers.cc), the ETag among them.
type chromiumCache struct {
	header http.Header
	body   string
}

func (c *chromiumCache) revalidate(t *testing.T, handler http.Handler, target string) int {
	t.Helper()
	hdr := slices.Clone(chromiumNavigation)
	if c.header.Get("Etag") != "" {
		hdr = append(hdr, "If-None-Match: "+c.header.Get("Etag"))
	}
	if c.header.Get("Last-Modified") != "" {
		hdr = append(hdr, "If-Modified-Since: "+c.header.Get("Last-Modified"))
	}
	r := exchange(t, handler, "GET", target, hdr...)
	switch r.status {
	case http.StatusOK:
		c.header, c.body = r.header, r.body
	case http.StatusNotModified:
		for k, v := range r.header {
			lower := strings.ToLower(k)
			if !slices.Contains([]string{"connection", "proxy-connection", "keep-alive", "www-authenticate",
				"proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade",
				"content-location", "content-md5", "etag", "content-encoding", "content-range", "content-type",
				"content-length", "x-frame-options", "x-xss-protection"}, lower) &&
				!strings.HasPrefix(lower, "x-content-") && !strings.HasPrefix(lower, "x-webkit-") {
				c.header[k] = v
			}
		}
	default:
		t.Fatalf("revalidation answered %d", r.status)
	}
	return r.status
}

// TestInjectKeepsABrowserCacheRightThroughThePluginsLife follows one cached page through
// moments t0…t5: stored before the plugin, revalidated while it runs, across a config change
// and after it is closed. At every moment the browser must hold what the server would send
// now, whether upstream validates by ETag or by date alone.
func TestInjectKeepsABrowserCacheRightThroughThePluginsLife(t *testing.T) {
	for _, up := range []struct {
		name    string
		handler http.Handler
		target  string
	}{
		{"ServeContent with an ETag", served(`"v1"`, "index.html", testPage), "/"},
		{"a FileServer, dates only", testFiles(t), "/page.html"},
	} {
		t.Run(up.name, func(t *testing.T) {
			p, _ := newPlugin(t, defaultBootstrap)
			handler := p.Handler(up.handler)
			page := func() string { // what the Host serves now
				return strings.Replace(testPage, "</head>", string(p.element())+"</head>", 1)
			}
			c := &chromiumCache{header: http.Header{}}
			steps := []struct {
				moment string
				do     func()
				status int
				holds  func() string
			}{
				{"t0: stored before the plugin", nil, 200, func() string { return testPage }},
				{"t1: revalidated once the plugin runs", nil, 200, page},
				{"t2: revalidated again", nil, 304, page},
				{"t3: and again, with what the 304 left in the cache", nil, 304, page},
				{"t4: revalidated after a config change", func() {
					p.apply(`{"endpoint":"/_lifeline/events","heartbeatMs":3000}`)
				}, 200, page},
				{"t5: revalidated after Close", func() { p.closed.Store(true) }, 200, func() string { return testPage }},
			}
			for i, s := range steps {
				if s.do != nil {
					s.do()
				}
				via := handler
				if i == 0 {
					via = up.handler
				}
				if got := c.revalidate(t, via, up.target); got != s.status || c.body != s.holds() {
					t.Fatalf("%s: got %d, the browser holds %q; want %d and %q", s.moment, got, c.body, s.status, s.holds())
				}
			}
		})
	}
}

// A handler behind the middleware can still take its connection over: coder/websocket reaches
// http.Hijacker through the writer's Unwrap.
func TestAHandlerBehindTheMiddlewareCanHijack(t *testing.T) {
	p, _ := newPlugin(t, defaultBootstrap)
	socket := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			t.Errorf("Accept behind the middleware: %v", err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		_ = c.Write(ctx, websocket.MessageText, []byte("hi"))
		_ = c.Close(websocket.StatusNormalClosure, "")
	})
	srv := httptest.NewServer(p.Inject(socket))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatalf("dial through the middleware: %v", err)
	}
	defer c.CloseNow()
	if _, b, err := c.Read(ctx); err != nil || string(b) != "hi" {
		t.Errorf("read %q, %v; want hi", b, err)
	}
}
