//go:build !js

package hostplugin

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// Observer is told what a Host does, as it happens: the hooks of its operator's metrics.
// Package hostplugin/metrics implements it for Prometheus; set it as [Options].Observer.
//
// The methods are called on the Host's own paths, from many goroutines at once and some with
// a lock of the Host held: each must be safe for concurrent use, return at once, and never
// call the Host. Arguments are bounded sets (the constants below, close codes, the page modes
// of wire, registered call names): a stream name or an identity is never passed. Embed
// [NopObserver] to implement only some of the methods, and to keep compiling when Observer
// grows.
type Observer interface {
	// Upgrade: a request for a socket at the events endpoint was admitted, or refused and why.
	Upgrade(outcome Upgrade)
	// RefusalQuery: a refusal query was answered with the HTTP status.
	RefusalQuery(status int)
	// SessionOpened: a session opened for a page of mode (wire.ModeShared, wire.ModeInPage,
	// wire.ModeNative, or "" for a page that named none).
	SessionOpened(mode string)
	// SessionReady: a session was sent its ready frame.
	SessionReady(mode string)
	// SessionClosed: a session ended after lived, with close code (the Host's, else the
	// page's; 1006 for a socket that dropped without one). ready says whether it had been
	// sent its ready frame.
	SessionClosed(mode string, ready bool, code int, lived time.Duration)
	// Heartbeat: an idle session was sent a heartbeat.
	Heartbeat()
	// Probe: a page's liveness probe (its ping) was answered.
	Probe()
	// GoAway: n sessions were sent a goaway (Drain, or sockets that arrived while draining).
	GoAway(n int)
	// Subscribed: a subscription caught up (with a fresh start, from its cursor, or reset).
	Subscribed(how CatchUp)
	// Reset: n followers of a stream were reset live, since what the log delivered did not
	// follow what they held (a gap, another epoch).
	Reset(n int)
	// Denied: a subscription was denied (by Authorize, or past the session's stream limit).
	Denied()
	// Published: Publish's append to the stream log took d and failed with err (nil: the
	// event was published).
	Published(d time.Duration, err error)
	// Delivered: n event frames were queued on the sessions following a stream, live.
	Delivered(n int)
	// Shed: a session that read too slowly was shed.
	Shed()
	// BadFrame: a page sent a frame the protocol does not allow; it was answered with an
	// error frame (or a bad-request reply), or its session closed.
	BadFrame()
	// Call: a call was answered with outcome ("ok", or a failed reply's wire.Code*) after its
	// handler ran for d (0 for a call answered before any ran). name is a registered
	// handler's, "" for a name none has.
	Call(name, outcome string, d time.Duration)
	// Drained: Drain returned after d, having closed forced sessions that did not leave.
	Drained(d time.Duration, forced int)
	// Stopped: Stop returned after d, having closed n sessions.
	Stopped(d time.Duration, n int)
	// Gate: the readiness gate was set open or closed (SetReady).
	Gate(open bool)
	// Draining: Drain or Stop began: the Host takes no new session.
	Draining()
	// PageReport: a page reported what it lived through while it was not connected. r's
	// Kinds belong to the Host: read them, do not keep them.
	PageReport(r PageReport)
	// SessionCarrier: a session on carrier (wire.CarrierWebSocket, CarrierStream or
	// CarrierPoll) opened (true) or ended (false).
	SessionCarrier(carrier string, open bool)
	// Sent: n bytes of frames were written to a session on carrier.
	Sent(carrier string, n int)
}

// Upgrade is what became of a request for a socket at the events endpoint.
type Upgrade string

// The outcomes of an upgrade.
const (
	UpgradeAdmitted        Upgrade = "admitted"        // a session
	UpgradeOrigin          Upgrade = "origin"          // 1008: an origin allowedOrigins does not list
	UpgradeUnauthenticated Upgrade = "unauthenticated" // 401: Authenticate wrapped ErrUnauthenticated
	UpgradeForbidden       Upgrade = "forbidden"       // 403: Authenticate refused otherwise
	UpgradeAuthError       Upgrade = "auth_error"      // 500: Authenticate panicked
	UpgradeAddressRate     Upgrade = "address_rate"    // 429: over the per-address rate
	UpgradeSessionCap      Upgrade = "session_cap"     // 1013: at maxSessions
	UpgradeAcceptRate      Upgrade = "accept_rate"     // 1013: over the accept rate
	UpgradeDraining        Upgrade = "draining"        // turned away by a draining or stopping Host
	UpgradeBadRequest      Upgrade = "bad_request"     // 400: no lifeline.v1 subprotocol, or a failed handshake
	UpgradeLeft            Upgrade = "left"            // the page left while held for its slot, or Close released it
	UpgradeInjected        Upgrade = "injected"        // refused by fault injection (-tags lifeline_faults)
)

// Upgrades lists every Upgrade, for an Observer that counts each from the start.
var Upgrades = []Upgrade{UpgradeAdmitted, UpgradeOrigin, UpgradeUnauthenticated, UpgradeForbidden,
	UpgradeAuthError, UpgradeAddressRate, UpgradeSessionCap, UpgradeAcceptRate, UpgradeDraining,
	UpgradeBadRequest, UpgradeLeft, UpgradeInjected}

// CatchUp is how a subscription caught up with its stream: a fresh start, a resume from its
// cursor, or a reset to the log's head, and why.
type CatchUp string

