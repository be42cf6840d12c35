package wire

import (
	"fmt"
	"strconv"

	"github.com/lifeline-go/lifeline/internal/jsontok"
)

// Refusal is the JSON body of the events endpoint's HTTP answers that are no upgrade: a
// handshake refused before the upgrade (401, 403, 429, 500), and every answer to the refusal
// query, the plain GET (no upgrade headers, with the page's cookies) by which a browser page
// learns the status that the WebSocket API hides from it (PROTOCOL.md §2.4):
//
//	{"error":"unauthorized","reason":"sign in first"}
type Refusal struct {
	// Error says what the answer is: one of the Refusal* constants.
	Error string `json:"error"`
	// Reason is the application's own words, for the user; may be empty.
	Reason string `json:"reason,omitempty"`
	// RetryAfterMs is how long the page should wait before it opens another socket (429): in
	// the body because a browser keeps a cross-origin answer's Retry-After header from the
	// page. 0 for none.
	RetryAfterMs int64 `json:"retryAfterMs,omitempty"`
}

// What a Refusal's Error says, and the HTTP status that goes with it.
const (
	RefusalUnauthorized    = "unauthorized"       // 401: the Host's app wants a credential
	RefusalForbidden       = "forbidden"          // 403: the Host's app refused the credential
	RefusalInternal        = "internal error"     // 500: the Host failed deciding
	RefusalRate            = "too many sockets"   // 429: over the per-address rate (RetryAfterMs)
	RefusalUpgradeRequired = "upgrade required"   // 426: a refusal query that nothing refused
	RefusalOrigin          = "origin not allowed" // 403: a refusal query from an origin not allowed
	RefusalMethod          = "method not allowed" // 405: a refusal query that is neither GET nor HEAD
)

// MaxRefusalBody is as much of a refusal's body as a page reads.
const MaxRefusalBody = 1024

// Encode returns the refusal's JSON text. Invalid UTF-8 becomes U+FFFD.
func (r Refusal) Encode() []byte {
	b := str(append(make([]byte, 0, 48+len(r.Error)+len(r.Reason)), `{"error":`...), r.Error)
	b = optStr(b, "reason", r.Reason)
	if r.RetryAfterMs > 0 {
		b = strconv.AppendInt(append(b, `,"retryAfterMs":`...), r.RetryAfterMs, 10)
	}
	return append(b, '}')
}

// DecodeRefusal decodes a refusal's body. Members other than error and reason are ignored
// (a later Host may say more); duplicates, other types and trailing data are errors
// wrapping ErrFrame.
func DecodeRefusal(b []byte) (Refusal, error) {
	var r Refusal
	err := decodeObject(b, func(key string, d *jsontok.Decoder) error {
		switch key {
		case "error":
			return readString(d, key, &r.Error)
		case "reason":
			return readString(d, key, &r.Reason)
		case "retryAfterMs":
			return readInt(d, key, &r.RetryAfterMs)
		}
		return frameErr(d.SkipValue())
	}, nil)
	if err != nil {
		return Refusal{}, fmt.Errorf("%w (in a refusal's body)", err)
	}
	return r, nil
}
