//go:build !js

package hostplugin

import (
	"bytes"

	"golang.org/x/net/html"
)

// Why a tokenizer and not a search for "</head>": the insertion point must be a token boundary
// the browser's parser agrees with. A string search finds "</head>" inside a comment, inside a
// script's string literal or an attribute value; misses "</HEAD >" and pages without a head
// (the end tag is optional, and so is the start tag); and may put the element before
// <!doctype>, which would switch the page into quirks mode. html.Tokenizer implements the
// HTML tokenization rules, including the raw-text states of <script>, <style>, <title> and
// <noscript>, and never builds a tree, so it stops as soon as the head ends and allocates
// little. html.Parse would be exact but builds the whole document.
//
// Where: at the end of the head, before the first token that ends it: "</head>", or anything
// that may not appear in a head (<body>, any body element, non-blank text). The end rather than
// right after <head> keeps <meta charset> within the first 1024 bytes browsers prescan and
// <base> ahead of every URL, as their authors placed them.

// probe is appended to a whole document to learn whether it ends in the tokenizer's data
// state: only then is it parsed as a tag of its own.
const probe = "<lifeline-probe>"

// headRaw are the elements allowed in a head whose content the tokenizer reads as raw text.
var headRaw = map[string]bool{"script": true, "style": true, "title": true, "noscript": true, "noframes": true}

// headOnly are the other elements allowed in a head (or before it: they open it implicitly).
var headOnly = map[string]bool{"html": true, "head": true, "base": true, "basefont": true, "bgsound": true,
	"link": true, "meta": true, "template": true}

// bodyRaw are the raw-text elements that end a head; inside a <template> they are skipped, so
// their content must be known to be raw.
var bodyRaw = map[string]bool{"iframe": true, "noembed": true, "plaintext": true, "textarea": true, "xmp": true}

// headEnders are the end tags that end a head; any other is ignored there.
var headEnders = map[string]bool{"head": true, "body": true, "html": true, "br": true}

// insertionPoint returns the offset in doc where the bootstrap element goes, or -1 when doc is
// a prefix that does not yet show it (more bytes are needed). With final, doc is the whole
// document and an offset is always found: after the last byte, unless the document ends inside
// something (an unterminated comment, <title>, <template>, tag), then before that.
func insertionPoint(doc []byte, final bool) int {
	src := doc
	if final {
		src = make([]byte, 0, len(doc)+len(probe))
		src = append(append(src, doc...), probe...)
	}
	z := html.NewTokenizer(bytes.NewReader(src))
	var (
		nameBuf       [16]byte
		off           int
		rawOpen       bool // inside a raw-text element: its content and end tag are next
		rawStart      int  // where that element starts
		templates     int  // open <template> elements: everything inside is skipped
		templateStart int  // where the outermost open <template> starts
	)
	// at maps a candidate to a place outside any open template, whose content is inert.
	at := func(k int) int {
		if templates > 0 {
			return min(k, templateStart)
		}
		return k
	}
	for {
		tt := z.Next()
		start := off
		off += len(z.Raw())
		if tt == html.ErrorToken {
			if !final {
				return -1
			}
			// The probe was swallowed by an unterminated tag.
			if rawOpen {
				return at(rawStart)
			}
			return at(min(start, len(doc)))
		}
		if !final && off >= len(doc) {
			// The last token may be incomplete: wait for the bytes after it.
			return -1
		}
		if final && off > len(doc) {
			switch {
			case rawOpen:
				// The document ends inside raw text (perhaps empty, perhaps in an
				// unterminated end tag): a browser reads all of it as the element's text.
				return at(rawStart)
			case start >= len(doc):
				return at(len(doc)) // the probe itself: the document ended between tokens
			default:
				return at(start)
			}
		}
		rawContent := rawOpen && tt == html.TextToken
		if tt != html.TextToken {
			rawOpen = false
		}
		switch tt {
		case html.TextToken:
			if rawContent || templates > 0 || isBlank(z.Raw(), start == 0) {
				continue
			}
			return start
		case html.StartTagToken, html.SelfClosingTagToken:
			name := tagName(z.Raw(), &nameBuf)
			if headRaw[string(name)] || bodyRaw[string(name)] {
				rawOpen, rawStart = true, start
			}
			if templates > 0 || headRaw[string(name)] || headOnly[string(name)] {
				// A template opens even when written <template/>: the slash is ignored.
				if string(name) == "template" {
					if templates == 0 {
						templateStart = start
					}
					templates++
				}
				continue
			}
			return start
		case html.EndTagToken:
			name := tagName(z.Raw(), &nameBuf)
			switch {
			case templates > 0:
				if string(name) == "template" {
					templates--
				}
			case headEnders[string(name)]:
				return start
			}
		}
		// Doctype, comments and stray end tags stay where they are.
	}
}

// tagName returns the lower-cased name of the tag whose raw text is raw, in buf. It stands in
// for Tokenizer.TagName, which allocates a copy per call. Names longer than buf are cut, which
// is harmless: every name looked up here is shorter. Names stay []byte for the lookups:
// m[string(b)] and string(b) == "x" do not allocate.
func tagName(raw []byte, buf *[16]byte) []byte {
	raw = bytes.TrimPrefix(bytes.TrimPrefix(raw, []byte("<")), []byte("/"))
	n := 0
	for _, c := range raw {
		if c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == '/' || c == '>' || n == len(buf) {
			break
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	return buf[:n]
}

// isBlank reports whether text is HTML whitespace, allowing a byte-order mark at the start of
// the document.
func isBlank(text []byte, atStart bool) bool {
	if atStart {
		text = bytes.TrimPrefix(text, []byte("\ufeff"))
	}
	for _, c := range text {
		switch c {
		case ' ', '\t', '\n', '\f', '\r':
		default:
			return false
		}
	}
	return true
}
