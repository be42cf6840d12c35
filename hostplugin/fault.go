//go:build !js

package hostplugin

import (
	"context"
	"errors"
	"fmt"
	"github.com/lifeline-go/lifeline/gateway/wire"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// FaultMode is a failure the events endpoint can be told to show, for demos and tests of the
// page's recovery.
type FaultMode int

const (
	// FaultNone: the endpoint works normally ("up").
	FaultNone FaultMode = iota
	// FaultRefuse: new sockets are refused with HTTP 503 before the upgrade ("refuse").
	FaultRefuse
	// FaultStallOpen: the upgrade of new sockets is held until the mode changes ("stall-open").
	FaultStallOpen
	// FaultStallReady: new sockets open but never get a ready frame, even after the mode
	// changes: each stays stalled until the page gives up on it ("stall-ready").
	FaultStallReady
	// FaultFlap: each session is dropped (no close frame) After its ready frame ("flap=<ms>").
	FaultFlap
	// FaultDrain: every session gets goaway to URI, new ones right after their ready frame
	// ("drain=<uri>").
	FaultDrain
	// FaultOverload: new sockets close with 1013 and retry-after=After ("overload=<ms>").
	FaultOverload
	// FaultOutage: the Host is gone: every session is dropped (no close frame) and new
	// sockets are refused with HTTP 503 until the mode changes ("outage"). The stream logs
	// stay, so pages resume without a gap afterwards.
	FaultOutage
)

var faultNames = [...]string{"up", "refuse", "stall-open", "stall-ready", "flap", "drain", "overload", "outage"}

func (m FaultMode) String() string {
	if m < 0 || int(m) >= len(faultNames) {
		return "FaultMode(" + strconv.Itoa(int(m)) + ")"
	}
	return faultNames[m]
}

// Fault is a [FaultMode] with its parameter. The zero Fault is "up".
type Fault struct {
	Mode  FaultMode
	After time.Duration // FaultFlap: how long after ready; FaultOverload: the retry-after
	URI   string        // FaultDrain: where pages are sent ("" = come back here)
}

// String returns the fault in the form ParseFault reads.
func (f Fault) String() string {
	switch f.Mode {
	case FaultFlap, FaultOverload:
		return f.Mode.String() + "=" + strconv.FormatInt(f.After.Milliseconds(), 10)
	case FaultDrain:
		return f.Mode.String() + "=" + f.URI
	}
	return f.Mode.String()
}

// ErrFault is wrapped by ParseFault's errors.
var ErrFault = errors.New("hostplugin: bad fault")

// ParseFault reads "up", "refuse", "stall-open", "stall-ready", "flap=<ms>", "drain=<uri>",
// "overload=<ms>" or "outage".
func ParseFault(s string) (Fault, error) {
	name, arg, hasArg := strings.Cut(strings.TrimSpace(s), "=")
	for i, n := range faultNames {
		if n != name {
			continue
		}
		f := Fault{Mode: FaultMode(i)}
		switch f.Mode {
		case FaultFlap, FaultOverload:
			ms, err := strconv.ParseInt(arg, 10, 64)
			if !hasArg || err != nil || ms < 0 || ms > 24*3600*1000 {
				return Fault{}, fmt.Errorf("%w: %s needs =<ms> with ms in 0..86400000, got %q", ErrFault, name, wire.Truncate(s))
			}
			f.After = time.Duration(ms) * time.Millisecond
		case FaultDrain:
			f.URI = arg
		default:
			if hasArg {
				return Fault{}, fmt.Errorf("%w: %s takes no argument, got %q", ErrFault, name, wire.Truncate(s))
			}
		}
		return f, nil
	}
	return Fault{}, fmt.Errorf("%w: %q is not one of up, refuse, stall-open, stall-ready, flap=<ms>, drain=<uri>, overload=<ms>, outage", ErrFault, wire.Truncate(s))
}

// faultState is the fault in force and a channel closed when it is replaced, which wakes the
// upgrades that stall-open holds.
type faultState struct {
	f       Fault
	changed chan struct{}
}

// Fault returns the fault in force.
func (h *Host) Fault() Fault { return h.fault.Load().f }

// SetFault puts the events endpoint in fault mode f. Entering flap schedules the drop of every
// ready session After from now, and leaving it cancels the drops still pending; entering drain sends goaway to every ready session; entering
// outage drops every session; leaving stall-open releases the held upgrades. Sockets opened
// during stall-ready stay without a ready frame: a stalled handshake is the page's to cancel.
func (h *Host) SetFault(f Fault) {
	old := h.fault.Swap(&faultState{f: f, changed: make(chan struct{})})
	close(old.changed)
	h.logger.Info("hostplugin: fault mode", "mode", f.String())
	if old.f.Mode == FaultFlap && f.Mode != FaultFlap {
		for _, s := range h.snapshot() {
			s.keepAlive()
		}
	}
	switch f.Mode {
	case FaultFlap:
		for _, s := range h.snapshot() {
			if s.isReady() {
				s.dropAfter(f.After)
			}
		}
	case FaultDrain:
		frame := goAwayFrame(f.URI)
		for _, s := range h.snapshot() {
			if s.isReady() {
				s.send(frame)
			}
		}
	case FaultOutage:
		for _, s := range h.snapshot() {
			_ = s.conn.CloseNow()
		}
	}
	h.openGate()
}

// waitStallOpen holds an upgrade while the fault is stall-open. It returns the fault in force
// afterwards, and false when the request is over (the client left or the Host closed).
func (h *Host) waitStallOpen(ctx context.Context) (Fault, bool) {
	for {
		fs := h.fault.Load()
		if fs.f.Mode != FaultStallOpen {
			return fs.f, true
		}
		select {
		case <-fs.changed:
		case <-ctx.Done():
			return Fault{}, false
		case <-h.done:
			return Fault{}, false
		}
	}
}

// FaultPanel returns the fault panel: GET shows the mode, POST sets it from the body or from
// ?mode=. It answers loopback clients only, and refuses cross-origin requests so that a web
// page open in the developer's browser cannot flip it.
func (h *Host) FaultPanel() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isLoopback(r.RemoteAddr) {
			http.Error(w, "hostplugin: the fault panel answers loopback clients only", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			if u, err := url.Parse(o); err != nil || !strings.EqualFold(u.Host, r.Host) {
				http.Error(w, "hostplugin: the fault panel refuses cross-origin requests", http.StatusForbidden)
				return
			}
		}
		w.Header().Set("Cache-Control", "no-store")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodPost:
			mode := r.URL.Query().Get("mode")
			if mode == "" {
				body, err := io.ReadAll(io.LimitReader(r.Body, 4096))
				if err != nil {
					http.Error(w, "hostplugin: reading the body: "+err.Error(), http.StatusBadRequest)
					return
				}
				mode = strings.TrimSpace(string(body))
				if v, ok := strings.CutPrefix(mode, "mode="); ok {
					// An HTML form posts mode=<value>, URL-encoded.
					if dec, err := url.QueryUnescape(v); err == nil {
						mode = dec
					}
				}
			}
			f, err := ParseFault(mode)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			h.SetFault(f)
		default:
			w.Header().Set("Allow", "GET, HEAD, POST")
			http.Error(w, "hostplugin: use GET or POST", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, h.Fault().String()+"\n")
	})
}

func isLoopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
