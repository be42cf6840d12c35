//go:build !js

package hostplugin

import (
	"errors"
	"math"
	"net/url"
	"path"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/go-playground/validator/v10"

	"github.com/lifeline-go/lifeline/internal/strictjson"
)

// validate is built once: validator caches struct metadata per instance, and registering tags
// is not safe concurrently with validation.
var validate = sync.OnceValue(func() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	// Errors must name fields as the file spells them, not as Go does.
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			return ""
		}
		return name
	})
	must := func(err error) {
		if err != nil {
			panic("hostplugin: registering a validation: " + err.Error())
		}
	}
	must(v.RegisterValidation("intrange", isIntInRange))
	must(v.RegisterValidation("urlpath", func(fl validator.FieldLevel) bool { return isURLPath(fl.Field().String()) }))
	must(v.RegisterValidation("origin", func(fl validator.FieldLevel) bool { return isOriginPattern(fl.Field().String()) }))
	must(v.RegisterValidation("trustedproxy", func(fl validator.FieldLevel) bool {
		_, rule := parseTrustedProxy(fl.Field().String())
		return rule == ""
	}))
	return v
})

// validateStruct runs the validator over f and turns its errors into [FieldError]s with
// sentences a person can act on.
func validateStruct(f ConfigFile) []FieldError {
	err := validate().Struct(f)
	if err == nil {
		return nil
	}
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) {
		return []FieldError{{Rule: "cannot be validated: " + err.Error()}}
	}
	out := make([]FieldError, 0, len(verrs))
	for _, fe := range verrs {
		out = append(out, translate(fe))
	}
	return out
}

func translate(fe validator.FieldError) FieldError {
	// Namespace is "ConfigFile.allowedOrigins[1]": the root is the Go type's name.
	_, p, _ := strings.Cut(fe.Namespace(), ".")
	e := FieldError{Path: p, Value: formatValue(fe.Value())}
	switch fe.Tag() {
	case "intrange":
		e.Rule = "must be an integer in " + fe.Param()
	case "urlpath":
		e.Rule = `must be a URL path starting with "/", without spaces, control characters, "?" or "#"`
	case "origin":
		e.Rule = `must be an origin like "https://app.example.com" or a host pattern like "*.example.com"`
	case "trustedproxy":
		s, _ := fe.Value().(string)
		_, e.Rule = parseTrustedProxy(s)
	case "max":
		e.Rule = "must list at most " + fe.Param() + " entries"
		e.Value = strconv.Itoa(reflect.ValueOf(fe.Value()).Len()) + " entries"
	case "unique":
		e.Rule = "must not list an entry twice"
		e.Value = duplicateOf(fe.Value())
	default:
		e.Rule = "must satisfy " + fe.Tag() + "=" + fe.Param()
	}
	return e
}

func formatValue(v any) string {
	switch v := v.(type) {
	case float64:
		return strictjson.FormatNumber(v)
	case *float64:
		if v != nil {
			return strictjson.FormatNumber(*v)
		}
	case string:
		return quote(v)
	case *string:
		if v != nil {
			return quote(*v)
		}
	}
	return ""
}

func duplicateOf(v any) string {
	list, _ := v.([]string)
	seen := map[string]bool{}
	for _, s := range list {
		if seen[s] {
			return quote(s) + " twice"
		}
		seen[s] = true
	}
	return ""
}

// isIntInRange implements the "intrange=lo..hi" tag: an integral float64 within [lo, hi].
// NaN and ±Inf fail explicitly: NaN fails every comparison, so a range check alone would pass it.
func isIntInRange(fl validator.FieldLevel) bool {
	lo, hi, ok := parseRange(fl.Param())
	if !ok || fl.Field().Kind() != reflect.Float64 {
		return false
	}
	v := fl.Field().Float()
	return !math.IsNaN(v) && !math.IsInf(v, 0) && v == math.Trunc(v) && v >= lo && v <= hi
}

func parseRange(p string) (lo, hi float64, ok bool) {
	a, b, ok := strings.Cut(p, "..")
	if !ok {
		return 0, 0, false
	}
	lo, err1 := strconv.ParseFloat(a, 64)
	hi, err2 := strconv.ParseFloat(b, 64)
	return lo, hi, err1 == nil && err2 == nil
}

// isURLPath accepts what a page can put after its origin to reach the endpoint. It is
// deliberately permissive about characters such as "<": the bootstrap escapes them, and a
// stricter rule here would hide a missing escape instead of proving it works.
func isURLPath(s string) bool {
	if !strings.HasPrefix(s, "/") || len(s) > 1024 || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r == '?' || r == '#' || unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// isOriginPattern accepts "scheme://host[:port]" (http or https, host may hold path.Match
// wildcards) or a bare host pattern "host[:port]".
func isOriginPattern(s string) bool {
	host := s
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		if scheme != "http" && scheme != "https" {
			return false
		}
		host = rest
	}
	// 253 is the longest DNS name; the rest leaves room for a port.
	if host == "" || len(host) > 253+6 || strings.ContainsAny(host, "/?#@\\") {
		return false
	}
	for _, r := range host {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	// path.Match reports a malformed pattern only while matching.
	_, err := path.Match(strings.ToLower(host), "")
	return err == nil
}

// originAllowed reports whether the page origin (the Origin header) may open a session on a
// Host reached as requestHost. Same-origin is always allowed; it compares host and port, like
// coder/websocket does, because the scheme a proxy terminated is not visible here.
func originAllowed(origin, requestHost string, patterns []string) bool {
	if origin == "" {
		// Browsers always send Origin on WebSocket handshakes; a client without one is not
		// a page that another site could abuse.
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, requestHost) {
		return true
	}
	host := strings.ToLower(u.Host)
	full := strings.ToLower(u.Scheme) + "://" + host
	for _, p := range patterns {
		target := host
		if strings.Contains(p, "://") {
			target = full
		}
		if ok, _ := path.Match(strings.ToLower(p), target); ok {
			return true
		}
	}
	return false
}
