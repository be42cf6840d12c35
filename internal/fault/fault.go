//go:build !js

package fault

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// Mode is a failure the events endpoint can be told to show.
type Mode int

const (
	// None: the endpoint works normally ("up").
	None Mode = iota
	// Refuse: new sockets are refused with HTTP 503 before the upgrade ("refuse").
	Refuse
	// StallOpen: the upgrade of new sockets is held until the mode changes ("stall-open").
	StallOpen
	// StallReady: new sockets open but never get a ready frame, even after the mode
	// changes: each stays stalled until the page gives up on it ("stall-ready").
	StallReady
	// Flap: each session is dropped (no close frame) After its ready frame ("flap=<ms>").
	Flap
	// Drain: every session gets goaway to URI, new ones right after their ready frame
	// ("drain=<uri>").
	Drain
	// Overload: new sockets close with 1013 and retry-after=After ("overload=<ms>").
	Overload
	// Outage: the Host is gone: every session is dropped (no close frame) and new sockets
	// are refused with HTTP 503 until the mode changes ("outage"). The stream logs stay, so
	// pages resume without a gap afterwards.
	Outage
)

var names = [...]string{"up", "refuse", "stall-open", "stall-ready", "flap", "drain", "overload", "outage"}

func (m Mode) String() string {
	if m < 0 || int(m) >= len(names) {
		return "Mode(" + strconv.Itoa(int(m)) + ")"
	}
	return names[m]
}

// Fault is a [Mode] with its parameter. The zero Fault is "up".
type Fault struct {
	Mode  Mode
	After time.Duration // Flap: how long after ready; Overload: the retry-after
	URI   string        // Drain: where pages are sent ("" = come back here)
}

// String returns the fault in the form Parse reads.
func (f Fault) String() string {
	switch f.Mode {
	case Flap, Overload:
		return f.Mode.String() + "=" + strconv.FormatInt(f.After.Milliseconds(), 10)
	case Drain:
		return f.Mode.String() + "=" + f.URI
	}
	return f.Mode.String()
}

// ErrInvalid is wrapped by Parse's errors.
var ErrInvalid = errors.New("fault: invalid fault mode")

// Parse reads "up", "refuse", "stall-open", "stall-ready", "flap=<ms>", "drain=<uri>",
// "overload=<ms>" or "outage".
func Parse(s string) (Fault, error) {
	name, arg, hasArg := strings.Cut(strings.TrimSpace(s), "=")
	for i, n := range names {
		if n != name {
			continue
		}
		f := Fault{Mode: Mode(i)}
		switch f.Mode {
		case Flap, Overload:
			ms, err := strconv.ParseInt(arg, 10, 64)
			if !hasArg || err != nil || ms < 0 || ms > 24*3600*1000 {
				return Fault{}, fmt.Errorf("%w: %s needs =<ms> with ms in 0..86400000, got %q", ErrInvalid, name, wire.Truncate(s))
			}
			f.After = time.Duration(ms) * time.Millisecond
		case Drain:
			f.URI = arg
		default:
			if hasArg {
				return Fault{}, fmt.Errorf("%w: %s takes no argument, got %q", ErrInvalid, name, wire.Truncate(s))
			}
		}
		return f, nil
	}
	return Fault{}, fmt.Errorf("%w: %q is not one of up, refuse, stall-open, stall-ready, flap=<ms>, drain=<uri>, overload=<ms>, outage", ErrInvalid, wire.Truncate(s))
}
