//go:build !js

package hostplugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

var configFileType = reflect.TypeFor[ConfigFile]()

// checkShape checks that data is one JSON object whose fields, at every depth, are fields of t
// spelled exactly as t's json tags spell them, each holding the right kind of JSON value. It
// runs before decoding because encoding/json reports unknown fields without their path, matches
// names case-insensitively, lets a repeated field silently win, and names no field on a syntax
// error; every error here names the path and the value seen.
//
// It returns the document with every offending member left out, so that the rules can still
// be checked on the rest and one run reports every mistake; clean is nil when nothing can be
// decoded (a syntax error, or no object at all).
func checkShape(data []byte, t reflect.Type) (clean []byte, errs []FieldError) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, []FieldError{{Rule: "must be a JSON object, the document is empty"}}
	}
	// A RawMessage only checks the syntax; numbers are judged per field below.
	var probe json.RawMessage
	if err := json.Unmarshal(trimmed, &probe); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			// Offset counts the bytes read, the offending one included.
			lead := len(data) - len(bytes.TrimLeft(data, " \t\r\n"))
			line, col := position(data, lead+int(se.Offset)-1)
			return nil, []FieldError{{Rule: fmt.Sprintf("invalid JSON at line %d, column %d: %v", line, col, se)}}
		}
		return nil, []FieldError{{Rule: "invalid JSON: " + err.Error()}}
	}
	clean, ok := checkValue(trimmed, t, "", &errs)
	if !ok {
		return nil, errs
	}
	return clean, errs
}

// position turns a byte offset into a 1-based line and column.
func position(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = off - bytes.LastIndexByte(before, '\n')
	return line, col
}

// checkValue checks raw against t and returns it with the offending members left out, or
// false when raw itself is of the wrong kind.
func checkValue(raw []byte, t reflect.Type, path string, errs *[]FieldError) (json.RawMessage, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	// null is how JSON says "absent": the field takes its default.
	if string(raw) == "null" {
		return raw, true
	}
	bad := func(rule string) (json.RawMessage, bool) {
		*errs = append(*errs, FieldError{Path: path, Rule: rule, Value: snippet(raw)})
		return nil, false
	}
	switch t.Kind() {
	case reflect.Struct:
		if raw[0] != '{' {
			return bad("must be a JSON object")
		}
		return checkObject(raw, t, path, errs), true
	case reflect.Slice:
		if raw[0] != '[' {
			return bad("must be a JSON array")
		}
		var items []json.RawMessage
		_ = json.Unmarshal(raw, &items) // valid JSON, checked by the caller
		ok := true
		for i, item := range items {
			_, itemOK := checkValue(item, t.Elem(), path+"["+strconv.Itoa(i)+"]", errs)
			ok = ok && itemOK
		}
		// A list with a bad item is left out whole: dropping the item would shift the
		// indexes the rules report.
		return raw, ok
	case reflect.String:
		if raw[0] != '"' {
			return bad("must be a string")
		}
	case reflect.Float64:
		if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
			return bad("must be a number")
		}
		if _, err := strconv.ParseFloat(string(raw), 64); err != nil {
			return bad("must be a number within the float64 range")
		}
	}
	return raw, true
}

// checkObject checks the members of an object against the fields of t and returns the object
// rebuilt from the members that passed.
func checkObject(raw []byte, t reflect.Type, path string, errs *[]FieldError) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(raw))
	_, _ = dec.Token() // '{'; raw is valid JSON
	seen := map[string]bool{}
	clean := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			break
		}
		p := key
		if path != "" {
			p = path + "." + key
		}
		if seen[key] {
			*errs = append(*errs, FieldError{Path: p, Rule: "appears more than once"})
			delete(clean, key)
			continue
		}
		seen[key] = true
		f, ok := fieldByJSONName(t, key)
		if !ok {
			*errs = append(*errs, FieldError{Path: p,
				Rule: "is not a known field (known: " + strings.Join(jsonNames(t), ", ") + ")"})
			continue
		}
		if v, ok := checkValue(val, f.Type, p, errs); ok {
			clean[key] = v
		}
	}
	out, _ := json.Marshal(clean) // RawMessages already valid
	return out
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

func fieldByJSONName(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() && jsonName(f) == key && jsonName(f) != "-" {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func jsonNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() && jsonName(f) != "-" {
			names = append(names, jsonName(f))
		}
	}
	return names
}

// snippet shows a JSON value in an error message, shortened so that a hostile file cannot flood
// the log.
func snippet(raw []byte) string {
	const max = 64
	if len(raw) > max {
		return string(raw[:max]) + "…"
	}
	return string(raw)
}
