package controller

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ParseRecovery decodes a recovery object from untrusted JSON (a page's bootstrap, or options
// from embedding code) without resolving it. Unknown fields and values that are not numbers
// are errors that name the field path, as [Resolve]'s are. A JSON null or an empty input means
// "all defaults".
func ParseRecovery(b []byte) (Recovery, error) {
	var r Recovery
	b = bytes.TrimSpace(b)
	if len(b) == 0 || bytes.Equal(b, []byte("null")) {
		return r, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field == "" {
				return Recovery{}, fmt.Errorf("controller: recovery: must be an object, got %s", te.Value)
			}
			return Recovery{}, fmt.Errorf("controller: recovery.%s: must be a number, got %s", te.Field, te.Value)
		}
		// DisallowUnknownFields reports `json: unknown field "x"`; keep its words, add the path.
		return Recovery{}, fmt.Errorf("controller: recovery: %v", err)
	}
	if d.More() {
		return Recovery{}, errors.New("controller: recovery: trailing data after the object")
	}
	return r, nil
}
