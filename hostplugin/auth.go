//go:build !js

package hostplugin

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lifeline-go/lifeline/gateway/wire"
)

// Errors an [Options].Authenticate hook wraps to choose the HTTP status of its refusal.
var (
	// ErrUnauthenticated refuses a request that carries no credential, or one that is no
	// longer valid (the user must sign in): HTTP 401.
	ErrUnauthenticated = errors.New("hostplugin: unauthenticated")
	// ErrForbidden refuses a request whose credential is valid but may not connect: HTTP 403.
	// Any other error refuses with 403 too: a hook that fails for a reason of its own must
	// not let the page in, and "sign in again" would not help it.
	ErrForbidden = errors.New("hostplugin: forbidden")
)

// maxReason bounds the reason of a refusal or a denied frame, in bytes: enough for a
// sentence a user can read, too little for a dump.
const maxReason = 160

// reasonText is what a page is shown of an application's error: its first line, control
// characters replaced by spaces, valid UTF-8, at most maxReason bytes.
func reasonText(err error) string {
	s := err.Error()
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > maxReason {
		n := maxReason - len("…")
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return s
}

// refusal is the answer to a request that Authenticate did not let through.
type refusal struct {
	status int    // 401, 403 or 500
	kind   string // the body's "error": wire.RefusalUnauthorized, RefusalForbidden or RefusalInternal
	reason string // the body's "reason"
	err    error  // for the log: the hook's error, or the panic
	stack  []byte // the panic's stack, for the log only
}

// authenticate runs Options.Authenticate for r. It returns the identity, or the refusal.
// A hook that panics refuses with 500: a broken hook is a fault of the Host, not a verdict on
// the credential, so the page must not be told to sign in; it retries as from an outage.
func (h *Host) authenticate(r *http.Request) (identity string, ref *refusal) {
	if h.authn == nil {
		return "", nil
	}
	defer func() {
		if p := recover(); p != nil {
			identity = ""
			ref = &refusal{
				status: http.StatusInternalServerError, kind: wire.RefusalInternal, reason: wire.RefusalInternal,
				err: fmt.Errorf("hostplugin: Authenticate panicked: %v", p), stack: debug.Stack(),
			}
		}
	}()
	id, err := h.authn(r)
	if err == nil {
		return id, nil
	}
	ref = &refusal{status: http.StatusForbidden, kind: wire.RefusalForbidden, reason: reasonText(err), err: err}
	if errors.Is(err, ErrUnauthenticated) {
		ref.status, ref.kind = http.StatusUnauthorized, wire.RefusalUnauthorized
	}
	if ref.reason == "" {
		ref.reason = ref.kind
	}
	return "", ref
}

// authorize runs Options.Authorize for identity and stream and returns the reason of a
// refusal, or "" with true. A hook that panics refuses with "internal error": failing closed
// keeps the stream private, and the denied subscription ends visibly on the page instead of
// waiting for events that never come.
func (h *Host) authorize(s *session, stream string) (reason string, ok bool) {
	if h.authz == nil {
		return "", true
	}
	defer func() {
		if p := recover(); p != nil {
			stack := debug.Stack()
			h.logAuthPanic.Do(func() {
				h.logger.Error("hostplugin: Authorize panicked; the subscription is denied",
					"session", s.id, "stream", stream, "panic", p, "stack", string(stack))
			})
			reason, ok = "internal error", false
		}
	}()
	err := h.authz(s.identity, stream)
	if err == nil {
		return "", true
	}
	h.logDenied.Do(func() {
		h.logger.Info("hostplugin: Authorize denied a subscription", "session", s.id, "stream", stream, "err", err)
	})
	if reason = reasonText(err); reason == "" {
		reason = "denied"
	}
	return reason, false
}

func deniedFrame(stream, reason string) []byte {
	return mustEncode(wire.ServerFrame{T: wire.TypeDenied, Stream: stream, Reason: reason})
}

// refuse answers a request Authenticate refused, before any upgrade, and logs it (thinned).
func (h *Host) refuse(w http.ResponseWriter, r *http.Request, ref *refusal, probe bool) {
	if ref.stack != nil {
		h.logAuthPanic.Do(func() {
			h.logger.Error("hostplugin: Authenticate panicked; refused the request with 500",
				"remote", r.RemoteAddr, "err", ref.err, "stack", string(ref.stack))
		})
	} else if !probe {
		// A probe follows a refused upgrade, which was logged already.
		h.logAuth.Do(func() {
			h.logger.Info(fmt.Sprintf("hostplugin: refused a socket (%d): Authenticate refused the request", ref.status),
				"remote", r.RemoteAddr, "err", ref.err)
		})
	}
	writeJSON(w, ref.status, wire.Refusal{Error: ref.kind, Reason: ref.reason})
}

// writeJSON answers with the JSON body the page reads (see doc.go, "The probe").
func writeJSON(w http.ResponseWriter, status int, body wire.Refusal) {
	hd := w.Header()
	hd.Set("Content-Type", "application/json; charset=utf-8")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body.Encode(), '\n'))
}

// isUpgrade reports whether r asks for a WebSocket, as coder/websocket checks it: a
// Connection header with the token "upgrade" and an Upgrade header with "websocket".
func isUpgrade(r *http.Request) bool {
	return headerHasToken(r.Header, "Connection", "upgrade") && headerHasToken(r.Header, "Upgrade", "websocket")
}

func headerHasToken(hd http.Header, key, token string) bool {
	for _, v := range hd.Values(key) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// serveProbe answers a request for the endpoint that is not a WebSocket upgrade: the page's
// way to learn why its upgrade failed, since a browser hides the status of a refused
// handshake (doc.go, "The probe"). Its headers (CORS, no-store) are set by probeHeaders.
func (h *Host) serveProbe(w http.ResponseWriter, r *http.Request, originOK bool) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeJSON(w, http.StatusMethodNotAllowed, wire.Refusal{Error: wire.RefusalMethod})
		return
	}
	if !originOK {
		// Authenticate is never asked for a foreign origin, here as in the upgrade: its
		// answer would tell that origin whether its visitor is signed in.
		writeJSON(w, http.StatusForbidden, wire.Refusal{Error: wire.RefusalOrigin})
		return
	}
	if _, ref := h.authenticate(r); ref != nil {
		h.refuse(w, r, ref, true)
		return
	}
	w.Header().Set("Upgrade", "websocket")
	w.Header().Set("Connection", "Upgrade")
	writeJSON(w, http.StatusUpgradeRequired, wire.Refusal{Error: wire.RefusalUpgradeRequired})
}

// probeHeaders sets the headers of every answer to a probe, refusals before it included:
// never cached, and readable by a page of an allowed origin (CORS with credentials, since the
// probe carries the page's cookies). A page of another origin gets no CORS header, so its
// browser keeps the answer from it.
func probeHeaders(w http.ResponseWriter, origin string, originOK bool) {
	hd := w.Header()
	hd.Set("Cache-Control", "no-store")
	hd.Add("Vary", "Origin")
	if origin != "" && originOK {
		hd.Set("Access-Control-Allow-Origin", origin)
		hd.Set("Access-Control-Allow-Credentials", "true")
	}
}
