//go:build !js

package hostplugin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// sessionSet is the Host's open sessions, and whether it still takes new ones: how a Host
// ends is decided here (Drain, Stop, Close) and read by every socket that arrives.
type sessionSet struct {
	mu       sync.Mutex
	all      map[*session]struct{}
	ids      map[string]*session // the same sessions, by id (the HTTP carrier's POSTs name theirs)
	draining bool                // Drain or Stop was called: no new session
	drainURI string              // Drain's uri, for sockets that arrive while draining
	stopping bool                // Stop was called: late sockets are closed with 1012, not sent away
	restart  string              // Stop's wire.RestartReason
	closed   bool                // Close was called
	idle     chan struct{}       // closed whenever all is empty
	ending   int                 // Drain and Stop calls under way
	settled  chan struct{}       // closed whenever ending is 0

	// byIdentity heads each identity's list of sessions (sessionAccess.next), for EndSessions.
	byIdentity map[string]*session
}

func (ss *sessionSet) init() {
	ss.all = map[*session]struct{}{}
	ss.ids = map[string]*session{}
	ss.idle = make(chan struct{})
	close(ss.idle)
	ss.settled = make(chan struct{})
	close(ss.settled)
}

// begin marks a Drain or Stop under way: the Host takes no more sessions. stop says it is
// Stop, with its wire.RestartReason, else it is Drain, with its uri. It returns the channel
// closed once no session is left, and the end to call when the Drain or Stop is over.
func (ss *sessionSet) begin(stop bool, drainURI, restart string) (idle <-chan struct{}, end func()) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.draining = true
	if stop {
		ss.stopping, ss.restart = true, restart
	} else {
		ss.drainURI = drainURI
	}
	if ss.ending == 0 {
		ss.settled = make(chan struct{})
	}
	ss.ending++
	return ss.idle, func() {
		ss.mu.Lock()
		defer ss.mu.Unlock()
		if ss.ending--; ss.ending == 0 {
			close(ss.settled)
		}
	}
}

// add registers s, unless the Host is draining, stopping or closed.
func (ss *sessionSet) add(s *session) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.draining || ss.closed {
		return false
	}
	if len(ss.all) == 0 {
		ss.idle = make(chan struct{})
	}
	ss.all[s] = struct{}{}
	ss.ids[s.id] = s
	ss.link(s)
	return true
}

// byID returns the session of id, or nil.
func (ss *sessionSet) byID(id string) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.ids[id]
}

// remove forgets s and reports whether it was registered.
func (ss *sessionSet) remove(s *session) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if _, ok := ss.all[s]; !ok {
		return false
	}
	delete(ss.all, s)
	delete(ss.ids, s.id)
	ss.unlink(s)
	if len(ss.all) == 0 {
		close(ss.idle)
	}
	return true
}

func (ss *sessionSet) snapshot() []*session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	list := make([]*session, 0, len(ss.all))
	for s := range ss.all {
		list = append(list, s)
	}
	return list
}

func (ss *sessionSet) count() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.all)
}

// state is the number of sessions and whether Drain or Stop was called.
func (ss *sessionSet) state() (sessions int, draining bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.all), ss.draining
}

// removeSession is the end of s: its slot goes back to admission.
func (h *Host) removeSession(s *session) {
	if h.sessions.remove(s) {
		h.adm.release()
	}
}

