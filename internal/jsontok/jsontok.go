// Package jsontok is a small strict JSON tokenizer: the one both the wire frames
// (internal/wire) and the config documents (internal/strictjson) are read with, on both sides.
//
// It reads one value (and, with ReadValue at the top level, tells what follows it) from a
// byte slice, token by token, checking the whole grammar of RFC 8259: separators, the number
// syntax, string escapes, UTF-8 (invalid UTF-8, a lone surrogate and unescaped control
// characters are errors), and nesting up to MaxDepth. It does not detect a name given twice:
// its callers keep their own sets, since each reports that its own way.
//
// Why not a library: the browser build must not link encoding/json (about 120 KB of the
// brotli-compressed wasm); go-json-experiment's jsontext does the job and was used first, but
// it costs 43 KB there, most of what the page has to spare. This covers what the project
// reads in about a tenth of the code, and FuzzAgreesWithEncodingJSON holds it to
// encoding/json's grammar.
package jsontok

import (
	"errors"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/lifeline-go/lifeline/internal/tinyfmt"
)

// Kind is the kind of the next token: its first byte in the grammar ('n' null, 'f' false,
// 't' true, '"' string, '0' number, '{', '}', '[', ']'), or 0 when there is none or it is
// invalid.
type Kind byte

// MaxDepth bounds the nesting of arrays and objects.
const MaxDepth = 10000

// SyntaxError is a violation of the grammar at byte Offset. One for a document that ends
// inside a value wraps io.ErrUnexpectedEOF.
type SyntaxError struct {
	Offset int
	Msg    string
	end    bool
}

func (e *SyntaxError) Error() string { return e.Msg }

