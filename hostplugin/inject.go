//go:build !js

package hostplugin

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxHold bounds what the middleware holds back while it looks for the end of the head. A page
// whose head has not ended after this many bytes is served as it is, and the reason logged.
const maxHold = 8 << 20

// etagMark separates an upstream ETag from the config hash in a derived ETag.
const etagMark = "-lifeline."

// Inject returns next with the bootstrap element inserted into the head of every HTML page it
// serves: status 200, Content-Type text/html, not content-encoded. Content-Length is corrected;
// an upstream ETag is replaced by one derived from it and the bootstrap, and conditional
// requests carrying the derived ETag are translated back, so caching keeps working and a
// config change is never hidden behind a 304. HEAD requests, other statuses (304, 206, ...),
// other types and compressed responses pass through untouched and unbuffered; an HTML response
// is held only until the end of its head is seen. After Close, every response passes through.
func (h *Host) Inject(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// HEAD passes untouched: its Content-Length describes the upstream body.
		if h.closed.Load() || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		st := h.state.Load()
		r, translated := translateConditionals(r, st)
		iw := &injectWriter{w: w, h: h, st: st, r: r, translated: translated}
		next.ServeHTTP(iw, r)
		iw.finish()
	})
}

type writerState int

const (
	undecided writerState = iota // no final status yet
	sniffing                     // 200 without Content-Type: the first Write decides
	holding                      // HTML: bytes held until the insertion point shows
	passing                      // not ours: everything goes straight through
	done                         // injected (or given up): the rest goes straight through
)

type injectWriter struct {
	w          http.ResponseWriter
	h          *Host
	st         *hostState
	r          *http.Request
	translated bool // If-None-Match carried a derived ETag that was translated upstream

	state    writerState
	status   int
	buf      []byte // held bytes (holding)
	nextScan int    // held length at which to scan again; doubling keeps scans linear
}

func (iw *injectWriter) Header() http.Header { return iw.w.Header() }

// Unwrap lets http.ResponseController (and coder/websocket) reach the underlying writer.
func (iw *injectWriter) Unwrap() http.ResponseWriter { return iw.w }

func (iw *injectWriter) WriteHeader(code int) {
	if iw.state != undecided {
		if iw.state == passing {
			iw.w.WriteHeader(code) // net/http reports the superfluous call
		}
		return
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		iw.w.WriteHeader(code) // informational (103 Early Hints): the final status follows
		return
	}
	iw.status = code
	hdr := iw.w.Header()
	switch {
	case code == http.StatusNotModified:
		// The cache updates its stored validators from a 304: they must stay the ones of
		// the injected page, or the next revalidation would match the upstream page.
		if iw.translated {
			if etag := hdr.Get("Etag"); etag != "" {
				setOrDelete(hdr, "Etag", deriveETag(etag, iw.st.hash))
			}
		}
		if isDocumentRequest(iw.r) {
			bumpLastModified(hdr, iw.st.at)
		}
		iw.pass()
	case code != http.StatusOK:
		iw.pass()
	case hdr.Get("Content-Encoding") != "" && !strings.EqualFold(hdr.Get("Content-Encoding"), "identity"):
		if isHTML(hdr.Get("Content-Type")) {
			iw.h.logPassThrough.Do(func() {
				iw.h.logger.Warn("hostplugin: not injecting the bootstrap into a compressed HTML page; wrap the handler with Inject inside the compression, not outside",
					"path", iw.r.URL.Path, "contentEncoding", hdr.Get("Content-Encoding"))
			})
		}
		iw.pass()
	default:
		if _, ok := hdr["Content-Type"]; !ok {
			iw.state = sniffing // net/http would sniff the first bytes; so do we
			return
		}
		iw.decide(hdr.Get("Content-Type"))
	}
}

func (iw *injectWriter) decide(contentType string) {
	if isHTML(contentType) {
		iw.state = holding
		return
	}
	iw.pass()
}

