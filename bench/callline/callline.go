// Package callline is the line format of the calls scenario (bench/harness, scenario 10): one
// JSON object a line, as internal/swarmline's lines are, with the same first three members.
// The servers print a line for each run of the call handler; the callers (bench/cmd/callpages
// for Lifeline, bench/peers/sio-callers.js for socket.io-client) print, for each call they
// made, one line saying what the caller was told, and once every call has its line, one
// line for the process. bench/cmd/callhost and callpages print with [Line.Append]; the
// harness reads with [Decode]; the Node peers print the same members.
//
//	{"t":1764438000123.456,"id":-1,"event":"run","call":"3-17"}
//	{"t":1764438000123.456,"id":3,"event":"call","call":"3-17","told":"unknown","why":"interrupted (sent)","ms":812.5}
//	{"t":1764438000123.456,"id":-1,"event":"settled","made":240}
//
// A caller's connection events (attempt, connected, disconnected) are swarmline's lines.
package callline

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// The events.
const (
	Run     = "run"     // the server ran the handler for Call (printed as the run starts)
	Call    = "call"    // a caller was told Told about Call, Ms after it made it
	Settled = "settled" // every call a caller process made (Made of them) has its line
)

// What a caller was told about a call: its outcome, as the caller's library put it.
const (
	// The handler's reply, for this call.
	Ok = "ok"
	// A failure that says nothing of a run, or says the call did not run (Lifeline: not
	// sent, or refused by the Host before its handler; socket.io-client: every error, since
	// none says whether the event went out).
	Failed = "failed"
	// A failure that says the outcome is unknown: sent, and no reply (Lifeline's
	// interrupted, timeout and closed, when Sent).
	Unknown = "unknown"
	// A reply that is another call's.
	Mixed = "mixed"
	// Nothing, by the time the caller stopped waiting.
	None = "none"
)

// DataOf is the call's data the callers send and the servers' handler reads: which call it
// is, and how long the handler works before it replies. The reply is {"call": Call}.
type DataOf struct {
	Call   string `json:"call"`
	WorkMs int    `json:"workMs,omitempty"`
}

// Line is one line. T, ID and Event are in every line; the others in the events' lines
// their comments name.
type Line struct {
	T     float64 `json:"t"`  // milliseconds since the Unix epoch, fractional
	ID    int     `json:"id"` // the caller's index in its process; -1 for a process (or server) line
	Event string  `json:"event"`

	Call string  `json:"call,omitempty"` // run, call: the call's id, "<caller>-<seq>"
	Told string  `json:"told,omitempty"` // call: one of Ok, Failed, Unknown, Mixed, None
	Why  string  `json:"why,omitempty"`  // call: the library's words for a failure (its kind, its message)
	Ms   float64 `json:"ms,omitempty"`   // call: from the call made to the caller told
	Made int     `json:"made,omitempty"` // settled: the calls the process made
}

// ErrLine is wrapped by Decode's errors.
var ErrLine = errors.New("callline: not a call line")

// Decode reads one line. It fails, wrapping ErrLine, unless the line is a JSON object whose
// event is one of this package's, with the members that event needs.
func Decode(b []byte) (Line, error) {
	var l Line
	if err := json.Unmarshal(b, &l); err != nil {
		return Line{}, fmt.Errorf("%w: %v", ErrLine, err)
	}
	switch {
	case l.Event == Run && l.Call != "":
	case l.Event == Call && l.Call != "" && l.Told != "":
	case l.Event == Settled:
	default:
		return Line{}, fmt.Errorf("%w: event %q, call %q, told %q", ErrLine, l.Event, l.Call, l.Told)
	}
	return l, nil
}

// Append appends the line, with its newline, to b.
func (l Line) Append(b []byte) []byte {
	j, _ := json.Marshal(l) // a Line always marshals
	b = append(b, j...)
	return append(b, '\n')
}

// ID is the id of the seq'th call of caller: "<caller>-<seq>".
func ID(caller, seq int) string { return strconv.Itoa(caller) + "-" + strconv.Itoa(seq) }
