package wire

import (
	"strconv"

	"github.com/lifeline-go/lifeline/internal/jsontok"
	"github.com/lifeline-go/lifeline/internal/tinyfmt"
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
	// Carriers, in a 426 (the Host would take a socket), names the HTTP carriers the Host
	// also has (CarrierStream, CarrierPoll): a page whose WebSocket does not get through
	// falls back to them only if the Host has them.
	Carriers []string `json:"carriers,omitempty"`
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
	RefusalNotReady        = "not ready"          // 503: a refusal query while the Host's readiness gate is closed

	// The HTTP carrier's (http.go).
	RefusalSession  = "no such session" // 404: a POST for a session this Host does not have (ended, or never was), or without its secret
	RefusalSequence = "out of sequence" // 409: a send after a lost one, or a poll's ack outside the frames sent
	RefusalEnvelope = "bad envelope"    // 400: a POST whose first line is no envelope
	RefusalTooBig   = "too big"         // 413: a POST over maxFrameBytes of frames
	RefusalCarrier  = "unknown carrier" // 400: a GET naming no carrier the Host has, or a poll of a stream
	RefusalClosed   = "host closed"     // 503: the Host was closed while the page waited
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
	if len(r.Carriers) > 0 {
		b = append(b, `,"carriers":[`...)
		for i, c := range r.Carriers {
			if i > 0 {
				b = append(b, ',')
			}
			b = str(b, c)
		}
		b = append(b, ']')
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
		case "carriers":
			return readStrings(d, key, 8, &r.Carriers)
		}
		return frameErr(d.SkipValue())
	}, nil)
	if err != nil {
		return Refusal{}, tinyfmt.Errorf("%w (in a refusal's body)", err)
	}
	return r, nil
}

// readStrings reads an array of at most max strings.
func readStrings(d *jsontok.Decoder, key string, max int, dst *[]string) error {
	if d.PeekKind() != '[' {
		return wrongKind(d, key, "an array of strings")
	}
	if _, err := d.ReadToken(); err != nil {
		return frameErr(err)
	}
	var out []string
	for d.PeekKind() != ']' {
		if d.PeekKind() != '"' {
			if d.PeekKind() == 0 {
				_, err := d.ReadToken()
				return frameErr(err)
			}
			return wrongKind(d, "each of "+key, "a string")
		}
		if len(out) == max {
			return tinyfmt.Errorf("%w: %s holds at most %d strings", ErrFrame, key, max)
		}
		tok, err := d.ReadToken()
		if err != nil {
			return frameErr(err)
		}
		out = append(out, tok.String())
	}
	if _, err := d.ReadToken(); err != nil {
		return frameErr(err)
	}
	*dst = out
	return nil
}
