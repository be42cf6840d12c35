// Package tinyfmt is fmt's Errorf, Sprintf and Sprint for the code the page's wasm links, with
// the same output for what that code formats, and without fmt: fmt formats any value through
// reflect, and fmt with its imports (reflect's Value methods, internal/fmtsort, os) is about
// 50 KB of the brotli-compressed wasm. internal/test's import rules keep fmt out of the wasm.
//
// Natively every function is fmt's own (tinyfmt_notjs.go), so the Host formats exactly as
// before and go vet checks every call's format and arguments as it checks fmt's (it sees the
// functions forward to fmt). Under js the formatter below does the work; its tests hold it to
// fmt's output, natively, for every verb and kind of value it takes.
//
// The verbs are %v, %s, %q, %d, %w (Errorf) and %%, without flags, width or precision. The
// values are nil, bool, string, []byte, []string, every int and uint type, float32 and
// float64, and any error or fmt.Stringer (its Error or String, for %v, %s, %q and %w). A
// named type of another kind (type Command string, without a String method) is printed as
// %!v(unsupported type): convert it at the call (string(cmd)), as fmt's reflect would have.
package tinyfmt

import (
	"strconv"
	"unicode/utf8"
)

// stringer is fmt.Stringer.
type stringer interface{ String() string }

// sprintf is fmt.Sprintf for the verbs and values of the package documentation. wrap, when
// not nil, is called with the position of each argument formatted by a %w that is an error.
func sprintf(format string, args []any, wrap func(int)) string {
	b := make([]byte, 0, len(format)+16*len(args))
	n := 0
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b = append(b, c)
			continue
		}
		if i+1 == len(format) {
			b = append(b, "%!(NOVERB)"...)
			break
		}
		i++
		verb, size := utf8.DecodeRuneInString(format[i:])
		i += size - 1
		if verb == '%' {
			b = append(b, '%')
			continue
		}
		if n == len(args) {
			b = append(b, '%', '!')
			b = utf8.AppendRune(b, verb)
			b = append(b, "(MISSING)"...)
			continue
		}
		arg := args[n]
		if verb == 'w' && wrap != nil {
			// As fmt: the operand of every %w is recorded, and printed by %v if an error.
			wrap(n)
			if _, ok := arg.(error); ok {
				verb = 'v'
			}
		}
		n++
		b = appendArg(b, verb, arg)
	}
	if n < len(args) {
		b = append(b, "%!(EXTRA "...)
		for i, arg := range args[n:] {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendTyped(b, arg)
		}
		b = append(b, ')')
	}
	return string(b)
}

// sprint is fmt.Sprint: the operands' %v, a space between two when neither is a string.
func sprint(args []any) string {
	var b []byte
	for i, arg := range args {
		_, isString := arg.(string)
		if i > 0 && !isString {
			if _, prevString := args[i-1].(string); !prevString {
				b = append(b, ' ')
			}
		}
		b = appendArg(b, 'v', arg)
	}
	return string(b)
}

// appendArg appends arg formatted by verb, as fmt does.
func appendArg(b []byte, verb rune, arg any) []byte {
	if arg == nil {
		if verb == 'v' {
			return append(b, "<nil>"...)
		}
		return appendBad(b, verb, arg)
	}
	// fmt calls Error, else String, for the verbs that print a string.
	if verb == 'v' || verb == 's' || verb == 'q' {
		switch v := arg.(type) {
		case error:
			return appendMethod(b, verb, "Error", v.Error)
		case stringer:
			return appendMethod(b, verb, "String", v.String)
		}
	}
	switch v := arg.(type) {
	case string:
		return appendString(b, verb, v)
	case []byte:
		if verb == 's' || verb == 'q' {
			return appendString(b, verb, string(v))
		}
		b = append(b, '[')
		for i, c := range v {
			if i > 0 {
				b = append(b, ' ')
			}
			b = appendArg(b, verb, c)
		}
		return append(b, ']')
	case []string:
		if verb == 'w' {
			break
		}
		b = append(b, '[')
		for i, s := range v {
			if i > 0 {
				b = append(b, ' ')
			}
			b = appendString(b, verb, s)
		}
		return append(b, ']')
	case bool:
		if verb == 'v' {
			return strconv.AppendBool(b, v)
		}
	case float64:
		if verb == 'v' {
			return strconv.AppendFloat(b, v, 'g', -1, 64)
		}
	case float32:
		if verb == 'v' {
			return strconv.AppendFloat(b, float64(v), 'g', -1, 32)
		}
	default:
		if i, ok := signed(arg); ok {
			switch verb {
			case 'v', 'd':
				return strconv.AppendInt(b, i, 10)
			case 'q':
				return appendRune(b, uint64(i), i < 0)
			}
		} else if u, ok := unsigned(arg); ok {
			switch verb {
			case 'v', 'd':
				return strconv.AppendUint(b, u, 10)
			case 'q':
				return appendRune(b, u, false)
			}
		}
	}
	return appendBad(b, verb, arg)
}

