//go:build !js

package inject

import (
	"bytes"
	"encoding/binary"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

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

// endSentinel is appended to a whole document to learn whether it ends in the tokenizer's
// data state: only then is it parsed as a tag of its own.
const endSentinel = "<lifeline-end>"

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

// insertionPoint returns the offset in doc, an ASCII-compatible document after its byte-order
// mark, where the bootstrap element goes, or -1 when doc is a prefix that does not yet show it
// (more bytes are needed). With final, doc is the whole document and an offset is always
// found: after the last byte, unless the document ends inside something (an unterminated
// comment, <title>, <template>, tag), then before that.
func insertionPoint(doc []byte, final bool) int {
	src := doc
	if final {
		src = make([]byte, 0, len(doc)+len(endSentinel))
		src = append(append(src, doc...), endSentinel...)
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
			// The sentinel was swallowed by an unterminated tag.
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
				return at(len(doc)) // the sentinel itself: the document ended between tokens
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
			if rawContent || templates > 0 || isBlank(z.Raw()) {
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

// isBlank reports whether text is HTML whitespace. (A byte-order mark is not: only the first
// one is the decoder's, and sniffEncoding has taken it off.)
func isBlank(text []byte) bool {
	for _, c := range text {
		switch c {
		case ' ', '\t', '\n', '\f', '\r':
		default:
			return false
		}
	}
	return true
}

// Why encodings matter: the tokenizer reads markup as ASCII bytes. That holds for UTF-8, the
// single-byte encodings and the multi-byte ones browsers decode pages with (their trail bytes
// are never "<" or "/"; ISO-2022-JP's two-byte runs may hold any printable byte, but markup,
// and so every insertion point, sits between them), and not for UTF-16. A browser decides on
// UTF-16 from a byte-order mark or from the charset of the Content-Type (a mark wins over the
// header, and <meta charset> can never select UTF-16), so the middleware does the same, scans
// a UTF-16 page through a UTF-8 transcoding, and writes the element in UTF-16 at the
// corresponding place. The element must come after the mark in every encoding: a mark that is
// not at the very start is no mark, and the page would be decoded with another encoding.

// pageEncoding is how a page encodes its markup, as far as finding the insertion point goes.
type pageEncoding int

const (
	asciiCompatible pageEncoding = iota // UTF-8, windows-1252, ...: markup is ASCII bytes
	utf16LE
	utf16BE
)

// sniffEncoding applies the steps of the HTML encoding sniffing algorithm that tell UTF-16
// from the rest: a byte-order mark, then the charset of contentType. It returns the encoding,
// the length of the mark, and false when doc may be the start of a mark and is not final.
func sniffEncoding(doc []byte, contentType string, final bool) (pageEncoding, int, bool) {
	switch {
	case bytes.HasPrefix(doc, []byte("\xef\xbb\xbf")):
		return asciiCompatible, 3, true
	case bytes.HasPrefix(doc, []byte("\xfe\xff")):
		return utf16BE, 2, true
	case bytes.HasPrefix(doc, []byte("\xff\xfe")):
		return utf16LE, 2, true
	case !final && (bytes.HasPrefix([]byte("\xef\xbb"), doc) || len(doc) == 1 && (doc[0] == 0xfe || doc[0] == 0xff)):
		return 0, 0, false
	}
	return charsetEncoding(contentType), 0, true
}

// charsetEncoding maps the charset parameter of a Content-Type through the WHATWG Encoding
// Standard's labels of UTF-16LE and UTF-16BE. It scans the parameters by hand, without
// mime.ParseMediaType's allocations, since it runs for every HTML page.
func charsetEncoding(contentType string) pageEncoding {
	_, params, _ := strings.Cut(contentType, ";")
	for params != "" {
		var param string
		param, params, _ = strings.Cut(params, ";")
		key, value, _ := strings.Cut(param, "=")
		if !strings.EqualFold(strings.TrimSpace(key), "charset") {
			continue
		}
		value = strings.TrimSpace(strings.Trim(strings.TrimSpace(value), `"`))
		for _, label := range []string{"utf-16le", "utf-16", "unicode", "unicodefeff", "ucs-2", "iso-10646-ucs-2", "csunicode"} {
			if strings.EqualFold(value, label) {
				return utf16LE
			}
		}
		if strings.EqualFold(value, "utf-16be") || strings.EqualFold(value, "unicodefffe") {
			return utf16BE
		}
		return asciiCompatible
	}
	return asciiCompatible
}

// insertionPoint16 is insertionPoint for doc in UTF-16 after its byte-order mark. It decodes
// doc as a browser does (an unpaired surrogate or a last odd byte is one U+FFFD), finds the
// point in the UTF-8 text and maps it back to a byte offset, always between code units.
// Before the end, a last odd byte or high surrogate waits for what follows it.
func insertionPoint16(doc []byte, final, bigEndian bool) int {
	order := binary.ByteOrder(binary.LittleEndian)
	if bigEndian {
		order = binary.BigEndian
	}
	unit := func(i int) rune { return rune(order.Uint16(doc[2*i:])) }
	n := len(doc) / 2
	if !final && n > 0 && 0xd800 <= unit(n-1) && unit(n-1) < 0xdc00 {
		n--
	}
	text := make([]byte, 0, len(doc)+len(doc)/2)
	for i := 0; i < n; i++ {
		r := unit(i)
		if i+1 < n && utf16.DecodeRune(r, unit(i+1)) != utf8.RuneError {
			r = utf16.DecodeRune(r, unit(i+1))
			i++
		} else if utf16.IsSurrogate(r) {
			r = utf8.RuneError
		}
		text = utf8.AppendRune(text, r)
	}
	if final && len(doc)%2 == 1 {
		text = utf8.AppendRune(text, utf8.RuneError)
	}
	k := insertionPoint(text, final)
	switch {
	case k < 0:
		return -1
	case k == len(text):
		return len(doc) // after a last odd byte too
	}
	off := 0
	for _, r := range string(text[:k]) {
		off += 2 * utf16.RuneLen(r) // one code unit, or two outside the BMP
	}
	return off
}

// encodeElement returns the bootstrap element in the page's encoding.
func encodeElement(element []byte, enc pageEncoding) []byte {
	if enc == asciiCompatible {
		return element
	}
	order := binary.AppendByteOrder(binary.LittleEndian)
	if enc == utf16BE {
		order = binary.BigEndian
	}
	out := make([]byte, 0, 2*len(element)+8)
	for _, u := range utf16.Encode([]rune(string(element))) {
		out = order.AppendUint16(out, u)
	}
	return out
}
