package controller

import "time"

// State is where a [Controller] stands. Slow is a flag of Connecting, not a State.
type State int

const (
	// Idle: created, never started.
	Idle State = iota
	// Connecting: a handshake is in flight.
	Connecting
	// Connected: a generation said ready and has not ended.
	Connected
	// Reconnecting: waiting for the next attempt; Status.NextAttempt says when it is due.
	Reconnecting
	// Offline: suspended because the browser is offline; no attempt and no timer until online.
	Offline
	// Stopped: Stop was called; nothing runs until Start.
	Stopped
	// Unauthorized: waiting for the next attempt after the Host refused the page's
	// credentials (an error wrapping ErrUnauthorized). Attempts go on, at the top cap only;
	// Status.NextAttempt says when.
	Unauthorized
)

var stateNames = [...]string{"idle", "connecting", "connected", "reconnecting", "offline", "stopped", "unauthorized"}

// String returns the lower-case name used on the wire and in the page's data-state.
func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return "invalid"
	}
	return stateNames[s]
}

// Status is one observable state of a [Controller], as delivered to Options.OnChange.
type Status struct {
	State State
	// Slow is set while Connecting once the handshake has been pending for SlowAfter.
	Slow bool
	// Attempt is the number of the current or last generation: 1 for the first attempt ever
	// made by this controller, and increasing by one with every attempt.
	Attempt uint64
	// Failures is the ladder position: consecutive failures since the last stable generation
	// (or ReconnectNow, or online, or Start).
	Failures int
	// NextAttempt is when the next attempt is due, set while Reconnecting or Unauthorized.
	NextAttempt time.Time
	// Err is the last failure; nil once a generation is ready.
	Err error
	// At is when the controller published this status: the moment the state changed, which
	// an observer further down (a page, over a message port) may learn of later.
	At time.Time
}

// equal reports whether two statuses say the same (At aside). Errors compare by identity: a
// new failure is a new status even when its message is the same.
func (s Status) equal(o Status) bool {
	return s.State == o.State && s.Slow == o.Slow && s.Attempt == o.Attempt &&
		s.Failures == o.Failures && s.NextAttempt.Equal(o.NextAttempt) && s.Err == o.Err
}
