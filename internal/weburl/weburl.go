// Package weburl parses, resolves and prints URL references as net/url does, for the URLs the
// page's wasm handles: the events endpoint, the page's own URL and a GOAWAY's uri. net/url
// brings net/netip and unique with it, about 15 KB of the brotli-compressed wasm; this is a
// few hundred lines, held to net/url's output by its tests (natively, against net/url).
//
// A URL keeps every part in its escaped form, as String prints it: a part written in a valid
// escaping stays as written, one that is not is escaped as net/url escapes it ("/a b" becomes
// "/a%20b"). What it parses, resolves and prints is what net/url does, with one exception: an
// IP literal in brackets is checked for its characters (hex digits, colons, dots, a %25 zone),
// not parsed as an IPv6 address (net/url refuses "[1.2.3.4]" and "[1::2::3]"; the browser
// refuses them when it dials).
package weburl

import (
	"errors"
	"strconv"
	"strings"
)

// URL is a URL reference: [scheme:][//[user@]host][path][?query][#fragment], or
// scheme:opaque[?query][#fragment]. Every field but Scheme is in its escaped form.
type URL struct {
	Scheme string // lower case; "" for a reference without one
	Opaque string // what follows "scheme:" when it is not a "/"
	User   string // userinfo, without its "@"
	// HasUser says whether there was a userinfo (an "@" before the host), even an empty one.
	HasUser  bool
	Host     string // host or host:port
	Path     string
	RawQuery string
	// ForceQuery says whether the reference ended in a "?" with no query after it.
	ForceQuery bool
	Fragment   string
	// OmitHost says whether an absolute URL had no "//" before its path ("file:/x").
	OmitHost bool
}

// Error is a reference that could not be parsed, as net/url's *url.Error says it: `parse
// "ws://h/%zz": invalid URL escape "%zz"`.
type Error struct {
	URL string
	Err error
}

func (e *Error) Error() string { return "parse " + strconv.Quote(e.URL) + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Parse parses a URL reference, absolute or relative.
func Parse(raw string) (*URL, error) {
	rest, frag, hasFrag := strings.Cut(raw, "#")
	u, err := parse(rest)
	if err != nil {
		return nil, &Error{rest, err}
	}
	if hasFrag {
		if u.Fragment, err = canonical(frag, encodeFragment); err != nil {
			return nil, &Error{raw, err}
		}
	}
	return u, nil
}

func parse(raw string) (*URL, error) {
	for i := 0; i < len(raw); i++ {
		if raw[i] < ' ' || raw[i] == 0x7f {
			return nil, errors.New("net/url: invalid control character in URL")
		}
	}
	u := new(URL)
	if raw == "*" {
		u.Path = "*"
		return u, nil
	}
	scheme, rest, err := splitScheme(raw)
	if err != nil {
		return nil, err
	}
	u.Scheme = strings.ToLower(scheme)
	if strings.HasSuffix(rest, "?") && strings.Count(rest, "?") == 1 {
		u.ForceQuery = true
		rest = rest[:len(rest)-1]
	} else {
		rest, u.RawQuery, _ = strings.Cut(rest, "?")
	}
	if !strings.HasPrefix(rest, "/") {
		if u.Scheme != "" {
			u.Opaque = rest // a rootless path (RFC 3986): opaque
			return u, nil
		}
		// A relative path's first segment cannot hold a colon: it would read as a scheme.
		if first, _, _ := strings.Cut(rest, "/"); strings.Contains(first, ":") {
			return nil, errors.New("first path segment in URL cannot contain colon")
		}
	}
	if (u.Scheme != "" || !strings.HasPrefix(rest, "///")) && strings.HasPrefix(rest, "//") {
		authority := rest[2:]
		rest = ""
		if i := strings.IndexByte(authority, '/'); i >= 0 {
			authority, rest = authority[:i], authority[i:]
		}
		if err := u.parseAuthority(authority); err != nil {
			return nil, err
		}
	} else if u.Scheme != "" && strings.HasPrefix(rest, "/") {
		u.OmitHost = true
	}
	if u.Path, err = canonical(rest, encodePath); err != nil {
		return nil, err
	}
	return u, nil
}

// splitScheme cuts a leading "scheme:" off raw; a reference that does not begin with one has
// none (a colon after a character no scheme has belongs to the path).
func splitScheme(raw string) (scheme, rest string, err error) {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.':
			if i == 0 {
				return "", raw, nil
			}
		case c == ':':
			if i == 0 {
				return "", "", errors.New("missing protocol scheme")
			}
			return raw[:i], raw[i+1:], nil
		default:
			return "", raw, nil
		}
	}
	return "", raw, nil
}

