//go:build !js

// Package inject is the Host's middleware that inserts the page's bootstrap element (and the
// client's script tags) into the head of every HTML page an application serves, and keeps the
// page's caching headers true to what the browser then holds.
//
// It reads no Config and knows no session: the Host hands it a [Page], the bytes to insert
// with what dates and names them, and swaps the Page whenever a config is applied. scan.go
// finds where in a page the bytes go.
package inject

import (
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"
)

// Page is what the middleware inserts into pages under one applied config.
type Page struct {
	// Element goes at the end of every page's head: the bootstrap element, and the client's
	// script tags unless the Host serves no client. It is in UTF-8 (ASCII-compatible); a
	// UTF-16 page gets it transcoded.
	Element []byte
	// Hash names Element in the ETags derived for injected pages; it must change whenever
	// Element does, so that a cache sees every change of the bootstrap.
	Hash string
	// Applied is when the config was applied, to the second. An injected page is dated no
	// earlier (its Last-Modified moves up to it): a cache that validates by date alone must
	// see that the page changed with the config.
	Applied time.Time
}

// Middleware inserts the current [Page] into the HTML pages of the handlers it wraps. It is
// safe for concurrent use.
type Middleware struct {
	page   func() *Page // the Page in force, read once per request
	logger *slog.Logger

	// Pages it cannot inject into (compressed, or without an end of head) come in floods:
	// their warnings are thinned.
	logPassThrough rate.Sometimes
}

// New returns a middleware that inserts page() into pages, and logs to logger why it served a
// page without it.
func New(page func() *Page, logger *slog.Logger) *Middleware {
	return &Middleware{page: page, logger: logger, logPassThrough: rate.Sometimes{First: 5, Interval: time.Minute}}
}

// maxHold bounds what the middleware holds back while it looks for the end of the head. A page
// whose head has not ended after this many bytes is served as it is, and the reason logged.
const maxHold = 8 << 20

// lengthHold is how much of a page without a declared Content-Length is held past its
// insertion point, so that a page the handler writes whole within it goes out with a length.
// net/http gives such a response one only when the handler wrote it whole within its response
// buffer (2 KiB for HTTP/1.1, 4 KiB for HTTP/2); the element (about 3 KB with the client's boot)
// pushes a page past either, and net/http would chunk it. Held up to the larger of the two,
// every page that would have had a length without the middleware has one with it; a longer
// page, or one whose handler flushes, goes out as net/http would send it without.
const lengthHold = 4 << 10

// sniffLen is how much of a body without a Content-Type net/http (and http.DetectContentType)
// reads to type it.
const sniffLen = 512

// etagMark separates an upstream ETag from the config hash in a derived ETag.
const etagMark = "-lifeline."

// Wrap returns next with the Page inserted into the head of every HTML page it serves: status
// 200, Content-Type text/html, not content-encoded. The element is written in the page's
// encoding, after its byte-order mark (a UTF-16 page gets it in UTF-16). Content-Length is
// corrected (a page without one gets one wherever net/http would have given it one: see
// lengthHold), an upstream ETag is replaced by one derived from it and the Page's Hash (a page
// with a Last-Modified but no ETag gets a weak one made of its date and the Hash), and
// Last-Modified moves up to the Page's Applied time, so that a cache sees every config change,
// and a cache that revalidates after the plugin is gone gets the upstream page back.
//
// A conditional request is answered for the page the client holds, never for the upstream
// page it was made from. ETags issued under the current Page are translated back for upstream
// (a dated one into the If-Modified-Since it stands for), which then answers for the injected
// page. A 304 that upstream gives to any other validator (an ETag from before the plugin or
// from another config, "*", a date older than the config) is checked by a refetch: upstream is
// asked again without validators, and if that answer is a page, the request is evaluated
// against the injected page's validators, and a 304 carries them; if it is not, upstream's 304
// goes out as it was. A HEAD of a page is answered from a refetch as a GET, so it gets the
// status and headers the GET would get.
//
// Every other response (other statuses, methods, types, encodings) passes through untouched
// and unbuffered, except that a body without a Content-Type is held for its first 512 bytes,
// as net/http itself does to type it. An HTML page is held only until the end of its head is
// seen.
//
// The price of exactness is the refetch, a second call of next, for a HEAD of a page and for
// a 304 that the middleware cannot vouch for, which includes every revalidation of an image
// or a script through it. The refetch is a GET without a body; what it writes after its
// headers is refused with http.ErrBodyNotAllowed, unless it is the page the client gets.
func (m *Middleware) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		iw := newInjectWriter(w, m, r)
		next.ServeHTTP(iw, iw.r)
		iw.finish()
		if iw.state == withheld {
			rw := iw.refetch()
			next.ServeHTTP(rw, rw.r)
			rw.finish()
		}
	})
}

