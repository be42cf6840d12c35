// Package swarmline is the line format of bin/swarm (cmd/swarm): one JSON object a line,
// one line per event of one of its clients. cmd/swarm prints with [Line.Append]; the bench
// harness, the soak and the fleet test read with [Decode], so printer and readers cannot
// drift apart. The bench's Node peers print the same first three members.
//
//	{"t":1764438000123.456,"id":0,"event":"attempt"}
//	{"t":1764438000123.456,"id":0,"event":"delivery","stream":"ticks","seq":12,"reset":false}
//	{"t":1764438000123.456,"id":0,"event":"violation","stream":"ticks","seq":14,"want":13}
//	{"t":1764438000123.456,"id":-1,"event":"stats","goroutines":212,"heapInuse":4718592,"heapAlloc":2359296}
//	{"t":1764438000123.456,"id":0,"event":"call","call":7,"keyed":true,"made":1764438000120.002,"epoch":"3f0c…","reply":"p0/0/7"}
//	{"t":1764438000123.456,"id":0,"event":"call","call":8,"keyed":false,"made":…,"epoch":"3f0c…","kind":"interrupted","sent":true,"code":"","message":"…"}
package swarmline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// The events, in the order a client usually prints them.
const (
	Attempt      = "attempt"      // a generation started (a dial)
	Slow         = "slow"         // a handshake passed slowAfterMs
	Connected    = "connected"    // the client became connected
	Disconnected = "disconnected" // the client left connected
	Unauthorized = "unauthorized" // the client became unauthorized: refused, or its access ended (-user)
	Delivery     = "delivery"     // an event of the followed stream (-deliveries): Stream, Seq, Reset
	Violation    = "violation"    // a delivery out of once-each-in-order: Stream, Seq, Want
	Stats        = "stats"        // the process's figures on SIGUSR1 (-stats), ID -1: Goroutines, HeapInuse, HeapAlloc
	// One call's outcome (-calls): Call, Keyed, Made, Epoch, then Reply when the Host answered, or
	// Kind, Sent, Code and Message when the call failed (gateway.CallError's).
	Call = "call"
)

// Line is one event line. T, ID and Event are in every line; the other members only in the
// lines of the events their comments name.
type Line struct {
	T     float64 // milliseconds since the Unix epoch, fractional
	ID    int     // the client's index in its process; -1 for the process itself (stats)
	Event string

	Stream string          // delivery, violation
	Seq    uint64          // delivery, violation
	Reset  bool            // delivery: the event is a baseline, not a step
	Want   json.RawMessage // violation: the seq expected (a number), or what was (a string)

	Goroutines int    // stats
	HeapInuse  uint64 // stats: the heap's spans in use (live objects and the free room in their spans)
	HeapAlloc  uint64 // stats: the live objects' bytes
	OnHTTP     int    // stats: the clients whose session is on the HTTP carrier now

	Call    int             // call: the call's number among its client's calls, from 0
	Keyed   bool            // call: it carried an idempotency key
	Made    float64         // call: when it was made (as T); T is when its outcome came
	Epoch   string          // call: the dedup epoch it was last sent under; "" if never sent
	Reply   json.RawMessage // call: the Host's reply, when it answered (Kind "")
	Kind    string          // call: the failure's kind (gateway.Call*); "" for a reply
	Sent    bool            // call: the failure says the call was written to a socket
	Code    string          // call: the Host's code of a failed reply; "" if the Host said nothing
	Message string          // call: the failure's words
}

// ErrLine is wrapped by Decode's errors.
var ErrLine = errors.New("swarmline: not an event line")

// At returns the line's time.
func (l Line) At() time.Time {
	ms := int64(l.T)
	return time.UnixMilli(ms).Add(time.Duration((l.T - float64(ms)) * float64(time.Millisecond)))
}

// Stamp is t as a Line's T.
func Stamp(t time.Time) float64 { return float64(t.UnixMicro()) / 1000 }

// WantSeq returns a violation's expected seq, and false when it expected something else
// (a reset before any event).
func (l Line) WantSeq() (uint64, bool) {
	var seq uint64
	if json.Unmarshal(l.Want, &seq) != nil {
		return 0, false
	}
	return seq, true
}

// jsonLine is a Line as JSON; the pointers tell a missing member from a zero one.
type jsonLine struct {
	T          *float64        `json:"t"`
	ID         *int            `json:"id"`
	Event      string          `json:"event"`
	Stream     string          `json:"stream"`
	Seq        uint64          `json:"seq"`
	Reset      bool            `json:"reset"`
	Want       json.RawMessage `json:"want"`
	Goroutines int             `json:"goroutines"`
	HeapInuse  uint64          `json:"heapInuse"`
	HeapAlloc  uint64          `json:"heapAlloc"`
	OnHTTP     int             `json:"onHTTP"`
	Call       int             `json:"call"`
	Keyed      bool            `json:"keyed"`
	Made       float64         `json:"made"`
	Epoch      string          `json:"epoch"`
	Reply      json.RawMessage `json:"reply"`
	Kind       string          `json:"kind"`
	Sent       bool            `json:"sent"`
	Code       string          `json:"code"`
	Message    string          `json:"message"`
}

