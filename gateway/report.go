package gateway

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/internal/weburl"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// What the Host is told of the page (PROTOCOL.md §10): its mode, on the URL of every dial,
// and after each reconnect a report of what it lived through while not connected, gathered
// from the controller's statuses (the gateway is a controller.StatusObserver) and sent on the
// session that ended it, once that session's ready frame asked for one.

// Kind names the kind of an error for a person, in the words of a report (wire.KindClosed and
// the others): "timeout" (the Host did not answer in time), "refused" (it could not be
// reached), "busy" (it is overloaded), "protocol" (it broke the protocol), "unauthorized" (it
// refused the page's credentials), "restarting" (it is restarting), "silent" (the link went
// silent), "closed" (the connection was closed or dropped), "offline", "other"; "" for no
// error.
func Kind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, controller.ErrUnauthorized):
		return wire.KindUnauthorized
	case errors.Is(err, controller.ErrHostRestarting):
		return wire.KindRestarting
	case errors.Is(err, ErrOverloaded):
		return wire.KindBusy
	case errors.Is(err, controller.ErrDeadline):
		return wire.KindTimeout
	case errors.Is(err, ErrProtocol):
		return wire.KindProtocol
	case errors.Is(err, ErrLinkDead):
		return wire.KindSilent
	case errors.Is(err, ErrDial):
		return wire.KindRefused
	case errors.Is(err, controller.ErrOffline):
		return wire.KindOffline
	case errors.Is(err, ErrSessionClosed), errors.Is(err, controller.ErrEnded):
		return wire.KindClosed
	}
	return wire.KindOther
}

// ObserveStatus implements controller.StatusObserver: the controller calls it with every
// status. A status that ends a time not connected queues its report on the session that
// connected.
func (g *Gateway) ObserveStatus(st controller.Status) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f, ok := g.outages.observe(st)
	if !ok {
		return
	}
	for s := range g.sessions {
		if s.gen.Number() == st.Attempt {
			s.report = &f
			s.kickWriter()
			return
		}
	}
	// That session has ended already: its report goes with it.
}

// SetHidden tells the gateway whether the page is hidden (a background tab, a frozen page, a
// machine asleep): a report of a time not connected during which it was names "hidden", since
// a hidden page's timers are held back and its outages last longer than the Host's.
func (g *Gateway) SetHidden(hidden bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.outages.setHidden(hidden)
}

// takeReport returns the report frame s is to send now, if any: once it is ready, and only
// if its Host asked for reports (else the report is dropped).
func (g *Gateway) takeReport(s *session) []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.report == nil || !s.ready {
		return nil
	}
	f := *s.report
	s.report = nil
	if !s.reportOK {
		return nil
	}
	b, _ := f.Encode()
	return b
}

// dialURL is the URL a session dials: its target, with the page's mode when it has one and
// the gateway's dialer (wire.DialerParam), by which the Host ends a handshake of this gateway
// that the browser could not.
func (g *Gateway) dialURL(target *weburl.URL) string {
	u := *target
	if g.mode != "" {
		u.RawQuery = addParam(u.RawQuery, wire.ModeParam, g.mode)
	}
	u.RawQuery = addParam(u.RawQuery, wire.DialerParam, g.dialer)
	return u.String()
}

// addParam appends name=value to the query q.
func addParam(q, name, value string) string {
	if q != "" {
		q += "&"
	}
	return q + name + "=" + weburl.QueryEscape(value)
}

// newDialer is the gateway's dialer id: the one the page's loader gave the socket it opened
// while the wasm loaded (earlyDialer), so that the Host ends that socket's handshake too when
// this gateway dials again, or 128 random bits.
func newDialer() string {
	if id := earlyDialer(); wire.CheckDialer(id) == nil {
		return id
	}
	const hex = "0123456789abcdef"
	b := make([]byte, 0, 32)
	for range 2 {
		r := rand.Uint64()
		for range 16 {
			b = append(b, hex[r&15])
			r >>= 4
		}
	}
	return string(b)
}

// outageRecord gathers, status by status, what the page lives through from the loss of a
// connected session to the ready frame of the next (an outage; its report is sent on the new
// session): how long, the attempts, the kinds of failure. A Stop ends the record (the
// application stopped the connection: no failure), and a first connection ends no outage. It is plain logic over statuses; the gateway's mu guards it.
type outageRecord struct {
	connected bool    // the last status was Connected
	down      *outage // since a connected session was lost; nil when none
	hidden    bool    // the page is hidden
}

type outage struct {
	since   time.Time
	base    uint64 // the attempt number before the outage's first attempt
	kinds   []string
	lastErr error
}

func (r *outageRecord) setHidden(hidden bool) {
	r.hidden = hidden
	if hidden && r.down != nil {
		r.down.add(wire.KindHidden)
	}
}

// observe takes the next status and returns the report of the outage it ends, if it ends one.
func (r *outageRecord) observe(st controller.Status) (wire.PageFrame, bool) {
	switch st.State {
	case controller.Connected:
		d := r.down
		r.connected, r.down = true, nil
		if d == nil {
			return wire.PageFrame{}, false
		}
		return wire.Report(st.At.Sub(d.since), int(st.Attempt-d.base), d.kinds), true
	case controller.Stopped, controller.Idle:
		r.connected, r.down = false, nil
		return wire.PageFrame{}, false
	}
	if r.connected {
		// The session was lost. Its successor may be dialing already (Connecting): that
		// attempt is the outage's first.
		base := st.Attempt
		if st.State == controller.Connecting {
			base--
		}
		r.connected, r.down = false, &outage{since: st.At, base: base}
		if st.Err == nil && st.State != controller.Offline {
			r.down.add(wire.KindOther) // replaced at the page's request (ReconnectNow)
		}
	}
	d := r.down
	if d == nil {
		return wire.PageFrame{}, false // not connected yet: a first connection ends no outage
	}
	if st.State == controller.Offline {
		d.add(wire.KindOffline)
	}
	if st.Err != nil && st.Err != d.lastErr {
		d.lastErr = st.Err
		d.add(Kind(st.Err))
	}
	if r.hidden {
		d.add(wire.KindHidden)
	}
	return wire.PageFrame{}, false
}

// add records kind, once.
func (d *outage) add(kind string) {
	for _, k := range d.kinds {
		if k == kind {
			return
		}
	}
	d.kinds = append(d.kinds, kind)
}
