package weburl_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/lifeline-go/lifeline/internal/weburl"
)

// bracketed says whether raw has an IP literal in brackets, which the package checks for its
// characters only (its documentation): net/url may refuse one it takes, or say why otherwise.
func bracketed(raw string) bool { return strings.Contains(raw, "[") }

// sameParse holds Parse to net/url's Parse on raw: both take it and print it alike, or both
// refuse it with the same message.
func sameParse(t *testing.T, raw string) {
	t.Helper()
	want, wantErr := url.Parse(raw)
	got, err := weburl.Parse(raw)
	switch {
	case bracketed(raw) && (err != nil || wantErr != nil):
	case (err == nil) != (wantErr == nil):
		t.Errorf("Parse(%q) error = %v, net/url's %v", raw, err, wantErr)
	case err != nil && err.Error() != wantErr.Error():
		t.Errorf("Parse(%q) error = %q, net/url's %q", raw, err, wantErr)
	case err == nil && got.String() != want.String():
		t.Errorf("Parse(%q).String() = %q, net/url's %q", raw, got, want)
	case err == nil && (got.Scheme != want.Scheme || got.RawQuery != want.RawQuery):
		t.Errorf("Parse(%q) = %+v, net/url's %+v", raw, got, want)
	}
}

// sameResolution holds ResolveReference to net/url's, for a base and a reference both parse.
func sameResolution(t *testing.T, base, ref string) {
	t.Helper()
	wb, err1 := url.Parse(base)
	wr, err2 := url.Parse(ref)
	gb, err3 := weburl.Parse(base)
	gr, err4 := weburl.Parse(ref)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || !wb.IsAbs() {
		return
	}
	if got, want := gb.ResolveReference(gr).String(), wb.ResolveReference(wr).String(); got != want {
		t.Errorf("Parse(%q).ResolveReference(%q) = %q, net/url's %q", base, ref, got, want)
	}
}

var references = []string{
	"", "*", "%2A", "ws://h/_lifeline/events", "WSS://H.example:443/e?x=1#f", "http://h:1/_lifeline/events",
	"https://u:p@h/e", "ws://u@h", "ws://@h/", "ws://h", "ws://h/", "ws:/x", "ws:x/y", "ws:", "ws://",
	"ws:///x", "///x", "//h:9/e", "/_lifeline/events", "e", "./e", "../../b/e", "a/./b/../c", "..", ".",
	"/a/b/..", "/a/b/.", "?q", "?", "#f", "#", "x#", "/a b", "/a%20b", "/a%41 b", "/é", "/%zz", "/%2", "%",
	"/a?b?c", "/a?", "ws://h/%zz", "ws://h/e#%zz", "ws://h/e#a b", "ws://h/e#%41", "a:b/c", "1a:b",
	":x", "ws://h:x/", "ws://h:/", "http://h:1:2/", "ws://h:1:2/", "ws://[::1]:80/e", "ws://[::1%25en0]/",
	"ws://[fe80::1%25%65n0]/", "ws://[1.2.3.4]/", "ws://a[b]/", "ws://[::1/", "ws://h%41/", "ws://h%c3%a9/",
	"ws://h é/", "ws://h<>/", "ws://u%20v:p%40q@h/", "ws://u v@h/", "ws://a@b@h/", "ws://h\x7f/", "ws://h/\n",
	"mailto:a@b", "ws://h/a/./b/../../c/..", "ws://h/a/b/c/../../../../d", "http://h/e?a=1&b=%zz",
	"ws://h/'!()*", "ws://h/e#'!()*", "ws://h/e#%27",
}

func TestParseIsNetURLs(t *testing.T) {
	for _, raw := range references {
		sameParse(t, raw)
	}
}

func TestResolveReferenceIsNetURLs(t *testing.T) {
	bases := []string{"ws://a.test:8080/s/1/a/_lifeline/events?x=1", "http://h/", "http://h", "https://u@h/a/b#f", "ws:x/y", "ws:/x/y"}
	for _, base := range bases {
		for _, ref := range references {
			sameResolution(t, base, ref)
		}
	}
}

func TestQueryEscapeIsNetURLs(t *testing.T) {
	for _, s := range []string{"", "shared", "in-page", "a b&c=d/é?", "~-._*"} {
		if got, want := weburl.QueryEscape(s), url.QueryEscape(s); got != want {
			t.Errorf("QueryEscape(%q) = %q, net/url's %q", s, got, want)
		}
	}
}

func TestAnIPLiteralIsCheckedForItsCharacters(t *testing.T) {
	for _, tt := range []struct{ raw, err string }{
		{"ws://[::1]/", ""},
		{"ws://[::ffff:1.2.3.4]:8/", ""},
		{"ws://[fe80::1%25en0]/", ""},
		{"ws://[1.2.3.4]/", "invalid IP-literal"},
		{"ws://[::g]/", "unexpected character"},
		{"ws://[::1/", "missing ']' in host"},
		{"ws://[::1]x/", `invalid port "x" after host`},
	} {
		_, err := weburl.Parse(tt.raw)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("Parse(%q) error = %v, want %q", tt.raw, err, tt.err)
		}
	}
}

func FuzzParseIsNetURLs(f *testing.F) {
	for _, raw := range references {
		f.Add(raw)
	}
	f.Fuzz(sameParse)
}

func FuzzResolveReferenceIsNetURLs(f *testing.F) {
	for _, raw := range references {
		f.Add("ws://a.test:8080/s/1/a/_lifeline/events?x=1", raw)
	}
	f.Fuzz(sameResolution)
}
