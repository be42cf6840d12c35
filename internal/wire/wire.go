// Package wire is the Lifeline events protocol, version 1: frame types, their encoding and
// decoding, and the close codes. The gateway (page side) and the Host plugin both import it, so
// the two sides cannot drift apart. It depends on no other package of the project; besides the
// standard library it reads frames with internal/jsontok, the project's strict tokenizer,
// because the browser build must not link encoding/json (about 120 KB of brotli-compressed
// wasm); see that package for why not go-json-experiment's jsontext.
//
// Frames are JSON text messages whose field "t" names the type. Host → page: ready, hb, event,
// reset, goaway, denied, error, reply, fenced, presence (and the HTTP carrier's close). Page →
// Host: sub, unsub, ping, call, report, fence. Access that ends and its renewal are in
// access.go. docs/PROTOCOL.md is the protocol's account; §8 lists every frame.
package wire

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/lifeline-go/lifeline/internal/jsontok"
	"github.com/lifeline-go/lifeline/internal/tinyfmt"
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
	TypeDenied    = "denied"
	TypeError     = "error"
	TypeReply     = "reply"
	TypeFenced    = "fenced" // the answer to a fence: no call of that session starts any more
	TypeSub       = "sub"
	TypeUnsub     = "unsub"
	TypePing      = "ping"
	TypeCall      = "call"
	TypeReport    = "report" // what the page lived through while not connected (report.go)
	TypeFence     = "fence"  // a session the page left with calls in flight: start none of them
	// TypePresence (presence.go) is who is on a stream.
)

// What a failed reply's Code says (PROTOCOL.md §9). A page treats a code it does not know
// as CodeApp: a later Host may say more.
const (
	CodeApp         = "app"         // the handler returned an error: Error is its first line
	CodeInternal    = "internal"    // the handler panicked
	CodeUnknown     = "unknown"     // no handler has the call's name
	CodeBadRequest  = "bad-request" // the call frame was malformed: the handler never ran
	CodeBusy        = "busy"        // over the session's call rate or queue: RetryAfterMs says when to try again
	CodeInterrupted = "interrupted" // a keyed call whose first run was cut off: whether it took effect is unknown
	CodeTimeout     = "timeout"     // the handler ran past the Host's call timeout
)

// Close codes of the protocol (RFC 6455 numbers).
const (
	CloseDrained        = 1001 // the Host is draining and this session is over
	CloseOrigin         = 1008 // the page's origin is not allowed
	CloseTooBig         = 1009 // a frame exceeded the read limit
	CloseServiceRestart = 1012 // the Host stops with no successor: come back soon; the reason is a RestartReason
	CloseOverloaded     = 1013 // try again later; the reason carries retry-after=<ms>
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
	// MaxRetryAfter is the longest a page honours a retry-after (a 1013's, or a restart's
	// minimum wait): ParseRetryAfter clamps to it, and the controller caps every
	// controller.RetryAfterError at it, whichever source reported it.
	MaxRetryAfter = 60 * time.Second
	// MaxCallName and MaxCallKey bound a call's name and its idempotency key, in bytes.
	MaxCallName = 128
	MaxCallKey  = 128
	// MaxCode bounds a reply's code.
	MaxCode = 32
	// MaxSessionID bounds the session a fence names (a Host's are 33 characters: its Host's
	// id, a dot, 24 hex digits).
	MaxSessionID = 64
)

// RawJSON is a raw JSON value carried through unchanged (event data, baselines). It marshals
// as itself with encoding/json, like json.RawMessage, without this package importing it.
type RawJSON []byte

// MarshalJSON returns m, or null for a nil m.
func (m RawJSON) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("null"), nil
	}
	return m, nil
}

// UnmarshalJSON keeps a copy of b.
func (m *RawJSON) UnmarshalJSON(b []byte) error {
	*m = append((*m)[:0], b...)
	return nil
}

// ErrFrame is the sentinel every decoding error wraps.
var ErrFrame = errors.New("wire: bad frame")

