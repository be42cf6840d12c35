package jsontok

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// tree reads one whole document with the decoder into the shape encoding/json's
// UseNumber decoding gives (map[string]any, []any, string, json.Number, bool, nil), so the
// two can be compared value for value. A name given twice keeps the last value, as there.
func tree(b []byte) (any, error) {
	d := NewDecoder(b)
	v, err := treeValue(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.ReadToken(); err != io.EOF {
		if err == nil {
			err = errors.New("a token after the top-level value")
		}
		return nil, err
	}
	if _, err := d.ReadValue(); err != io.EOF {
		return nil, errors.New("ReadValue after the end did not say io.EOF")
	}
	return v, nil
}

func treeValue(d *Decoder) (any, error) {
	tok, err := d.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind {
	case 'n':
		return nil, nil
	case 't', 'f':
		return tok.Bool(), nil
	case '"':
		return tok.String(), nil
	case '0':
		return json.Number(tok.Raw), nil
	case '[':
		out := []any{}
		for d.PeekKind() != ']' {
			v, err := treeValue(d)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		_, err := d.ReadToken()
		return out, err
	case '{':
		out := map[string]any{}
		for d.PeekKind() != '}' {
			name, err := d.ReadToken()
			if err != nil {
				return nil, err
			}
			if name.Kind != '"' {
				return nil, errors.New("a name that is not a string")
			}
			v, err := treeValue(d)
			if err != nil {
				return nil, err
			}
			out[name.String()] = v
		}
		_, err := d.ReadToken()
		return out, err
	}
	return nil, errors.New("unexpected token " + string(tok.Raw))
}

func stdTree(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data")
	}
	return v, nil
}

// loneSurrogate matches an escape of half a surrogate pair: encoding/json replaces one left
// alone with U+FFFD, this package refuses it (as jsontext and RFC 8259's interoperability
// advice do).
var loneSurrogate = regexp.MustCompile(`\\u[dD][89a-fA-F]`)

// stricter reports whether b may be refused here though encoding/json accepts it: invalid
// UTF-8 and lone surrogates, which encoding/json silently replaces.
func stricter(b []byte) bool {
	return !utf8.Valid(b) || loneSurrogate.Match(b)
}

func agree(t *testing.T, in []byte) {
	t.Helper()
	got, err := tree(in)
	want, stdErr := stdTree(in)
	switch {
	case err == nil && stdErr != nil:
		t.Fatalf("%q: accepted here, but encoding/json says: %v", in, stdErr)
	case err != nil && stdErr == nil && !stricter(in):
		t.Fatalf("%q: refused here (%v), but encoding/json accepts it", in, err)
	case err == nil && !reflect.DeepEqual(got, want):
		t.Fatalf("%q: read as %#v, encoding/json reads %#v", in, got, want)
	}
	if err != nil {
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("%q: error %v is not a *SyntaxError", in, err)
		}
		if se.Offset < 0 || se.Offset > len(in) {
			t.Fatalf("%q: error offset %d outside the input", in, se.Offset)
		}
	}
}

var corpus = []string{
	``, ` `, `null`, `true`, `false`, `nul`, `nulll`, `truex`, `0`, `-0`, `01`, `-`, `1.`, `1.5`,
	`1e`, `1e+`, `1E-7`, `-12.5e+30`, `1x`, `1 2`, `""`, `"a"`, `"\"\\\/\b\f\n\r\t"`, `"\u00e9"`,
	`"\uD83D\uDE00"`, `"\uD83D"`, `"\uDE00"`, `"\uD83Dx"`, `"\uD83D\u0041"`, `"\u12"`, `"\u12G4"`,
	`"\x"`, "\"a\tb\"", "\"\x01\"", "\"\xff\"", `"é"`, `"unterminated`, `[]`, `[1,2]`, `[1,]`,
	`[,1]`, `[1 2]`, `[`, `]`, `{}`, `{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{"a":}`, `{1:2}`,
	`{"a":1 "b":2}`, `{"a":1}{}`, `{"a":[{"b":null}]}`, `{"a":1,"a":2}`, `  {"a" : [ true , false ] }  `,
	`[[[[[]]]]]`, `{"a":{"b":{"c":{}}}}`, `"a"x`, `[1]]`, `{"a":1}}`, `[}`, `{]`, `{"a"]`,
	"\ufeff{}", `[1e400]`, `-01`, `.5`, `+1`, `0x10`, `Infinity`, `NaN`, `[null,true,false,"x",-1.25e-3]`,
}

func TestAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range corpus {
		agree(t, []byte(in))
	}
}

// FuzzAgreesWithEncodingJSON holds the tokenizer to encoding/json's grammar: whatever one
// accepts, the other accepts with the same values, except that this package refuses invalid
// UTF-8 and lone surrogates.
func FuzzAgreesWithEncodingJSON(f *testing.F) {
	for _, in := range corpus {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		agree(t, in)
	})
}

func TestDepth(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if _, err := tree([]byte(deep)); err != nil {
		t.Fatalf("nesting of %d refused: %v", MaxDepth, err)
	}
	deeper := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	_, err := tree([]byte(deeper))
	var se *SyntaxError
	if !errors.As(err, &se) || !strings.Contains(se.Msg, "nesting") || se.Offset != MaxDepth {
		t.Fatalf("nesting of %d: got %v, want a nesting error at offset %d", MaxDepth+1, err, MaxDepth)
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		in     string
		offset int
		msg    string
		short  bool
	}{
		{`{"a":1,}`, 7, `invalid character '}' at start of an object name (expecting '"')`, false},
		{`[1,]`, 3, `invalid character ']' at start of value`, false},
		{`{"a" 1}`, 5, `invalid character '1' after an object name (expecting ':')`, false},
		{`{"a":1 "b":2}`, 7, `invalid character '"' after an object member (expecting ',' or '}')`, false},
		{`[1 2]`, 3, `invalid character '2' after an array element (expecting ',' or ']')`, false},
		{`{"a":1} x`, 8, `invalid character 'x' after the top-level value`, false},
		{`truex`, 4, `invalid character 'x' after a value`, false},
		{`nulx`, 0, `invalid literal (expecting null)`, false},
		{`01`, 1, `invalid character '1' after a value`, false},
		{`1.x`, 2, `invalid character 'x' in number "1."`, false},
		{`"\q"`, 1, `invalid escape "\\q" in string`, false},
		{`"\uD83D"`, 1, `invalid escape "\\uD83D": a lone surrogate`, false},
		{"\"a\x01\"", 2, `invalid character '\x01' in string (control characters must be escaped)`, false},
		{"\"\xff\"", 1, `invalid UTF-8`, false},
		{`{"a":[1,`, 8, `the document ends too soon`, true},
		{`"abc`, 4, `the document ends too soon`, true},
		{`tru`, 3, `the document ends too soon`, true},
		{`-`, 1, `the document ends too soon`, true},
		{``, 0, `the document ends too soon`, true},
	} {
		_, err := tree([]byte(tc.in))
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: got %v, want a *SyntaxError", tc.in, err)
			continue
		}
		if se.Offset != tc.offset || se.Msg != tc.msg {
			t.Errorf("%q: got %q at %d, want %q at %d", tc.in, se.Msg, se.Offset, tc.msg, tc.offset)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) != tc.short {
			t.Errorf("%q: errors.Is(io.ErrUnexpectedEOF) = %v, want %v", tc.in, !tc.short, tc.short)
		}
	}
}

// The decoder keeps refusing after its first error, with that error.
func TestErrorSticks(t *testing.T) {
	d := NewDecoder([]byte(`[1,}`))
	for range 2 {
		d.ReadToken()
	}
	_, err1 := d.ReadToken()
	_, err2 := d.ReadValue()
	if err1 == nil || err1 != err2 || d.PeekKind() != 0 {
		t.Fatalf("after an error: %v then %v, PeekKind %q", err1, err2, d.PeekKind())
	}
}

