// Package configdoc reads a config out of untrusted JSON documents — the Host's config file,
// the page's bootstrap and its lifelineOptions, a -recovery flag — the one way the Host and the
// page share: each document through the strict decoder (internal/strictjson), then the
// config's rules (controller.Resolve, and the reader's own), then one error that names every
// broken field where it was written, with the value as it was written:
//
//	hostplugin: recovery.deadlineMs: must be an integer in 1..2147483647, got 0
//	page: lifelineOptions.recovery.maxDelayMs: must be an integer in 1..2147483647, got 1e300
//
// A config may be read from several documents decoded one after another onto the same values,
// each overriding the last field by field (the page's bootstrap, then its lifelineOptions);
// a rule a value breaks is reported at the last document that wrote it.
package configdoc

import (
	"errors"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/internal/strictjson"
)

// Reader reads one config. The zero Reader is not usable; call [New].
type Reader struct {
	pkg    string
	fields []controller.FieldError
	docs   []doc
}

// doc is one document decoded: where it stands and the text of every number it held.
type doc struct {
	at      string            // the path its fields are reported under: "" or "lifelineOptions"
	written map[string]string // by path (at included), from strictjson
}

// New returns a reader whose error begins with pkg ("hostplugin", "page").
func New(pkg string) *Reader { return &Reader{pkg: pkg} }

// Decode decodes data onto v by the strict rules of internal/strictjson and records every
// problem. at is where the document stands ("" for the main one, "lifelineOptions" for the
// page's options), and path where v sits in the config the rules check ("" for the whole,
// "recovery" for its timing): the problems of the document are reported under at, then path.
//
// It reports whether the config's fields can be checked: false when the document was refused
// as a whole (not JSON, not an object, or more after it), when nothing in it can be trusted.
func (r *Reader) Decode(data []byte, v strictjson.Object, at, path string) bool {
	root := join(at, path)
	res := strictjson.Decode(data, v, root)
	whole := true
	for _, p := range res.Problems {
		r.fields = append(r.fields, controller.FieldError(p))
		whole = whole && p.Path != root
	}
	r.docs = append(r.docs, doc{at: at, written: res.Written})
	return whole
}

// Check records the rules that a config's resolver found broken (a *controller.ConfigError;
// any other error is recorded as it is). Each rule names its field by its path in the config
// ("recovery.jitter"): it is reported at the last document that wrote that field
// ("lifelineOptions.recovery.jitter"), with the value as that document wrote it.
func (r *Reader) Check(err error) {
	if err == nil {
		return
	}
	var ce *controller.ConfigError
	if !errors.As(err, &ce) {
		r.fields = append(r.fields, controller.FieldError{Rule: err.Error()})
		return
	}
	for _, f := range ce.Fields {
		r.fields = append(r.fields, r.where(f))
	}
}

// where moves f to the last document that wrote its field, with that document's text.
func (r *Reader) where(f controller.FieldError) controller.FieldError {
	for i := len(r.docs) - 1; i >= 0; i-- {
		d := r.docs[i]
		if text, ok := d.written[join(d.at, f.Path)]; ok {
			f.Path, f.Value = join(d.at, f.Path), text
			return f
		}
	}
	return f
}

// Refuse records a rule the reader's own check found broken; f.Path is where the value was
// written, f.Value the value as written.
func (r *Reader) Refuse(f controller.FieldError) { r.fields = append(r.fields, f) }

// Err returns every problem recorded, in order, as a *controller.ConfigError of the reader's
// package; nil when there is none.
func (r *Reader) Err() error {
	if len(r.fields) == 0 {
		return nil
	}
	return &controller.ConfigError{Package: r.pkg, Fields: r.fields}
}

func join(path, key string) string {
	switch {
	case path == "":
		return key
	case key == "":
		return path
	}
	return path + "." + key
}
