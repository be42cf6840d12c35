//go:build !js

package fault

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
)

// Injector holds the fault mode of one Host and tells the Host of every change. Make one
// with [New]. It is safe for concurrent use.
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

// New returns an injector in mode "up" that calls onChange at every change of mode, with the
// mode before and the mode after: what the Host does about it (hostplugin's faultChanged).
// With a nil onChange the panel and Set work and nothing acts on them.
func New(onChange func(old, cur Fault)) *Injector {
	in := &Injector{onChange: onChange}
	in.cur.Store(&state{changed: make(chan struct{})})
	return in
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
	return LocalOnly("the fault panel", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	}))
}

// LocalOnly is the guard of every tooling endpoint of a Host (the fault panel, the soak's
// ledger): it answers loopback clients only, and refuses cross-origin requests, so that a web
// page open in the developer's browser cannot reach it; what names the endpoint in the refusals.
func LocalOnly(what string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isLoopback(r.RemoteAddr) {
			http.Error(w, "fault: "+what+" answers loopback clients only", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			if u, err := url.Parse(o); err != nil || !strings.EqualFold(u.Host, r.Host) {
				http.Error(w, "fault: "+what+" refuses cross-origin requests", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
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