func TestReadValueAndOffset(t *testing.T) {
	d := NewDecoder([]byte(` {"a": [1, {"b": "c"}], "d": 2} `))
	if _, err := d.ReadToken(); err != nil {
		t.Fatal(err)
	}
	if name, _ := d.ReadToken(); name.String() != "a" {
		t.Fatalf("name %q", name.String())
	}
	raw, err := d.ReadValue()
	if err != nil || string(raw) != `[1, {"b": "c"}]` {
		t.Fatalf("ReadValue = %q, %v", raw, err)
	}
	if off := d.InputOffset(); off != 22 {
		t.Fatalf("InputOffset after the value = %d, want 22", off)
	}
	d.ReadToken()
	if err := d.SkipValue(); err != nil {
		t.Fatal(err)
	}
	if k := d.PeekKind(); k != '}' {
		t.Fatalf("PeekKind = %q, want '}'", k)
	}
	d.ReadToken()
	if _, err := d.ReadValue(); err != io.EOF {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
	d.Reset([]byte(`"x"`))
	if tok, err := d.ReadToken(); err != nil || tok.String() != "x" {
		t.Fatalf("after Reset: %q, %v", tok.String(), err)
	}
}

func TestAdvanceMovesPastAValueTheCallerChecked(t *testing.T) {
	d := NewDecoder([]byte(`[{"a":1}, 2]`))
	d.ReadToken()
	if k := d.PeekKind(); k != '{' || string(d.Unread()) != `{"a":1}, 2]` {
		t.Fatalf("before the value: PeekKind %q, Unread %q", k, d.Unread())
	}
	if err := d.Advance(len(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if tok, err := d.ReadToken(); err != nil || tok.String() != "2" {
		t.Fatalf("after Advance: %q, %v; want the next element 2", tok.Raw, err)
	}
	if err := d.Advance(1); err == nil || !strings.Contains(err.Error(), "Advance(1) not before a value") {
		t.Fatalf("Advance after a value = %v, want an error naming the misuse", err)
	}
	if _, err := d.ReadToken(); err == nil {
		t.Fatal("the decoder reads on after a misused Advance")
	}

	d.Reset([]byte(`[1]`))
	d.ReadToken()
	d.PeekKind()
	if err := d.Advance(3); err == nil {
		t.Fatal("Advance past the input succeeds")
	}
}

func TestAppendQuote(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "\n\r\t\b\f\x00\x1f", "é😀", "bad\xffutf8", "<&>", "\u2028"} {
		got := AppendQuote([]byte("x"), s)
		if got[0] != 'x' {
			t.Fatalf("AppendQuote did not append")
		}
		var back string
		if err := json.Unmarshal(got[1:], &back); err != nil {
			t.Fatalf("AppendQuote(%q) = %s: not JSON: %v", s, got[1:], err)
		}
		want := strings.ToValidUTF8(s, "\ufffd")
		if back != want {
			t.Fatalf("AppendQuote(%q) reads back as %q, want %q", s, back, want)
		}
		if tok, err := NewDecoder(got[1:]).ReadToken(); err != nil || tok.String() != want {
			t.Fatalf("AppendQuote(%q) = %s: reads here as %q, %v", s, got[1:], tok.String(), err)
		}
	}
}

func BenchmarkFrame(b *testing.B) {
	frame := []byte(`{"t":"event","stream":"ticks","epoch":"e1","seq":12345,"data":{"n":1,"s":"x"}}`)
	var d Decoder
	b.ReportAllocs()
	for b.Loop() {
		d.Reset(frame)
		for {
			if _, err := d.ReadToken(); err != nil {
				break
			}
		}
	}
}

// Name is String's value, as the input's own bytes where nothing needed unescaping.
func TestNameIsTheStringsValue(t *testing.T) {
	for _, in := range []string{`"id"`, `"\u0069d"`, `"a\"b"`, `""`, `"é"`, `12`} {
		d := NewDecoder([]byte(in))
		tok, err := d.ReadToken()
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := string(tok.Name()); got != tok.String() {
			t.Errorf("%s: Name %q, String %q", in, got, tok.String())
		}
	}
	raw := []byte(`"plain"`)
	tok, _ := NewDecoder(raw).ReadToken()
	if n := tok.Name(); &n[0] != &raw[1] {
		t.Errorf("Name of a string with no escape is a copy, want the input's bytes")
	}
}