// Decode reads one line (with or without its newline). It fails, wrapping ErrLine, unless
// the line is a JSON object with a numeric t, a numeric id and a non-empty event.
func Decode(b []byte) (Line, error) {
	var w jsonLine
	if err := json.Unmarshal(b, &w); err != nil {
		return Line{}, fmt.Errorf("%w: %q: %v", ErrLine, wire.Truncate(string(b)), err)
	}
	if w.T == nil || w.ID == nil || w.Event == "" {
		return Line{}, fmt.Errorf("%w: %q lacks one of t, id, event", ErrLine, wire.Truncate(string(b)))
	}
	return Line{T: *w.T, ID: *w.ID, Event: w.Event, Stream: w.Stream, Seq: w.Seq, Reset: w.Reset,
		Want: w.Want, Goroutines: w.Goroutines, HeapInuse: w.HeapInuse, HeapAlloc: w.HeapAlloc, OnHTTP: w.OnHTTP,
		Call: w.Call, Keyed: w.Keyed, Made: w.Made, Epoch: w.Epoch, Reply: w.Reply, Kind: w.Kind, Sent: w.Sent, Code: w.Code, Message: w.Message}, nil
}

// Append appends the line, with its newline, to b: t, id and event, then the members its
// event carries, always in the same order.
func (l Line) Append(b []byte) []byte {
	b = append(b, `{"t":`...)
	b = strconv.AppendFloat(b, l.T, 'f', 3, 64)
	b = append(b, `,"id":`...)
	b = strconv.AppendInt(b, int64(l.ID), 10)
	b = append(b, `,"event":`...)
	b = appendString(b, l.Event)
	switch l.Event {
	case Delivery:
		b = append(b, `,"stream":`...)
		b = appendString(b, l.Stream)
		b = append(b, `,"seq":`...)
		b = strconv.AppendUint(b, l.Seq, 10)
		b = append(b, `,"reset":`...)
		b = strconv.AppendBool(b, l.Reset)
	case Violation:
		b = append(b, `,"stream":`...)
		b = appendString(b, l.Stream)
		b = append(b, `,"seq":`...)
		b = strconv.AppendUint(b, l.Seq, 10)
		b = append(b, `,"want":`...)
		b = appendJSON(b, l.Want)
	case Stats:
		b = append(b, `,"goroutines":`...)
		b = strconv.AppendInt(b, int64(l.Goroutines), 10)
		b = append(b, `,"heapInuse":`...)
		b = strconv.AppendUint(b, l.HeapInuse, 10)
		b = append(b, `,"heapAlloc":`...)
		b = strconv.AppendUint(b, l.HeapAlloc, 10)
		b = append(b, `,"onHTTP":`...)
		b = strconv.AppendInt(b, int64(l.OnHTTP), 10)
	case Call:
		b = append(b, `,"call":`...)
		b = strconv.AppendInt(b, int64(l.Call), 10)
		b = append(b, `,"keyed":`...)
		b = strconv.AppendBool(b, l.Keyed)
		b = append(b, `,"made":`...)
		b = strconv.AppendFloat(b, l.Made, 'f', 3, 64)
		b = append(b, `,"epoch":`...)
		b = appendString(b, l.Epoch)
		if l.Kind == "" {
			b = append(b, `,"reply":`...)
			b = appendJSON(b, l.Reply)
			break
		}
		b = append(b, `,"kind":`...)
		b = appendString(b, l.Kind)
		b = append(b, `,"sent":`...)
		b = strconv.AppendBool(b, l.Sent)
		b = append(b, `,"code":`...)
		b = appendString(b, l.Code)
		b = append(b, `,"message":`...)
		b = appendString(b, l.Message)
	}
	return append(b, "}\n"...)
}

// WantSeq is a violation's Want for an expected seq.
func WantSeq(seq uint64) json.RawMessage { return strconv.AppendUint(nil, seq, 10) }

// WantText is a violation's Want for something other than a seq.
func WantText(s string) json.RawMessage { return appendString(nil, s) }

// appendJSON appends v compacted (a line holds no newline), or null when it is not one JSON
// value (missing included), so that a line is always JSON.
func appendJSON(b []byte, v json.RawMessage) []byte {
	var c bytes.Buffer
	if json.Compact(&c, v) != nil {
		return append(b, "null"...)
	}
	return append(b, c.Bytes()...)
}

// appendString appends s as a JSON string, escaped as encoding/json escapes it.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}
