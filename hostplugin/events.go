//go:build !js

package hostplugin

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/wire"
	"github.com/lifeline-go/lifeline/internal/wsheader"
)

var acceptOptions = &websocket.AcceptOptions{
	Subprotocols: []string{wire.Subprotocol},
	// A session's writer frames its messages itself (socket.go): uncompressed, as said here.
	CompressionMode: websocket.CompressionDisabled,
	// The origin is checked after the upgrade, so that a refused page gets close code 1008
	// (which it can read) instead of an HTTP 403 (which a browser hides).
	InsecureSkipVerify: true,
}

// upgradeFault is what fault injection asks of one upgrade (faults.go, built with -tags
// lifeline_faults); the zero value, all a shipped build ever sees, asks nothing.
type upgradeFault struct {
	overload   bool          // refuse the socket with 1013 and retryAfter, taking no slot
	retryAfter time.Duration // with overload
	stallReady bool          // the session never gets its ready frame
}

// serveEvents is the events endpoint (PROTOCOL.md §2.2): it upgrades the request to a WebSocket
// session speaking lifeline.v1, or refuses it with the protocol's close codes, or before the
// upgrade with an HTTP status (429 over the per-address rate; 401 or 403 from
// Options.Authenticate). A request that is not a WebSocket upgrade is a refusal query,
// answered with a JSON body (see "The refusal query" in the package documentation).
//
// The steps, in order: the per-address rate, the refusal query, Authenticate, admission (the
// session cap and the accept rate), the upgrade, the origin, the session.
func (h *Host) serveEvents(w http.ResponseWriter, r *http.Request) {
	cfg := h.state.Load().cfg
	origin := r.Header.Get("Origin")
	originOK := originAllowed(origin, r.Host, cfg.allowedOrigins)
	query := !wsheader.IsUpgrade(r.Header)
	if query {
		refusalQueryHeaders(w, origin, originOK) // on its 429 too, and on the HTTP carrier's answers
		if r.URL.Query().Has(wire.RenewParam) {
			h.serveRenewal(w, r, cfg, originOK) // access.go
			return
		}
		if r.Method == http.MethodPost || r.URL.Query().Has(wire.CarrierParam) {
			h.serveHTTPCarrier(w, r, cfg, origin, originOK)
			return
		}
	}
	if !h.withinAddressRate(w, r, cfg) {
		if query {
			h.obs.RefusalQuery(http.StatusTooManyRequests)
		} else {
			h.obs.Upgrade(UpgradeAddressRate)
		}
		return
	}
	if query {
		h.queries.Add(1)
		if !h.faults.atQuery(w, r, h.done) {
			return
		}
		h.obs.RefusalQuery(h.serveRefusalQuery(w, r, originOK))
		return
	}

	h.accepted.Add(1)
	h.inflight.Add(1)
	defer h.inflight.Add(-1)
	id, ok := dialerOf(w, r)
	if !ok {
		h.obs.Upgrade(UpgradeBadRequest)
		return
	}
	// hr is r for the steps that may hold the upgrade (dialers.go): a newer handshake of the
	// same page cancels its context. The socket and the session use r.
	hr, settled := r, func() {}
	if id != "" {
		var ctx context.Context
		ctx, settled = h.dialers.enter(r.Context(), id)
		defer settled()
		hr = r.WithContext(ctx)
	}
	fault, ok := h.faults.atUpgrade(w, hr, h.done)
	if !ok {
		if superseded(w, hr.Context()) {
			h.obs.Upgrade(UpgradeLeft)
		} else {
			h.obs.Upgrade(UpgradeInjected)
		}
		return
	}
	if !wsheader.OffersSubprotocol(r.Header, wire.Subprotocol) {
		// Without lifeline.v1 the peer is not a Lifeline page: no frame we send means
		// anything to it.
		http.Error(w, "hostplugin: the client must offer the WebSocket subprotocol "+wire.Subprotocol, http.StatusBadRequest)
		h.obs.Upgrade(UpgradeBadRequest)
		return
	}
	acc, ok := h.authenticateUpgrade(w, hr, originOK)
	if !ok {
		return
	}
	if r.URL.Query().Has(wire.ProbeParam) {
		settled()
		h.serveProbe(w, r, origin, originOK)
		return
	}
	e, ok := h.admitUpgrade(hr.Context(), cfg, originOK, fault)
	settled()
	if !ok {
		// The page left while held for its slot (it needs no answer unless a newer attempt
		// of it took over: the browser may still wait), or Close released it.
		h.obs.Upgrade(UpgradeLeft)
		if !superseded(w, hr.Context()) && h.closed.Load() {
			http.Error(w, "hostplugin: the Host is closed", http.StatusServiceUnavailable)
		}
		return
	}

	sw := &slimWriter{ResponseWriter: w}
	conn, err := websocket.Accept(sw, r, acceptOptions)
	if err != nil {
		// Accept has answered the request (400, 426, ...).
		if e.admitted {
			h.adm.release()
		}
		h.logger.Debug("hostplugin: websocket handshake failed", "remote", r.RemoteAddr, "err", err)
		h.obs.Upgrade(UpgradeBadRequest)
		return
	}
	if !originOK {
		h.refuseOrigin(conn, r, origin)
		return
	}
	if !e.admitted {
		h.refuseEntry(conn, cfg, e)
		return
	}
	h.startSession(conn, sw.sock, r, cfg, acc, fault)
}

