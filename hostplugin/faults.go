//go:build lifeline_faults && !js

package hostplugin

import (
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/lifeline-go/lifeline/internal/fault"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// Fault injection (package internal/fault), in a build with -tags lifeline_faults only:
// cmd/host -faults and the tests give a Host fault modes through hosthook.InstallFaults. The
// endpoint asks three hooks, each one nil test of the injector when none is installed:
// hostFaults.atUpgrade, session.faultAtReady and the session's fault timers; faultChanged acts
// on a change of mode. nofaults.go is the same hooks for every other build, doing nothing.

// hostFaults is a Host's fault injector, if one is installed.
type hostFaults struct {
	in atomic.Pointer[fault.Injector]
}

// sessionFault is the session's pending drop of flap mode. session.mu guards it.
type sessionFault struct{ flap *time.Timer }

func (f *sessionFault) stop() {
	if f.flap != nil {
		f.flap.Stop()
		f.flap = nil
	}
}

// installFaults gives h an injector and returns it.
func (h *Host) installFaults() (*fault.Injector, error) {
	in := fault.New(h.faultChanged)
	if !h.faults.in.CompareAndSwap(nil, in) {
		return nil, errors.New("hostplugin: the Host has a fault injector already")
	}
	return in, nil
}

// atUpgrade is what the fault mode does to an upgrade before Authenticate: stall-open holds it
// until the mode changes (false: the page left, or done closed: the Host did), refuse and
// outage answer 503 (false), overload and stall-ready are for the socket once open.
func (hf *hostFaults) atUpgrade(w http.ResponseWriter, r *http.Request, done <-chan struct{}) (upgradeFault, bool) {
	in := hf.in.Load()
	if in == nil {
		return upgradeFault{}, true
	}
	f, ok := in.Hold(r.Context(), done)
	if !ok {
		return upgradeFault{}, false
	}
	switch f.Mode {
	case fault.Refuse, fault.Outage:
		http.Error(w, "hostplugin: refused (fault injection: "+f.Mode.String()+")", http.StatusServiceUnavailable)
		return upgradeFault{}, false
	case fault.Overload:
		return upgradeFault{overload: true, retryAfter: f.After}, true
	case fault.StallReady:
		return upgradeFault{stallReady: true}, true
	}
	return upgradeFault{}, true
}

// atQuery is what the fault mode does to a refusal query, as it would to the upgrade the page
// asks about: a Host in an outage, refusing or stalled answers a plain GET no better than a
// socket (it reports false when it has answered, or the page left); a Host that stalls its
// ready frames is one whose gate is shut.
func (hf *hostFaults) atQuery(w http.ResponseWriter, r *http.Request, done <-chan struct{}) bool {
	in := hf.in.Load()
	if in == nil {
		return true
	}
	f, ok := in.Hold(r.Context(), done)
	if !ok {
		return false
	}
	switch f.Mode {
	case fault.Refuse, fault.Outage:
		http.Error(w, "hostplugin: refused (fault injection: "+f.Mode.String()+")", http.StatusServiceUnavailable)
		return false
	case fault.StallReady:
		writeJSON(w, http.StatusServiceUnavailable, wire.Refusal{Error: wire.RefusalNotReady})
		return false
	}
	return true
}

// faultAtReady is what the fault mode does to a session as its ready frame is queued: flap
// schedules its drop, drain sends it away right after.
func (s *session) faultAtReady() {
	in := s.h.faults.in.Load()
	if in == nil {
		return
	}
	switch f := in.Fault(); f.Mode {
	case fault.Flap:
		s.dropAfter(f.After)
	case fault.Drain:
		s.h.obs.GoAway(1)
		s.send(goAwayFrame(f.URI))
	}
}

// faultChanged acts on the sessions when the fault mode changes from old to cur. Entering
// flap schedules the drop of every ready session After from now, and leaving it cancels the
// drops still pending; entering drain sends goaway to every ready session; entering outage
// drops every session. (Leaving stall-open releases the held upgrades by itself: they wait
// on the injector.)
func (h *Host) faultChanged(old, cur fault.Fault) {
	h.logger.Info("hostplugin: fault mode", "mode", cur.String())
	if old.Mode == fault.Flap && cur.Mode != fault.Flap {
		for _, s := range h.sessions.snapshot() {
			s.keepAlive()
		}
	}
	switch cur.Mode {
	case fault.Flap:
		for _, s := range h.sessions.snapshot() {
			if s.isReady() {
				s.dropAfter(cur.After)
			}
		}
	case fault.Drain:
		frame := goAwayFrame(cur.URI)
		for _, s := range h.sessions.snapshot() {
			if s.isReady() {
				h.obs.GoAway(1)
				s.send(frame)
			}
		}
	case fault.Outage:
		for _, s := range h.sessions.snapshot() {
			s.c.drop()
		}
	}
	h.openGate()
}

func (s *session) isReady() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready
}

// dropAfter ends the session abruptly after d, without a close frame, the way a crashing
// Host would.
func (s *session) dropAfter(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.fault.stop()
	s.fault.flap = time.AfterFunc(d, s.c.drop)
}

// keepAlive cancels a pending flap drop: once the Host is up again, up means up.
func (s *session) keepAlive() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault.stop()
}
