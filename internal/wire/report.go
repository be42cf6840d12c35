package wire

import (
	"slices"
	"strconv"
	"time"

	"github.com/lifeline-go/lifeline/internal/jsontok"
	"github.com/lifeline-go/lifeline/internal/tinyfmt"
)

// What the Host learns of its pages beyond their subscriptions and calls, for its operator's
// metrics: how a page runs (the events URL's ModeParam), and, after each reconnect, what it
// lived through while it was not connected (the report frame, PROTOCOL.md §10):
//
//	{"t":"report","downMs":12400,"attempts":3,"kinds":["closed","refused","timeout"]}
//
// A page sends one report on the session that ended a time not connected, and only when that
// session's ready frame asked for it ("report":true). It carries no identity beyond the
// session's: a duration, a count and kinds from a fixed list.

// ModeParam is the query parameter of the events URL by which a page names its mode (one of
// the Mode constants). A Host counts its sessions by it; a page that names none (an older
// client) is of no known mode.
const ModeParam = "lifeline-mode"

// The modes of a page.
const (
	ModeShared = "shared"  // a SharedWorker hub serving every tab of the browser
	ModeInPage = "in-page" // a hub in the page itself
	ModeNative = "native"  // a Go program (bin/swarm, a native client), no browser
)

// The kinds of failure a report names, each at most once; the first is what ended the
// connected session. A page explains a failed status with the same words (all but hidden).
const (
	KindClosed       = "closed"       // the Host or the network ended the session
	KindRefused      = "refused"      // a dial failed: nothing answered, or the Host refused the socket
	KindTimeout      = "timeout"      // a handshake ran into the deadline
	KindSilent       = "silent"       // the link went silent: no heartbeat, or no answer to a probe
	KindBusy         = "busy"         // the Host was overloaded (1013, 429) and said when to come back
	KindRestarting   = "restarting"   // the Host was restarting (1012, or turned the page away to come back)
	KindOffline      = "offline"      // the browser said it was offline
	KindUnauthorized = "unauthorized" // the Host refused the page's credential (401, 403)
	KindProtocol     = "protocol"     // the Host broke the protocol
	KindHidden       = "hidden"       // the page was hidden (a background tab, a sleeping machine) for some of the time
	KindOther        = "other"        // anything else (a reconnect the page asked for)
)

// ReportKinds lists every kind a report may name, in a fixed order. A report names at most
// this many.
var ReportKinds = [...]string{KindClosed, KindRefused, KindTimeout, KindSilent, KindBusy, KindRestarting,
	KindOffline, KindUnauthorized, KindProtocol, KindHidden, KindOther}

// Bounds of a report. A page clamps to them; a Host refuses a report beyond them.
const (
	// MaxReportDown is the longest time not connected a report carries: 30 days (a machine
	// asleep for longer reports this).
	MaxReportDown = 30 * 24 * time.Hour
	// MaxReportAttempts is the most attempts a report carries.
	MaxReportAttempts = 1_000_000
)

// Report builds the report of a page that was not connected for down, made attempts to come
// back (the one that connected included) and met kinds on the way; down and attempts are
// clamped to the bounds. Check the kinds with CheckKinds: Report keeps them as given.
func Report(down time.Duration, attempts int, kinds []string) PageFrame {
	return PageFrame{
		T:        TypeReport,
		DownMs:   uint64(min(max(down, 0), MaxReportDown).Milliseconds()),
		Attempts: uint64(min(max(attempts, 1), MaxReportAttempts)),
		Kinds:    slices.Clone(kinds),
	}
}

// Down is a report's time not connected.
func (f PageFrame) Down() time.Duration { return time.Duration(f.DownMs) * time.Millisecond }

// ErrReportKinds is wrapped by every error of CheckKinds.
var ErrReportKinds = tinyfmt.Errorf("%w: bad report kinds", ErrFrame)

