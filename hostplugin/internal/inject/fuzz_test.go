//go:build !js

package inject_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// FuzzInject checks, for any page and any way of writing it: the middleware never panics; the
// output is the page with the bootstrap element inserted at one place, in the page's encoding
// and after its byte-order mark, every upstream byte kept in order; the place does not depend
// on how upstream chunked its writes; a browser decoding and parsing the output finds the
// bootstrap intact; a request revalidating the page as it was before the plugin gets the
// injected page, and one revalidating the injected page a 304; and HEAD answers as GET does.
func FuzzInject(f *testing.F) {
	for _, seed := range []string{
		"<!doctype html><html><head><title>t</title></head><body>x</body></html>",
		"<HEAD><!-- </head> --><script>'</head>'</script></HEAD>",
		"<head><template><div></head></template></head>",
		"<head><title>unterminated",
		"<!-- unterminated",
		"<head><meta content=\"x",
		"\ufeff<!doctype html><p>x",
		"\ufeffx",
		"\xff\xfe<\x00h\x00e\x00a\x00d\x00>\x00<\x00/\x00h\x00e\x00a\x00d\x00>\x00",
		"\xfe\xff\x00<\x00p\x00>\xd8\x3d",
		"\xff\xfe\x3d\xd8<\x00",
		"<head><noscript><link></noscript><svg><script>x</script></svg>",
		"<script><!--<script></script>--></script></head>",
		"",
	} {
		f.Add([]byte(seed), uint8(0))
		f.Add([]byte(seed), uint8(3))
	}
	p, _ := newPlugin(f, defaultBootstrap)
	script := p.element()
	bootstrap := p.bootstrap
	f.Fuzz(func(t *testing.T, page []byte, chunk uint8) {
		whole := get(t, p.Inject(htmlPage(string(page), 0)), httptest.NewRequest("GET", "/", nil)).Body.Bytes()
		// A browser takes the encoding from a byte-order mark before the Content-Type.
		ins, bom, doc := script, 0, string(whole)
		switch {
		case bytes.HasPrefix(page, []byte("\xef\xbb\xbf")):
			bom = 3
		case bytes.HasPrefix(page, []byte("\xfe\xff")), bytes.HasPrefix(page, []byte("\xff\xfe")):
			be := page[0] == 0xfe
			ins, bom, doc = utf16Bytes(string(script), be), 2, decodeUTF16(whole, be)
		}
		at := insertions(whole, page, ins)
		// In UTF-16 the element goes between code units.
		if !slices.ContainsFunc(at, func(k int) bool { return k >= bom && (bom != 2 || (k-bom)%2 == 0) }) {
			t.Fatalf("output is not the page with one insertion after its byte-order mark (at %v):\npage %q\n out %q", at, page, whole)
		}
		chunked := get(t, p.Inject(htmlPage(string(page), int(chunk))), httptest.NewRequest("GET", "/", nil)).Body.Bytes()
		if !bytes.Equal(chunked, whole) {
			t.Fatalf("chunks of %d moved the insertion:\npage %q\n whole %q\nchunked %q", chunk, page, whole, chunked)
		}
		if !hasBootstrapElement(t, doc, bootstrap) {
			t.Fatalf("a browser does not find the bootstrap in %q", doc)
		}

		upstream := p.Inject(fuzzUpstream(page, int(chunk)))
		request := func(method, inm string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(method, "/", nil)
			if inm != "" {
				req.Header.Set("If-None-Match", inm)
			}
			return get(t, upstream, req)
		}
		before := request("GET", `"f"`)
		etag := before.Header().Get("Etag")
		if before.Code != 200 || !bytes.Equal(before.Body.Bytes(), whole) || !strings.HasPrefix(etag, `"f-lifeline.`) {
			t.Fatalf("revalidating the page as it was before the plugin: %d, ETag %q, body %q; want 200, a derived ETag and %q",
				before.Code, etag, before.Body.Bytes(), whole)
		}
		if again := request("GET", etag); again.Code != 304 || again.Body.Len() != 0 || again.Header().Get("Etag") != etag {
			t.Fatalf("revalidating the injected page: %d, ETag %q, body %q; want 304 with ETag %s",
				again.Code, again.Header().Get("Etag"), again.Body.Bytes(), etag)
		}
		head := request("HEAD", "")
		for _, k := range []string{"Content-Length", "Content-Type", "Etag", "Last-Modified"} {
			if head.Code != before.Code || head.Header().Get(k) != before.Header().Get(k) {
				t.Fatalf("HEAD answered %d with %s %q, GET %d with %q", head.Code, k, head.Header().Get(k), before.Code, before.Header().Get(k))
			}
		}
	})
}

