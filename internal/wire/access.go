package wire

import (
	"github.com/lifeline-go/lifeline/internal/tinyfmt"
	"strconv"
	"strings"

	"github.com/lifeline-go/lifeline/internal/jsontok"
)

// Access that ends (PROTOCOL.md §13): the Host's application ends every session of an
// identity (a sign-out, a revocation), one identity's subscription to one stream, or a
// session whose credential expired without a renewal.
//
// An ended session is told in the words a page of any version reads: an error frame whose
// message is an AccessEndedReason, then the close CloseAccessEnded with the same reason (cut
// to a close reason's 123 bytes). A page that does not know them ends the session as lost
// and comes back through Authenticate, which decides; a page that knows them shows
// unauthorized with the application's reason, or, asked to reauthenticate, connects again at
// once. An ended subscription is a denied frame (§4.6), which every page knows.
//
// A session whose credential expires is told when, in its ready frame (ExpiresMs, relative),
// with a secret (Secret) that names it in a renewal: a POST of the events endpoint with
// RenewParam whose body is a Renewal, carrying the page's cookies (and, where the page's code
// hands one over, a token), which the Host answers through the same Authenticate.

// CloseAccessEnded closes a session whose access ended: its reason is an AccessEndedReason.
// 4401 is in the range RFC 6455 leaves to applications, and says 401 to a person reading it.
const CloseAccessEnded = 4401

// CodeAccessEnded is a failed reply's code for a call the Host had received but not started
// when the session's access ended: it never ran, and never will on that session.
const CodeAccessEnded = "access-ended"

// accessEndedPrefix opens the message of a session whose access ended.
const accessEndedPrefix = "access-ended"

// reauthWord follows accessEndedPrefix when the page is to connect again at once.
const reauthWord = "reauth"

// AccessEndedReason is the message of a session whose access ended, first as an error
// frame's message, then as the reason of the CloseAccessEnded close: "access-ended: <reason>",
// or "access-ended reauth: <reason>" when the page is to connect again at once (its new
// session goes through Authenticate). reason is the application's sentence for the user.
func AccessEndedReason(reason string, reauth bool) string {
	p := accessEndedPrefix
	if reauth {
		p += " " + reauthWord
	}
	if reason == "" {
		return p
	}
	return p + ": " + reason
}

// ParseAccessEnded reads an AccessEndedReason (an error frame's message, or a 4401 close
// reason). It reports false when s is not one.
func ParseAccessEnded(s string) (reason string, reauth, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), accessEndedPrefix)
	if !ok {
		return "", false, false
	}
	if r, cut := strings.CutPrefix(rest, " "+reauthWord); cut {
		rest, reauth = r, true
	}
	switch {
	case rest == "":
		return "", reauth, true
	case strings.HasPrefix(rest, ": "):
		return strings.TrimSpace(rest[2:]), reauth, true
	}
	return "", false, false // "access-endedness", say
}

// RenewParam is the query parameter of a POST of the events endpoint that renews a session's
// access: its body is a Renewal.
const RenewParam = "lifeline-renew"

// Renewal is the body of a renewal: the session it renews and the secret of its ready frame
// (a page cannot renew another page's session), and a token when the page's code handed one
// over (the Host hands it to Authenticate as "Authorization: Bearer <token>"). The page's
// cookies come with the request itself.
type Renewal struct {
	Session string
	Secret  string
	Token   string
}

// Bounds of a renewal.
const (
	// MaxToken bounds a renewal's token, in bytes: a signed token of a few claims fits.
	MaxToken = 4096
	// MaxRenewal bounds a renewal's body.
	MaxRenewal = MaxToken + 256
)

// RefusalIdentity is a renewal's refusal (409) when Authenticate named another identity than
// the session's: the session ends at its expiry.
const RefusalIdentity = "identity changed"

// RefusalRenewal is a renewal's refusal (400) when its body is no Renewal.
const RefusalRenewal = "bad renewal"

// RefusalAccessEnded is the HTTP carrier's refusal (401) of a send for a session whose access
// ended: its frames were not applied (no call of it runs), and its reason is the
// AccessEndedReason the session's error frame and close say, so that a page whose POST is
// answered before it reads them is told the same.
const RefusalAccessEnded = "access ended"

// Encode returns the renewal's JSON text.
func (r Renewal) Encode() []byte {
	b := str(append(make([]byte, 0, 48+len(r.Session)+len(r.Secret)+len(r.Token)), `{"session":`...), r.Session)
	b = optStr(b, "secret", r.Secret)
	b = optStr(b, "token", r.Token)
	return append(b, '}')
}

// DecodeRenewal decodes and checks a renewal's body: session 1..64 bytes, secret
// 1..MaxSecret, token at most MaxToken bytes with no control character (it goes into a
// header). Unknown members are skipped; duplicates and trailing data are errors.
func DecodeRenewal(b []byte) (Renewal, error) {
	var r Renewal
	if len(b) > MaxRenewal {
		return Renewal{}, tinyfmt.Errorf("%w: a renewal is at most %d bytes, got %d", ErrFrame, MaxRenewal, len(b))
	}
	err := decodeObject(b, func(key string, d *jsontok.Decoder) error {
		switch key {
		case "session":
			return readString(d, key, &r.Session)
		case "secret":
			return readString(d, key, &r.Secret)
		case "token":
			return readString(d, key, &r.Token)
		}
		return frameErr(d.SkipValue())
	}, nil)
	if err != nil {
		return Renewal{}, tinyfmt.Errorf("%w (in a renewal)", err)
	}
	switch {
	case r.Session == "" || len(r.Session) > 64:
		return Renewal{}, tinyfmt.Errorf("%w: renewal session must be 1..64 bytes, got %d", ErrFrame, len(r.Session))
	case r.Secret == "" || len(r.Secret) > MaxSecret:
		return Renewal{}, tinyfmt.Errorf("%w: renewal secret must be 1..%d bytes, got %d", ErrFrame, MaxSecret, len(r.Secret))
	case len(r.Token) > MaxToken:
		return Renewal{}, tinyfmt.Errorf("%w: renewal token must be at most %d bytes, got %d", ErrFrame, MaxToken, len(r.Token))
	}
	for i := 0; i < len(r.Token); i++ {
		if c := r.Token[i]; c < 0x20 || c == 0x7f {
			return Renewal{}, tinyfmt.Errorf("%w: renewal token has a control character at byte %d", ErrFrame, i)
		}
	}
	return r, nil
}

// Renewed is the answer (200) to a renewal the Host took: ExpiresMs is how long from now the
// credential holds, 0 when it no longer expires.
type Renewed struct {
	ExpiresMs int64
}

// Encode returns the answer's JSON text.
func (r Renewed) Encode() []byte {
	return append(strconv.AppendInt([]byte(`{"expiresMs":`), r.ExpiresMs, 10), '}')
}

// DecodeRenewed decodes a renewal's answer.
func DecodeRenewed(b []byte) (Renewed, error) {
	var r Renewed
	err := decodeObject(b, func(key string, d *jsontok.Decoder) error {
		if key == "expiresMs" {
			return readInt(d, key, &r.ExpiresMs)
		}
		return frameErr(d.SkipValue())
	}, nil)
	if err != nil {
		return Renewed{}, tinyfmt.Errorf("%w (in a renewal's answer)", err)
	}
	if r.ExpiresMs < 0 {
		return Renewed{}, tinyfmt.Errorf("%w: expiresMs must be at least 0, got %d", ErrFrame, r.ExpiresMs)
	}
	return r, nil
}
