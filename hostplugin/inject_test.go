//go:build !js

package hostplugin_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/hostplugin"
)

// marker stands for the bootstrap element in expected pages.
const marker = "⟨S⟩"

func newHost(t testing.TB, doc string) (*hostplugin.Host, *logs) {
	t.Helper()
	l := &logs{}
	h, err := hostplugin.New(mustConfig(t, doc), &hostplugin.Options{Logger: slog.New(l)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h, l
}

// htmlPage serves page as text/html, writing it in chunks of chunk bytes (0: one write).
func htmlPage(page string, chunk int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		writeChunks(w, []byte(page), chunk)
	})
}

func writeChunks(w io.Writer, b []byte, chunk int) {
	if chunk <= 0 {
		chunk = len(b)
	}
	for len(b) > 0 {
		n := min(chunk, len(b))
		_, _ = w.Write(b[:n])
		b = b[n:]
	}
}

func get(t testing.TB, handler http.Handler, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	return rec
}

// bootstrapIn parses page as a browser would and returns the text of #lifeline-bootstrap
// and the name of its parent element.
func bootstrapIn(t testing.TB, page string) (text, parent string, found bool) {
	t.Helper()
	// A browser's decoder consumes a byte-order mark before the parser sees it.
	doc, err := html.Parse(strings.NewReader(strings.TrimPrefix(page, "\ufeff")))
	if err != nil {
		t.Fatalf("html.Parse: %v", err)
	}
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode || n.Data != "script" {
			continue
		}
		for _, a := range n.Attr {
			if a.Key == "id" && a.Val == "lifeline-bootstrap" && n.FirstChild != nil {
				return n.FirstChild.Data, n.Parent.Data, true
			}
		}
	}
	return "", "", false
}

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
	h, _ := newHost(t, `{}`)
	script := string(h.BootstrapElement())
	bootstrap := string(h.Config().Bootstrap())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := strings.Replace(tt.want, marker, script, 1)
			// However upstream writes the page, the result is the same.
			for _, chunk := range []int{0, 1, 7, 64} {
				rec := get(t, h.Inject(htmlPage(tt.page, chunk)), httptest.NewRequest("GET", "/", nil))
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

func TestBootstrapCarriesTheResolvedTimingAndEndpoint(t *testing.T) {
	h, _ := newHost(t, `{"recovery":{"deadlineMs":9000,"jitter":0.25},"heartbeatMs":2000,"endpoint":"/ws"}`)
	var got struct {
		Recovery    controller.Recovery `json:"recovery"`
		Endpoint    string              `json:"endpoint"`
		HeartbeatMs int64               `json:"heartbeatMs"`
	}
	dec := json.NewDecoder(bytes.NewReader(h.Config().Bootstrap()))
	dec.DisallowUnknownFields() // nothing but timing and endpoint may reach the page
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	rec, err := controller.Resolve(got.Recovery)
	if err != nil {
		t.Fatalf("the page's resolver refuses the bootstrap: %v", err)
	}
	if rec != h.Config().Recovery() || got.Endpoint != "/ws" || got.HeartbeatMs != 2000 {
		t.Errorf("bootstrap = %+v (recovery %+v), want the config's", got, rec)
	}
	if got.Recovery.SlowAfterMs == nil || *got.Recovery.SlowAfterMs != 3000 {
		t.Errorf("defaults are not spelled out for the page: slowAfterMs = %v", got.Recovery.SlowAfterMs)
	}
}

func TestInjectEscapesHostileValuesForTheScriptContext(t *testing.T) {
	const hostile = `/x</script><script>alert(1)</script><!--&amp;-->`
	h, _ := newHost(t, `{"endpoint":`+strconv.Quote(hostile)+`}`)
	rec := get(t, h.Inject(htmlPage("<head></head><body>", 0)), httptest.NewRequest("GET", "/", nil))
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
	if strings.Count(page, "<script") != 1 {
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
		{name: "a HEAD request passes untouched", method: "HEAD", status: 200,
			respHdr: map[string]string{"Content-Type": "text/html", "Content-Length": "42", "Etag": `"v1"`}},
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
	h, l := newHost(t, `{}`)
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
			rec := get(t, h.Inject(upstream), req)
			if rec.Code != tt.status || rec.Body.String() != tt.body {
				t.Errorf("got %d %q, want %d %q", rec.Code, rec.Body.String(), tt.status, tt.body)
			}
			for k, v := range tt.respHdr {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("header %s = %q, want %q untouched", k, got, v)
				}
			}
			if tt.wantLogs != "" && !l.has(tt.wantLogs) {
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
	h, _ := newHost(t, `{}`)
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
			srv := httptest.NewServer(h.Inject(upstream))
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
	h, _ := newHost(t, `{}`)
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "<!doctype html><html><head></head><body>")
	})
	rec := get(t, h.Inject(page), httptest.NewRequest("GET", "/", nil))
	if !strings.Contains(rec.Body.String(), "lifeline-bootstrap") || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Errorf("an unlabelled HTML page was not injected: %q, Content-Type %q", rec.Body.String(), rec.Header().Get("Content-Type"))
	}
	png := "\x89PNG\r\n\x1a\n<head></head>"
	img := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, png) })
	if rec := get(t, h.Inject(img), httptest.NewRequest("GET", "/", nil)); rec.Body.String() != png {
		t.Errorf("an unlabelled image was changed: %q", rec.Body.String())
	}
}