func (iw *injectWriter) pass() {
	iw.state = passing
	iw.w.WriteHeader(iw.status)
}

func (iw *injectWriter) Write(p []byte) (int, error) {
	if iw.state == undecided {
		iw.WriteHeader(http.StatusOK)
	}
	if iw.state == sniffing {
		ct := http.DetectContentType(p)
		iw.w.Header().Set("Content-Type", ct)
		iw.decide(ct)
	}
	if iw.state != holding {
		return iw.w.Write(p)
	}
	data := p
	if len(iw.buf) > 0 {
		iw.buf = append(iw.buf, p...)
		data = iw.buf
	}
	if len(data) >= iw.nextScan {
		if k := insertionPoint(data, false); k >= 0 {
			if err := iw.commit(data, k, false); err != nil {
				return 0, err
			}
			return len(p), nil
		}
		iw.nextScan = 2 * len(data)
	}
	if len(iw.buf) == 0 {
		iw.buf = append(iw.buf, p...) // p belongs to the caller
	}
	if len(iw.buf) > maxHold {
		iw.h.logPassThrough.Do(func() {
			iw.h.logger.Warn("hostplugin: no end of head in the first bytes of an HTML page; serving it without the bootstrap",
				"path", iw.r.URL.Path, "bytes", maxHold)
		})
		iw.state = done
		iw.w.WriteHeader(iw.status)
		b := iw.buf
		iw.buf = nil
		if _, err := iw.w.Write(b); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// commit writes the headers and data with the bootstrap element at offset k. final means data
// is the whole body.
func (iw *injectWriter) commit(data []byte, k int, final bool) error {
	iw.state = done
	iw.buf = nil
	script := iw.st.script
	hdr := iw.w.Header()
	if final {
		hdr.Set("Content-Length", strconv.Itoa(len(data)+len(script)))
	} else if n, err := strconv.ParseInt(hdr.Get("Content-Length"), 10, 64); err == nil && n >= 0 {
		hdr.Set("Content-Length", strconv.FormatInt(n+int64(len(script)), 10))
	} else {
		hdr.Del("Content-Length")
	}
	if etag := hdr.Get("Etag"); etag != "" {
		setOrDelete(hdr, "Etag", deriveETag(etag, iw.st.hash))
	}
	bumpLastModified(hdr, iw.st.at)
	// Byte ranges and digests of the upstream body do not describe this one.
	for _, k := range []string{"Accept-Ranges", "Content-Md5", "Digest", "Content-Digest", "Repr-Digest"} {
		hdr.Del(k)
	}
	iw.w.WriteHeader(iw.status)
	for _, part := range [][]byte{data[:k], script, data[k:]} {
		if len(part) == 0 {
			continue
		}
		if _, err := iw.w.Write(part); err != nil {
			return err
		}
	}
	return nil
}

// Flush passes through once the head is out; while it is held there is nothing to flush.
func (iw *injectWriter) Flush() {
	if iw.state == passing || iw.state == done {
		_ = http.NewResponseController(iw.w).Flush()
	}
}

// finish runs when the handler returns: a held page is the whole body now.
func (iw *injectWriter) finish() {
	switch iw.state {
	case holding:
		_ = iw.commit(iw.buf, insertionPoint(iw.buf, true), true)
	case sniffing:
		iw.pass() // a 200 without a body: nothing to sniff, nothing to inject
	case undecided:
		// An HTML handler that wrote nothing still answers 200 with an empty page, which
		// gets its bootstrap. Anything else (a hijacked socket, above all) is left alone.
		if isHTML(iw.w.Header().Get("Content-Type")) {
			iw.WriteHeader(http.StatusOK)
			iw.finish()
		}
	}
}

// bumpLastModified moves Last-Modified up to the time the config was applied: a cache that
// validates by date alone must see that the page changed with the config.
func bumpLastModified(hdr http.Header, applied time.Time) {
	if hdr.Get("Last-Modified") == "" {
		return // (ParseTime would allocate an error to say so)
	}
	if lm, err := http.ParseTime(hdr.Get("Last-Modified")); err == nil && applied.Truncate(time.Second).After(lm) {
		hdr.Set("Last-Modified", applied.UTC().Format(http.TimeFormat))
	}
}

// isDocumentRequest reports whether r asks for an HTML page (a navigation or a frame), as
// opposed to an image or a script.
func isDocumentRequest(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

// isHTML reports whether a Content-Type is text/html, with or without parameters. It reads
// only the media type, without mime.ParseMediaType's allocations, since it runs per response.
func isHTML(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/html")
}

func setOrDelete(hdr http.Header, key, value string) {
	if value == "" {
		hdr.Del(key)
		return
	}
	hdr.Set(key, value)
}

// deriveETag returns the ETag of the injected page: the upstream one with the config's hash
// inside the quotes, so it changes with the page and with the bootstrap. A malformed ETag
// yields "" (none is better than a wrong one).
func deriveETag(etag, hash string) string {
	tags, ok := parseETags(etag)
	if !ok || len(tags) != 1 || tags[0] == "*" {
		return ""
	}
	t := tags[0]
	return t[:len(t)-1] + etagMark + hash + `"`
}

// underiveETags turns the derived ETags of the current config in an If-None-Match list back
// into upstream ones. ETags derived under another config stay as they are: upstream does not
// know them, so the page is sent again with the new bootstrap.
func underiveETags(list, hash string) (string, bool) {
	tags, ok := parseETags(list)
	if !ok {
		return list, false
	}
	suffix := etagMark + hash + `"`
	changed := false
	for i, t := range tags {
		if base, ok := strings.CutSuffix(t, suffix); ok {
			tags[i] = base + `"`
			changed = true
		}
	}
	return strings.Join(tags, ", "), changed
}

// parseETags splits an ETag list ("*" or entity-tags, each [W/]"opaque", comma-separated).
// An opaque tag may itself contain commas, so it is scanned, not split.
func parseETags(s string) ([]string, bool) {
	var tags []string
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			return tags, len(tags) > 0
		}
		if s[0] == '*' {
			tags = append(tags, "*")
			s = s[1:]
			continue
		}
		start := s
		s = strings.TrimPrefix(s, "W/")
		if s == "" || s[0] != '"' {
			return nil, false
		}
		end := strings.IndexByte(s[1:], '"')
		if end < 0 {
			return nil, false
		}
		n := len(start) - len(s) + end + 2
		tags = append(tags, start[:n])
		s = start[n:]
	}
}

// translateConditionals prepares a request for upstream: derived ETags of the current config
// become upstream ones, and a date validator older than the config is dropped for document
// requests, since the page cached under it carried an older bootstrap. It reports whether an
// ETag was translated (a 304 must then carry the derived ETag back).
func translateConditionals(r *http.Request, st *hostState) (*http.Request, bool) {
	inm := strings.Join(r.Header.Values("If-None-Match"), ", ")
	ims := r.Header.Get("If-Modified-Since")
	if inm == "" && ims == "" {
		return r, false
	}
	newINM, translated := "", false
	if inm != "" {
		newINM, translated = underiveETags(inm, st.hash)
	}
	dropIMS := false
	if t, err := http.ParseTime(ims); err == nil && t.Before(st.at.Truncate(time.Second)) {
		// Only documents: images and scripts cached before a restart are still valid.
		dropIMS = isDocumentRequest(r)
	}
	if !translated && !dropIMS {
		return r, false
	}
	r2 := r.Clone(r.Context())
	if translated {
		r2.Header.Set("If-None-Match", newINM)
	}
	if dropIMS {
		r2.Header.Del("If-Modified-Since")
	}
	return r2, translated
}
