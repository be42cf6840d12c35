// Package wire is the Lifeline events protocol, version 1: frame types, their encoding and
// decoding, and the close codes. The gateway (page side) and the Host plugin both import it, so
// the two sides cannot drift apart. It depends on the standard library only.
//
// Frames are JSON text messages whose field "t" names the type. Host → page: ready, hb, event,
// reset, goaway, error. Page → Host: sub, unsub.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Subprotocol is the WebSocket subprotocol both sides must agree on.
const Subprotocol = "lifeline.v1"

// DefaultPath is where the Host serves the events endpoint unless configured otherwise.
const DefaultPath = "/_lifeline/events"

// Frame types.
const (
	TypeReady     = "ready"
	TypeHeartbeat = "hb"
	TypeEvent     = "event"
	TypeReset     = "reset"
	TypeGoAway    = "goaway"
	TypeError     = "error"
	TypeSub       = "sub"
	TypeUnsub     = "unsub"
)

// Close codes of the protocol (RFC 6455 numbers).
const (
	CloseDrained    = 1001 // the Host is draining and this session is over
	CloseOrigin     = 1008 // the page's origin is not allowed
	CloseTooBig     = 1009 // a frame exceeded the read limit
	CloseOverloaded = 1013 // try again later; the reason carries retry-after=<ms>
)

// Limits shared by both sides.
const (
	// MaxStreamName is the longest stream name either side accepts.
	MaxStreamName = 256
	// MinHeartbeat and MaxHeartbeat bound the heartbeat a ready frame may announce: below the
	// minimum a page would declare healthy links dead; above the maximum it would keep dead
	// links for hours.
	MinHeartbeat = 100 * time.Millisecond
	MaxHeartbeat = 10 * time.Minute
	// MaxRetryAfter is the longest a page honours a 1013 retry-after.
	MaxRetryAfter = 60 * time.Second
)

// RawJSON is a raw JSON value carried through unchanged (event data, baselines).
type RawJSON = json.RawMessage

// ErrFrame is the sentinel every decoding error wraps.
var ErrFrame = errors.New("wire: bad frame")

// ServerFrame is one Host → page frame. Which fields matter depends on T.
type ServerFrame struct {
	T string `json:"t"`
	// ready
	Session     string `json:"session,omitempty"`
	HeartbeatMs int64  `json:"heartbeatMs,omitempty"`
	// event, reset
	Stream string `json:"stream,omitempty"`
	Seq    uint64 `json:"seq,omitempty"`
	// event
	Data json.RawMessage `json:"data,omitempty"`
	// reset
	Epoch    string          `json:"epoch,omitempty"`
	Baseline json.RawMessage `json:"baseline,omitempty"`
	// goaway: "" means come back to the same place.
	URI string `json:"uri,omitempty"`
	// error
	Message string `json:"message,omitempty"`
}

// ClientFrame is one page → Host frame.
type ClientFrame struct {
	T      string `json:"t"`
	Stream string `json:"stream"`
	// sub: both empty for a fresh subscription.
	Epoch string `json:"epoch,omitempty"`
	After uint64 `json:"after,omitempty"`
}

// Heartbeat returns the ready frame's heartbeat interval.
func (f ServerFrame) Heartbeat() time.Duration {
	return time.Duration(f.HeartbeatMs) * time.Millisecond
}

// Ready builds a ready frame.
func Ready(session string, heartbeat time.Duration) ServerFrame {
	return ServerFrame{T: TypeReady, Session: session, HeartbeatMs: heartbeat.Milliseconds()}
}

// Encode returns the frame's JSON text.
func (f ServerFrame) Encode() ([]byte, error) { return json.Marshal(f) }

// Encode returns the frame's JSON text.
func (f ClientFrame) Encode() ([]byte, error) { return json.Marshal(f) }

// decodeStrict decodes one JSON object and refuses trailing data.
func decodeStrict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrFrame, err)
	}
	if d.More() {
		return fmt.Errorf("%w: trailing data after the frame", ErrFrame)
	}
	return nil
}

