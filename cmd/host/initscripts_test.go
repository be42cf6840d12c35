//go:build lifeline_faults && !js

package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A page asked for with a registered token has the script first in its head, uncached; an
// unknown token is refused; a request without one is the page as the Host serves it.
func TestAnInitScriptRunsFirstInTheHeadOfThePageThatAsksForIt(t *testing.T) {
	s := newInitScripts()
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("ETag", `"x"`)
		io.WriteString(w, `<!doctype html><html><head lang="en"><script>page()</script></head><body></body></html>`)
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == initScriptPath {
			s.panel().ServeHTTP(w, r)
			return
		}
		s.pages(page).ServeHTTP(w, r)
	}))
	defer srv.Close()

	res, err := http.Post(srv.URL+initScriptPath, "text/javascript", strings.NewReader(`first("</script>")`))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("register: %v %v", res, err)
	}
	token, _ := io.ReadAll(res.Body)
	again, _ := http.Post(srv.URL+initScriptPath, "text/javascript", strings.NewReader(`first("</script>")`))
	if b, _ := io.ReadAll(again.Body); string(b) != string(token) {
		t.Errorf("the same script registered twice got tokens %s and %s", token, b)
	}

	get := func(q string) (int, string, http.Header) {
		t.Helper()
		res, err := http.Get(srv.URL + "/" + q)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res.Header
	}
	code, body, h := get("?lang=zh&e2e-init=" + string(token))
	want := `<head lang="en"><script>first("<\/script>")</script><script>page()</script>`
	if code != 200 || !strings.Contains(body, want) {
		t.Errorf("with the token: %d %q, want it to contain %q", code, body, want)
	}
	if h.Get("ETag") != "" || h.Get("Cache-Control") != "no-store" {
		t.Errorf("with the token: ETag %q, Cache-Control %q; want none and no-store", h.Get("ETag"), h.Get("Cache-Control"))
	}
	if code, _, _ := get("?e2e-init=nope"); code != http.StatusBadRequest {
		t.Errorf("an unknown token: %d, want 400", code)
	}
	if code, body, _ := get(""); code != 200 || strings.Contains(body, "first(") {
		t.Errorf("without a token: %d %q, want the page untouched", code, body)
	}
}
