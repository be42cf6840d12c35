package tinyfmt_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/internal/tinyfmt"
)

// A named type with a String method, and one whose String panics, as a nil pointer's would.
type place struct{ host string }

func (p *place) String() string { return "ws://" + p.host + "/" }

type broken struct{}

func (broken) String() string { panic("no string") }

var errBoom = errors.New("boom")

// values are one of each kind of value the package documentation lists.
var values = []any{
	nil, true, false, "", "plain", "quote\" and\nnewline", "ünï\x00", []byte("bytes\x01"), []byte{},
	[]string{"a", "b c"}, []string(nil),
	0, -7, int8(-8), int16(300), int32('é'), int64(-1 << 62), 'x', rune(0x10ffff + 1),
	uint(7), uint8(255), uint16(65535), uint32(1 << 31), uint64(1<<64 - 1), uintptr(42),
	0.0, 1.5, -2.25e-9, 1e21, 123456789.0, float32(0.1),
	errBoom, fmt.Errorf("wrapped: %w", errBoom), 1500 * time.Millisecond, &place{"h:1"},
}

// unsupported says whether a value formatted by verb is one the package documentation leaves
// out, where the output differs from fmt's: a verb that does not fit an error or a Stringer
// (fmt names its type, which needs reflect), and time.Duration's %d (an int64 kind).
func unsupported(verb byte, v any) bool {
	switch v.(type) {
	case error, fmt.Stringer:
		return verb != 'v' && verb != 's' && verb != 'q'
	}
	return false
}

func TestSprintfIsFmtsForEveryVerbAndValue(t *testing.T) {
	for _, verb := range []byte("vsqdw") {
		for _, v := range values {
			if unsupported(verb, v) {
				continue
			}
			format := "<%" + string(verb) + ">"
			want, got := fmt.Sprintf(format, v), tinyfmt.TinySprintf(format, v)
			if got != want {
				t.Errorf("Sprintf(%q, %#v) = %q, fmt gives %q", format, v, got, want)
			}
		}
	}
}

func TestSprintfEdgesAreFmts(t *testing.T) {
	for _, tt := range []struct {
		format string
		args   []any
	}{
		{"no verbs", nil},
		{"100%% sure", nil},
		{"a missing operand: %d and %s", []any{1}},
		{"extra operands: %d", []any{1, "two", nil, 3.5}},
		{"a verb at the very end: %", []any{1}},
		{"%q has %q at byte %d; allowed are letters", []any{"a b", ' ', 1}},
		{"a Stringer that panics: %v", []any{broken{}}},
	} {
		want, got := fmt.Sprintf(tt.format, tt.args...), tinyfmt.TinySprintf(tt.format, tt.args...)
		if got != want {
			t.Errorf("Sprintf(%q, %#v) = %q, fmt gives %q", tt.format, tt.args, got, want)
		}
	}
}

func TestSprintIsFmts(t *testing.T) {
	for _, args := range [][]any{
		nil, {"a"}, {"a", "b"}, {1, 2}, {"a", 1, 2, "b", errBoom, errBoom}, {nil, nil}, {1.5, true},
	} {
		if want, got := fmt.Sprint(args...), tinyfmt.TinySprint(args...); got != want {
			t.Errorf("Sprint(%#v) = %q, fmt gives %q", args, got, want)
		}
	}
}

// unwrapped is what errors.Unwrap, or an Unwrap() []error, gives.
func unwrapped(err error) []error {
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		return u.Unwrap()
	}
	return []error{errors.Unwrap(err)}
}

func TestErrorfWrapsAsFmtDoes(t *testing.T) {
	errOther := errors.New("other")
	for _, tt := range []struct {
		name   string
		format string
		args   []any
	}{
		{"no operand", "nothing to format", nil},
		{"no %w", "%v and %s", []any{errBoom, errOther}},
		{"one %w", "%w: stream %q", []any{errBoom, "s"}},
		{"two %w", "%w: call %d: %w", []any{errBoom, 7, errOther}},
		{"every kind of operand", "%w: %s must be an integer in 0..%d, got %s (%v, %q)", []any{errBoom, "seq", uint64(1<<64 - 1), "1.5", time.Second, 'x'}},
		{"a %w of a nil error", "%w: x", []any{nil}},
		{"a %w of a string", "%w: x", []any{"not an error"}},
		{"two %w, one of a string", "%w %w", []any{"not an error", errOther}},
	} {
		want, got := fmt.Errorf(tt.format, tt.args...), tinyfmt.TinyErrorf(tt.format, tt.args...)
		if got.Error() != want.Error() {
			t.Errorf("%s: Errorf(%q).Error() = %q, fmt gives %q", tt.name, tt.format, got.Error(), want.Error())
		}
		if w, g := unwrapped(want), unwrapped(got); !slices.Equal(g, w) {
			t.Errorf("%s: Errorf(%q) unwraps to %v, fmt's to %v", tt.name, tt.format, g, w)
		}
	}
	if err := tinyfmt.TinyErrorf("%w: call %d: %w", errBoom, 7, fmt.Errorf("x: %w", errOther)); !errors.Is(err, errBoom) || !errors.Is(err, errOther) {
		t.Errorf("errors.Is does not find both wrapped errors in %v", err)
	}
}

func TestAnUnsupportedTypeIsNamedAsSuch(t *testing.T) {
	type command string
	if got, want := tinyfmt.TinySprintf("unknown command %q", command("x")), `unknown command %!q(unsupported type)`; got != want {
		t.Errorf("Sprintf of a named string type = %q, want %q", got, want)
	}
}

// FuzzSprintfIsFmts holds the formatter to fmt's output for any format made of the verbs it
// takes, with a string and an integer operand.
func FuzzSprintfIsFmts(f *testing.F) {
	f.Add("%w: %s must be %d", "seq", int64(-3))
	f.Add("%q%v%%", "\xff\u2028", int64(0x10ffff))
	f.Fuzz(func(t *testing.T, format, s string, i int64) {
		for j := strings.IndexByte(format, '%'); j >= 0 && j+1 < len(format); {
			if !strings.ContainsRune("vsqdw%", rune(format[j+1])) {
				t.Skip("a verb or flag the package does not take")
			}
			next := strings.IndexByte(format[j+2:], '%')
			if next < 0 {
				break
			}
			j += 2 + next
		}
		if want, got := fmt.Sprintf(format, s, i), tinyfmt.TinySprintf(format, s, i); got != want {
			t.Errorf("Sprintf(%q, %q, %d) = %q, fmt gives %q", format, s, i, got, want)
		}
	})
}

// TestTheFunctionsAreFmts runs on both platforms: natively they are fmt's, in the browser the
// formatter's.
func TestTheFunctionsAreFmts(t *testing.T) {
	if got, want := tinyfmt.Sprintf("%q: %d", "a", 1), fmt.Sprintf("%q: %d", "a", 1); got != want {
		t.Errorf("Sprintf = %q, fmt gives %q", got, want)
	}
	if got, want := tinyfmt.Sprint(1, 2, "x"), fmt.Sprint(1, 2, "x"); got != want {
		t.Errorf("Sprint = %q, fmt gives %q", got, want)
	}
	if err := tinyfmt.Errorf("%w: x", errBoom); err.Error() != "boom: x" || !errors.Is(err, errBoom) {
		t.Errorf("Errorf = %v, want boom: x wrapping errBoom", err)
	}
}
