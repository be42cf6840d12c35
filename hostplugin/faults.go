//go:build !js

package hostplugin

import (
	"errors"
	"fmt"
	"time"

	"github.com/lifeline-go/lifeline/internal/fault"
)

// Fault injection is internal (package internal/fault): only cmd/host and the tests give a
// Host fault modes. Without an injector, each check of the events endpoint is one nil test
// of h.faults.
func init() { fault.Register(installFaults) }

// installFaults attaches in to host, a *Host, and returns what the Host does when its mode
// changes.
func installFaults(host any, in *fault.Injector) (func(old, cur fault.Fault), error) {
	h, ok := host.(*Host)
	if !ok || h == nil {
		return nil, fmt.Errorf("hostplugin: fault injection needs a *hostplugin.Host, got %T", host)
	}
	if !h.faults.CompareAndSwap(nil, in) {
		return nil, errors.New("hostplugin: the Host has a fault injector already")
	}
	return h.faultChanged, nil
}

// faultChanged acts on the sessions when the fault mode changes from old to cur. Entering
// flap schedules the drop of every ready session After from now, and leaving it cancels the
// drops still pending; entering drain sends goaway to every ready session; entering outage
// drops every session. (Leaving stall-open releases the held upgrades by itself: they wait
// on the injector.)
func (h *Host) faultChanged(old, cur fault.Fault) {
	h.logger.Info("hostplugin: fault mode", "mode", cur.String())
	if old.Mode == fault.Flap && cur.Mode != fault.Flap {
		for _, s := range h.snapshot() {
			s.keepAlive()
		}
	}
	switch cur.Mode {
	case fault.Flap:
		for _, s := range h.snapshot() {
			if s.isReady() {
				s.dropAfter(cur.After)
			}
		}
	case fault.Drain:
		frame := goAwayFrame(cur.URI)
		for _, s := range h.snapshot() {
			if s.isReady() {
				s.send(frame)
			}
		}
	case fault.Outage:
		for _, s := range h.snapshot() {
			_ = s.conn.CloseNow()
		}
	}
	h.openGate()
}

// faultAtReady is what the fault mode does to a session as its ready frame is queued: flap
// schedules its drop, drain sends it away right after.
func (s *session) faultAtReady(in *fault.Injector) {
	switch f := in.Fault(); f.Mode {
	case fault.Flap:
		s.dropAfter(f.After)
	case fault.Drain:
		s.send(goAwayFrame(f.URI))
	}
}

// dropAfter ends the session abruptly after d, without a close frame, the way a crashing
// Host would.
func (s *session) dropAfter(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.flap != nil {
		s.flap.Stop()
	}
	s.flap = time.AfterFunc(d, func() { _ = s.conn.CloseNow() })
}

// keepAlive cancels a pending flap drop: once the Host is up again, up means up.
func (s *session) keepAlive() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.flap != nil {
		s.flap.Stop()
		s.flap = nil
	}
}
