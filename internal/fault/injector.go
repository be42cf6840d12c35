//go:build !js

package fault

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
)

// Injector holds the fault mode of one Host and tells the Host of every change. Its zero
// value is not usable: call [Install] (or [New], for an injector attached to no Host). It is
// safe for concurrent use.
type Injector struct {
	cur      atomic.Pointer[state]
	onChange func(old, cur Fault) // the Host's reaction; nil for an injector of no Host
}

// state is the fault in force and a channel closed when it is replaced, which wakes the
// upgrades that stall-open holds.
type state struct {
	f       Fault
	changed chan struct{}
}

// New returns an injector in mode "up", attached to no Host: its panel and Set work, and
// nothing acts on them.
func New() *Injector {
	in := &Injector{}
	in.cur.Store(&state{changed: make(chan struct{})})
	return in
}

// attach gives host an injector: it is package hostplugin's, set by [Register].
var attach func(host any, in *Injector) (onChange func(old, cur Fault), err error)

// Register is called by package hostplugin, once, in its init: fn attaches an injector to a
// *hostplugin.Host (whose type this package cannot name without an import cycle) and returns
// what the Host does when the mode changes.
func Register(fn func(host any, in *Injector) (onChange func(old, cur Fault), err error)) {
	attach = fn
}

// Install gives host, a *hostplugin.Host, fault modes, in mode "up", before it serves. A
// Host takes one injector only.
func Install(host any) (*Injector, error) {
	if attach == nil {
		return nil, fmt.Errorf("fault: cannot install on a %T: package hostplugin is not linked", host)
	}
	in := New()
	onChange, err := attach(host, in)
	if err != nil {
		return nil, err
	}
	in.onChange = onChange
	return in, nil
}

// Fault returns the fault in force.
func (in *Injector) Fault() Fault { return in.cur.Load().f }

// Set puts the Host in fault mode f. What the Host does on entering and leaving each mode
// is the Host's (see hostplugin's Host.faultChanged): entering flap schedules the drop of
// every ready session, leaving it cancels the drops still pending; entering drain sends
// goaway to every ready session; entering outage drops every session; leaving stall-open
// releases the held upgrades. Sockets opened during stall-ready stay without a ready frame: a
// stalled handshake is the page's to cancel.
func (in *Injector) Set(f Fault) {
	old := in.cur.Swap(&state{f: f, changed: make(chan struct{})})
	close(old.changed)
	if in.onChange != nil {
		in.onChange(old.f, f)
	}
}

// Hold holds an upgrade while the mode is stall-open. It returns the fault in force
// afterwards, and false when the request is over first (ctx ended, or done was closed: the
// Host closed).
func (in *Injector) Hold(ctx context.Context, done <-chan struct{}) (Fault, bool) {
	for {
		st := in.cur.Load()
		if st.f.Mode != StallOpen {
			return st.f, true
		}
		select {
		case <-st.changed:
		case <-ctx.Done():
			return Fault{}, false
		case <-done:
			return Fault{}, false
		}
	}
}

// Panel returns the fault panel: GET shows the mode, POST sets it from the body or from
// ?mode=. It answers loopback clients only, and refuses cross-origin requests so that a web
// page open in the developer's browser cannot flip it.
func (in *Injector) Panel() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isLoopback(r.RemoteAddr) {
			http.Error(w, "fault: the fault panel answers loopback clients only", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			if u, err := url.Parse(o); err != nil || !strings.EqualFold(u.Host, r.Host) {
				http.Error(w, "fault: the fault panel refuses cross-origin requests", http.StatusForbidden)
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
					http.Error(w, "fault: reading the body: "+err.Error(), http.StatusBadRequest)
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
			f, err := Parse(mode)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			in.Set(f)
		default:
			w.Header().Set("Allow", "GET, HEAD, POST")
			http.Error(w, "fault: use GET or POST", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, in.Fault().String()+"\n")
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