// Drain sends goaway with uri to every session (an empty uri asks pages to come back to the
// same place, as after a restart), waits until they have left or ctx ends (and at most the
// config's drainTimeout), then closes the rest with 1001. From then on new sockets get the same
// goaway and 1001 at once. It returns how many sessions had to be closed.
//
// Drain is for a Host whose pages have somewhere to go while it still serves them (the
// GOAWAY is make-before-break: a page keeps its session until its dial elsewhere is ready):
// a uri naming another Host, a successor that took over this listening socket (see the
// restart package), or, with an empty uri, a load balancer whose other Hosts take the pages.
// A Host with nobody in its place should call [Host.Shutdown] instead (which stops it): its
// pages' dials would only fail, and the process would wait out drainTimeout for nothing.
//
// A process on its way out calls [Host.Shutdown] after Drain: it waits for the drain to end,
// then closes the Host and shuts the http.Server down.
func (h *Host) Drain(ctx context.Context, uri string) (forced int) {
	start := time.Now()
	defer func() { h.obs.Drained(time.Since(start), forced) }()
	ctx, cancel := context.WithTimeout(ctx, h.state.Load().cfg.drainTimeout)
	defer cancel()

	// Draining first: readiness fails (Host.Readiness) before any page is sent away, so a
	// balancer stops sending pages here before they leave.
	idle, end := h.sessions.begin(false, uri, "")
	defer end()
	h.obs.Draining()

	frame := goAwayFrame(uri)
	list := h.sessions.snapshot()
	h.logger.Info("hostplugin: draining", "sessions", len(list), "uri", uri)
	h.obs.GoAway(len(list))
	for _, s := range list {
		s.goAway(frame)
	}
	select {
	case <-idle:
		return 0
	case <-ctx.Done():
	}
	// ctx is over: the close handshakes get closeWait of their own.
	return h.closeAll(context.Background(), closeWait, func(s *session) { s.closeWith(wire.CloseDrained, "drained") })
}

// Stop ends every session at once, for a Host that stops with no successor: its listener is
// closed and nobody accepts in its place, so a goaway would only send the pages to a closed
// port while the process waited out drainTimeout. Each page gets an error frame carrying
// wire.RestartReason(retryAfter) (what a browser page can read; retryAfter is the least the
// page should wait before it dials again, 0 for no minimum), then close 1012 (service
// restart) with the same reason. Sockets that arrive afterwards get the same at once. Stop
// waits for the close handshakes until ctx ends, and at most half a second (a page that
// reads answers within a round trip; a dead peer would hold each for seconds, and the page
// has what it needs once the frames are out), and returns how many sessions it closed.
// [Host.Shutdown] calls Stop(ctx, 0), then closes the Host and shuts the http.Server down: a
// process calls Stop itself only to give a retryAfter, and Shutdown after it.
//
// Stop is the choice of a supervisor's plain restart (stop, start again) and of a
// socket-activated Host under systemctl restart: the port stays open in systemd, but nobody
// accepts until this process is gone. With somewhere to send the pages, [Host.Drain] is.
func (h *Host) Stop(ctx context.Context, retryAfter time.Duration) int {
	start := time.Now()
	reason := wire.RestartReason(retryAfter)
	_, end := h.sessions.begin(true, "", reason)
	defer end()
	h.obs.Draining()
	frame := errorFrame(reason)
	n := h.closeAll(ctx, stopWait, func(s *session) { s.finish(frame, wire.CloseServiceRestart, reason) })
	h.obs.Stopped(time.Since(start), n)
	h.logger.Info("hostplugin: stopped with no successor: sessions closed with 1012", "sessions", n, "reason", reason)
	return n
}