type writerState int

const (
	undecided  writerState = iota // no final status yet
	sniffing                      // 200 without Content-Type: the first bytes decide
	holding                       // HTML: bytes held until the insertion point shows
	passing                       // not ours: everything goes straight through
	finished                      // injected (or given up): the rest goes straight through
	withheld                      // a response withheld until the refetch shows whether it is a page's
	discarding                    // a refetch that answered with the withheld response: its body is refused
)

type injectWriter struct {
	w  http.ResponseWriter
	m  *Middleware
	pg *Page
	r  *http.Request // the request as upstream sees it
	v  validators    // the client's, as sent

	// head is set for a HEAD, whose page is answered from a refetch.
	head bool
	// safe is set for GET and HEAD, the requests a 304 answers and a refetch may repeat.
	safe bool
	// base is the header before upstream wrote to it, kept for a refetch when one may follow.
	base http.Header
	// refetching is set on the writer of a refetch; what to send if it shows no page is in
	// hold.
	refetching bool
	hold       *heldResponse

	state    writerState
	status   int
	buf      []byte // held bytes (holding, sniffing)
	nextScan int    // held length at which to scan again; doubling keeps scans linear

	// found is set once the insertion point of a page held for its length is known: at, its
	// offset in buf, and element, the element in the page's encoding.
	found   bool
	at      int
	element []byte
}

// heldResponse is upstream's response, withheld until the refetch shows whether it is a page's.
type heldResponse struct {
	status int
	header http.Header
}

func newInjectWriter(w http.ResponseWriter, m *Middleware, r *http.Request) *injectWriter {
	pg := m.page()
	upstream, v := translateConditionals(r, pg)
	iw := &injectWriter{w: w, m: m, pg: pg, r: upstream, v: v,
		head: r.Method == http.MethodHead,
		safe: r.Method == http.MethodGet || r.Method == http.MethodHead}
	if iw.safe && (iw.head || v.inm != "" || v.ims != "") {
		iw.base = w.Header().Clone()
	}
	return iw
}

// refetch returns the writer and request of the second call of upstream: the client's request
// as a GET without validators or a range, so that its answer shows the whole representation.
func (iw *injectWriter) refetch() *injectWriter {
	r := iw.r.Clone(iw.r.Context())
	r.Method = http.MethodGet
	for _, k := range []string{"If-None-Match", "If-Modified-Since", "Range", "If-Range"} {
		r.Header.Del(k)
	}
	r.Body, r.ContentLength = http.NoBody, 0
	restore(iw.w.Header(), iw.base)
	return &injectWriter{w: iw.w, m: iw.m, pg: iw.pg, r: r, v: iw.v, safe: true, refetching: true, hold: iw.hold}
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
		if !iw.refetching { // the first call sent its own
			iw.w.WriteHeader(code) // informational (103 Early Hints): the final status follows
		}
		return
	}
	iw.status = code
	hdr := iw.w.Header()
	switch {
	case iw.refetching && code != http.StatusOK:
		iw.release()
	case code == http.StatusNotModified:
		iw.notModified()
	case code != http.StatusOK:
		iw.pass()
	case hdr.Get("Content-Encoding") != "" && !strings.EqualFold(hdr.Get("Content-Encoding"), "identity"):
		if isHTML(hdr.Get("Content-Type")) {
			iw.m.logPassThrough.Do(func() {
				iw.m.logger.Warn("hostplugin: not injecting the bootstrap into a compressed HTML page; compress outside Host.Handler, not inside it",
					"path", iw.r.URL.Path, "contentEncoding", hdr.Get("Content-Encoding"))
			})
		}
		iw.other()
	default:
		if _, ok := hdr["Content-Type"]; !ok {
			iw.state = sniffing // net/http would sniff the first bytes; so do we
			return
		}
		iw.decide(hdr.Get("Content-Type"), false)
	}
}

