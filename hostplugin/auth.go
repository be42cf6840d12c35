//go:build !js

package hostplugin

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lifeline-go/lifeline/internal/wire"
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

// authenticateUpgrade runs Options.Authenticate (or Access) for an upgrade from an allowed
// origin and returns what it said, or answers the refusal and returns false. A refused origin
// is refused after the upgrade, whatever its credential: were Authenticate asked, how the
// handshake fails would tell that origin whether its visitor is signed in.
func (h *Host) authenticateUpgrade(w http.ResponseWriter, r *http.Request, originOK bool) (Access, bool) {
	if !originOK {
		return Access{}, true
	}
	acc, ref := h.authenticate(r)
	if ref != nil && superseded(w, r.Context()) {
		// The hook saw the page's newer attempt cancel this one: no verdict on the page.
		h.obs.Upgrade(UpgradeLeft)
		return Access{}, false
	}
	if ref != nil {
		h.obs.Upgrade(ref.upgrade())
		h.refuse(w, r, ref, false)
		return Access{}, false
	}
	return acc, true
}

// authenticate runs Options.Authenticate (or Access) for r. It returns what the hook said, or
// the refusal. A hook that panics refuses with 500: a broken hook is a fault of the Host, not
// a verdict on the credential, so the page must not be told to sign in; it retries as from an
// outage.
func (h *Host) authenticate(r *http.Request) (acc Access, ref *refusal) {
	if h.authn == nil && h.acc.fn == nil {
		return Access{}, nil
	}
	defer func() {
		if p := recover(); p != nil {
			acc = Access{}
			ref = &refusal{
				status: http.StatusInternalServerError, kind: wire.RefusalInternal, reason: wire.RefusalInternal,
				err: fmt.Errorf("hostplugin: Authenticate panicked: %v", p), stack: debug.Stack(),
			}
		}
	}()
	ends := h.acc.count.Load() // before the hook: an end after this may have missed its answer
	acc, err := h.callAccess(r)
	if err == nil && !acc.Until.IsZero() && !time.Now().Before(acc.Until) {
		err = errExpired
	}
	if err == nil {
		acc.ends = ends
		return acc, nil
	}
	ref = &refusal{status: http.StatusForbidden, kind: wire.RefusalForbidden, reason: reasonText(err), err: err}
	if errors.Is(err, ErrUnauthenticated) {
		ref.status, ref.kind = http.StatusUnauthorized, wire.RefusalUnauthorized
	}
	if ref.reason == "" {
		ref.reason = ref.kind
	}
	return Access{}, ref
}

// authorize runs Options.Authorize for identity and stream and returns the reason of a
// refusal, or "" with true. A hook that panics refuses with "internal error": failing closed
// keeps the stream private, and the denied subscription ends visibly on the page instead of
// waiting for events that never come.
func (h *Host) authorize(s *session, stream string) (reason string, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			stack := debug.Stack()
			h.thin.authPanic.Do(func() {
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
	h.thin.denied.Do(func() {
		h.logger.Info("hostplugin: Authorize denied a subscription", "session", s.id, "stream", stream, "err", err)
	})
	if reason = reasonText(err); reason == "" {
		reason = "denied"
	}
	return reason, false
}

func deniedFrame(stream, reason string) message {
	return mustEncode(wire.HostFrame{T: wire.TypeDenied, Stream: stream, Reason: reason})
}
