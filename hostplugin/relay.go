//go:build !js

package hostplugin

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// A Relay carries the HTTP carrier's POSTs that reach a Host other than their session's to
// that Host, so that a fleet behind a load balancer needs no sticky sessions: a page's stream
// stays on the Host that opened it, its POSTs go wherever the balancer sends them.
// hostplugin/jetstream's Relay carries them over NATS. One Host needs none.
type Relay interface {
	// Serve answers, with serve, the requests other Hosts relay to the Host named id, until
	// the returned stop is called. serve may hold a request (a long poll) until ctx ends.
	Serve(id string, serve func(ctx context.Context, req []byte) []byte) (stop func(), err error)
	// Forward relays req to the Host named id and returns its answer, or an error when no
	// Host of that name answered before ctx ended.
	Forward(ctx context.Context, id string, req []byte) ([]byte, error)
}

// relayWait bounds a relayed POST: a long poll is held maxPollHold, plus the way there and
// back.
const relayWait = maxPollHold + 5*time.Second

// sessionID names a new session of h: its Host's name, a dot, and a random part, so that any
// Host of a fleet knows where a POST for it belongs.
func (h *Host) sessionID() string { return h.id + "." + newID(12) }

// ownerOf is the name of the Host a session id belongs to ("" for none).
func ownerOf(session string) string {
	id, _, ok := strings.Cut(session, ".")
	if !ok {
		return ""
	}
	return id
}

// relayPost forwards a POST for a session of another Host of the fleet, and answers with that
// Host's answer. It reports false when the session is none of another Host's it could reach.
func (h *Host) relayPost(w http.ResponseWriter, r *http.Request, env wire.Envelope, body []byte) bool {
	owner := ownerOf(env.Session)
	if h.relay == nil || owner == "" || owner == h.id {
		return false
	}
	ctx, cancel := context.WithTimeout(r.Context(), relayWait)
	defer cancel()
	ans, err := h.relay.Forward(ctx, owner, body)
	if err != nil {
		h.thin.relay.Do(func() {
			h.logger.Warn("hostplugin: could not relay a POST to the Host of its session", "host", owner, "err", err)
		})
		return false
	}
	writeRelayed(w, ans)
	return true
}

// writeRelayed answers with what the Host of the session answered a relayed request.
func writeRelayed(w http.ResponseWriter, ans []byte) {
	status, rest, ok := bytes.Cut(ans, []byte{'\n'})
	code, err := strconv.Atoi(string(status))
	if !ok || err != nil || code < 200 || code > 599 {
		writeJSON(w, http.StatusBadGateway, wire.Refusal{Error: wire.RefusalSession, Reason: "the Host of the session answered the relay in no known form"})
		return
	}
	ctype, payload, _ := bytes.Cut(rest, []byte{'\n'})
	if len(ctype) > 0 {
		w.Header().Set("Content-Type", string(ctype))
	}
	w.WriteHeader(code)
	_, _ = w.Write(payload)
}

// serveRelayed answers a POST another Host relayed here, as if it had come here: the answer is
// its status, its content type and its body, a line each but the body.
func (h *Host) serveRelayed(ctx context.Context, req []byte) []byte {
	if rest, ok := bytes.CutPrefix(req, renewalMark); ok {
		return h.serveRelayedRenewal(rest) // access.go
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "/", bytes.NewReader(req))
	if err != nil {
		return []byte("500\n\n")
	}
	rec := &relayRecorder{header: http.Header{}}
	h.servePost(rec, r, h.state.Load().cfg, true)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	out := append(strconv.AppendInt(nil, int64(rec.status), 10), '\n')
	out = append(append(out, rec.header.Get("Content-Type")...), '\n')
	return append(out, rec.body.Bytes()...)
}

// relayRecorder is the http.ResponseWriter of a relayed POST: it keeps what servePost answers.
type relayRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (rr *relayRecorder) Header() http.Header { return rr.header }

func (rr *relayRecorder) WriteHeader(status int) {
	if rr.status == 0 {
		rr.status = status
	}
}

func (rr *relayRecorder) Write(b []byte) (int, error) {
	rr.WriteHeader(http.StatusOK)
	return rr.body.Write(b)
}

// serveRelay makes h answer what the fleet relays to it. Closing h stops it.
func (h *Host) serveRelay() error {
	if h.relay == nil {
		return nil
	}
	stop, err := h.relay.Serve(h.id, h.serveRelayed)
	if err != nil {
		return fmt.Errorf("hostplugin: serving the relay as Host %s: %w", h.id, err)
	}
	h.stopRelay = stop
	return nil
}