// notModified handles upstream's 304. Upstream matched the validators it was given; the 304
// is sent at once when that match holds for the injected page too, or when the response would
// be the same whether it is a page's or not. Otherwise it is withheld for a refetch.
func (iw *injectWriter) notModified() {
	hdr := iw.w.Header()
	switch {
	case !iw.safe:
		iw.pass() // a 304 answers GET and HEAD only; no other method is repeated
	case iw.v.inm != "" && iw.v.inmOurs && (iw.v.ims == "" || iw.v.imsOurs) && iw.v.datedFits(hdr):
		// Only the injected page has these ETags: upstream matched its own.
		asInjected(hdr, iw.pg)
		iw.pass()
	case iw.v.inm == "" && (iw.v.ims == "" || iw.v.imsOurs && !datedBefore(hdr, iw.pg.Applied) && !slices.ContainsFunc(pageFields, func(k string) bool { return hdr.Get(k) != "" })):
		// No validator, or a date the injected page has not changed since, on a 304 that
		// asInjected would leave as it is: a page's 304 and any other are the same.
		iw.pass()
	default:
		iw.withhold()
	}
}

// decide continues a 200 once its Content-Type is known; sniffed says the middleware typed it.
func (iw *injectWriter) decide(contentType string, sniffed bool) {
	switch {
	case !isHTML(contentType):
		iw.other()
	case iw.head:
		iw.withhold() // the GET shows what the page's headers are
	case iw.refetching && iw.hold.status == http.StatusNotModified && iw.validated():
		iw.answer304()
	default:
		if sniffed {
			iw.w.Header().Set("Content-Type", contentType)
		}
		iw.state = holding
	}
}

// other continues a response that is not a page to inject.
func (iw *injectWriter) other() {
	if iw.refetching {
		iw.release()
		return
	}
	iw.pass()
}

func (iw *injectWriter) pass() {
	iw.state = passing
	iw.w.WriteHeader(iw.status)
}

func (iw *injectWriter) withhold() {
	iw.state = withheld
	iw.hold = &heldResponse{status: iw.status, header: iw.w.Header().Clone()}
}

// release sends the withheld response as upstream gave it: the refetch showed no page.
func (iw *injectWriter) release() {
	iw.state = discarding
	restore(iw.w.Header(), iw.hold.header)
	iw.w.WriteHeader(iw.hold.status)
}

// answer304 sends upstream's withheld 304 as the injected page's: with its validators, which a
// cache stores in place of the ones it had.
func (iw *injectWriter) answer304() {
	iw.state = discarding
	hdr := iw.w.Header()
	restore(hdr, iw.hold.header)
	asInjected(hdr, iw.pg)
	iw.w.WriteHeader(http.StatusNotModified)
}

// validated reports whether the client's validators match the injected page whose upstream
// headers a refetch has in hand, as RFC 9110 §13.2.2 evaluates them for a GET: If-None-Match
// (weak comparison) if present, else If-Modified-Since.
func (iw *injectWriter) validated() bool {
	hdr := iw.w.Header()
	if iw.v.inm != "" {
		return matchETag(iw.v.inm, pageETag(hdr, iw.pg.Hash))
	}
	since, err := http.ParseTime(iw.v.ims)
	if err != nil {
		return false
	}
	lm, err := http.ParseTime(hdr.Get("Last-Modified"))
	if err != nil {
		return false
	}
	if lm.Before(iw.pg.Applied) {
		lm = iw.pg.Applied // as bumpLastModified dates the page
	}
	return !lm.After(since)
}

func (iw *injectWriter) Write(p []byte) (int, error) {
	if iw.state == undecided {
		iw.WriteHeader(http.StatusOK)
	}
	switch iw.state {
	case sniffing:
		iw.buf = append(iw.buf, p...)
		if len(iw.buf) >= sniffLen {
			if err := iw.endSniff(); err != nil {
				return 0, err
			}
		}
		return len(p), nil
	case holding:
		if err := iw.keep(p); err != nil {
			return 0, err
		}
		return len(p), nil
	case withheld:
		if iw.hold.status == http.StatusNotModified {
			return 0, http.ErrBodyNotAllowed
		}
		return len(p), nil // the body of a HEAD, which net/http would drop too
	case discarding:
		return 0, http.ErrBodyNotAllowed
	}
	return iw.w.Write(p)
}

