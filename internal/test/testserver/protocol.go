// Package testserver is a scriptable Lifeline Host for the gateway's tests. The server
// (native only: it listens) serves any number of isolated scenarios; the control client
// (native and js/wasm) drives one scenario over a WebSocket, so the same tests run natively
// against an in-process server and under js/wasm against one started beside Node (see
// cmd/testserver).
//
// A scenario owns named hosts, each with its events endpoint
// ws://server/s/<scenario>/<host>/_lifeline/events, a queue of per-session scripts, and
// counters; the stream logs are shared by the scenario's hosts, like a fleet sharing a log.
// The scenario ends, and every socket of it closes, when its control connection closes.
package testserver

import "github.com/lifeline-go/lifeline/internal/wire"

// ControlPath is where the control WebSocket is served.
const ControlPath = "/control"

// Step is one instruction of a session script. Steps run in order; Hold and Reject apply
// before the WebSocket is accepted. After the last step the session stays open, reading,
// until the page or the scenario closes it.
type Step struct {
	// Hold keeps the HTTP upgrade pending until Release (or the page gives up).
	Hold bool `json:"hold,omitempty"`
	// Reject answers the upgrade with this HTTP status instead.
	Reject int `json:"reject,omitempty"`
	// NoSubprotocol accepts without agreeing on lifeline.v1.
	NoSubprotocol bool `json:"noSubprotocol,omitempty"`
	// Ready sends a ready frame with HeartbeatMs (0: the scenario's heartbeat).
	Ready       bool  `json:"ready,omitempty"`
	HeartbeatMs int64 `json:"heartbeatMs,omitempty"`
	// ExpiresMs, with Ready, says the session's credential expires that long from now: the
	// ready frame carries it and a secret, and the host answers the page's renewals (POSTs
	// with wire.RenewParam) as the auth rule says, 200 with the same ExpiresMs when it lets
	// them in. The host never ends the session itself: a script does.
	ExpiresMs int64 `json:"expiresMs,omitempty"`
	// Serve answers sub and unsub from the stream logs, forwards published events and sends
	// heartbeats, in the background, from this step on.
	Serve bool `json:"serve,omitempty"`
	// Silent stops every frame the session would send (heartbeats, events) from here on.
	Silent bool `json:"silent,omitempty"`
	// Deaf stops reading too: the session neither reads nor writes (a half-open link).
	Deaf bool `json:"deaf,omitempty"`
	// NoPing answers a ping as a Host that predates the frame does: with an error frame
	// naming the unknown type, from this step on.
	NoPing bool `json:"noPing,omitempty"`
	// Send sends a raw text frame; SendBinary a binary one.
	Send       string `json:"send,omitempty"`
	SendBinary string `json:"sendBinary,omitempty"`
	// GoAway sends a goaway frame with this uri ("" is a valid uri: set GoAway to a pointer).
	GoAway *string `json:"goaway,omitempty"`
	// SleepMs waits.
	SleepMs int64 `json:"sleepMs,omitempty"`
	// Close closes the session with this code and Reason; Drop closes the TCP connection
	// without a close frame. Either comes after every frame scripted before it was written.
	Close  int    `json:"close,omitempty"`
	Reason string `json:"reason,omitempty"`
	Drop   bool   `json:"drop,omitempty"`
}