// The ways a subscription catches up.
const (
	CatchUpFresh  CatchUp = "fresh"  // no cursor: a reset to the head, as every new subscription starts
	CatchUpCursor CatchUp = "cursor" // resumed from its cursor: sent what it missed, nothing twice
	ResetEpoch    CatchUp = "epoch"  // reset: its cursor is of another log epoch (the log restarted, another log)
	ResetBehind   CatchUp = "behind" // reset: its cursor is older than the log keeps
	ResetAhead    CatchUp = "ahead"  // reset: its cursor is past the log's head
)

// CatchUps lists every CatchUp.
var CatchUps = []CatchUp{CatchUpFresh, CatchUpCursor, ResetEpoch, ResetBehind, ResetAhead}

// PageReport is what a page reported of a time it was not connected (wire's report frame).
type PageReport struct {
	Mode     string        // the session's page mode, as SessionOpened has it
	Down     time.Duration // how long it was not connected
	Attempts int           // the attempts it took, the one that connected included
	Kinds    []string      // the kinds of failure on the way (wire.ReportKinds); the first ended the session
	Bytes    int           // the report frame's size
}

// NopObserver is an [Observer] that does nothing: the default, and the one to embed.
type NopObserver struct{}

func (NopObserver) Upgrade(Upgrade)                                {}
func (NopObserver) RefusalQuery(int)                               {}
func (NopObserver) SessionOpened(string)                           {}
func (NopObserver) SessionReady(string)                            {}
func (NopObserver) SessionClosed(string, bool, int, time.Duration) {}
func (NopObserver) Heartbeat()                                     {}
func (NopObserver) Probe()                                         {}
func (NopObserver) GoAway(int)                                     {}
func (NopObserver) Subscribed(CatchUp)                             {}
func (NopObserver) Reset(int)                                      {}
func (NopObserver) Denied()                                        {}
func (NopObserver) Published(time.Duration, error)                 {}
func (NopObserver) Delivered(int)                                  {}
func (NopObserver) Shed()                                          {}
func (NopObserver) BadFrame()                                      {}
func (NopObserver) Call(string, string, time.Duration)             {}
func (NopObserver) Drained(time.Duration, int)                     {}
func (NopObserver) Stopped(time.Duration, int)                     {}
func (NopObserver) Gate(bool)                                      {}
func (NopObserver) Draining()                                      {}
func (NopObserver) PageReport(PageReport)                          {}
func (NopObserver) SessionCarrier(string, bool)                    {}
func (NopObserver) Sent(string, int)                               {}

// CallOK is the outcome of a call answered with its handler's reply (Observer.Call).
const CallOK = "ok"

// catchUpOf is how a reader at from caught up, given the log's answer (head, ok).
func catchUpOf(from, head Cursor, ok bool) CatchUp {
	switch {
	case from == Cursor{}:
		return CatchUpFresh
	case ok:
		return CatchUpCursor
	case from.Epoch != head.Epoch:
		return ResetEpoch
	case from.Seq > head.Seq:
		return ResetAhead
	}
	return ResetBehind
}

// pageMode is the mode a page's events URL names, as Observer.SessionOpened has it: one of
// wire's, or "" for none (or one this Host does not know).
func pageMode(v string) string {
	switch v {
	case wire.ModeShared, wire.ModeInPage, wire.ModeNative:
		return v
	}
	return ""
}

// watch is what a session's Observer calls need of it.
type watch struct {
	mode    string
	opened  time.Time
	reports bool         // its ready frame asks for a report (the config's reports)
	code    atomic.Int32 // the code the Host closed it with; 0 until it does
	peer    int32        // how its reading ended: the page's close code, 1009, or 1006 (run goroutine)
	report  bool         // it sent its report (run goroutine)
}

// closing records that the Host closes the session with code (the first close counts).
func (w *watch) closing(code int) { w.code.CompareAndSwap(0, int32(code)) }

// ended records how the session's reading ended.
func (w *watch) ended(err error) {
	switch {
	case errors.Is(err, websocket.ErrMessageTooBig):
		w.peer = wire.CloseTooBig
	case websocket.CloseStatus(err) >= 0:
		w.peer = int32(websocket.CloseStatus(err))
	default:
		w.peer = int32(websocket.StatusAbnormalClosure)
	}
}

// closedCode is the code the session ended with: the Host's, else how its reading ended.
func (w *watch) closedCode() int {
	if c := w.code.Load(); c != 0 {
		return int(c)
	}
	if w.peer != 0 {
		return int(w.peer)
	}
	return int(websocket.StatusAbnormalClosure)
}

// observeEnd tells the Observer that s ended (from end, once).
func (s *session) observeEnd() {
	s.mu.Lock()
	ready := s.ready
	s.mu.Unlock()
	s.h.obs.SessionClosed(s.watch.mode, ready, s.watch.closedCode(), time.Since(s.watch.opened))
	s.h.obs.SessionCarrier(s.c.kind(), false)
}

// report takes a page's report frame: one a session, and only when the Host asked for it;
// any other is refused like every bad frame, and reaches no Observer.
func (s *session) report(f wire.PageFrame, size int) bool {
	switch {
	case !s.watch.reports:
		return s.badFrame("report: this Host takes no reports (its config's reports is false)", f)
	case s.watch.report:
		return s.badFrame("report: a session sends at most one", f)
	}
	s.watch.report = true
	s.h.obs.PageReport(PageReport{Mode: s.watch.mode, Down: f.Down(), Attempts: int(f.Attempts), Kinds: f.Kinds, Bytes: size})
	return true
}
