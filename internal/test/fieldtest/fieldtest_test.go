package fieldtest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lifeline-go/lifeline/internal/strictjson"
	"github.com/lifeline-go/lifeline/internal/test/fieldtest"
)

// recorder is a testing.TB that keeps what Check says; Fatalf stops Check by a panic.
type recorder struct {
	testing.TB
	said []string
}

type fatal struct{}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.said = append(r.said, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	panic(fatal{})
}

func check(v strictjson.Object) (said string) {
	r := &recorder{}
	defer func() {
		if p := recover(); p != nil && p != (fatal{}) {
			panic(p)
		}
		said = strings.Join(r.said, "\n")
	}()
	fieldtest.Check(r, v)
	return ""
}

type inner struct {
	N int64 `json:"n"`
}

func (in *inner) JSONFields() []strictjson.Field { return []strictjson.Field{{Name: "n", Ptr: &in.N}} }

type right struct {
	A     *float64 `json:"a,omitempty"`
	Inner inner    `json:"inner"`
	Plain string
	_     bool // unexported: no document names it
	Left  bool `json:"-"`
}

func (r *right) JSONFields() []strictjson.Field {
	return []strictjson.Field{{Name: "a", Ptr: &r.A}, {Name: "inner", Ptr: &r.Inner}, {Name: "Plain", Ptr: &r.Plain}}
}

type misnamed struct {
	A int64 `json:"a"`
}

func (m *misnamed) JSONFields() []strictjson.Field { return []strictjson.Field{{Name: "A", Ptr: &m.A}} }

type crossed struct {
	A string `json:"a"`
	B string `json:"b"`
}

func (c *crossed) JSONFields() []strictjson.Field {
	return []strictjson.Field{{Name: "a", Ptr: &c.B}, {Name: "b", Ptr: &c.B}}
}

type unsupported struct {
	N int `json:"n"`
}

func (u *unsupported) JSONFields() []strictjson.Field {
	return []strictjson.Field{{Name: "n", Ptr: &u.N}}
}

type badInner struct {
	Inner misnamed `json:"inner"`
}

func (b *badInner) JSONFields() []strictjson.Field {
	return []strictjson.Field{{Name: "inner", Ptr: &b.Inner}}
}

func TestCheckSaysWhereAListDiffersFromItsStruct(t *testing.T) {
	for _, tt := range []struct {
		name string
		v    strictjson.Object
		want string
	}{
		{"a list that is its struct passes", &right{}, ""},
		{"a name that is not the tag's", &misnamed{}, `*fieldtest_test.misnamed.JSONFields names ["A"], its json tags ["a"]`},
		{"a pointer to another field", &crossed{}, "*fieldtest_test.crossed.JSONFields: a's pointer *string is not to the field A"},
		{"a type strictjson does not take", &unsupported{}, "*fieldtest_test.unsupported.JSONFields: n is a *int, a type strictjson does not take"},
		{"an Object among the fields is checked too", &badInner{}, `*fieldtest_test.misnamed.JSONFields names ["A"], its json tags ["a"]`},
	} {
		if got := check(tt.v); got != tt.want {
			t.Errorf("%s: Check said %q, want %q", tt.name, got, tt.want)
		}
	}
}
