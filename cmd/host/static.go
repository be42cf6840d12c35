//go:build !js

package main

import (
	"context"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// static serves the -web directory: files as http.FileServer does, and for a file that is
// not HTML a pre-compressed sibling (X.br, then X.gz) when the request accepts that encoding.
// HTML is never served pre-compressed: the bootstrap cannot be injected into compressed bytes.
type static struct {
	dir      http.Dir
	files    http.Handler
	wasmExec string // wasm_exec.js from the Go distribution, when the directory has none
}

func newStatic(dir string, logger *slog.Logger) *static {
	s := &static{dir: http.Dir(dir), files: http.FileServer(http.Dir(dir))}
	if _, err := os.Stat(filepath.Join(dir, "wasm_exec.js")); err != nil {
		if p := goWasmExec(); p != "" {
			s.wasmExec = p
			logger.Info("host: serving wasm_exec.js from the Go distribution", "path", p)
		} else {
			logger.Warn("host: no wasm_exec.js in -web and none found in GOROOT; the page cannot start its wasm")
		}
	}
	return s
}

// goWasmExec finds wasm_exec.js in the Go distribution that `go` on PATH (or $GOROOT) uses.
func goWasmExec() string {
	root := os.Getenv("GOROOT")
	if root == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output()
		if err != nil {
			return ""
		}
		root = strings.TrimSpace(string(out))
	}
	p := filepath.Join(root, "lib", "wasm", "wasm_exec.js")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

func (s *static) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := path.Clean("/" + r.URL.Path)
	if name == "/wasm_exec.js" && s.wasmExec != "" {
		http.ServeFile(w, r, s.wasmExec)
		return
	}
	if path.Ext(name) == ".wasm" {
		// Streaming compilation requires exactly this type; do not leave it to the
		// system's mime tables.
		w.Header().Set("Content-Type", "application/wasm")
	}
	if !strings.HasSuffix(r.URL.Path, "/") && !isHTMLName(name) && s.precompressed(w, r, name) {
		return
	}
	s.files.ServeHTTP(w, r)
}

func isHTMLName(name string) bool {
	ext := strings.ToLower(path.Ext(name))
	return ext == ".html" || ext == ".htm"
}

var encodings = []struct{ ext, token string }{{".br", "br"}, {".gz", "gzip"}}

// precompressed serves name from a sibling the request accepts, and reports whether it did.
// A sibling older than the file itself is stale and ignored.
func (s *static) precompressed(w http.ResponseWriter, r *http.Request, name string) bool {
	orig, err := s.dir.Open(name)
	if err != nil {
		return false
	}
	defer orig.Close()
	ost, err := orig.Stat()
	if err != nil || ost.IsDir() {
		return false
	}
	varies := false
	for _, enc := range encodings {
		f, st, ok := s.sibling(name+enc.ext, ost)
		if !ok {
			continue
		}
		varies = true
		if !accepts(r.Header.Get("Accept-Encoding"), enc.token) {
			f.Close()
			continue
		}
		defer f.Close()
		h := w.Header()
		h.Add("Vary", "Accept-Encoding")
		h.Set("Content-Encoding", enc.token)
		if h.Get("Content-Type") == "" {
			ctype := mime.TypeByExtension(path.Ext(name))
			if ctype == "" {
				ctype = "application/octet-stream"
			}
			h.Set("Content-Type", ctype)
		}
		http.ServeContent(w, r, name, st.ModTime(), f)
		return true
	}
	if varies {
		w.Header().Add("Vary", "Accept-Encoding")
	}
	return false
}

func (s *static) sibling(name string, orig fs.FileInfo) (http.File, fs.FileInfo, bool) {
	f, err := s.dir.Open(name)
	if err != nil {
		return nil, nil, false
	}
	st, err := f.Stat()
	if err != nil || st.IsDir() || st.ModTime().Before(orig.ModTime()) {
		f.Close()
		return nil, nil, false
	}
	return f, st, true
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