// FuzzRevalidate checks, for any If-None-Match and If-Modified-Since, against a page with an
// ETag, a page with a date alone and an image: the middleware never panics; a page gets a 304
// only when the validators match the injected page (RFC 9110 §13.1: If-None-Match by weak
// comparison, else the date), and the injected page otherwise; an image gets exactly what
// upstream alone sends, unless the request carries an ETag the middleware issues for pages
// (which it translates for upstream wherever it appears).
func FuzzRevalidate(f *testing.F) {
	p, _ := newPlugin(f, defaultBootstrap)
	pages := map[string]http.Handler{
		"etag":  served(`"v1"`, "index.html", testPage),
		"dates": served("", "index.html", testPage),
	}
	injected := strings.Replace(testPage, "</head>", string(p.element())+"</head>", 1)
	tags := map[string]string{}
	var lastModified string
	for name, page := range pages {
		first := get(f, p.Inject(page), httptest.NewRequest("GET", "/", nil))
		tags[name] = first.Header().Get("Etag")
		lastModified = first.Header().Get("Last-Modified")
	}
	_, hash, _ := strings.Cut(strings.Trim(tags["etag"], `"`), "-lifeline.")
	for _, seed := range [][2]string{
		{tags["etag"], lastModified}, {tags["dates"], lastModified}, {`"v1"`, testModTime.Format(http.TimeFormat)},
		{"*", ""}, {`"a", ` + tags["etag"], ""}, {"W/" + tags["etag"], ""}, {`"v1-lifeline.00000000"`, ""},
		{`W/"lifeline.00000000.1577934245"`, ""}, {`W/"lifeline.` + hash + `.99999999999"`, ""},
		{"", lastModified}, {"", "Thu, 02 Jan 2020 03:04:05 GMT"}, {"", "Monday, 02-Jan-06 15:04:05 MST"},
		{`"unterminated`, ""}, {`W/`, "garbage"}, {`,,"x",`, ""},
	} {
		f.Add(seed[0], seed[1])
	}
	image := served(`"img1"`, "logo.png", testPNG)
	f.Fuzz(func(t *testing.T, inm, ims string) {
		request := func(method string) *http.Request {
			req := httptest.NewRequest(method, "/", nil)
			if inm != "" {
				req.Header["If-None-Match"] = []string{inm}
			}
			if ims != "" {
				req.Header["If-Modified-Since"] = []string{ims}
			}
			return req
		}
		for name, page := range pages {
			for _, method := range []string{"GET", "HEAD"} {
				rec := get(t, p.Inject(page), request(method))
				switch rec.Code {
				case http.StatusOK:
					if method == "GET" && rec.Body.String() != injected {
						t.Fatalf("%s %s page, If-None-Match %q, If-Modified-Since %q: 200 with %q, want the injected page",
							method, name, inm, ims, rec.Body.String())
					}
				case http.StatusNotModified:
					if !validates(inm, ims, tags[name], lastModified) {
						t.Fatalf("%s %s page: a 304 for If-None-Match %q, If-Modified-Since %q, which the injected page (ETag %s, Last-Modified %s) does not match",
							method, name, inm, ims, tags[name], lastModified)
					}
				default:
					t.Fatalf("%s %s page, If-None-Match %q, If-Modified-Since %q: status %d", method, name, inm, ims, rec.Code)
				}
			}
		}
		if strings.Contains(inm, hash) {
			return
		}
		got, alone := get(t, p.Inject(image), request("GET")), get(t, image, request("GET"))
		if got.Code != alone.Code || !reflect.DeepEqual(got.Header(), alone.Header()) || got.Body.String() != alone.Body.String() {
			t.Fatalf("image, If-None-Match %q, If-Modified-Since %q: %d %v, want upstream's %d %v",
				inm, ims, got.Code, got.Header(), alone.Code, alone.Header())
		}
	})
}

// validates is the oracle of FuzzRevalidate: whether a GET with these validators may get a
// 304 for a page with this ETag and date.
func validates(inm, ims, etag, lastModified string) bool {
	if strings.TrimSpace(inm) != "" {
		for s := inm; ; {
			s = strings.TrimLeft(s, " \t,")
			if s == "" {
				return false
			}
			if s[0] == '*' {
				return true
			}
			opaque := strings.TrimPrefix(s, "W/") // weak comparison
			if opaque == "" || opaque[0] != '"' || !strings.Contains(opaque[1:], `"`) {
				return false
			}
			n := strings.Index(opaque[1:], `"`) + 2
			if opaque[:n] == strings.TrimPrefix(etag, "W/") {
				return true
			}
			s = opaque[n:]
		}
	}
	since, err1 := http.ParseTime(ims)
	lm, err2 := http.ParseTime(lastModified)
	return err1 == nil && err2 == nil && !lm.After(since)
}

// fuzzUpstream serves page as htmlPage does, with an ETag, and answers a request carrying
// that ETag with a 304, as http.ServeContent would.
func fuzzUpstream(page []byte, chunk int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Etag", `"f"`)
		if r.Header.Get("If-None-Match") == `"f"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		writeChunks(w, page, chunk)
	})
}

// insertions returns every k, largest first, for which out == page[:k] + ins + page[k:].
func insertions(out, page, ins []byte) []int {
	if len(out) != len(page)+len(ins) {
		return nil
	}
	prefix := 0
	for prefix < len(page) && out[prefix] == page[prefix] {
		prefix++
	}
	var at []int
	for k := prefix; k >= 0; k-- {
		if !bytes.Equal(out[k+len(ins):], page[k:]) {
			// Moving k further left only lengthens the suffix that must match.
			break
		}
		if bytes.Equal(out[:k], page[:k]) && bytes.Equal(out[k:k+len(ins)], ins) {
			at = append(at, k)
		}
	}
	return at
}

func hasBootstrapElement(t *testing.T, page, bootstrap string) bool {
	text, _, found := bootstrapIn(t, page)
	if found && text == bootstrap {
		return true
	}
	// The page may hold an element of the same id before ours.
	return strings.Count(page, `id="`+wire.BootstrapID+`">`+bootstrap+`</script>`) == 1 && found
}
