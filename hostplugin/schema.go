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
func checkShape(data []byte, t reflect.Type) []FieldError {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return []FieldError{{Rule: "must be a JSON object, the document is empty"}}
	}
	// A RawMessage only checks the syntax; numbers are judged per field below.
	var probe json.RawMessage
	if err := json.Unmarshal(trimmed, &probe); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			// Offset counts the bytes read, the offending one included.
			lead := len(data) - len(bytes.TrimLeft(data, " \t\r\n"))
			line, col := position(data, lead+int(se.Offset)-1)
			return []FieldError{{Rule: fmt.Sprintf("invalid JSON at line %d, column %d: %v", line, col, se)}}
		}
		return []FieldError{{Rule: "invalid JSON: " + err.Error()}}
	}
	var errs []FieldError
	checkValue(trimmed, t, "", &errs)
	return errs
}

// position turns a byte offset into a 1-based line and column.
func position(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = off - bytes.LastIndexByte(before, '\n')
	return line, col
}

func checkValue(raw []byte, t reflect.Type, path string, errs *[]FieldError) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	// null is how JSON says "absent": the field takes its default.
	if string(raw) == "null" {
		return
	}
	bad := func(rule string) {
		*errs = append(*errs, FieldError{Path: path, Rule: rule, Value: snippet(raw)})
	}
	switch t.Kind() {
	case reflect.Struct:
		if raw[0] != '{' {
			bad("must be a JSON object")
			return
		}
		checkObject(raw, t, path, errs)
	case reflect.Slice:
		if raw[0] != '[' {
			bad("must be a JSON array")
			return
		}
		var items []json.RawMessage
		_ = json.Unmarshal(raw, &items) // valid JSON, checked by the caller
		for i, item := range items {
			checkValue(item, t.Elem(), path+"["+strconv.Itoa(i)+"]", errs)
		}
	case reflect.String:
		if raw[0] != '"' {
			bad("must be a string")
		}
	case reflect.Float64:
		if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
			bad("must be a number")
			return
		}
		if _, err := strconv.ParseFloat(string(raw), 64); err != nil {
			bad("must be a number within the float64 range")
		}
	}
}

func checkObject(raw []byte, t reflect.Type, path string, errs *[]FieldError) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	_, _ = dec.Token() // '{'; raw is valid JSON
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return
		}
		p := key
		if path != "" {
			p = path + "." + key
		}
		if seen[key] {
			*errs = append(*errs, FieldError{Path: p, Rule: "appears more than once"})
			continue
		}
		seen[key] = true
		f, ok := fieldByJSONName(t, key)
		if !ok {
			*errs = append(*errs, FieldError{Path: p,
				Rule: "is not a known field (known: " + strings.Join(jsonNames(t), ", ") + ")"})
			continue
		}
		checkValue(val, f.Type, p, errs)
	}
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
