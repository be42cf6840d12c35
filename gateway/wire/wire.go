// Package wire names the parts of Lifeline's protocol that an embedder types: the value a
// delivery's data is, the kinds of failure a page reports, the page modes and carriers, the
// events endpoint's default path. A call's outcome is gateway's to name (its Call* constants,
// the strings the wire carries). Everything else of the protocol (frames, their encoding,
// refusals, limits) is internal/wire's, which this package repeats only by name: the values
// are the same, and so is the error ErrStreamName. docs/PROTOCOL.md is the protocol's account.
package wire

import (
	"time"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// RawJSON is a raw JSON value carried through unchanged (event data, baselines, replies).
type RawJSON = wire.RawJSON

// ErrStreamName is the error of a stream name outside the rules (MaxStreamName).
var ErrStreamName = wire.ErrStreamName

// MaxStreamName is the longest stream name, in bytes.
const MaxStreamName = wire.MaxStreamName

// DefaultPath is the events endpoint's path when the config names none.
const DefaultPath = wire.DefaultPath

// The kinds of failure a page reports after a reconnect (ReportKinds lists them in order).
const (
	KindClosed       = wire.KindClosed
	KindRefused      = wire.KindRefused
	KindTimeout      = wire.KindTimeout
	KindSilent       = wire.KindSilent
	KindBusy         = wire.KindBusy
	KindRestarting   = wire.KindRestarting
	KindOffline      = wire.KindOffline
	KindUnauthorized = wire.KindUnauthorized
	KindProtocol     = wire.KindProtocol
	KindHidden       = wire.KindHidden
	KindOther        = wire.KindOther
)

// ReportKinds are the kinds of failure a report counts, in the order it counts them.
var ReportKinds = wire.ReportKinds

// The page's modes, as the events URL's ModeParam names them.
const (
	ModeParam  = wire.ModeParam
	ModeShared = wire.ModeShared
	ModeInPage = wire.ModeInPage
	ModeNative = wire.ModeNative
)

// The carriers of a session (gateway.Options.Carrier, gateway.Carrier.Kind).
const (
	CarrierParam     = wire.CarrierParam
	CarrierWebSocket = wire.CarrierWebSocket
	CarrierStream    = wire.CarrierStream
	CarrierPoll      = wire.CarrierPoll
)

// MaxRetryAfter is the longest wait a Host may ask of a page (a Retry-After, a restart's
// retry-after); a longer one is taken as this.
const MaxRetryAfter = wire.MaxRetryAfter

// RestartReason is the close reason a Host that restarts sends: the page waits at least
// minWait before it comes back.
func RestartReason(minWait time.Duration) string { return wire.RestartReason(minWait) }