// appendMethod appends what method gives, by %v, %s or %q; a method that panics is shown as
// fmt shows it, %!verb(PANIC=Name method: the panic's value).
func appendMethod(b []byte, verb rune, name string, method func() string) (out []byte) {
	defer func() {
		if r := recover(); r != nil {
			out = append(b, "%!"...)
			out = utf8.AppendRune(out, verb)
			out = append(out, "(PANIC="...)
			out = append(out, name...)
			out = append(out, " method: "...)
			out = appendArg(out, 'v', r)
			out = append(out, ')')
		}
	}()
	return appendString(b, verb, method())
}

// appendString appends s by %v, %s or %q.
func appendString(b []byte, verb rune, s string) []byte {
	switch verb {
	case 'v', 's':
		return append(b, s...)
	case 'q':
		return strconv.AppendQuote(b, s)
	}
	return appendBad(b, verb, s)
}

// appendRune is fmt's %q of an integer: a quoted rune, or the replacement character for a
// value that is none.
func appendRune(b []byte, u uint64, negative bool) []byte {
	r := utf8.RuneError
	if !negative && u <= utf8.MaxRune {
		r = rune(u)
	}
	return strconv.AppendQuoteRune(b, r)
}

// appendBad is fmt's %!verb(type=value) for a verb that does not fit the value.
func appendBad(b []byte, verb rune, arg any) []byte {
	b = append(b, '%', '!')
	b = utf8.AppendRune(b, verb)
	b = append(b, '(')
	b = appendTyped(b, arg)
	return append(b, ')')
}

// appendTyped is fmt's type=value of a value it cannot format by the verb asked (<nil> for
// nil), or "unsupported type" for a type this package does not know.
func appendTyped(b []byte, arg any) []byte {
	if arg == nil {
		return append(b, "<nil>"...)
	}
	name := typeName(arg)
	if name == "" {
		return append(b, "unsupported type"...)
	}
	b = append(b, name...)
	b = append(b, '=')
	return appendArg(b, 'v', arg)
}

// typeName is the name fmt's %T gives the types appendArg knows by their kind; "" for others.
func typeName(arg any) string {
	switch arg.(type) {
	case string:
		return "string"
	case []byte:
		return "[]uint8"
	case []string:
		return "[]string"
	case bool:
		return "bool"
	case float64:
		return "float64"
	case float32:
		return "float32"
	case int:
		return "int"
	case int8:
		return "int8"
	case int16:
		return "int16"
	case int32:
		return "int32"
	case int64:
		return "int64"
	case uint:
		return "uint"
	case uint8:
		return "uint8"
	case uint16:
		return "uint16"
	case uint32:
		return "uint32"
	case uint64:
		return "uint64"
	case uintptr:
		return "uintptr"
	}
	return ""
}

func signed(arg any) (int64, bool) {
	switch v := arg.(type) {
	case int:
		return int64(v), true
	case int8:
		return int64(v), true
	case int16:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	}
	return 0, false
}

func unsigned(arg any) (uint64, bool) {
	switch v := arg.(type) {
	case uint:
		return uint64(v), true
	case uint8:
		return uint64(v), true
	case uint16:
		return uint64(v), true
	case uint32:
		return uint64(v), true
	case uint64:
		return v, true
	case uintptr:
		return uint64(v), true
	}
	return 0, false
}

// errorf is fmt.Errorf by sprintf: an error whose Unwrap gives the operand of its one %w, or
// the operands of its %w that are errors, in order, when there are more.
func errorf(format string, args []any) error {
	var wrapped []int
	msg := sprintf(format, args, func(i int) { wrapped = append(wrapped, i) })
	switch len(wrapped) {
	case 0:
		return &plainError{msg}
	case 1:
		err, _ := args[wrapped[0]].(error)
		return &wrapError{msg, err}
	}
	var errs []error
	for _, i := range wrapped {
		if err, ok := args[i].(error); ok {
			errs = append(errs, err)
		}
	}
	return &wrapErrors{msg, errs}
}

type plainError struct{ msg string }

func (e *plainError) Error() string { return e.msg }

type wrapError struct {
	msg string
	err error
}

func (e *wrapError) Error() string { return e.msg }
func (e *wrapError) Unwrap() error { return e.err }

type wrapErrors struct {
	msg  string
	errs []error
}

func (e *wrapErrors) Error() string   { return e.msg }
func (e *wrapErrors) Unwrap() []error { return e.errs }