func (u *URL) parseAuthority(authority string) error {
	at := strings.LastIndexByte(authority, '@')
	host, err := parseHost(u.Scheme, authority[at+1:])
	if err != nil {
		return err
	}
	u.Host = host
	if at < 0 {
		return nil
	}
	info := authority[:at]
	for _, c := range []byte(info) {
		if !userinfoByte(c) {
			return errors.New("net/url: invalid userinfo")
		}
	}
	name, password, hasPassword := strings.Cut(info, ":")
	if u.User, err = canonical(name, encodeUserPassword); err != nil {
		return err
	}
	if hasPassword {
		if password, err = canonical(password, encodeUserPassword); err != nil {
			return err
		}
		u.User += ":" + password
	}
	u.HasUser = true
	return nil
}

// userinfoByte says whether c may stand in a userinfo: RFC 3986's unreserved, sub-delims, ":"
// and pct-encoded, and "@" (a password may hold one: the last "@" ends the userinfo).
func userinfoByte(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		strings.IndexByte("-._:~!$&'()*+,;=%@", c) >= 0
}

// parseHost checks host[:port] and returns it escaped.
func parseHost(scheme, host string) (string, error) {
	if open := strings.LastIndexByte(host, '['); open > 0 {
		return "", errors.New("invalid IP-literal")
	} else if open == 0 {
		end := strings.LastIndexByte(host, ']')
		if end < 0 {
			return "", errors.New("missing ']' in host")
		}
		port := host[end+1:]
		if !validPort(port) {
			return "", errors.New("invalid port " + strconv.Quote(port) + " after host")
		}
		literal, zone := host[1:end], ""
		if i := strings.Index(literal, "%25"); i >= 0 {
			literal, zone = literal[:i], literal[i:]
		}
		if err := checkIPLiteral(literal); err != nil {
			return "", err
		}
		zone, err := unescape(zone, encodeZone)
		if err != nil {
			return "", err
		}
		return escape("["+literal+zone+"]"+port, encodeHost), nil
	} else if i := strings.IndexByte(host, ':'); i >= 0 {
		// RFC 3986 allows no colon in a host name; net/url holds http and https to that, and
		// takes the last colon as the port's for other schemes (a list of hosts).
		if last := strings.LastIndexByte(host, ':'); last != i && scheme != "http" && scheme != "https" {
			i = last
		}
		if port := host[i:]; !validPort(port) {
			return "", errors.New("invalid port " + strconv.Quote(port) + " after host")
		}
	}
	name, err := unescape(host, encodeHost)
	if err != nil {
		return "", err
	}
	return escape(name, encodeHost), nil
}

// checkIPLiteral checks the characters of an IP literal (without its brackets and zone).
func checkIPLiteral(s string) error {
	colon := false
	for _, c := range []byte(s) {
		switch {
		case c == ':':
			colon = true
		case c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F':
		default:
			return errors.New("invalid host: ParseAddr(" + strconv.Quote(s) + "): unexpected character")
		}
	}
	if !colon {
		return errors.New("invalid IP-literal")
	}
	return nil
}

