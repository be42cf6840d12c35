//go:build !js

package hostplugin_test

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzInject checks, for any page and any way of writing it: the middleware never panics; the
// output is the page with the bootstrap element inserted at one place, every upstream byte
// kept in order; the place does not depend on how upstream chunked its writes; and a browser
// parsing the output finds the bootstrap intact.
func FuzzInject(f *testing.F) {
	for _, seed := range []string{
		"<!doctype html><html><head><title>t</title></head><body>x</body></html>",
		"<HEAD><!-- </head> --><script>'</head>'</script></HEAD>",
		"<head><template><div></head></template></head>",
		"<head><title>unterminated",
		"<!-- unterminated",
		"<head><meta content=\"x",
		"\ufeff<!doctype html><p>x",
		"<head><noscript><link></noscript><svg><script>x</script></svg>",
		"<script><!--<script></script>--></script></head>",
		"",
	} {
		f.Add([]byte(seed), uint8(0))
		f.Add([]byte(seed), uint8(3))
	}
	h, _ := newHost(f, `{}`)
	script := h.BootstrapElement()
	bootstrap := string(h.Config().Bootstrap())
	f.Fuzz(func(t *testing.T, page []byte, chunk uint8) {
		whole := get(t, h.Inject(htmlPage(string(page), 0)), httptest.NewRequest("GET", "/", nil)).Body.Bytes()
		if !hasInsertion(whole, page, script) {
			t.Fatalf("output is not the page with one insertion:\npage %q\n out %q", page, whole)
		}
		chunked := get(t, h.Inject(htmlPage(string(page), int(chunk))), httptest.NewRequest("GET", "/", nil)).Body.Bytes()
		if !bytes.Equal(chunked, whole) {
			t.Fatalf("chunks of %d moved the insertion:\npage %q\n whole %q\nchunked %q", chunk, page, whole, chunked)
		}
		if !hasBootstrapElement(t, string(whole), bootstrap) {
			t.Fatalf("a browser does not find the bootstrap in %q", whole)
		}
	})
}

// hasInsertion reports whether out == page[:k] + ins + page[k:] for some k.
func hasInsertion(out, page, ins []byte) bool {
	if len(out) != len(page)+len(ins) {
		return false
	}
	prefix := 0
	for prefix < len(page) && out[prefix] == page[prefix] {
		prefix++
	}
	for k := prefix; k >= 0; k-- {
		if bytes.Equal(out[k+len(ins):], page[k:]) && bytes.Equal(out[:k], page[:k]) && bytes.Equal(out[k:k+len(ins)], ins) {
			return true
		}
		if !bytes.Equal(out[k+len(ins):], page[k:]) {
			// Moving k further left only lengthens the suffix that must match.
			return false
		}
	}
	return false
}

func hasBootstrapElement(t *testing.T, page, bootstrap string) bool {
	text, _, found := bootstrapIn(t, page)
	if found && text == bootstrap {
		return true
	}
	// The page may hold an element of the same id before ours.
	return strings.Count(page, `id="lifeline-bootstrap">`+bootstrap+`</script>`) == 1 && found
}
