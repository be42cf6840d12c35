// Package strictjson decodes untrusted JSON documents (the Host's config file, the page's
// bootstrap and the embedder's lifelineOptions) into Go structs by one set of rules, so that
// the Host and the page can never accept different documents:
//
//   - keys match the fields' JSON names exactly (no case folding: "deadlinems" is not
//     "deadlineMs");
//   - a key may appear once per object;
//   - a key the struct does not have is an error that lists the keys it does have;
//   - the document is one JSON value and nothing after it;
//   - a JSON null is an absent field (the field keeps what it held).
//
// Decoding goes on after a problem, so one run reports every mistake; each [Problem] names the
// field's path and the value as it was written. Numbers keep their text ([Result.Written]), so
// that rules checked later (ranges, say) can also print the value as written: "got 2147483648",
// never "got 2.147483648e+09".
//
// A struct says what a document may hold by implementing [Object]: each member's JSON name
// (its json tag's, which internal/test/fieldtest holds it to) and a pointer to its field. Not
// reflect: the page's wasm links none (reflect and the type data it keeps are about 30 KB of
// the brotli-compressed wasm), and a struct's members in code are as readable as its tags.
// Supported fields: string, bool, int64, float64, pointers to those three, []string, byte
// slices such as wire.RawJSON (any value, kept as written: give a *[]byte), and structs
// that are themselves Objects.
//
// It is built on internal/jsontok, the project's strict tokenizer, not on encoding/json: the
// browser build must not link encoding/json (about 120 KB of brotli-compressed wasm), and
// encoding/json's Decoder matches keys without case and lets a repeated key win silently.
package strictjson

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/lifeline-go/lifeline/internal/jsontok"
	"github.com/lifeline-go/lifeline/internal/tinyfmt"
)

// Object is a struct a document is decoded into.
type Object interface {
	// JSONFields lists the members a document may give the object, in the order the struct
	// declares them: each one's name and a pointer to the field its value goes to.
	JSONFields() []Field
}

// Field is one member of an Object: its JSON name, and Ptr, a pointer to the field its value
// goes to (*string, *bool, *int64, *float64, **string, **bool, **float64, *[]string, *[]byte
// for a value kept as written, or an Object for a struct).
type Field struct {
	Name string
	Ptr  any
}

// Problem is one broken rule: the field's path ("recovery.deadlineMs", "allowedOrigins[2]";
// "" for the document itself), what it must be, and the value seen, as written ("" when there
// is none to show). Its fields are those of controller.FieldError, which converts from it.
type Problem struct {
	Path  string
	Rule  string
	Value string
}

// Result is what Decode found.
type Result struct {
	// Problems are every broken rule, in document order.
	Problems []Problem
	// Written holds, by path, the text of every number decoded.
	Written map[string]string
}

// OK reports whether the document broke no rule.
func (r Result) OK() bool { return len(r.Problems) == 0 }

// maxValue bounds how much of a value a Problem shows, so that a hostile document cannot flood
// a log.
const maxValue = 64

// Decode decodes data into v by the rules of the package documentation. Fields the document
// does not mention keep what they held, so decoding a second document into the same value
// overrides the first field by field. path prefixes every Problem's path ("" for none).
func Decode(data []byte, v Object, path string) Result {
	d := &decoder{
		data:    data,
		dec:     jsontok.NewDecoder(data),
		written: map[string]string{},
	}
	if len(bytes.TrimSpace(data)) == 0 {
		d.problem(path, "must be a JSON object, the document is empty", "")
		return d.result()
	}
	if !d.value(v, path) {
		return d.result()
	}
	end := int(d.dec.InputOffset())
	if _, err := d.dec.ReadValue(); err != io.EOF {
		rest := bytes.TrimLeft(data[end:], " \t\r\n")
		line, col := position(data, len(data)-len(rest))
		d.problem(path, tinyfmt.Sprintf("must hold one JSON value and nothing after it (line %d, column %d)", line, col),
			snippet(bytes.TrimSpace(rest)))
	}
	return d.result()
}

type decoder struct {
	data    []byte
	dec     *jsontok.Decoder
	probs   []Problem
	written map[string]string
}

func (d *decoder) result() Result { return Result{Problems: d.probs, Written: d.written} }

func (d *decoder) problem(path, rule, value string) {
	d.probs = append(d.probs, Problem{Path: path, Rule: rule, Value: value})
}

// syntax reports a syntax error, after which nothing more can be read; it returns false.
func (d *decoder) syntax(path string, err error) bool {
	off := int(d.dec.InputOffset())
	var se *jsontok.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset
	}
	line, col := position(d.data, off)
	d.problem(path, tinyfmt.Sprintf("invalid JSON at line %d, column %d: %v", line, col, err), "")
	return false
}