// validPort says whether port is "" or a colon and digits.
func validPort(port string) bool {
	if port == "" {
		return true
	}
	if port[0] != ':' {
		return false
	}
	for _, c := range []byte(port[1:]) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// String is the URL, as net/url's URL.String prints it.
func (u *URL) String() string {
	var b strings.Builder
	if u.Scheme != "" {
		b.WriteString(u.Scheme)
		b.WriteByte(':')
	}
	if u.Opaque != "" {
		b.WriteString(u.Opaque)
	} else {
		if (u.Scheme != "" || u.Host != "" || u.HasUser) && !(u.OmitHost && u.Host == "" && !u.HasUser) {
			if u.Host != "" || u.Path != "" || u.HasUser {
				b.WriteString("//")
			}
			if u.HasUser {
				b.WriteString(u.User)
				b.WriteByte('@')
			}
			b.WriteString(u.Host)
		}
		if u.Path != "" && u.Path[0] != '/' && u.Host != "" {
			b.WriteByte('/')
		}
		if b.Len() == 0 {
			// A first segment with a colon would read as a scheme (RFC 3986 §4.2).
			if first, _, _ := strings.Cut(u.Path, "/"); strings.Contains(first, ":") {
				b.WriteString("./")
			}
		}
		b.WriteString(u.Path)
	}
	if u.ForceQuery || u.RawQuery != "" {
		b.WriteByte('?')
		b.WriteString(u.RawQuery)
	}
	if u.Fragment != "" {
		b.WriteByte('#')
		b.WriteString(u.Fragment)
	}
	return b.String()
}

// ResolveReference resolves ref against u, an absolute URL, by RFC 3986 §5.2, as net/url's
// URL.ResolveReference does. It returns a new URL.
func (u *URL) ResolveReference(ref *URL) *URL {
	r := *ref
	if ref.Scheme == "" {
		r.Scheme = u.Scheme
	}
	if ref.Scheme != "" || ref.Host != "" || ref.HasUser {
		r.Path = resolvePath(ref.Path, "")
		return &r
	}
	if ref.Opaque != "" {
		r.User, r.HasUser, r.Host, r.Path = "", false, "", ""
		return &r
	}
	if ref.Path == "" && !ref.ForceQuery && ref.RawQuery == "" {
		r.RawQuery = u.RawQuery
		if ref.Fragment == "" {
			r.Fragment = u.Fragment
		}
	}
	if ref.Path == "" && u.Opaque != "" {
		r.Opaque = u.Opaque
		r.User, r.HasUser, r.Host, r.Path = "", false, "", ""
		return &r
	}
	r.Host, r.User, r.HasUser = u.Host, u.User, u.HasUser
	r.Path = resolvePath(u.Path, ref.Path)
	return &r
}

// resolvePath merges ref onto base (escaped paths) and removes the dot segments, as net/url
// does: the result begins with "/" unless it is empty, and a trailing "." or ".." leaves a
// trailing "/".
func resolvePath(base, ref string) string {
	full := ref
	switch {
	case ref == "":
		full = base
	case ref[0] != '/':
		full = base[:strings.LastIndexByte(base, '/')+1] + ref
	}
	if full == "" {
		return ""
	}
	out := []byte{'/'}
	first := true // nothing written after the leading "/"
	var seg string
	for rest, more := full, true; more; {
		seg, rest, more = strings.Cut(rest, "/")
		switch seg {
		case ".":
			first = false
		case "..":
			if i := strings.LastIndexByte(string(out[1:]), '/'); i >= 0 {
				out = out[:i+1]
			} else {
				out = out[:1]
			}
			first = len(out) == 1
		default:
			if !first {
				out = append(out, '/')
			}
			out = append(out, seg...)
			first = false
		}
	}
	if seg == "." || seg == ".." {
		out = append(out, '/')
	}
	if len(out) > 1 && out[1] == '/' {
		out = out[1:]
	}
	return string(out)
}

// QueryEscape escapes s for a query's name or value, as net/url's QueryEscape.
func QueryEscape(s string) string { return escape(s, encodeQueryComponent) }

// encoding is a part of a URL, which decides what is escaped in it.
type encoding int

const (
	encodePath encoding = iota
	encodeHost
	encodeZone
	encodeUserPassword
	encodeQueryComponent
	encodeFragment
)

// shouldEscape says whether net/url escapes c in a part of the URL.
func shouldEscape(c byte, mode encoding) bool {
	if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
		return false
	}
	if mode == encodeHost || mode == encodeZone {
		// A host's sub-delims, ":" before a port, the brackets of an IP literal, and < > "
		// (which a host cannot %-escape, being ASCII).
		if strings.IndexByte(`!$&'()*+,;=:[]<>"`, c) >= 0 {
			return false
		}
	}
	switch c {
	case '-', '_', '.', '~':
		return false
	case '$', '&', '+', ',', '/', ':', ';', '=', '?', '@':
		switch mode {
		case encodePath:
			return c == '?'
		case encodeUserPassword:
			return c == '@' || c == '/' || c == '?' || c == ':'
		case encodeQueryComponent:
			return true
		case encodeFragment:
			return false
		}
	}
	if mode == encodeFragment && strings.IndexByte("!()*", c) >= 0 {
		return false
	}
	return true
}