func TestInjectKeepsContentLengthRightOverTheWire(t *testing.T) {
	h, _ := newHost(t, `{}`)
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
			srv := httptest.NewServer(h.Inject(upstream))
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
			want := strings.Replace(tt.page, "</head>", string(h.BootstrapElement())+"</head>", 1)
			if string(body) != want {
				t.Fatalf("body of %d bytes differs from the expected %d", len(body), len(want))
			}
			if tt.declare && resp.ContentLength != int64(len(want)) {
				t.Errorf("Content-Length = %d, want %d", resp.ContentLength, len(want))
			}
		})
	}
}

func TestInjectDerivesETagsAndTranslatesRevalidation(t *testing.T) {
	h, _ := newHost(t, `{}`)
	modTime := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	const page = "<!doctype html><head></head><body>x"
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Etag", `W/"v1"`)
		http.ServeContent(w, r, "index.html", modTime, strings.NewReader(page))
	})
	handler := h.Inject(upstream)
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

	if err := h.Apply(mustConfig(t, `{"heartbeatMs":3000}`)); err != nil {
		t.Fatal(err)
	}
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
	h, _ := newHost(t, `{}`)
	handler := h.Inject(http.FileServer(http.Dir(dir))) // FileServer sends Last-Modified, no ETag
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
	if err := h.Apply(mustConfig(t, `{"heartbeatMs":3000}`)); err != nil {
		t.Fatal(err)
	}
	if after := fetch(lm); after.Code != 200 || !strings.Contains(after.Body.String(), `"heartbeatMs":3000`) {
		t.Errorf("after a config change: %d %q; want 200 with the new bootstrap", after.Code, after.Body.String())
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
	handler := h.Inject(htmlPage("<head></head>", 0))
	before := get(t, handler, httptest.NewRequest("GET", "/", nil)).Body.String()
	if err := h.Apply(mustConfig(t, `{"recovery":{"deadlineMs":4000}}`)); err != nil {
		t.Fatal(err)
	}
	after := get(t, handler, httptest.NewRequest("GET", "/", nil)).Body.String()
	if !strings.Contains(before, `"deadlineMs":15000`) || !strings.Contains(after, `"deadlineMs":4000`) {
		t.Errorf("before: %s\nafter: %s\nwant deadline 15000 then 4000", before, after)
	}
}