// endSniff types the held first bytes of a body as net/http would and carries on with them.
func (iw *injectWriter) endSniff() error {
	b := iw.buf
	iw.buf = nil
	iw.decide(http.DetectContentType(b), true)
	if len(b) == 0 || iw.state == withheld || iw.state == discarding {
		return nil
	}
	_, err := iw.Write(b)
	return err
}

// keep holds p until the insertion point shows, then writes the page out.
func (iw *injectWriter) keep(p []byte) error {
	data := p
	if len(iw.buf) > 0 {
		iw.buf = append(iw.buf, p...)
		data = iw.buf
	}
	if !iw.found && len(data) >= iw.nextScan {
		if k, element := iw.insertion(data, false); k >= 0 {
			if iw.declaredLength() || len(data) > lengthHold {
				return iw.commit(data, k, element, false)
			}
			iw.found, iw.at, iw.element = true, k, element
		} else {
			iw.nextScan = 2 * len(data)
		}
	}
	if iw.found && len(data) > lengthHold {
		return iw.commit(data, iw.at, iw.element, false) // net/http would chunk it too
	}
	if len(iw.buf) == 0 {
		iw.buf = append(iw.buf, p...) // p belongs to the caller
	}
	if len(iw.buf) <= maxHold {
		return nil
	}
	iw.m.logPassThrough.Do(func() {
		iw.m.logger.Warn("hostplugin: no end of head in the first bytes of an HTML page; serving it without the bootstrap",
			"path", iw.r.URL.Path, "bytes", maxHold)
	})
	if iw.refetching && iw.hold.status == http.StatusNotModified {
		// The page goes out as upstream has it, so upstream's 304 was right for it.
		iw.buf = nil
		iw.release()
		return http.ErrBodyNotAllowed
	}
	iw.state = finished
	iw.w.WriteHeader(iw.status)
	b := iw.buf
	iw.buf = nil
	_, err := iw.w.Write(b)
	return err
}

// declaredLength reports whether upstream declared the page's length, which commit corrects
// by the element's: then nothing needs holding for it.
func (iw *injectWriter) declaredLength() bool {
	n, err := strconv.ParseInt(iw.w.Header().Get("Content-Length"), 10, 64)
	return err == nil && n >= 0
}

// insertion returns where the bootstrap element goes in data, and the element in the page's
// encoding; -1 while more bytes are needed.
func (iw *injectWriter) insertion(data []byte, final bool) (int, []byte) {
	enc, bom, ok := sniffEncoding(data, iw.w.Header().Get("Content-Type"), final)
	if !ok {
		return -1, nil
	}
	var k int
	if enc == asciiCompatible {
		k = insertionPoint(data[bom:], final)
	} else {
		k = insertionPoint16(data[bom:], final, enc == utf16BE)
	}
	if k < 0 {
		return -1, nil
	}
	return bom + k, encodeElement(iw.pg.Element, enc)
}

// commit writes the headers and data with element at offset k. final means data is the
// whole body.
func (iw *injectWriter) commit(data []byte, k int, element []byte, final bool) error {
	iw.state = finished
	iw.buf = nil
	hdr := iw.w.Header()
	n, err := strconv.ParseInt(hdr.Get("Content-Length"), 10, 64)
	etag := pageETag(hdr, iw.pg.Hash)
	asInjected(hdr, iw.pg)
	setOrDelete(hdr, "Etag", etag)
	if final {
		hdr.Set("Content-Length", strconv.Itoa(len(data)+len(element)))
	} else if err == nil && n >= 0 {
		hdr.Set("Content-Length", strconv.FormatInt(n+int64(len(element)), 10))
	}
	iw.w.WriteHeader(iw.status)
	for _, part := range [][]byte{data[:k], element, data[k:]} {
		if len(part) == 0 {
			continue
		}
		if _, err := iw.w.Write(part); err != nil {
			return err
		}
	}
	return nil
}