// Request is one control command.
type Request struct {
	Op string `json:"op"`
	// script: queue Sessions (one script each) on Host; Default replaces the script used
	// once the queue is empty (initially: ready, serve).
	Host     string   `json:"host,omitempty"`
	Sessions [][]Step `json:"sessions,omitempty"`
	Default  []Step   `json:"default,omitempty"`
	// config
	HeartbeatMs int64 `json:"heartbeatMs,omitempty"`
	Ring        int   `json:"ring,omitempty"`
	// publish: N events on Stream; pump: one event every EveryMs (0 stops); newEpoch.
	Stream  string `json:"stream,omitempty"`
	N       int    `json:"n,omitempty"`
	EveryMs int64  `json:"everyMs,omitempty"`
	// kick: close Host's live sessions with Code (0: drop) and Reason; goaway: send URI.
	Code   int    `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
	URI    string `json:"uri,omitempty"`
	// auth: from now on Host refuses every upgrade and every refusal query with the HTTP status Code
	// (401 or 403; 0 lets everyone in again) and the JSON refusal carrying Reason, as
	// hostplugin's Authenticate does, except requests carrying the cookie Cookie ("name=value";
	// "" refuses all). A refused upgrade runs no script. NoCORS leaves out the CORS headers a
	// cross-origin page needs to read the refusal query's answer.
	Cookie string `json:"cookie,omitempty"`
	NoCORS bool   `json:"noCors,omitempty"`
	// wait: until Field of Host compares (Cmp: "==", ">=", "<=") to Value, up to TimeoutMs.
	Field     string `json:"field,omitempty"`
	Cmp       string `json:"cmp,omitempty"`
	Value     int    `json:"value,omitempty"`
	TimeoutMs int64  `json:"timeoutMs,omitempty"`
}

// Reply answers one Request.
type Reply struct {
	Error string `json:"error,omitempty"`
	// ID names the scenario (the first message on a control connection).
	ID    string               `json:"id,omitempty"`
	Hosts map[string]HostStats `json:"hosts,omitempty"`
	// Last is each stream's last seq and Epoch its epoch.
	Last  map[string]uint64 `json:"last,omitempty"`
	Epoch map[string]string `json:"epoch,omitempty"`
}

// HostStats counts what one host saw.
type HostStats struct {
	Dials    int `json:"dials"`    // upgrade requests received
	Accepted int `json:"accepted"` // WebSockets accepted
	Live     int `json:"live"`     // WebSockets open now
	Held     int `json:"held"`     // upgrades held now
	// DialMs is when each upgrade request arrived, in ms since the scenario began.
	DialMs []int64 `json:"dialMs"`
	// Refused counts the upgrades refused by auth; RefusalQueries lists every request that
	// was no upgrade (a page asking why its upgrade failed), in order of arrival.
	Refused        int            `json:"refused"`
	RefusalQueries []RefusalQuery `json:"refusalQueries"`
	// Received is every frame the pages sent, in order of arrival.
	Received []wire.PageFrame `json:"received"`
	// Renewals lists the renewals the pages sent, in order of arrival.
	Renewals []Renewal `json:"renewals"`
}

// Renewal is one renewal a page sent: what it carried, and the status it was answered.
type Renewal struct {
	Session string `json:"session"`
	Secret  string `json:"secret"`
	Token   string `json:"token"`
	Cookie  string `json:"cookie"`
	Origin  string `json:"origin"`
	Status  int    `json:"status"`
}

// RefusalQuery is one request for the events endpoint that was no upgrade: what the page sent
// and what it was answered.
type RefusalQuery struct {
	Method string `json:"method"`
	Origin string `json:"origin"` // the Origin header: set by a browser for a cross-origin fetch
	Cookie string `json:"cookie"` // the Cookie header: the page's cookies, if it sent them
	Status int    `json:"status"`
}

// Field returns a counter by name: dials, accepted, live, held, refused, refusalQueries, received,
// renewals, subs, unsubs.
func (h HostStats) Field(name string) int {
	switch name {
	case "dials":
		return h.Dials
	case "accepted":
		return h.Accepted
	case "live":
		return h.Live
	case "held":
		return h.Held
	case "refused":
		return h.Refused
	case "refusalQueries":
		return len(h.RefusalQueries)
	case "received":
		return len(h.Received)
	case "renewals":
		return len(h.Renewals)
	case "subs", "unsubs":
		n := 0
		for _, f := range h.Received {
			if (name == "subs") == (f.T == wire.TypeSub) {
				n++
			}
		}
		return n
	}
	return -1
}

// Data is the payload of event seq, and the baseline at seq: {"v":seq}.
type Data struct {
	V uint64 `json:"v"`
}