func (e *SyntaxError) Unwrap() error {
	if e.end {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// Token is one token: its kind and its bytes as written (a string's with its quotes).
type Token struct {
	Kind Kind
	Raw  []byte
}

// String returns a string token's value, unescaped; for other kinds, the token as written.
func (t Token) String() string {
	if t.Kind != '"' {
		return string(t.Raw)
	}
	s, _ := unquote(t.Raw) // the decoder checked the string already
	return s
}

// Name returns a string token's value as String does, but as the input's own bytes when it has
// no escape (almost every object key), so that a caller comparing it (switch string(name))
// allocates nothing; they are valid until the decoder's input changes.
func (t Token) Name() []byte {
	if t.Kind != '"' {
		return t.Raw
	}
	s := t.Raw[1 : len(t.Raw)-1]
	for _, c := range s {
		if c == '\\' {
			u, _ := unquote(t.Raw) // the decoder checked the string already
			return []byte(u)
		}
	}
	return s
}

// Bool returns whether the token is true.
func (t Token) Bool() bool { return t.Kind == 't' }

// state is what the grammar expects next in a container.
type state byte

const (
	stValue       state = iota // a value (the top level, or after ':' or '[')
	stArrayFirst               // a value or ']'
	stArrayNext                // ',' or ']'
	stObjectName               // a name or '}' (first), or a name after ','
	stObjectColon              // ':' after a name
	stObjectNext               // ',' or '}'
)

// Decoder reads tokens from a byte slice. The zero Decoder reads nothing; Reset gives it input.
type Decoder struct {
	b     []byte
	pos   int
	stack []byte // '{' or '[' per open container
	st    state
	first bool // in stObjectName: no member yet (a '}' may close it)
	done  bool // the top-level value is complete
	err   error
}

// NewDecoder returns a decoder of b.
func NewDecoder(b []byte) *Decoder {
	d := &Decoder{}
	d.Reset(b)
	return d
}

// Reset makes the decoder read b from the start.
func (d *Decoder) Reset(b []byte) {
	*d = Decoder{b: b, stack: d.stack[:0]}
}

// InputOffset is the offset of the next byte to read.
func (d *Decoder) InputOffset() int64 { return int64(d.pos) }

// Advance moves past the next value: the first n bytes of Unread, which the caller has
// checked form one complete value (its fast path over a shape it knows, falling back to
// tokens for anything else). Called anywhere but before a value (PeekKind having returned
// the value's kind), or past the input, it fails the decoder.
func (d *Decoder) Advance(n int) error {
	if d.err != nil {
		return d.err
	}
	if d.st != stValue || n <= 0 || n > len(d.b)-d.pos {
		return d.fail(d.pos, "jsontok: Advance(%d) not before a value of that length", n)
	}
	d.pos += n
	d.afterValue()
	return nil
}

// Unread is the input not read yet (the caller must not modify it): a reader can bound what
// the rest of the input holds before it reads it, to size what it decodes into.
func (d *Decoder) Unread() []byte { return d.b[d.pos:] }

func (d *Decoder) fail(off int, format string, args ...any) error {
	if d.err == nil {
		d.err = &SyntaxError{Offset: off, Msg: tinyfmt.Sprintf(format, args...)}
	}
	return d.err
}

// short fails for a document that ends inside a value.
func (d *Decoder) short() error {
	if d.err == nil {
		d.err = &SyntaxError{Offset: len(d.b), Msg: "the document ends too soon", end: true}
	}
	return d.err
}

func (d *Decoder) skipSpace() {
	for d.pos < len(d.b) {
		switch d.b[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// next positions the decoder at the next token, consuming the separator before it, and
// returns its first byte. At the end of a complete document it returns 0 with a nil d.err.
func (d *Decoder) next() byte {
	if d.err != nil {
		return 0
	}
	d.skipSpace()
	if d.done {
		if d.pos < len(d.b) {
			d.fail(d.pos, "invalid character %s after the top-level value", quoteChar(d.b[d.pos]))
		}
		return 0
	}
	if d.pos >= len(d.b) {
		d.short()
		return 0
	}
	c := d.b[d.pos]
	switch d.st {
	case stArrayNext:
		switch c {
		case ',':
			d.pos++
			d.st = stValue
			return d.peekValue()
		case ']':
			return c
		}
		d.fail(d.pos, "invalid character %s after an array element (expecting ',' or ']')", quoteChar(c))
		return 0
	case stObjectNext:
		switch c {
		case ',':
			d.pos++
			d.st, d.first = stObjectName, false
			d.skipSpace()
			return d.peekName()
		case '}':
			return c
		}
		d.fail(d.pos, "invalid character %s after an object member (expecting ',' or '}')", quoteChar(c))
		return 0
	case stObjectName:
		return d.peekName()
	case stObjectColon:
		if c != ':' {
			d.fail(d.pos, "invalid character %s after an object name (expecting ':')", quoteChar(c))
			return 0
		}
		d.pos++
		d.st = stValue
		return d.peekValue()
	case stArrayFirst:
		if c == ']' {
			return c
		}
		d.st = stValue
		return d.peekValue()
	}
	return d.peekValue()
}

func (d *Decoder) peekName() byte {
	if d.pos >= len(d.b) {
		d.short()
		return 0
	}
	c := d.b[d.pos]
	if c == '"' || (c == '}' && d.first) {
		return c
	}
	d.fail(d.pos, "invalid character %s at start of an object name (expecting '\"')", quoteChar(c))
	return 0
}

func (d *Decoder) peekValue() byte {
	d.skipSpace()
	if d.pos >= len(d.b) {
		d.short()
		return 0
	}
	switch c := d.b[d.pos]; c {
	case 'n', 't', 'f', '"', '{', '[':
		return c
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return '0'
	default:
		d.fail(d.pos, "invalid character %s at start of value", quoteChar(c))
		return 0
	}
}

// PeekKind returns the kind of the next token without reading it (0 at the end of the
// document, or before an error that ReadToken then returns).
func (d *Decoder) PeekKind() Kind {
	c := d.next()
	if c == '-' || (c >= '1' && c <= '9') {
		c = '0'
	}
	return Kind(c)
}

// ReadToken reads the next token. At the end of a complete document it returns io.EOF.
func (d *Decoder) ReadToken() (Token, error) {
	c := d.next()
	if d.err != nil {
		return Token{}, d.err
	}
	if c == 0 {
		return Token{}, io.EOF
	}
	start := d.pos
	name := d.st == stObjectName
	switch c {
	case '{', '[':
		if len(d.stack) >= MaxDepth {
			return Token{}, d.fail(start, "nesting deeper than %d", MaxDepth)
		}
		d.pos++
		d.stack = append(d.stack, c)
		if c == '{' {
			d.st, d.first = stObjectName, true
		} else {
			d.st = stArrayFirst
		}
		return Token{Kind: Kind(c), Raw: d.b[start:d.pos]}, nil
	case '}', ']':
		d.pos++
		d.stack = d.stack[:len(d.stack)-1]
		d.afterValue()
		return Token{Kind: Kind(c), Raw: d.b[start:d.pos]}, nil
	case '"':
		if err := d.scanString(); err != nil {
			return Token{}, err
		}
		if name {
			d.st = stObjectColon
		} else {
			d.afterValue()
		}
		return Token{Kind: '"', Raw: d.b[start:d.pos]}, nil
	case 'n', 't', 'f':
		word := "null"
		if c == 't' {
			word = "true"
		} else if c == 'f' {
			word = "false"
		}
		rest := d.b[d.pos:]
		if len(rest) < len(word) || string(rest[:len(word)]) != word {
			if len(rest) < len(word) && string(rest) == word[:len(rest)] {
				return Token{}, d.short()
			}
			return Token{}, d.fail(start, "invalid literal (expecting %s)", word)
		}
		d.pos += len(word)
		if err := d.delimited(); err != nil {
			return Token{}, err
		}
		d.afterValue()
		return Token{Kind: Kind(c), Raw: d.b[start:d.pos]}, nil
	default: // a number
		if err := d.scanNumber(); err != nil {
			return Token{}, err
		}
		d.afterValue()
		return Token{Kind: '0', Raw: d.b[start:d.pos]}, nil
	}
}

// delimited checks that a literal or a number is not run into the next token ("truex").
func (d *Decoder) delimited() error {
	if d.pos < len(d.b) {
		switch c := d.b[d.pos]; c {
		case ' ', '\t', '\n', '\r', ',', ':', ']', '}':
		default:
			return d.fail(d.pos, "invalid character %s after a value", quoteChar(c))
		}
	}
	return nil
}

// afterValue moves the state on past a complete value.
func (d *Decoder) afterValue() {
	if len(d.stack) == 0 {
		d.done = true
		return
	}
	if d.stack[len(d.stack)-1] == '{' {
		d.st = stObjectNext
	} else {
		d.st = stArrayNext
	}
}

// ReadValue reads the next whole value and returns it as written. At the end of a complete
// document it returns io.EOF; with anything after the top-level value, an error.
func (d *Decoder) ReadValue() ([]byte, error) {
	c := d.next()
	if d.err != nil {
		return nil, d.err
	}
	if c == 0 {
		return nil, io.EOF
	}
	if c == '}' || c == ']' {
		return nil, d.fail(d.pos, "invalid character %s at start of value", quoteChar(c))
	}
	start, depth := d.pos, len(d.stack)
	for {
		if _, err := d.ReadToken(); err != nil {
			return nil, err
		}
		if len(d.stack) == depth {
			return d.b[start:d.pos], nil
		}
	}
}

// SkipValue reads and drops the next value.
func (d *Decoder) SkipValue() error {
	_, err := d.ReadValue()
	return err
}

func (d *Decoder) scanNumber() error {
	start, i := d.pos, d.pos
	b := d.b
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return d.numberError(start, i)
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return d.numberError(start, i)
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return d.numberError(start, i)
		}
	}
	d.pos = i
	return d.delimited()
}

func (d *Decoder) numberError(start, i int) error {
	if i >= len(d.b) {
		return d.short()
	}
	return d.fail(i, "invalid character %s in number %q", quoteChar(d.b[i]), d.b[start:i])
}

// scanString checks the string at d.pos and moves past it.
func (d *Decoder) scanString() error {
	b := d.b
	i := d.pos + 1
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return nil
		case c == '\\':
			if i+1 >= len(b) {
				return d.short()
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, n, err := d.escape(b, i)
				if err != nil {
					return err
				}
				if utf16.IsSurrogate(r) {
					return d.fail(i, "invalid escape %q: a lone surrogate", b[i:i+n])
				}
				i += n
			default:
				return d.fail(i, "invalid escape %q in string", b[i:i+2])
			}
		case c < 0x20:
			return d.fail(i, "invalid character %s in string (control characters must be escaped)", quoteChar(c))
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return d.fail(i, "invalid UTF-8")
			}
			i += n
		}
	}
	return d.short()
}