// HostFrame is one Host → page frame. Which fields matter depends on T.
type HostFrame struct {
	T string `json:"t"`
	// ready
	Session     string `json:"session,omitempty"`
	HeartbeatMs int64  `json:"heartbeatMs,omitempty"`
	// ready: Dedup is the epoch of the Host's call dedup store (a keyed call is re-sent only
	// to a store of the same epoch); MaxFrameBytes the largest frame the Host reads (a page
	// refuses a larger call itself instead of losing the session to 1009). A Host without
	// calls sends neither.
	Dedup         string `json:"dedup,omitempty"`
	MaxFrameBytes int64  `json:"maxFrameBytes,omitempty"`
	// ready: DedupMs is how long the dedup store keeps a keyed call's outcome from the end of
	// its run (its window). A page sends a keyed call again only within half of it from its
	// first send, and never to a Host that names none, or ≤ 0 (PROTOCOL.md §9.2).
	DedupMs int64 `json:"dedupMs,omitempty"`
	// ready: Who tags the session's identity (Authenticate's) in the dedup store: equal for
	// the sessions of one identity with one store, and nothing of the identity readable. A
	// page sends a keyed call again only to a session of the tag it was first sent under.
	Who string `json:"who,omitempty"`
	// ready: Report asks the page for a report frame after a reconnect (report.go).
	Report bool `json:"report,omitempty"`
	// ready: HasPresence says the Host carries presence: a sub may ask for it (presence.go).
	HasPresence bool `json:"presence,omitempty"`
	// ready, on the HTTP carrier only: the session's secret, which every POST of the page
	// carries (http.go); and on any carrier whose session expires, which its renewals carry
	// (access.go).
	Secret string `json:"secret,omitempty"`
	// ready: how long from now the session's credential holds, in ms; 0 (absent) for no
	// expiry. The page renews it before then (access.go).
	ExpiresMs int64 `json:"expiresMs,omitempty"`
	// close (the HTTP carrier's): the close code, as a WebSocket close frame carries it, with
	// Reason.
	Status int `json:"status,omitempty"`
	// reply: the call's id; Data the handler's reply (success), or Error and Code (failure),
	// with RetryAfterMs for CodeBusy.
	ID           uint64 `json:"id,omitempty"`
	Error        string `json:"error,omitempty"`
	Code         string `json:"code,omitempty"`
	RetryAfterMs int64  `json:"retryAfterMs,omitempty"`
	// fenced: Session is the session fenced; Started the highest id of its calls that
	// started (0: none). No call of it starts any more.
	Started uint64 `json:"started,omitempty"`
	// event, reset, denied
	Stream string `json:"stream,omitempty"`
	Seq    uint64 `json:"seq,omitempty"`
	// event; reply (success)
	Data RawJSON `json:"data,omitempty"`
	// reset
	Epoch    string  `json:"epoch,omitempty"`
	Baseline RawJSON `json:"baseline,omitempty"`
	// goaway: "" means come back to the same place.
	URI string `json:"uri,omitempty"`
	// error
	Message string `json:"message,omitempty"`
	// denied: why the Host's app refused the subscription; presence: why the stream carries
	// none.
	Reason string `json:"reason,omitempty"`
	// presence (presence.go), with Stream, Epoch and Seq (the seq the batch brings the page
	// to): From the seq a diff applies to (0 for a snapshot); Snapshot says the batch lists
	// every member (the page applies it as a diff against what it shows); More that another
	// frame of the batch follows; Total the members in all, listed or not; Limit the most a
	// page is listed, when there are more (0: all are listed); Members who joined or changed
	// (a snapshot: who is there); Left the identities that left.
	From     uint64           `json:"from,omitempty"`
	Snapshot bool             `json:"snapshot,omitempty"`
	More     bool             `json:"more,omitempty"`
	Total    int              `json:"total,omitempty"`
	Limit    int              `json:"limit,omitempty"`
	Members  []PresenceMember `json:"members,omitempty"`
	Left     []string         `json:"left,omitempty"`
	// presence, on a snapshot: HoldMs is how long the page keeps the members it shows that the
	// snapshot does not list, unless a later frame lists them or says they left (a Host that
	// started less than a grace window ago cannot know who is still on the way to it).
	HoldMs int64 `json:"hold,omitempty"`
}

// PageFrame is one page → Host frame.
type PageFrame struct {
	T string `json:"t"`
	// sub, unsub; none for ping.
	Stream string `json:"stream"`
	// sub: both empty for a fresh subscription.
	Epoch string `json:"epoch,omitempty"`
	After uint64 `json:"after,omitempty"`
	// call: ID numbers the page's calls on this session (1, 2, …); Name the handler; Data the
	// argument (absent: null); Key the app's idempotency key ("": an unkeyed call).
	ID   uint64  `json:"id,omitempty"`
	Name string  `json:"name,omitempty"`
	Data RawJSON `json:"data,omitempty"`
	Key  string  `json:"key,omitempty"`
	// fence: the session (its ready frame's) that the page left with calls in flight.
	Session string `json:"session,omitempty"`
	// report: the time not connected, the attempts it took and the kinds of failure on the
	// way (report.go).
	DownMs   uint64   `json:"downMs,omitempty"`
	Attempts uint64   `json:"attempts,omitempty"`
	Kinds    []string `json:"kinds,omitempty"`
	// sub: Presence asks for the stream's presence frames, from the presence cursor
	// (PresenceEpoch, PresenceAfter) when the page holds one (presence.go).
	Presence      bool   `json:"presence,omitempty"`
	PresenceEpoch string `json:"presenceEpoch,omitempty"`
	PresenceAfter uint64 `json:"presenceAfter,omitempty"`
}