// refuseOrigin closes a socket from an origin that allowedOrigins does not list with 1008,
// saying why in an error frame first: the whole sentence, naming the origin, does not fit a
// close reason (123 bytes), and the page's developer must see why it never connects.
func (h *Host) refuseOrigin(conn *websocket.Conn, r *http.Request, origin string) {
	h.obs.Upgrade(UpgradeOrigin)
	h.thin.origin.Do(func() {
		h.logger.Warn("hostplugin: refused a cross-origin socket (1008); add the origin to allowedOrigins if it is yours",
			"origin", origin, "host", r.Host, "remote", r.RemoteAddr)
	})
	_ = writeFrame(conn, errorFrame(originRefusal(origin)))
	_ = conn.Close(wire.CloseOrigin, "origin not allowed")
}

// originRefusal is what a page of a refused origin is told: the origin, so that its
// developer knows what to add to allowedOrigins.
func originRefusal(origin string) string {
	return fmt.Sprintf("origin not allowed: %q is not this Host's and not in allowedOrigins", wire.Truncate(origin))
}

// startSession makes an admitted socket a session, or turns it away when the Host began to
// drain or stop meanwhile.
func (h *Host) startSession(conn *websocket.Conn, sock *socket, r *http.Request, cfg Config, acc Access, fault upgradeFault) {
	s := newSocketSession(h, conn, sock, cfg, r.RemoteAddr)
	s.identity = acc.Identity
	s.doomed = fault.stallReady
	s.watch.mode, s.watch.opened, s.watch.reports = pageMode(r.URL.Query().Get(wire.ModeParam)), time.Now(), cfg.reports
	h.prepareAccess(s, acc)
	if !h.sessions.add(s) {
		s.dropAccess()
		h.adm.release()
		h.obs.Upgrade(UpgradeDraining)
		h.turnAway(conn)
		return
	}
	h.obs.Upgrade(UpgradeAdmitted)
	h.obs.SessionOpened(s.watch.mode)
	h.obs.SessionCarrier(wire.CarrierWebSocket, true)
	h.startAccess(s, acc)
	// The session runs on its own goroutine so that this one returns and net/http frees the
	// request, its buffers and this goroutine's stack: an idle session then costs one small
	// goroutine.
	go s.run()
	if h.Ready() {
		s.sendReady()
	}
}

// slimWriter hands coder/websocket smaller buffers than net/http's 4 KiB reader and writer:
// client frames are a few hundred bytes, and the writer carries control frames only (a
// session writes its frames onto the socket, past it), so the big buffers would only cost
// ~7 KiB per idle session. Its Hijack puts the connection's socket under the writer, and
// keeps it for the session.
type slimWriter struct {
	http.ResponseWriter
	sock *socket // set by Hijack
}

const (
	slimReaderSize = 512
	// slimWriterSize holds the longest control frame whole (2 bytes of header, 125 of
	// payload), so that each reaches the socket in one Write.
	slimWriterSize = 128
)

func (w *slimWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *slimWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	var src io.Reader = c
	n := brw.Reader.Buffered()
	if n > 0 {
		// Bytes the client sent right behind its handshake.
		b, _ := brw.Reader.Peek(n)
		src = io.MultiReader(bytes.NewReader(bytes.Clone(b)), c)
	}
	br := bufio.NewReaderSize(src, max(slimReaderSize, n))
	if n > 0 {
		// coder/websocket keeps only what the reader has buffered when it takes over, so
		// the early bytes must be in the buffer, not behind it.
		_, _ = br.Peek(n)
	}
	w.sock = &socket{conn: c, br: br}
	return c, bufio.NewReadWriter(br, bufio.NewWriterSize(w.sock, slimWriterSize)), nil
}

// probeWait bounds how long a probe socket waits for the page's ping.
const probeWait = 5 * time.Second

// serveProbe answers a probe of the path (wire.ProbeParam): a page on the HTTP carrier asks
// whether a WebSocket gets through now. The socket takes no session slot and gets no ready
// frame: the page's ping is answered with a heartbeat, which proves the path both ways, and the
// socket is closed (1000). A probe from an origin not allowed is refused as a session would be.
func (h *Host) serveProbe(w http.ResponseWriter, r *http.Request, origin string, originOK bool) {
	conn, err := websocket.Accept(w, r, acceptOptions)
	if err != nil {
		h.obs.Upgrade(UpgradeBadRequest)
		return
	}
	if !originOK {
		h.refuseOrigin(conn, r, origin)
		return
	}
	h.obs.Probe()
	conn.SetReadLimit(512)
	ctx, cancel := context.WithTimeout(r.Context(), probeWait)
	defer cancel()
	typ, data, err := conn.Read(ctx)
	if err != nil {
		_ = conn.CloseNow()
		return
	}
	if f, derr := wire.DecodePage(data); typ != websocket.MessageText || derr != nil || f.T != wire.TypePing {
		_ = conn.Close(websocket.StatusPolicyViolation, "a probe is answered for its ping only")
		return
	}
	if err := writeFrame(conn, hbFrame); err != nil {
		_ = conn.CloseNow()
		return
	}
	_ = conn.Close(websocket.StatusNormalClosure, "probe")
}