// value decodes one JSON value into the field ptr points to. It returns false after a syntax
// error (nothing more can be read); a value of the wrong kind is skipped and reported, and
// decoding goes on.
func (d *decoder) value(ptr any, path string) bool {
	kind := d.dec.PeekKind()
	if kind == 0 {
		_, err := d.dec.ReadToken()
		return d.syntax(path, err)
	}
	if kind == 'n' {
		_, err := d.dec.ReadToken()
		return err == nil || d.syntax(path, err) // null: absent, the field keeps its value
	}
	switch p := ptr.(type) {
	case *[]byte:
		raw, err := d.dec.ReadValue()
		if err != nil {
			return d.syntax(path, err)
		}
		*p = bytes.Clone(raw)
	case Object:
		if kind != '{' {
			return d.wrong(path, "must be a JSON object")
		}
		return d.object(p, path)
	case *[]string:
		if kind != '[' {
			return d.wrong(path, "must be a JSON array")
		}
		return d.strings(p, path)
	case *string:
		if kind != '"' {
			return d.wrong(path, "must be a string")
		}
		tok, err := d.dec.ReadToken()
		if err != nil {
			return d.syntax(path, err)
		}
		*p = tok.String()
	case *bool:
		if kind != 't' && kind != 'f' {
			return d.wrong(path, "must be true or false")
		}
		tok, err := d.dec.ReadToken()
		if err != nil {
			return d.syntax(path, err)
		}
		*p = tok.Bool()
	case *float64:
		f, text, ok := d.number(kind, path)
		if text == "" {
			return ok
		}
		*p = f
		d.written[path] = text
	case *int64:
		f, text, ok := d.number(kind, path)
		if text == "" {
			return ok
		}
		// 2^53: every integer up to it is exact in a float64, as in JavaScript.
		if f != float64(int64(f)) || f > 1<<53 || f < -(1<<53) {
			d.problem(path, "must be an integer", text)
			return true
		}
		*p = int64(f)
		d.written[path] = text
	case **float64:
		return optional(d, p, path)
	case **string:
		return optional(d, p, path)
	case **bool:
		return optional(d, p, path)
	default:
		panic("strictjson: field " + path + " has a type Field does not take")
	}
	return true
}

// number reads a number: its value and text, or "" after a problem (ok false after a syntax
// error).
func (d *decoder) number(kind jsontok.Kind, path string) (f float64, text string, ok bool) {
	if kind != '0' {
		return 0, "", d.wrong(path, "must be a number")
	}
	raw, err := d.dec.ReadValue()
	if err != nil {
		return 0, "", d.syntax(path, err)
	}
	f, err = strconv.ParseFloat(string(raw), 64)
	if err != nil {
		d.problem(path, "must be a number within the float64 range", snippet(raw))
		return 0, "", true
	}
	return f, string(raw), true
}

// optional decodes into a pointer field: into a copy, since the pointee may be shared with the
// caller's other values, set only when the value was good, so that a value with a problem
// leaves the field as it was.
func optional[T any](d *decoder, p **T, path string) bool {
	v := new(T)
	if *p != nil {
		*v = **p
	}
	if !d.value(v, path) {
		return false
	}
	if d.decoded(path) {
		*p = v
	}
	return true
}

// decoded reports whether the value at path was taken (no problem reported for it), so that a
// pointer field is only set when its value was good.
func (d *decoder) decoded(path string) bool {
	for _, p := range d.probs {
		if p.Path == path {
			return false
		}
	}
	return true
}

// wrong skips a value of the wrong kind and reports it.
func (d *decoder) wrong(path, rule string) bool {
	raw, err := d.dec.ReadValue()
	if err != nil {
		return d.syntax(path, err)
	}
	d.problem(path, rule, snippet(raw))
	return true
}

func (d *decoder) object(o Object, path string) bool {
	if _, err := d.dec.ReadToken(); err != nil { // '{'
		return d.syntax(path, err)
	}
	fields := o.JSONFields()
	seen := map[string]bool{}
	for d.dec.PeekKind() != '}' {
		tok, err := d.dec.ReadToken()
		if err != nil {
			return d.syntax(path, err)
		}
		key := tok.String()
		p := join(path, key)
		if seen[key] {
			d.problem(p, "appears more than once", "")
			if err := d.dec.SkipValue(); err != nil {
				return d.syntax(p, err)
			}
			continue
		}
		seen[key] = true
		i := 0
		for i < len(fields) && fields[i].Name != key {
			i++
		}
		if i == len(fields) {
			d.problem(p, "is not a known field (known: "+names(fields)+")", "")
			if err := d.dec.SkipValue(); err != nil {
				return d.syntax(p, err)
			}
			continue
		}
		if !d.value(fields[i].Ptr, p) {
			return false
		}
	}
	if _, err := d.dec.ReadToken(); err != nil { // '}'
		return d.syntax(path, err)
	}
	return true
}

func (d *decoder) strings(p *[]string, path string) bool {
	if _, err := d.dec.ReadToken(); err != nil { // '['
		return d.syntax(path, err)
	}
	out := make([]string, 0, 4)
	good := true
	for i := 0; d.dec.PeekKind() != ']'; i++ {
		var s string
		at := path + "[" + strconv.Itoa(i) + "]"
		n := len(d.probs)
		if !d.value(&s, at) {
			return false
		}
		good = good && len(d.probs) == n
		out = append(out, s)
	}
	if _, err := d.dec.ReadToken(); err != nil { // ']'
		return d.syntax(path, err)
	}
	// A list with a bad item is left out whole: dropping the item would shift the indexes
	// that rules checked later report.
	if good {
		*p = out
	}
	return true
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func names(fields []Field) string {
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.Name)
	}
	return b.String()
}

// FormatNumber writes a number that has no text of its own (a value built in code, not read
// from a document) as a person would write it in one: 0, 1.5, 2147483648, 1e+300, and NaN,
// +Inf or -Inf, which JSON has no words for. A rule that reports a value read from a document
// shows its text instead (Result.Written): "got 1e300", not "got 1e+300".
func FormatNumber(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e21 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// position turns a byte offset into a 1-based line and column.
func position(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = off - bytes.LastIndexByte(before, '\n')
	return line, col
}

// snippet shows a value in a Problem, shortened.
func snippet(raw []byte) string {
	if len(raw) > maxValue {
		return string(raw[:maxValue]) + "…"
	}
	return string(raw)
}
