// Package strictjson decodes untrusted JSON documents (the Host's config file, the page's
// bootstrap and the embedder's lifelineOptions) into Go structs by one set of rules, so that
// the Host and the page can never accept different documents:
//
//   - keys match the fields' json tags exactly (no case folding: "deadlinems" is not
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
// It is built on internal/jsontok, the project's strict tokenizer, not on encoding/json: the
// browser build must not link encoding/json (about 120 KB of brotli-compressed wasm), and
// encoding/json's Decoder matches keys without case and lets a repeated key win silently.
// Supported field types: structs and pointers to them, float64, int64, string, bool, []string,
// and byte slices such as wire.RawJSON (any value, kept as written).
package strictjson

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/lifeline-go/lifeline/internal/jsontok"
)

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

// Decode decodes data into v, a non-nil pointer to a struct, by the rules of the package
// documentation. Fields the document does not mention keep what they held, so decoding a
// second document into the same value overrides the first field by field. path prefixes every
// Problem's path ("" for none).
func Decode(data []byte, v any, path string) Result {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("strictjson: Decode wants a non-nil pointer to a struct, got %T", v))
	}
	d := &decoder{
		data:    data,
		dec:     jsontok.NewDecoder(data),
		written: map[string]string{},
	}
	if len(bytes.TrimSpace(data)) == 0 {
		d.problem(path, "must be a JSON object, the document is empty", "")
		return d.result()
	}
	if !d.value(rv.Elem(), path) {
		return d.result()
	}
	end := int(d.dec.InputOffset())
	if _, err := d.dec.ReadValue(); err != io.EOF {
		rest := bytes.TrimLeft(data[end:], " \t\r\n")
		line, col := position(data, len(data)-len(rest))
		d.problem(path, fmt.Sprintf("must hold one JSON value and nothing after it (line %d, column %d)", line, col),
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
	d.problem(path, fmt.Sprintf("invalid JSON at line %d, column %d: %v", line, col, err), "")
	return false
}

// value decodes one JSON value into v. It returns false after a syntax error (nothing more
// can be read); a value of the wrong kind is skipped and reported, and decoding goes on.
func (d *decoder) value(v reflect.Value, path string) bool {
	kind := d.dec.PeekKind()
	if kind == 0 {
		_, err := d.dec.ReadToken()
		return d.syntax(path, err)
	}
	if kind == 'n' {
		_, err := d.dec.ReadToken()
		return err == nil || d.syntax(path, err) // null: absent, the field keeps its value
	}
	if isRaw(v.Type()) {
		raw, err := d.dec.ReadValue()
		if err != nil {
			return d.syntax(path, err)
		}
		v.SetBytes(bytes.Clone(raw))
		return true
	}
	if v.Kind() == reflect.Pointer {
		// Decode into a copy: the pointee may be shared with the caller's other values, and a
		// value with a problem must leave the field as it was.
		elem := reflect.New(v.Type().Elem())
		if !v.IsNil() {
			elem.Elem().Set(v.Elem())
		}
		if !d.value(elem.Elem(), path) {
			return false
		}
		if d.decoded(path) {
			v.Set(elem)
		}
		return true
	}
	switch v.Kind() {
	case reflect.Struct:
		if kind != '{' {
			return d.wrong(path, "must be a JSON object")
		}
		return d.object(v, path)
	case reflect.Slice:
		if kind != '[' {
			return d.wrong(path, "must be a JSON array")
		}
		return d.array(v, path)
	case reflect.String:
		if kind != '"' {
			return d.wrong(path, "must be a string")
		}
		tok, err := d.dec.ReadToken()
		if err != nil {
			return d.syntax(path, err)
		}
		v.SetString(tok.String())
	case reflect.Bool:
		if kind != 't' && kind != 'f' {
			return d.wrong(path, "must be true or false")
		}
		tok, err := d.dec.ReadToken()
		if err != nil {
			return d.syntax(path, err)
		}
		v.SetBool(tok.Bool())
	case reflect.Float64, reflect.Int64:
		if kind != '0' {
			return d.wrong(path, "must be a number")
		}
		raw, err := d.dec.ReadValue()
		if err != nil {
			return d.syntax(path, err)
		}
		text := string(raw)
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			d.problem(path, "must be a number within the float64 range", snippet(raw))
			return true
		}
		if v.Kind() == reflect.Int64 {
			// 2^53: every integer up to it is exact in a float64, as in JavaScript.
			if f != float64(int64(f)) || f > 1<<53 || f < -(1<<53) {
				d.problem(path, "must be an integer", text)
				return true
			}
			v.SetInt(int64(f))
		} else {
			v.SetFloat(f)
		}
		d.written[path] = text
	default:
		panic(fmt.Sprintf("strictjson: field %s has the unsupported type %s", path, v.Type()))
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

func (d *decoder) object(v reflect.Value, path string) bool {
	if _, err := d.dec.ReadToken(); err != nil { // '{'
		return d.syntax(path, err)
	}
	t := v.Type()
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
		f, ok := field(t, key)
		if !ok {
			d.problem(p, "is not a known field (known: "+strings.Join(names(t), ", ")+")", "")
			if err := d.dec.SkipValue(); err != nil {
				return d.syntax(p, err)
			}
			continue
		}
		if !d.value(v.FieldByIndex(f.Index), p) {
			return false
		}
	}
	if _, err := d.dec.ReadToken(); err != nil { // '}'
		return d.syntax(path, err)
	}
	return true
}

func (d *decoder) array(v reflect.Value, path string) bool {
	if _, err := d.dec.ReadToken(); err != nil { // '['
		return d.syntax(path, err)
	}
	out := reflect.MakeSlice(v.Type(), 0, 4)
	good := true
	for i := 0; d.dec.PeekKind() != ']'; i++ {
		elem := reflect.New(v.Type().Elem()).Elem()
		p := path + "[" + strconv.Itoa(i) + "]"
		n := len(d.probs)
		if !d.value(elem, p) {
			return false
		}
		good = good && len(d.probs) == n
		out = reflect.Append(out, elem)
	}
	if _, err := d.dec.ReadToken(); err != nil { // ']'
		return d.syntax(path, err)
	}
	// A list with a bad item is left out whole: dropping the item would shift the indexes
	// that rules checked later report.
	if good {
		v.Set(out)
	}
	return true
}

// isRaw reports whether t is kept as written: any byte-slice type (wire.RawJSON,
// json.RawMessage), checked for syntax only.
func isRaw(t reflect.Type) bool {
	return t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// jsonName is the name a field has in a document: its json tag's, or "-" for none.
func jsonName(f reflect.StructField) string {
	if !f.IsExported() {
		return "-"
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

func field(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); jsonName(f) == key && key != "-" {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func names(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if n := jsonName(t.Field(i)); n != "-" {
			out = append(out, n)
		}
	}
	return out
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
