//go:build !js

package hostplugin

import (
	"fmt"
	"net/http"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// A browser does not tell a page the HTTP status of a refused WebSocket handshake, so after a
// failed dial the page asks: the refusal query, a plain GET of the events endpoint (doc.go,
// "The refusal query"). Both the upgrade and the query are refused with the same answers,
// written here.

// refusal is the answer to a request that Authenticate did not let through.
type refusal struct {
	status int    // 401, 403 or 500
	kind   string // the body's "error": wire.RefusalUnauthorized, RefusalForbidden or RefusalInternal
	reason string // the body's "reason"
	err    error  // for the log: the hook's error, or the panic
	stack  []byte // the panic's stack, for the log only
}

// upgrade is what the refusal makes of an upgrade, as an Observer is told.
func (ref *refusal) upgrade() Upgrade {
	switch ref.status {
	case http.StatusUnauthorized:
		return UpgradeUnauthenticated
	case http.StatusInternalServerError:
		return UpgradeAuthError
	}
	return UpgradeForbidden
}

// refuse answers a request Authenticate refused, before any upgrade, and logs it (thinned).
func (h *Host) refuse(w http.ResponseWriter, r *http.Request, ref *refusal, query bool) {
	if ref.stack != nil {
		h.thin.authPanic.Do(func() {
			h.logger.Error("hostplugin: Authenticate panicked; refused the request with 500",
				"remote", r.RemoteAddr, "err", ref.err, "stack", string(ref.stack))
		})
	} else if !query {
		// A refusal query follows a refused upgrade, which was logged already.
		h.thin.auth.Do(func() {
			h.logger.Info(fmt.Sprintf("hostplugin: refused a socket (%d): Authenticate refused the request", ref.status),
				"remote", r.RemoteAddr, "err", ref.err)
		})
	}
	writeJSON(w, ref.status, wire.Refusal{Error: ref.kind, Reason: ref.reason})
}

// writeJSON answers with the JSON body the page reads (see doc.go, "The refusal query").
func writeJSON(w http.ResponseWriter, status int, body wire.Refusal) {
	hd := w.Header()
	hd.Set("Content-Type", "application/json; charset=utf-8")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body.Encode(), '\n'))
}

// serveRefusalQuery answers a request for the endpoint that is not a WebSocket upgrade: the
// page's way to learn why its upgrade failed, since a browser hides the status of a refused
// handshake (doc.go, "The refusal query"). Its headers (CORS, no-store) are set by
// refusalQueryHeaders. It returns the status it answered with.
func (h *Host) serveRefusalQuery(w http.ResponseWriter, r *http.Request, originOK bool) int {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeJSON(w, http.StatusMethodNotAllowed, wire.Refusal{Error: wire.RefusalMethod})
		return http.StatusMethodNotAllowed
	}
	if !originOK {
		// Authenticate is never asked for a foreign origin, here as in the upgrade: its
		// answer would tell that origin whether its visitor is signed in.
		writeJSON(w, http.StatusForbidden, wire.Refusal{Error: wire.RefusalOrigin})
		return http.StatusForbidden
	}
	if _, ref := h.authenticate(r); ref != nil {
		h.refuse(w, r, ref, true)
		return ref.status
	}
	if !h.Ready() {
		// A socket opens here but gets no ready frame until the gate opens: the page must not
		// take that silence for a network that blocks WebSockets (PROTOCOL.md §11.3).
		writeJSON(w, http.StatusServiceUnavailable, wire.Refusal{Error: wire.RefusalNotReady})
		return http.StatusServiceUnavailable
	}
	w.Header().Set("Upgrade", "websocket")
	w.Header().Set("Connection", "Upgrade")
	writeJSON(w, http.StatusUpgradeRequired, wire.Refusal{Error: wire.RefusalUpgradeRequired, Carriers: httpCarriers})
	return http.StatusUpgradeRequired
}

// httpCarriers are the HTTP carriers a Host has, named in its 426.
var httpCarriers = []string{wire.CarrierStream, wire.CarrierPoll}

// refusalQueryHeaders sets the headers of every answer to a refusal query, refusals before it
// included: never cached, and readable by a page of an allowed origin (CORS with credentials,
// since the query carries the page's cookies). A page of another origin gets no CORS header,
// so its browser keeps the answer from it.
func refusalQueryHeaders(w http.ResponseWriter, origin string, originOK bool) {
	hd := w.Header()
	hd.Set("Cache-Control", "no-store")
	hd.Add("Vary", "Origin")
	if origin != "" && originOK {
		hd.Set("Access-Control-Allow-Origin", origin)
		hd.Set("Access-Control-Allow-Credentials", "true")
	}
}
