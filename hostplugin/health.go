//go:build !js

package hostplugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// What load balancers and Kubernetes probes ask of a Host: liveness (the process serves) and
// readiness (send it pages).

// LogChecker is implemented by a [StreamLog] that can tell whether it can serve now
// (hostplugin/jetstream's Log: its NATS connection is up). A Host whose log implements it is
// not ready while the check fails: it could only tell pages that the log is unavailable.
type LogChecker interface {
	// CheckLog returns nil while the log can serve, or why it cannot. It answers at once,
	// from what the log knows (no round trip): readiness probes call it often.
	CheckLog() error
}

// Why a Host is not ready ([Host.Readiness]).
var (
	// ErrGateClosed: SetReady(true) was not called, or SetReady(false) since.
	ErrGateClosed = errors.New("hostplugin: the readiness gate is closed")
	// ErrDraining: Drain or Stop was called; the Host takes no new session.
	ErrDraining = errors.New("hostplugin: the Host is draining")
	// ErrLogUnavailable wraps the error of a stream log's CheckLog.
	ErrLogUnavailable = errors.New("hostplugin: the stream log is unavailable")
)

// Readiness returns nil while the Host should be sent pages: the readiness gate is open, it
// is not draining, stopping or closed, and its stream log, if it is a [LogChecker], can serve.
// Otherwise it says why (ErrGateClosed, ErrDraining, ErrClosed, ErrLogUnavailable). Drain
// and Stop make it fail before they send any page away, so that a balancer that asks stops
// sending pages here before they leave.
func (h *Host) Readiness() error {
	_, draining := h.sessions.state()
	switch {
	case h.closed.Load():
		return ErrClosed
	case draining:
		return ErrDraining
	case !h.Ready():
		return ErrGateClosed
	}
	if lc, ok := h.log.(LogChecker); ok {
		if err := lc.CheckLog(); err != nil {
			return fmt.Errorf("%w: %w", ErrLogUnavailable, err)
		}
	}
	return nil
}

// LivenessHandler answers every request with 200 {"live":true}: the process serves HTTP. Mount
// it where a liveness probe asks (cmd/host: /_lifeline/live); a Host that stops answering it
// is to be restarted. It says nothing of readiness: a draining Host is alive.
func (h *Host) LivenessHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeHealth(w, http.StatusOK, map[string]any{"live": true})
	})
}

// ReadinessHandler answers 200 {"ready":true} while [Host.Readiness] is nil, else 503
// {"ready":false,"reason":"…"}. Mount it where a load balancer's health check or a readiness
// probe asks (cmd/host: /_lifeline/ready).
func (h *Host) ReadinessHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.Readiness(); err != nil {
			writeHealth(w, http.StatusServiceUnavailable, map[string]any{"ready": false, "reason": err.Error()})
			return
		}
		writeHealth(w, http.StatusOK, map[string]any{"ready": true})
	})
}

func writeHealth(w http.ResponseWriter, status int, body map[string]any) {
	hd := w.Header()
	hd.Set("Content-Type", "application/json; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