// DecodeServer decodes and validates a Host → page frame. Unknown fields are ignored (a newer
// Host may add some); an unknown type or a missing required field is an error.
func DecodeServer(b []byte) (ServerFrame, error) {
	var f ServerFrame
	if err := decodeStrict(b, &f); err != nil {
		return ServerFrame{}, err
	}
	if err := f.Validate(); err != nil {
		return ServerFrame{}, err
	}
	return f, nil
}

// Validate checks the fields the frame's type requires.
func (f ServerFrame) Validate() error {
	switch f.T {
	case TypeReady:
		if f.Session == "" {
			return fmt.Errorf("%w: ready without a session", ErrFrame)
		}
		if hb := f.Heartbeat(); hb < MinHeartbeat || hb > MaxHeartbeat {
			return fmt.Errorf("%w: ready heartbeatMs must be in %d..%d, got %d",
				ErrFrame, MinHeartbeat.Milliseconds(), MaxHeartbeat.Milliseconds(), f.HeartbeatMs)
		}
	case TypeHeartbeat, TypeGoAway, TypeError:
	case TypeEvent:
		if err := checkStream(f.Stream); err != nil {
			return err
		}
		if f.Seq == 0 {
			return fmt.Errorf("%w: event on stream %q without a seq", ErrFrame, f.Stream)
		}
		if len(f.Data) == 0 {
			return fmt.Errorf("%w: event %q/%d without data", ErrFrame, f.Stream, f.Seq)
		}
	case TypeReset:
		if err := checkStream(f.Stream); err != nil {
			return err
		}
		if f.Epoch == "" {
			return fmt.Errorf("%w: reset on stream %q without an epoch", ErrFrame, f.Stream)
		}
	case "":
		return fmt.Errorf("%w: missing type field \"t\"", ErrFrame)
	default:
		return fmt.Errorf("%w: unknown type %q", ErrFrame, truncate(f.T))
	}
	return nil
}

// DecodeClient decodes and validates a page → Host frame.
func DecodeClient(b []byte) (ClientFrame, error) {
	var f ClientFrame
	if err := decodeStrict(b, &f); err != nil {
		return ClientFrame{}, err
	}
	switch f.T {
	case TypeSub:
		if err := checkStream(f.Stream); err != nil {
			return ClientFrame{}, err
		}
		if f.Epoch == "" && f.After != 0 {
			return ClientFrame{}, fmt.Errorf("%w: sub %q has after=%d without an epoch", ErrFrame, f.Stream, f.After)
		}
	case TypeUnsub:
		if err := checkStream(f.Stream); err != nil {
			return ClientFrame{}, err
		}
	case "":
		return ClientFrame{}, fmt.Errorf("%w: missing type field \"t\"", ErrFrame)
	default:
		return ClientFrame{}, fmt.Errorf("%w: unknown type %q", ErrFrame, truncate(f.T))
	}
	return f, nil
}

func checkStream(s string) error {
	if s == "" {
		return fmt.Errorf("%w: missing stream name", ErrFrame)
	}
	if len(s) > MaxStreamName {
		return fmt.Errorf("%w: stream name of %d bytes exceeds %d", ErrFrame, len(s), MaxStreamName)
	}
	return nil
}

// truncate keeps hostile input from flooding an error message.
func truncate(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

const retryAfterPrefix = "retry-after="

// RetryAfterReason is the 1013 close reason asking the page to wait at least d.
func RetryAfterReason(d time.Duration) string {
	return retryAfterPrefix + strconv.FormatInt(max(d.Milliseconds(), 0), 10)
}

// ParseRetryAfter reads a 1013 close reason. It reports false when the reason carries no valid
// retry-after. The delay is clamped to [0, MaxRetryAfter].
func ParseRetryAfter(reason string) (time.Duration, bool) {
	v, ok := strings.CutPrefix(strings.TrimSpace(reason), retryAfterPrefix)
	if !ok {
		return 0, false
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 {
		return 0, false
	}
	if ms > MaxRetryAfter.Milliseconds() {
		return MaxRetryAfter, true
	}
	return time.Duration(ms) * time.Millisecond, true
}