// Flush passes through once the head is out; while it is held there is nothing to flush. A
// page held only for its length goes out at once: its handler wants what it wrote in the
// browser now, and net/http would have sent it without a length too.
func (iw *injectWriter) Flush() {
	if iw.state == sniffing {
		_ = iw.endSniff() // net/http types the body from what it has at a flush
	}
	if iw.state == holding && iw.found {
		_ = iw.commit(iw.buf, iw.at, iw.element, false)
	}
	if iw.state == passing || iw.state == finished {
		_ = http.NewResponseController(iw.w).Flush()
	}
}

// finish runs when the handler returns.
func (iw *injectWriter) finish() {
	if iw.state == undecided && isHTML(iw.w.Header().Get("Content-Type")) {
		// An HTML handler that wrote nothing still answers 200 with an empty page, which
		// gets its bootstrap.
		iw.WriteHeader(http.StatusOK)
	}
	switch {
	case iw.state == sniffing && len(iw.buf) == 0 && iw.head:
		iw.withhold() // a HEAD without a body: the GET's shows whether it is a page
	case iw.state == sniffing && len(iw.buf) == 0 && !iw.refetching:
		iw.pass() // a 200 without a body: nothing to sniff, nothing to inject
	case iw.state == sniffing:
		_ = iw.endSniff()
	}
	switch iw.state {
	case holding:
		// A held page is the whole body now.
		k, element := iw.at, iw.element
		if !iw.found {
			k, element = iw.insertion(iw.buf, true)
		}
		_ = iw.commit(iw.buf, k, element, true)
	case undecided:
		// Not a page (a hijacked socket, above all, is left alone), unless a refetch owes the
		// withheld response.
		if iw.refetching {
			iw.release()
		}
	}
}

// pageFields are the header fields that asInjected changes besides the date: the ETag, and
// the length, ranges and digests of the upstream body, which do not describe the page.
var pageFields = []string{"Etag", "Content-Length", "Accept-Ranges", "Content-Md5", "Digest", "Content-Digest", "Repr-Digest"}

// asInjected makes upstream's headers (of a 200 or a 304) describe the injected page: its
// ETag and date, and none of the length, ranges or digests of the upstream body. A 304
// without an ETag gets no dated one: it has nothing to select a stored response by that its
// date does not already give.
func asInjected(hdr http.Header, pg *Page) {
	etag := hdr.Get("Etag")
	for _, k := range pageFields {
		hdr.Del(k)
	}
	if etag != "" {
		setOrDelete(hdr, "Etag", deriveETag(etag, pg.Hash))
	}
	bumpLastModified(hdr, pg.Applied)
}

// bumpLastModified moves Last-Modified up to the time the config was applied: a cache that
// validates by date alone must see that the page changed with the config.
func bumpLastModified(hdr http.Header, applied time.Time) {
	if datedBefore(hdr, applied) {
		hdr.Set("Last-Modified", applied.UTC().Format(http.TimeFormat))
	}
}

// datedBefore reports whether hdr has a Last-Modified before t (a second-aligned time).
func datedBefore(hdr http.Header, t time.Time) bool {
	if hdr.Get("Last-Modified") == "" {
		return false // (ParseTime would allocate an error to say so)
	}
	lm, err := http.ParseTime(hdr.Get("Last-Modified"))
	return err == nil && lm.Before(t)
}