// Heartbeat returns the ready frame's heartbeat interval.
func (f HostFrame) Heartbeat() time.Duration {
	return time.Duration(f.HeartbeatMs) * time.Millisecond
}

// Ready builds a ready frame.
func Ready(session string, heartbeat time.Duration) HostFrame {
	return HostFrame{T: TypeReady, Session: session, HeartbeatMs: heartbeat.Milliseconds()}
}

// Reply builds the reply to call id: data (a JSON value; nil is null) on success.
func Reply(id uint64, data RawJSON) HostFrame {
	if len(data) == 0 {
		data = RawJSON("null")
	}
	return HostFrame{T: TypeReply, ID: id, Data: data}
}

// Failed builds a failed reply to call id.
func Failed(id uint64, code, msg string, retryAfter time.Duration) HostFrame {
	return HostFrame{T: TypeReply, ID: id, Error: msg, Code: code, RetryAfterMs: retryAfter.Milliseconds()}
}

// Encode returns the frame's JSON text: its fields in declaration order, the empty ones left
// out. Invalid UTF-8 in a string becomes U+FFFD, as encoding/json would make it.
func (f HostFrame) Encode() ([]byte, error) {
	return f.Append(make([]byte, 0, 48+len(f.Stream)+len(f.Data)+len(f.Baseline)+len(f.Message)))
}

// Append appends the frame's JSON text, as Encode returns it, to b: a Host encodes an event
// once, into a buffer with room for what the socket sends before it, and shares the bytes
// among the pages it goes to.
func (f HostFrame) Append(b []byte) ([]byte, error) {
	b = str(append(b, `{"t":`...), f.T)
	b = optStr(b, "session", f.Session)
	if f.HeartbeatMs != 0 {
		b = strconv.AppendInt(append(b, `,"heartbeatMs":`...), f.HeartbeatMs, 10)
	}
	b = optStr(b, "dedup", f.Dedup)
	if f.DedupMs != 0 {
		b = strconv.AppendInt(append(b, `,"dedupMs":`...), f.DedupMs, 10)
	}
	b = optStr(b, "who", f.Who)
	if f.MaxFrameBytes != 0 {
		b = strconv.AppendInt(append(b, `,"maxFrameBytes":`...), f.MaxFrameBytes, 10)
	}
	if f.Report {
		b = append(b, `,"report":true`...)
	}
	if f.HasPresence {
		b = append(b, `,"presence":true`...)
	}
	b = optStr(b, "secret", f.Secret)
	if f.ExpiresMs != 0 {
		b = strconv.AppendInt(append(b, `,"expiresMs":`...), f.ExpiresMs, 10)
	}
	if f.Status != 0 {
		b = strconv.AppendInt(append(b, `,"status":`...), int64(f.Status), 10)
	}
	if f.ID != 0 {
		b = strconv.AppendUint(append(b, `,"id":`...), f.ID, 10)
	}
	b = optStr(b, "error", f.Error)
	b = optStr(b, "code", f.Code)
	if f.RetryAfterMs != 0 {
		b = strconv.AppendInt(append(b, `,"retryAfterMs":`...), f.RetryAfterMs, 10)
	}
	if f.Started != 0 {
		b = strconv.AppendUint(append(b, `,"started":`...), f.Started, 10)
	}
	b = optStr(b, "stream", f.Stream)
	if f.Seq != 0 {
		b = strconv.AppendUint(append(b, `,"seq":`...), f.Seq, 10)
	}
	if len(f.Data) > 0 {
		b = append(append(b, `,"data":`...), f.Data...)
	}
	b = optStr(b, "epoch", f.Epoch)
	if len(f.Baseline) > 0 {
		b = append(append(b, `,"baseline":`...), f.Baseline...)
	}
	b = optStr(b, "uri", f.URI)
	b = optStr(b, "message", f.Message)
	b = optStr(b, "reason", f.Reason)
	b = f.appendPresence(b)
	return append(b, '}'), nil
}

