//go:build !js

// Package pagetest serves and reads HTML pages for the tests of the Host's injection
// (hostplugin and hostplugin/internal/inject): a page served in chunks, a request served to a
// recorder, and the bootstrap element found as a browser's parser finds it. Tests only.
package pagetest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// HTML serves page as text/html, writing it in chunks of chunk bytes (0: one write).
func HTML(page string, chunk int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		WriteChunks(w, []byte(page), chunk)
	})
}

// WriteChunks writes b to w in chunks of chunk bytes (0: one write).
func WriteChunks(w io.Writer, b []byte, chunk int) {
	if chunk <= 0 {
		chunk = len(b)
	}
	for len(b) > 0 {
		n := min(chunk, len(b))
		_, _ = w.Write(b[:n])
		b = b[n:]
	}
}

// Get serves req with handler and returns what it answered.
func Get(t testing.TB, handler http.Handler, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	return rec
}

// BootstrapIn parses page as a browser would (a byte-order mark is consumed by its decoder
// before the parser sees it) and returns the text of the bootstrap element (#wire.BootstrapID)
// and the name of its parent element.
func BootstrapIn(t testing.TB, page string) (text, parent string, found bool) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(strings.TrimPrefix(page, "\ufeff")))
	if err != nil {
		t.Fatalf("html.Parse: %v", err)
	}
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode || n.Data != "script" {
			continue
		}
		for _, a := range n.Attr {
			if a.Key == "id" && a.Val == wire.BootstrapID && n.FirstChild != nil {
				return n.FirstChild.Data, n.Parent.Data, true
			}
		}
	}
	return "", "", false
}
