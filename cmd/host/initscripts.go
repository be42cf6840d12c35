//go:build lifeline_faults && !js

package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/lifeline-go/lifeline/internal/fault"
)

// Init scripts for the e2e suite, in a build with -tags lifeline_faults and with -faults on:
// a script run at the top of a page's head, before any of the page's own scripts (the
// bootstrap and the boot the plugin injects at the end of the head included). A browser whose
// driver can add init scripts of its own (Chromium through Playwright, Firefox through
// WebDriver BiDi) does not need it; WebKitGTK's classic WebDriver has no such command, so its
// driver registers the scripts of a tab here and loads the page with ?e2e-init=<token>.
//
//	POST /_lifeline/e2e/init  body: the script    → 200, the token (loopback, same-origin only)
//	GET  /any/page?e2e-init=<token>               → the page with <script>the script</script>
//	                                                first in its head; an unknown token: 400
//
// A token is the script's hash, so registering the same script again (after a restart of the
// Host, whose registry is in memory) gives the same URL.
const (
	initScriptPath     = "/_lifeline/e2e/init"
	initScriptParam    = "e2e-init"
	maxInitScriptBytes = 256 << 10
	maxInitScripts     = 4096 // a Host lives for one test: far more than one registers
)

type initScripts struct {
	mu      sync.Mutex
	byToken map[string]string
}

func newInitScripts() *initScripts { return &initScripts{byToken: map[string]string{}} }

// panel registers a script and answers its token.
func (s *initScripts) panel() http.Handler {
	return fault.LocalOnly("the init script panel", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "e2e init: POST the script", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxInitScriptBytes+1))
		if err != nil || len(body) > maxInitScriptBytes {
			http.Error(w, "e2e init: a script is read whole, up to 256 KiB", http.StatusRequestEntityTooLarge)
			return
		}
		sum := sha256.Sum256(body)
		token := hex.EncodeToString(sum[:16])
		s.mu.Lock()
		_, had := s.byToken[token]
		full := !had && len(s.byToken) >= maxInitScripts
		if !full {
			s.byToken[token] = string(body)
		}
		s.mu.Unlock()
		if full {
			http.Error(w, "e2e init: too many scripts registered", http.StatusInsufficientStorage)
			return
		}
		io.WriteString(w, token)
	}))
}

func (s *initScripts) script(token string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	src, ok := s.byToken[token]
	return src, ok
}

// headTag is the document's first <head> start tag.
var headTag = regexp.MustCompile(`(?i)<head(\s[^>]*)?>`)

// pages wraps the page handler: a GET with ?e2e-init=<token> gets the token's script first in
// the head of an HTML answer; every other request passes straight through (the events
// endpoint's upgrade among them, which needs the connection's Hijacker).
func (s *initScripts) pages(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !r.URL.Query().Has(initScriptParam) {
			next.ServeHTTP(w, r)
			return
		}
		token := r.URL.Query().Get(initScriptParam)
		src, ok := s.script(token)
		if !ok {
			http.Error(w, "e2e init: no script registered as "+token+" (POST it to "+initScriptPath+" first)", http.StatusBadRequest)
			return
		}
		// The whole page, every time: a 304 would leave the browser a copy made for another
		// script, and a compressed one could not be edited.
		r = r.Clone(r.Context())
		for _, h := range []string{"If-None-Match", "If-Modified-Since", "Accept-Encoding", "Range"} {
			r.Header.Del(h)
		}
		rec := &recorder{header: http.Header{}, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		body := rec.body.Bytes()
		if rec.status == http.StatusOK && strings.HasPrefix(rec.header.Get("Content-Type"), "text/html") && rec.header.Get("Content-Encoding") == "" {
			tag := "<script>" + strings.ReplaceAll(src, "</", `<\/`) + "</script>"
			if loc := headTag.FindIndex(body); loc != nil {
				body = append(body[:loc[1]:loc[1]], append([]byte(tag), body[loc[1]:]...)...)
			} else {
				body = append([]byte(tag), body...)
			}
			for _, h := range []string{"Content-Length", "ETag", "Last-Modified"} {
				rec.header.Del(h)
			}
			rec.header.Set("Cache-Control", "no-store")
		}
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.status)
		w.Write(body)
	})
}

// recorder keeps a page's answer so that it can be edited before it is sent.
type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}