// Encode returns the frame's JSON text.
func (f PageFrame) Encode() ([]byte, error) {
	b := make([]byte, 0, 48+len(f.Stream)+len(f.Epoch)+len(f.Name)+len(f.Key)+len(f.Data))
	b = str(append(b, `{"t":`...), f.T)
	if f.T == TypeCall {
		b = strconv.AppendUint(append(b, `,"id":`...), f.ID, 10)
		b = str(append(b, `,"name":`...), f.Name)
		b = optStr(b, "key", f.Key)
		if len(f.Data) > 0 {
			b = append(append(b, `,"data":`...), f.Data...)
		}
		return append(b, '}'), nil
	}
	if f.T == TypeReport {
		return f.appendReport(b), nil
	}
	if f.T == TypeFence {
		return Fence(f.Session), nil
	}
	if f.T != TypePing {
		b = str(append(b, `,"stream":`...), f.Stream)
	}
	b = optStr(b, "epoch", f.Epoch)
	if f.After != 0 {
		b = strconv.AppendUint(append(b, `,"after":`...), f.After, 10)
	}
	b = f.appendPresenceSub(b)
	return append(b, '}'), nil
}

// Fence encodes the fence frame of session, as PageFrame.Encode does (the page sends it
// without building a PageFrame).
func Fence(session string) []byte {
	return append(str([]byte(`{"t":"fence","session":`), session), '}')
}

func str(b []byte, s string) []byte {
	return jsontok.AppendQuote(b, s) // invalid UTF-8 is replaced, and the output stays valid
}

func optStr(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return str(b, s)
}

// decoders are reused: a frame decodes without allocating a tokenizer.
var decoders = sync.Pool{New: func() any { return new(frameDecoder) }}

type frameDecoder struct {
	dec  jsontok.Decoder
	seen []string // the keys read so far
}

// decodeObject reads b as one JSON object and calls member for each key, with the decoder
// positioned at the value, which member must read. A key given twice is an error, unless dup
// is set: then dup is called in member's place (it must read the value too) and decides.
// Anything after the object is an error.
func decodeObject(b []byte, member, dup func(key string, d *jsontok.Decoder) error) error {
	fd := decoders.Get().(*frameDecoder)
	defer decoders.Put(fd)
	fd.dec.Reset(b)
	fd.seen = fd.seen[:0]
	d := &fd.dec
	if k := d.PeekKind(); k != '{' {
		if k == 0 {
			_, err := d.ReadToken()
			return frameErr(err)
		}
		return tinyfmt.Errorf("%w: must be a JSON object, got %s", ErrFrame, kindName(k))
	}
	if _, err := d.ReadToken(); err != nil {
		return frameErr(err)
	}
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return frameErr(err)
		}
		key := tok.String()
		read := member
		if slices.Contains(fd.seen, key) {
			if dup == nil {
				return tinyfmt.Errorf("%w: duplicate key %s", ErrFrame, Truncate(string(tok.Raw)))
			}
			read = dup
		}
		fd.seen = append(fd.seen, key)
		if err := read(key, d); err != nil {
			return err
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return frameErr(err)
	}
	if _, err := d.ReadValue(); err != io.EOF {
		return tinyfmt.Errorf("%w: trailing data after the frame", ErrFrame)
	}
	return nil
}

func frameErr(err error) error {
	if err == nil {
		return nil
	}
	return tinyfmt.Errorf("%w: %v", ErrFrame, err)
}

// readString reads a string field; null is the empty string.
func readString(d *jsontok.Decoder, key string, dst *string) error {
	switch d.PeekKind() {
	case 'n':
		_, err := d.ReadToken()
		return frameErr(err)
	case '"':
		tok, err := d.ReadToken()
		if err != nil {
			return frameErr(err)
		}
		*dst = tok.String()
		return nil
	}
	return wrongKind(d, key, "a string")
}

// readUint reads an integer field: digits only, as a count is written.
func readUint(d *jsontok.Decoder, key string, dst *uint64) error {
	if d.PeekKind() == 'n' {
		_, err := d.ReadToken()
		return frameErr(err)
	}
	if d.PeekKind() != '0' {
		return wrongKind(d, key, "a number")
	}
	raw, err := d.ReadValue()
	if err != nil {
		return frameErr(err)
	}
	v, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return tinyfmt.Errorf("%w: %s must be an integer in 0..%d, got %s", ErrFrame, key, uint64(1<<64-1), Truncate(string(raw)))
	}
	*dst = v
	return nil
}

func readInt(d *jsontok.Decoder, key string, dst *int64) error {
	if d.PeekKind() == 'n' {
		_, err := d.ReadToken()
		return frameErr(err)
	}
	if d.PeekKind() != '0' {
		return wrongKind(d, key, "a number")
	}
	raw, err := d.ReadValue()
	if err != nil {
		return frameErr(err)
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return tinyfmt.Errorf("%w: %s must be an integer, got %s", ErrFrame, key, Truncate(string(raw)))
	}
	*dst = v
	return nil
}