// escape reads \uXXXX at b[i:], and the low half of a surrogate pair after it; it returns the
// rune (a lone surrogate as itself) and the bytes read.
func (d *Decoder) escape(b []byte, i int) (rune, int, error) {
	hex4 := func(j int) (rune, error) {
		if j+6 > len(b) {
			return 0, d.short()
		}
		var r rune
		for _, c := range b[j+2 : j+6] {
			switch {
			case c >= '0' && c <= '9':
				c -= '0'
			case c >= 'a' && c <= 'f':
				c -= 'a' - 10
			case c >= 'A' && c <= 'F':
				c -= 'A' - 10
			default:
				return 0, d.fail(j, "invalid escape %q in string", b[j:j+6])
			}
			r = r<<4 | rune(c)
		}
		return r, nil
	}
	r, err := hex4(i)
	if err != nil {
		return 0, 0, err
	}
	if r >= 0xd800 && r < 0xdc00 && i+12 <= len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
		lo, err := hex4(i + 6)
		if err != nil {
			return 0, 0, err
		}
		if lo >= 0xdc00 && lo < 0xe000 {
			return utf16.DecodeRune(r, lo), 12, nil
		}
	}
	return r, 6, nil
}

// unquote returns the value of a checked string token.
func unquote(raw []byte) (string, error) {
	s := raw[1 : len(raw)-1]
	plain := true
	for _, c := range s {
		if c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return string(s), nil
	}
	out := make([]byte, 0, len(s))
	var d Decoder
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		switch s[i+1] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n, err := d.escape(s, i)
			if err != nil {
				return "", err
			}
			out = utf8.AppendRune(out, r)
			i += n
			continue
		default: // '"', '\\', '/'
			out = append(out, s[i+1])
		}
		i += 2
	}
	return string(out), nil
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c >= 0x20 && c < 0x7f {
		return "'" + string(rune(c)) + "'"
	}
	return strconv.QuoteRune(rune(c))
}

// AppendQuote appends s as a JSON string: quotes, backslashes and control characters escaped,
// and invalid UTF-8 replaced with U+FFFD, as encoding/json does (whose HTML escapes it does
// not need: frames are not HTML).
func AppendQuote(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, "\ufffd"...)
		} else {
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return append(dst, '"')
}

// IsSyntax reports whether err is a syntax error, and where.
func IsSyntax(err error) (*SyntaxError, bool) {
	var se *SyntaxError
	ok := errors.As(err, &se)
	return se, ok
}