// Shutdown ends the Host for a process that is going away, then the servers that serve it,
// in the one order that answers every page, as http.Server's Shutdown ends a server:
//
//  1. The sessions end while the servers still accept, so that a socket arriving meanwhile
//     is answered (with 1012) rather than refused. If neither Drain nor Stop was called,
//     Shutdown calls Stop(ctx, 0): every page is told the Host is restarting and comes back
//     soon. After a Drain (a successor, or other Hosts behind a load balancer, take the
//     pages) or a Stop, Shutdown waits until it has ended instead.
//  2. [Host.Close]: the Host lets go of the upgrades it holds for their slot, which a
//     server's Shutdown would wait for (it does not wait for sessions: their connections are
//     hijacked).
//  3. Each server's Shutdown, in the order given.
//
// ctx bounds the whole: once it has ended, the rest is done without waiting, and Shutdown
// returns ctx's error, with the servers' errors if they had others. It is safe to call more
// than once. A Host behind something other than an http.Server is shut down with no servers
// before that server stops.
func (h *Host) Shutdown(ctx context.Context, servers ...*http.Server) error {
	h.sessions.mu.Lock()
	told := h.sessions.draining // a Drain or Stop decides how the sessions end
	h.sessions.mu.Unlock()
	if !told {
		h.Stop(ctx, 0)
	}
	h.sessions.mu.Lock()
	settled := h.sessions.settled
	h.sessions.mu.Unlock()
	select {
	case <-settled:
	case <-ctx.Done():
	}
	_ = h.Close()
	var errs []error
	for _, srv := range servers {
		if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, ctx.Err()) {
			errs = append(errs, fmt.Errorf("hostplugin: shutting down the server of %q: %w", srv.Addr, err))
		}
	}
	if err := ctx.Err(); err != nil {
		errs = append([]error{fmt.Errorf("hostplugin: shutdown: %w", err)}, errs...)
	}
	return errors.Join(errs...)
}

// turnAway answers a socket that arrived after Drain or Stop and never became a session:
// Drain's goaway and 1001, or Stop's restart message and 1012.
func (h *Host) turnAway(conn *websocket.Conn) {
	h.sessions.mu.Lock()
	stopping, reason, uri := h.sessions.stopping, h.sessions.restart, h.sessions.drainURI
	h.sessions.mu.Unlock()
	if stopping {
		_ = writeFrame(conn, errorFrame(reason))
		_ = conn.Close(wire.CloseServiceRestart, reason)
		return
	}
	h.obs.GoAway(1)
	_ = writeFrame(conn, goAwayFrame(uri))
	_ = conn.Close(wire.CloseDrained, "drained")
}

// closeAll ends every session with end, concurrently, waiting until ctx ends and at most wait
// for the close handshakes (a dead peer would otherwise hold each for seconds).
func (h *Host) closeAll(ctx context.Context, wait time.Duration, end func(*session)) int {
	list := h.sessions.snapshot()
	var wg sync.WaitGroup
	for _, s := range list {
		wg.Go(func() { end(s) })
	}
	ended := make(chan struct{})
	go func() { wg.Wait(); close(ended) }()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ended:
	case <-t.C:
	case <-ctx.Done():
	}
	return len(list)
}

// How long Drain and Close (closeWait), and Stop (stopWait), wait for close handshakes. A
// stopping process has nothing to gain from a dead peer's answer.
const (
	closeWait = 3 * time.Second
	stopWait  = 500 * time.Millisecond
)

// Close disposes of the Host: the middleware passes pages through untouched, the events
// endpoint refuses sockets, and every session is closed with 1001. A close handshake still
// waiting for its page when Close returns is cut then. It is idempotent. A
// process that is going away calls [Host.Shutdown] instead, which first tells the pages
// where to go, and closes the Host before it shuts the server down.
func (h *Host) Close() error {
	h.closeOnce.Do(func() {
		h.sessions.mu.Lock()
		h.sessions.closed = true
		stopping := h.sessions.stopping
		h.closed.Store(true)
		h.sessions.mu.Unlock()
		close(h.done)
		h.endLife()
		// After a Stop every session is Stop's to finish (none is added once it began): a
		// close from here could overtake a finish that has not yet begun, and the page would
		// read "host closed" instead of the restart. Sessions a drain or nothing ended are
		// closed here, but for those already ending: a second close would wait for the first.
		if !stopping {
			h.closeAll(context.Background(), closeWait, func(s *session) { s.closeUnlessEnding(wire.CloseDrained, "host closed") })
		}
		if h.stopRelay != nil {
			h.stopRelay()
		}
		if h.pres != nil {
			h.pres.close() // after the sessions: the fleet is told this Host is gone
		}
		if h.acc.stopBus != nil {
			h.acc.stopBus()
		}
		close(h.released)
	})
	return nil
}