// CheckKinds is the one rule for a report's kinds: 1..len(ReportKinds) of them, each one of
// ReportKinds, none twice.
func CheckKinds(kinds []string) error {
	if len(kinds) == 0 || len(kinds) > len(ReportKinds) {
		return tinyfmt.Errorf("%w: must name 1..%d kinds, got %d", ErrReportKinds, len(ReportKinds), len(kinds))
	}
	for i, k := range kinds {
		if !slices.Contains(ReportKinds[:], k) {
			return tinyfmt.Errorf("%w: unknown kind %q", ErrReportKinds, Truncate(k))
		}
		if slices.Contains(kinds[:i], k) {
			return tinyfmt.Errorf("%w: %q twice", ErrReportKinds, k)
		}
	}
	return nil
}

// checkReport checks a report frame: its bounds, its kinds, and nothing of another frame.
func (f PageFrame) checkReport() error {
	switch {
	case f.Stream != "" || f.Epoch != "" || f.After != 0:
		return tinyfmt.Errorf("%w: report carries no stream, epoch or after", ErrFrame)
	case f.Attempts == 0 || f.Attempts > MaxReportAttempts:
		return tinyfmt.Errorf("%w: report attempts must be in 1..%d, got %d", ErrFrame, MaxReportAttempts, f.Attempts)
	case f.DownMs > uint64(MaxReportDown.Milliseconds()):
		return tinyfmt.Errorf("%w: report downMs must be in 0..%d, got %d", ErrFrame, MaxReportDown.Milliseconds(), f.DownMs)
	}
	return CheckKinds(f.Kinds)
}

// appendReport encodes a report's fields after its type.
func (f PageFrame) appendReport(b []byte) []byte {
	b = strconv.AppendUint(append(b, `,"downMs":`...), f.DownMs, 10)
	b = strconv.AppendUint(append(b, `,"attempts":`...), f.Attempts, 10)
	b = append(b, `,"kinds":[`...)
	for i, k := range f.Kinds {
		if i > 0 {
			b = append(b, ',')
		}
		b = str(b, k)
	}
	return append(b, ']', '}')
}

// readKinds reads a report's kinds: an array of strings, no more than ReportKinds holds (a
// longer one is refused as soon as it is seen, without reading the rest into memory).
func readKinds(d *jsontok.Decoder, dst *[]string) error {
	if d.PeekKind() != '[' {
		return wrongKind(d, "kinds", "an array of strings")
	}
	if _, err := d.ReadToken(); err != nil {
		return frameErr(err)
	}
	// A kind that breaks a rule is read past like the others, to the array's end, so that the
	// decoder stands after the member (DecodePage reads a bad frame on for its id).
	kinds := []string{}
	var bad error
	for d.PeekKind() != ']' {
		if d.PeekKind() == 0 {
			_, err := d.ReadToken() // the end of the document, or a syntax error
			return frameErr(err)
		}
		switch {
		case bad != nil:
			_ = d.SkipValue()
		case len(kinds) == len(ReportKinds):
			bad = tinyfmt.Errorf("%w: must name 1..%d kinds, got more", ErrReportKinds, len(ReportKinds))
			_ = d.SkipValue() // not kept: a longer array is never held in memory
		case d.PeekKind() != '"':
			bad = wrongKind(d, "each of kinds", "a string")
		default:
			tok, err := d.ReadToken()
			if err != nil {
				return frameErr(err)
			}
			kinds = append(kinds, tok.String())
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return frameErr(err)
	}
	if bad != nil {
		return bad
	}
	*dst = kinds
	return nil
}

// readBool reads a boolean field; null is false.
func readBool(d *jsontok.Decoder, key string, dst *bool) error {
	switch d.PeekKind() {
	case 'n', 't', 'f':
		tok, err := d.ReadToken()
		if err != nil {
			return frameErr(err)
		}
		*dst = tok.Bool()
		return nil
	}
	return wrongKind(d, key, "a boolean")
}
