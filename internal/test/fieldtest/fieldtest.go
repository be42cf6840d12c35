// Package fieldtest holds a strictjson.Object to its struct: the members its JSONFields lists
// are the struct's fields a JSON document names (by their json tags, as encoding/json names
// them), in order, each with a pointer to its own field and of a type strictjson takes. The
// list is written by hand so that the page's wasm links no reflect; this is the check that it
// says what the tags say. Tests only.
package fieldtest

import (
	"reflect"
	"strings"
	"testing"

	"github.com/lifeline-go/lifeline/internal/strictjson"
)

// Check fails t for every way v's JSONFields differs from v's struct, and checks the Objects
// among its fields the same way.
func Check(t testing.TB, v strictjson.Object) {
	t.Helper()
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		t.Fatalf("%T is not a non-nil pointer to a struct", v)
	}
	st := rv.Elem()
	var want []string
	var addrs []reflect.Value
	for i := range st.NumField() {
		if name := jsonName(st.Type().Field(i)); name != "-" {
			want = append(want, name)
			addrs = append(addrs, st.Field(i).Addr())
		}
	}
	fields := v.JSONFields()
	var got []string
	for _, f := range fields {
		got = append(got, f.Name)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("%T.JSONFields names %q, its json tags %q", v, got, want)
	}
	for i, f := range fields {
		p := reflect.ValueOf(f.Ptr)
		switch {
		case p.Kind() != reflect.Pointer || p.Pointer() != addrs[i].Pointer() || !p.Type().Elem().ConvertibleTo(addrs[i].Type().Elem()):
			t.Errorf("%T.JSONFields: %s's pointer %T is not to the field %s", v, f.Name, f.Ptr, st.Type().Field(i).Name)
		case !supported(f.Ptr):
			t.Errorf("%T.JSONFields: %s is a %T, a type strictjson does not take", v, f.Name, f.Ptr)
		}
		if o, ok := f.Ptr.(strictjson.Object); ok {
			Check(t, o)
		}
	}
}

// jsonName is the name encoding/json gives a field: its json tag's, its Go name without
// one, or "-" for none (a field the tag leaves out, or an unexported one).
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

func supported(ptr any) bool {
	switch ptr.(type) {
	case *string, *bool, *int64, *float64, **string, **bool, **float64, *[]string, *[]byte, strictjson.Object:
		return true
	}
	return false
}