// readRaw keeps a value as sent. With nullIsNone, a null is no value (an absent baseline);
// without, it is the JSON value null, which an app may publish as an event's data like any
// other (a page that refused it would resume from its cursor into the same event forever).
func readRaw(d *jsontok.Decoder, dst *RawJSON, nullIsNone bool) error {
	raw, err := d.ReadValue()
	if err != nil {
		return frameErr(err)
	}
	if nullIsNone && string(raw) == "null" {
		*dst = nil
		return nil
	}
	*dst = RawJSON(bytes.Clone(raw))
	return nil
}

func wrongKind(d *jsontok.Decoder, key, want string) error {
	k := d.PeekKind()
	_ = d.SkipValue() // an error of JSON itself stays with d, for whoever reads on
	return tinyfmt.Errorf("%w: %s must be %s, got %s", ErrFrame, key, want, kindName(k))
}

func kindName(k jsontok.Kind) string {
	switch k {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "nothing"
}

// DecodeHost decodes and validates a Host → page frame. Unknown fields are ignored (a newer
// Host may add some); an unknown type, a missing required field, a key given twice or
// anything after the frame is an error.
func DecodeHost(b []byte) (HostFrame, error) {
	var f HostFrame
	err := decodeObject(b, func(key string, d *jsontok.Decoder) error {
		switch key {
		case "t":
			return readString(d, key, &f.T)
		case "session":
			return readString(d, key, &f.Session)
		case "heartbeatMs":
			return readInt(d, key, &f.HeartbeatMs)
		case "stream":
			return readString(d, key, &f.Stream)
		case "seq":
			return readUint(d, key, &f.Seq)
		case "data":
			return readRaw(d, &f.Data, false)
		case "epoch":
			return readString(d, key, &f.Epoch)
		case "baseline":
			return readRaw(d, &f.Baseline, true)
		case "uri":
			return readString(d, key, &f.URI)
		case "message":
			return readString(d, key, &f.Message)
		case "reason":
			return readString(d, key, &f.Reason)
		case "dedup":
			return readString(d, key, &f.Dedup)
		case "maxFrameBytes":
			return readInt(d, key, &f.MaxFrameBytes)
		case "dedupMs":
			return readInt(d, key, &f.DedupMs)
		case "who":
			return readString(d, key, &f.Who)
		case "id":
			return readUint(d, key, &f.ID)
		case "error":
			return readString(d, key, &f.Error)
		case "code":
			return readString(d, key, &f.Code)
		case "retryAfterMs":
			return readInt(d, key, &f.RetryAfterMs)
		case "started":
			return readUint(d, key, &f.Started)
		case "report":
			return readBool(d, key, &f.Report)
		case "secret":
			return readString(d, key, &f.Secret)
		case "presence":
			return readBool(d, key, &f.HasPresence)
		case "from":
			return readUint(d, key, &f.From)
		case "snapshot":
			return readBool(d, key, &f.Snapshot)
		case "more":
			return readBool(d, key, &f.More)
		case "total":
			return readCount(d, key, &f.Total)
		case "limit":
			return readCount(d, key, &f.Limit)
		case "members":
			return readMembers(d, &f.Members)
		case "left":
			return readIDs(d, &f.Left)
		case "hold":
			return readInt(d, key, &f.HoldMs)
		case "expiresMs":
			return readInt(d, key, &f.ExpiresMs)
		case "status":
			var v int64
			err := readInt(d, key, &v)
			if v < 0 || v > 4999 {
				return tinyfmt.Errorf("%w: status must be a close code in 1000..4999, got %d", ErrFrame, v)
			}
			f.Status = int(v)
			return err
		}
		return frameErr(d.SkipValue())
	}, nil)
	if err != nil {
		return HostFrame{}, err
	}
	if err := f.Validate(); err != nil {
		return HostFrame{}, err
	}
	return f, nil
}

// Validate checks the fields the frame's type requires.
func (f HostFrame) Validate() error {
	switch f.T {
	case TypeReady:
		if f.Session == "" {
			return tinyfmt.Errorf("%w: ready without a session", ErrFrame)
		}
		if hb := f.Heartbeat(); hb < MinHeartbeat || hb > MaxHeartbeat {
			return tinyfmt.Errorf("%w: ready heartbeatMs must be in %d..%d, got %d",
				ErrFrame, MinHeartbeat.Milliseconds(), MaxHeartbeat.Milliseconds(), f.HeartbeatMs)
		}
		if f.MaxFrameBytes < 0 {
			return tinyfmt.Errorf("%w: ready maxFrameBytes must be at least 0, got %d", ErrFrame, f.MaxFrameBytes)
		}
		if len(f.Secret) > MaxSecret {
			return tinyfmt.Errorf("%w: ready secret must be at most %d bytes, got %d", ErrFrame, MaxSecret, len(f.Secret))
		}
		if f.ExpiresMs < 0 {
			return tinyfmt.Errorf("%w: ready expiresMs must be at least 0, got %d", ErrFrame, f.ExpiresMs)
		}
	case TypeHeartbeat, TypeGoAway, TypeError:
	case TypeFenced:
		if f.Session == "" {
			return tinyfmt.Errorf("%w: fenced without a session", ErrFrame) // the page compares it with its own
		}
	case TypeClose:
		if f.Status < 1000 {
			return tinyfmt.Errorf("%w: close status must be a close code in 1000..4999, got %d", ErrFrame, f.Status)
		}
	case TypeEvent:
		if err := checkFrameStream(f.Stream); err != nil {
			return err
		}
		if f.Seq == 0 {
			return tinyfmt.Errorf("%w: event on stream %q without a seq", ErrFrame, f.Stream)
		}
		if len(f.Data) == 0 {
			return tinyfmt.Errorf("%w: event %q/%d without data", ErrFrame, f.Stream, f.Seq)
		}
	case TypeReset:
		if err := checkFrameStream(f.Stream); err != nil {
			return err
		}
		if f.Epoch == "" {
			return tinyfmt.Errorf("%w: reset on stream %q without an epoch", ErrFrame, f.Stream)
		}
	case TypeDenied:
		if err := checkFrameStream(f.Stream); err != nil {
			return err
		}
	case TypePresence:
		return f.validatePresence()
	case TypeReply:
		switch {
		case f.ID == 0:
			return tinyfmt.Errorf("%w: reply without an id", ErrFrame)
		case f.Code == "" && len(f.Data) == 0:
			return tinyfmt.Errorf("%w: reply %d has neither data nor a code", ErrFrame, f.ID)
		case f.Code != "" && len(f.Data) != 0:
			return tinyfmt.Errorf("%w: reply %d has both data and a code", ErrFrame, f.ID)
		case len(f.Code) > MaxCode:
			return tinyfmt.Errorf("%w: reply %d code must be at most %d bytes, got %d", ErrFrame, f.ID, MaxCode, len(f.Code))
		case f.RetryAfterMs < 0:
			return tinyfmt.Errorf("%w: reply %d retryAfterMs must be at least 0, got %d", ErrFrame, f.ID, f.RetryAfterMs)
		}
	case "":
		return tinyfmt.Errorf("%w: missing type field \"t\"", ErrFrame)
	default:
		return tinyfmt.Errorf("%w: unknown type %q", ErrFrame, Truncate(f.T))
	}
	return nil
}

// DecodePage decodes and validates a page → Host frame. When a frame breaks a rule, the frame
// returned with the error carries what could be read of its type and, for a call, its id, so
// that the Host can answer a bad call by its id: a member of the wrong type or given twice, or
// anything wrong after the id, does not hide it. An id of the wrong type, or given twice,
// names no call.
func DecodePage(b []byte) (PageFrame, error) {
	var f PageFrame
	var bad error  // the first member that broke a rule; the others are read on
	badID := false // "t" or "id" broke a rule: the frame names no call
	member := func(key string, d *jsontok.Decoder) error {
		switch key {
		case "t":
			return readString(d, key, &f.T)
		case "stream":
			return readString(d, key, &f.Stream)
		case "epoch":
			return readString(d, key, &f.Epoch)
		case "after":
			return readUint(d, key, &f.After)
		case "id":
			return readUint(d, key, &f.ID)
		case "name":
			return readString(d, key, &f.Name)
		case "data":
			return readRaw(d, &f.Data, false)
		case "key":
			return readString(d, key, &f.Key)
		case "downMs":
			return readUint(d, key, &f.DownMs)
		case "attempts":
			return readUint(d, key, &f.Attempts)
		case "kinds":
			return readKinds(d, &f.Kinds)
		case "session":
			return readString(d, key, &f.Session)
		case "presence":
			return readBool(d, key, &f.Presence)
		case "presenceEpoch":
			return readString(d, key, &f.PresenceEpoch)
		case "presenceAfter":
			return readUint(d, key, &f.PresenceAfter)
		}
		return frameErr(d.SkipValue())
	}
	// A member that breaks a rule has been read past (every reader reads or skips its whole
	// value), so the frame is read on; JSON that is not JSON stops the decoder (PeekKind 0).
	keep := func(key string, d *jsontok.Decoder, err error) error {
		if err == nil {
			return nil
		}
		badID = badID || key == "t" || key == "id"
		if bad == nil {
			bad = err
		}
		if d.PeekKind() == 0 {
			return err
		}
		return nil
	}
	err := decodeObject(b, func(key string, d *jsontok.Decoder) error {
		return keep(key, d, member(key, d))
	}, func(key string, d *jsontok.Decoder) error {
		_ = d.SkipValue()
		return keep(key, d, tinyfmt.Errorf("%w: duplicate key %q", ErrFrame, Truncate(key)))
	})
	read := PageFrame{T: f.T}
	if f.T == TypeCall && !badID {
		read.ID = f.ID
	}
	if bad != nil {
		err = bad // the first thing wrong, rather than where reading stopped
	}
	if err != nil {
		return read, err
	}
	if f.T != TypeCall && (f.ID != 0 || f.Name != "" || len(f.Data) != 0 || f.Key != "") {
		return read, tinyfmt.Errorf("%w: %s carries no id, name, data or key", ErrFrame, Truncate(f.T))
	}
	if f.T != TypeReport && (f.DownMs != 0 || f.Attempts != 0 || f.Kinds != nil) {
		return read, tinyfmt.Errorf("%w: %s carries no downMs, attempts or kinds", ErrFrame, Truncate(f.T))
	}
	if f.T != TypeFence && f.Session != "" {
		return read, tinyfmt.Errorf("%w: %s carries no session", ErrFrame, Truncate(f.T))
	}
	if err := f.checkPresenceSub(); err != nil {
		return read, err
	}
	switch f.T {
	case TypeSub:
		if err := checkFrameStream(f.Stream); err != nil {
			return read, err
		}
		if f.Epoch == "" && f.After != 0 {
			return read, tinyfmt.Errorf("%w: sub %q has after=%d without an epoch", ErrFrame, f.Stream, f.After)
		}
	case TypeUnsub:
		if err := checkFrameStream(f.Stream); err != nil {
			return read, err
		}
	case TypePing:
		if f.Stream != "" || f.Epoch != "" || f.After != 0 {
			return read, tinyfmt.Errorf("%w: ping carries no stream, epoch or after", ErrFrame)
		}
	case TypeCall:
		if err := f.checkCall(); err != nil {
			return read, err
		}
	case TypeReport:
		if err := f.checkReport(); err != nil {
			return read, err
		}
	case TypeFence:
		if err := CheckSessionID(f.Session); err != nil {
			return read, err
		}
		if f.Stream != "" || f.Epoch != "" || f.After != 0 {
			return read, tinyfmt.Errorf("%w: fence carries no stream, epoch or after", ErrFrame)
		}
	case "":
		return read, tinyfmt.Errorf("%w: missing type field \"t\"", ErrFrame)
	default:
		return read, tinyfmt.Errorf("%w: unknown type %q", ErrFrame, Truncate(f.T))
	}
	return f, nil
}

// checkCall checks a call frame's fields: an id, a name and key by their rules, and nothing
// of a subscription.
func (f PageFrame) checkCall() error {
	switch {
	case f.ID == 0:
		return tinyfmt.Errorf("%w: call without an id", ErrFrame)
	case f.Stream != "" || f.Epoch != "" || f.After != 0:
		return tinyfmt.Errorf("%w: call %d carries no stream, epoch or after", ErrFrame, f.ID)
	}
	if err := CheckCallName(f.Name); err != nil {
		return tinyfmt.Errorf("%w: call %d: %w", ErrFrame, f.ID, err)
	}
	if f.Key != "" {
		if err := CheckCallKey(f.Key); err != nil {
			return tinyfmt.Errorf("%w: call %d: %w", ErrFrame, f.ID, err)
		}
	}
	return nil
}

// Errors of CheckCallName and CheckCallKey.
var (
	ErrCallName = errors.New("wire: bad call name")
	ErrCallKey  = errors.New("wire: bad call key")
)

// CheckCallName is the one rule for call names, on both sides and in every API that takes
// one: 1..MaxCallName bytes of ASCII letters, digits and . _ : / - (a name a log, a metric
// label and a URL path can all carry as it is).
func CheckCallName(s string) error {
	if s == "" || len(s) > MaxCallName {
		return tinyfmt.Errorf("%w: must be 1..%d bytes, got %d", ErrCallName, MaxCallName, len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("._:/-", c) >= 0) {
			return tinyfmt.Errorf("%w: %q has %q at byte %d; allowed are letters, digits and . _ : / -", ErrCallName, Truncate(s), rune(c), i)
		}
	}
	return nil
}

// CheckCallKey is the one rule for idempotency keys: 1..MaxCallKey bytes of UTF-8 without
// control characters (a UUID, "order-7:save", a hash).
func CheckCallKey(s string) error {
	if s == "" || len(s) > MaxCallKey {
		return tinyfmt.Errorf("%w: must be 1..%d bytes, got %d", ErrCallKey, MaxCallKey, len(s))
	}
	if !utf8.ValidString(s) {
		return tinyfmt.Errorf("%w: must be valid UTF-8", ErrCallKey)
	}
	for i, r := range s {
		if r < 0x20 || 0x7f <= r && r < 0xa0 { // C0, DEL and C1, as unicode.IsControl
			return tinyfmt.Errorf("%w: has a control character at byte %d", ErrCallKey, i)
		}
	}
	return nil
}

// CheckSessionID is the rule for the session a fence names: 1..MaxSessionID bytes of ASCII
// letters, digits, '-', '_' and '.' (a Host's are lowercase hex, its Host's id and its own
// joined by a dot), so that a store may use it in a key.
// Its errors wrap ErrFrame (no sentinel of their own: the page's wasm would carry it).
func CheckSessionID(s string) error {
	if s == "" || len(s) > MaxSessionID {
		return tinyfmt.Errorf("%w: session must be 1..%d bytes, got %d", ErrFrame, MaxSessionID, len(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return tinyfmt.Errorf("%w: session %q has %q at byte %d; allowed are letters, digits, -, _ and .", ErrFrame, Truncate(s), rune(c), i)
		}
	}
	return nil
}

// ErrStreamName is wrapped by every error of CheckStream.
var ErrStreamName = errors.New("wire: bad stream name")

// CheckStream is the one rule for stream names, on both sides and in every API that takes
// one: 1..MaxStreamName bytes.
func CheckStream(s string) error {
	if s == "" || len(s) > MaxStreamName {
		return tinyfmt.Errorf("%w: must be 1..%d bytes, got %d", ErrStreamName, MaxStreamName, len(s))
	}
	return nil
}

// checkFrameStream is CheckStream for a frame: its error is a bad frame too.
func checkFrameStream(s string) error {
	if err := CheckStream(s); err != nil {
		return tinyfmt.Errorf("%w: %w", ErrFrame, err)
	}
	return nil
}

// Truncate keeps hostile input from flooding an error message or a log: at most 32 bytes
// (never splitting a UTF-8 sequence), then "…".
func Truncate(s string) string {
	if len(s) <= 32 {
		return s
	}
	n := 32
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

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

// restartPrefix opens the message of a Host stopping with no successor.
const restartPrefix = "service-restart"

// RestartReason is the message a Host stopping with no successor sends, first as an error
// frame's message (which every page reads, whatever its carrier shows of close codes), then as the
// reason of its CloseServiceRestart close: "service-restart", followed by
// " retry-after=<ms>" when the Host asks the page to wait at least minWait before it dials
// again (a page spreads its dial over its own jitter after that minimum). A minWait of zero
// or less asks for no minimum.
//
// It is distinct from a bare retry-after (1013, overloaded): a Host that restarts is not
// asking to be spared, and a page that does not know this message only logs it.
func RestartReason(minWait time.Duration) string {
	if minWait <= 0 {
		return restartPrefix
	}
	return restartPrefix + " " + RetryAfterReason(minWait)
}

// ParseRestart reads a RestartReason (an error frame's message or a 1012 close reason). It
// reports false when s is not one; the minimum wait is clamped to [0, MaxRetryAfter] as
// ParseRetryAfter clamps it, and is 0 when the Host asked for none.
func ParseRestart(s string) (minWait time.Duration, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), restartPrefix)
	if !ok {
		return 0, false
	}
	if rest == "" {
		return 0, true
	}
	if rest[0] != ' ' && rest[0] != '\t' {
		return 0, false // "service-restarted", say
	}
	return ParseRetryAfter(rest)
}

// CheckValue reports whether b is one JSON value and nothing more, by the strict rules every
// frame is read with (so what a page sends as a call's data, the Host reads as such).
func CheckValue(b RawJSON) error {
	d := jsontok.NewDecoder(b)
	if _, err := d.ReadValue(); err != nil {
		return tinyfmt.Errorf("%w: not a JSON value: %v", ErrFrame, err)
	}
	if _, err := d.ReadValue(); err != io.EOF {
		return tinyfmt.Errorf("%w: more than one JSON value", ErrFrame)
	}
	return nil
}