// canonical is the escaped form net/url prints of a path, fragment or userinfo part written
// as s: s itself when it is a valid escaping, else s unescaped and escaped again.
func canonical(s string, mode encoding) (string, error) {
	plain, err := unescape(s, mode)
	if err != nil {
		return "", err
	}
	escaped := escape(plain, mode)
	if escaped != s && validEncoded(s, mode) && (mode == encodePath || mode == encodeFragment) {
		return s, nil
	}
	if mode == encodePath && plain == "*" {
		return "*", nil // net/url does not escape a path of "*" (an OPTIONS request's)
	}
	return escaped, nil
}

// validEncoded says whether s needs no escaping as a path or fragment (RFC 3986's pchar, and
// the brackets browsers leave alone).
func validEncoded(s string, mode encoding) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte("!$&'()*+,;=:@[]%", s[i]) < 0 && shouldEscape(s[i], mode) {
			return false
		}
	}
	return true
}

// errEscape is net/url's EscapeError.
func errEscape(s string) error { return errors.New("invalid URL escape " + strconv.Quote(s)) }

// unescape decodes s's %XX escapes, checking them as net/url does for the part mode: a host
// may escape only non-ASCII bytes (and "%25"), and holds only the bytes it needs no escaping
// for.
func unescape(s string, mode encoding) (string, error) {
	n := 0
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '%':
			n++
			if i+2 >= len(s) || !ishex(s[i+1]) || !ishex(s[i+2]) {
				return "", errEscape(s[i:min(i+3, len(s))])
			}
			if mode == encodeHost && unhex(s[i+1]) < 8 && s[i:i+3] != "%25" {
				return "", errEscape(s[i : i+3])
			}
			if mode == encodeZone {
				if v := unhex(s[i+1])<<4 | unhex(s[i+2]); s[i:i+3] != "%25" && v != ' ' && shouldEscape(v, encodeHost) {
					return "", errEscape(s[i : i+3])
				}
			}
			i += 3
		case (mode == encodeHost || mode == encodeZone) && c < 0x80 && shouldEscape(c, mode):
			return "", errors.New("invalid character " + strconv.Quote(s[i:i+1]) + " in host name")
		default:
			i++
		}
	}
	if n == 0 {
		return s, nil
	}
	b := make([]byte, 0, len(s)-2*n)
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		} else {
			b = append(b, s[i])
		}
	}
	return string(b), nil
}

// escape %-escapes the bytes of s that mode escapes (a space in a query component becomes
// "+").
func escape(s string, mode encoding) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !shouldEscape(c, mode) {
			if b != nil {
				b = append(b, c)
			}
			continue
		}
		if b == nil {
			b = append(make([]byte, 0, len(s)+8), s[:i]...)
		}
		if c == ' ' && mode == encodeQueryComponent {
			b = append(b, '+')
		} else {
			b = append(b, '%', upperhex[c>>4], upperhex[c&15])
		}
	}
	if b == nil {
		return s
	}
	return string(b)
}

const upperhex = "0123456789ABCDEF"

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}
