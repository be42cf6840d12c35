package controller

import "github.com/lifeline-go/lifeline/internal/strictjson"

// ParseRecovery decodes a recovery object from untrusted JSON (a command-line flag, options
// from embedding code) without resolving it, by the strict rules the Host and the page share
// (exact keys, none twice, no unknown ones, nothing after the object). Every problem is a
// [FieldError] under "recovery."; a JSON null or an empty input means "all defaults".
//
// To resolve what it decoded with values printed as written, use [ResolveRecoveryJSON].
func ParseRecovery(b []byte) (Recovery, error) {
	r, _, err := parseRecovery(b)
	return r, err
}

// ResolveRecoveryJSON decodes and resolves a recovery object: [ParseRecovery] then [Resolve],
// with every value in an error printed as the document wrote it.
func ResolveRecoveryJSON(b []byte) (Config, error) {
	r, written, err := parseRecovery(b)
	if err != nil {
		return Config{}, err
	}
	c, err := Resolve(r)
	if ce, ok := err.(*ConfigError); ok {
		ce.AsWritten(written)
	}
	return c, err
}

func parseRecovery(b []byte) (Recovery, map[string]string, error) {
	var r Recovery
	if len(b) == 0 {
		return r, nil, nil
	}
	written, err := DecodeDocument("controller", b, &r, "recovery")
	if err != nil {
		return Recovery{}, nil, err
	}
	return r, written, nil
}

// DecodeDocument is the one decoder of untrusted config documents, shared by the page (its
// bootstrap and lifelineOptions) and the Host (its config file), so that the two can never
// accept different documents. It decodes data into v, a pointer to a struct, by v's json tags:
// keys match exactly (no case folding), none may appear twice, an unknown key is an error that
// lists the known ones, and nothing may follow the document; a JSON null leaves a field as it
// was, so decoding a second document into v overrides the first field by field.
//
// Every problem is a [FieldError] (its path under path, its value as written) in a
// *[ConfigError] of pkg; what had no problem is decoded all the same. written maps the path of
// every number decoded to its text, for [ConfigError.AsWritten].
//
// Field types: structs and pointers to them, float64, int64, string, bool, []string, and
// [RawJSON]. (It is built on a JSON tokenizer rather than encoding/json, which folds case,
// lets a repeated key win, and must not be linked into the browser build.)
func DecodeDocument(pkg string, data []byte, v any, path string) (written map[string]string, err error) {
	res := strictjson.Decode(data, v, path)
	if res.OK() {
		return res.Written, nil
	}
	fields := make([]FieldError, len(res.Problems))
	for i, p := range res.Problems {
		fields[i] = FieldError(p)
	}
	return res.Written, &ConfigError{Package: pkg, Fields: fields}
}

// RawJSON is a field that [DecodeDocument] keeps as written: any JSON value, checked for
// syntax only.
type RawJSON = strictjson.RawValue
