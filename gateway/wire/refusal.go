package wire

import (
	"fmt"

	"github.com/lifeline-go/lifeline/internal/jsontok"
)

// Refusal is the JSON body of the events endpoint's HTTP answers that are no upgrade: a
// handshake refused before the upgrade (401, 403, 500), and every answer to the probe, the
// plain GET (no upgrade headers, with the page's cookies) by which a browser page learns the
// status that the WebSocket API hides from it:
//
//	{"error":"unauthorized","reason":"sign in first"}
type Refusal struct {
	// Error says what the answer is: one of the Refusal* constants.
	Error string `json:"error"`
	// Reason is the application's own words, for the user; may be empty.
	Reason string `json:"reason,omitempty"`
}

// What a Refusal's Error says, and the HTTP status that goes with it.
const (
	RefusalUnauthorized    = "unauthorized"       // 401: the Host's app wants a credential
	RefusalForbidden       = "forbidden"          // 403: the Host's app refused the credential
	RefusalInternal        = "internal error"     // 500: the Host failed deciding
	RefusalUpgradeRequired = "upgrade required"   // 426: a probe that nothing refused
	RefusalOrigin          = "origin not allowed" // 403: a probe from an origin not allowed
	RefusalMethod          = "method not allowed" // 405: a probe that is neither GET nor HEAD
)

// MaxRefusalBody is as much of a refusal's body as a page reads.
const MaxRefusalBody = 1024

// Encode returns the refusal's JSON text. Invalid UTF-8 becomes U+FFFD.
func (r Refusal) Encode() []byte {
	b := str(append(make([]byte, 0, 32+len(r.Error)+len(r.Reason)), `{"error":`...), r.Error)
	return append(optStr(b, "reason", r.Reason), '}')
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
		}
		return frameErr(d.SkipValue())
	})
	if err != nil {
		return Refusal{}, fmt.Errorf("%w (in a refusal's body)", err)
	}
	return r, nil
}
