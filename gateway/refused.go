package gateway

import (
	"bytes"
	"strconv"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/internal/tinyfmt"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// UnauthorizedError is the failure of an attempt the Host refused for the page's credentials:
// HTTP 401 or 403 before the upgrade. errors.Is(err, controller.ErrUnauthorized) holds, so the
// controller shows it as [controller.Unauthorized], not as an outage.
//
// Natively the gateway reads the status from the handshake's answer. A browser hides it (the
// WebSocket API reports only a generic error), so under js/wasm a failed dial is followed by
// the refusal query: a plain GET of the events endpoint with the page's cookies, which the Host
// answers with the same status (PROTOCOL.md §2.4).
type UnauthorizedError struct {
	Status int    // 401 or 403
	Reason string // the Host's reason, from its JSON body; may be empty
}

func (e *UnauthorizedError) Error() string {
	if e.Reason == "" {
		return tinyfmt.Sprintf("gateway: the host refused the page's credentials (HTTP %d)", e.Status)
	}
	return tinyfmt.Sprintf("gateway: the host refused the page's credentials (HTTP %d): %s", e.Status, e.Reason)
}

// Is makes errors.Is(err, controller.ErrUnauthorized) hold.
func (e *UnauthorizedError) Is(target error) bool { return target == controller.ErrUnauthorized }

// refusedBy returns what the Host's answer status with body (at most wire.MaxRefusalBody
// bytes of it) says of a refused upgrade: an *UnauthorizedError for 401 and 403, a
// *controller.RetryAfterError wrapping ErrOverloaded for 429 (the per-address rate: the wait
// from the body, else the Retry-After header's seconds, else none), or nil for any other
// status. The status decides, not the body: a proxy in front of the Host that asks for a
// credential refuses as surely as the Host's app, in whatever format it writes.
func refusedBy(status int, retryAfter string, body []byte) error {
	if status == 429 {
		err := tinyfmt.Errorf("%w: HTTP 429, too many sockets from this address", ErrOverloaded)
		wait := time.Duration(0)
		if r, derr := wire.DecodeRefusal(body); derr == nil && r.RetryAfterMs > 0 {
			wait = time.Duration(r.RetryAfterMs) * time.Millisecond
		} else if s, perr := strconv.Atoi(retryAfter); perr == nil && s > 0 {
			wait = time.Duration(s) * time.Second
		}
		if wait == 0 {
			return err
		}
		return &controller.RetryAfterError{After: wait, Err: err}
	}
	if status != 401 && status != 403 {
		return nil
	}
	e := &UnauthorizedError{Status: status}
	if r, err := wire.DecodeRefusal(body); err == nil {
		e.Reason = r.Reason
	}
	return e
}

// isRefusalBody reports whether body is a Lifeline Host's refusal (wire.Refusal) of the page's
// credential.
func isRefusalBody(body []byte) bool {
	r, err := wire.DecodeRefusal(bytes.TrimSpace(body))
	return err == nil && (r.Error == wire.RefusalUnauthorized || r.Error == wire.RefusalForbidden)
}