// restore makes hdr a copy of from.
func restore(hdr, from http.Header) {
	clear(hdr)
	maps.Copy(hdr, from)
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

// pageETag returns the ETag of the injected page made from upstream's headers hdr: upstream's
// ETag derived, or else a dated one. "" when upstream gives neither an ETag nor a date.
func pageETag(hdr http.Header, hash string) string {
	if etag := hdr.Get("Etag"); etag != "" {
		return deriveETag(etag, hash)
	}
	return datedETag(hdr.Get("Last-Modified"), hash)
}

// datedETag returns the ETag of an injected page that upstream dates without an ETag: weak,
// as a date of one-second resolution is, and made of the config's hash and upstream's date.
// A browser sends it back as If-None-Match, before If-Modified-Since, so a revalidation
// under the same config is translated into upstream's own date (see undateETag); under
// another config, or once the plugin is gone, upstream knows no such ETag and sends the page.
func datedETag(lastModified, hash string) string {
	if lastModified == "" {
		return "" // (ParseTime would allocate an error to say so)
	}
	lm, err := http.ParseTime(lastModified)
	if err != nil {
		return ""
	}
	return `W/"lifeline.` + hash + "." + strconv.FormatInt(lm.Unix(), 10) + `"`
}

// undateETag returns the upstream date in a dated ETag of the config of hash.
func undateETag(tag, hash string) (time.Time, bool) {
	digits, ok := strings.CutPrefix(tag, `W/"lifeline.`+hash+".")
	if !ok {
		return time.Time{}, false
	}
	digits, ok = strings.CutSuffix(digits, `"`)
	n, err := strconv.ParseInt(digits, 10, 64)
	return time.Unix(n, 0).UTC(), ok && err == nil
}

// matchETag reports whether an If-None-Match list matches etag by weak comparison, or is "*"
// (which matches any page that exists).
func matchETag(list, etag string) bool {
	tags, ok := parseETags(list)
	if !ok {
		return false
	}
	for _, t := range tags {
		if t == "*" || etag != "" && strings.TrimPrefix(t, "W/") == strings.TrimPrefix(etag, "W/") {
			return true
		}
	}
	return false
}

// underiveETags turns the derived ETags of the current config in an If-None-Match list back
// into upstream ones. It reports whether every tag was one of the config's, derived or dated
// (all), and whether any was translated (some). Dated ETags stay in the list; ETags of
// another config stay as they are: upstream does not know them, so the page is sent again
// with the new bootstrap.
func underiveETags(list, hash string) (upstream string, all, some bool) {
	tags, ok := parseETags(list)
	if !ok {
		return list, false, false
	}
	suffix := etagMark + hash + `"`
	all = true
	for i, t := range tags {
		if base, ok := strings.CutSuffix(t, suffix); ok {
			tags[i] = base + `"`
			some = true
		} else if _, ok := undateETag(t, hash); !ok {
			all = false
		}
	}
	return strings.Join(tags, ", "), all, some
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

// validators are a request's cache validators, as the client sent them, classified against
// the config in force.
type validators struct {
	inm, ims string // If-None-Match (every field, joined) and If-Modified-Since; "" if absent
	// inmOurs: every ETag in inm is derived under the current config, so only the injected
	// page can match them.
	inmOurs bool
	// imsOurs: ims is no older than the config, so the injected page changed since it exactly
	// when the upstream page did.
	imsOurs bool
	// dated is the date in inm when inm is a dated ETag of the current config, given to
	// upstream as If-Modified-Since; zero otherwise.
	dated time.Time
}

// datedFits reports whether upstream's 304 (hdr) is for the page a dated ETag names: one that
// still has no ETag, and exactly that date. A later date passes If-Modified-Since too, but
// names another page.
func (v validators) datedFits(hdr http.Header) bool {
	if v.dated.IsZero() {
		return true
	}
	lm, err := http.ParseTime(hdr.Get("Last-Modified"))
	return hdr.Get("Etag") == "" && err == nil && lm.Equal(v.dated)
}

// translateConditionals reads a request's validators and prepares the request for upstream:
// ETags derived under the current config become upstream ones, so that upstream can answer a
// revalidation of the injected page itself. Nothing else is changed: a 304 for any other
// validator is checked afterwards (see Wrap).
func translateConditionals(r *http.Request, pg *Page) (*http.Request, validators) {
	v := validators{inm: strings.Join(r.Header.Values("If-None-Match"), ", "), ims: r.Header.Get("If-Modified-Since")}
	if v.ims != "" {
		t, err := http.ParseTime(v.ims)
		v.imsOurs = err == nil && !t.Before(pg.Applied)
	}
	if v.inm == "" {
		return r, v
	}
	if lm, ok := undateETag(strings.TrimSpace(v.inm), pg.Hash); ok {
		// What a browser sends for a dated page: upstream's own date validates it.
		v.inmOurs, v.dated = true, lm
		r2 := r.Clone(r.Context())
		r2.Header.Del("If-None-Match")
		r2.Header.Set("If-Modified-Since", lm.Format(http.TimeFormat))
		return r2, v
	}
	upstream, all, some := underiveETags(v.inm, pg.Hash)
	v.inmOurs = all
	if !some {
		return r, v
	}
	r2 := r.Clone(r.Context())
	r2.Header.Set("If-None-Match", upstream)
	return r2, v
}
