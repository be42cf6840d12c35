package gateway

import (
	"fmt"
	"net/http"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway/wire"
)

// UnauthorizedError is the failure of an attempt the Host refused for the page's credentials:
// HTTP 401 or 403 before the upgrade. errors.Is(err, controller.ErrUnauthorized) holds, so the
// controller shows it as [controller.Unauthorized], not as an outage.
//
// Natively the gateway reads the status from the handshake's answer. A browser hides it (the
// WebSocket API reports only a generic error), so under js/wasm a failed dial is followed by
// the probe: a plain GET of the events endpoint with the page's cookies, which the Host
// answers with the same status (hostplugin's documentation, "The probe").
type UnauthorizedError struct {
	Status int    // 401 or 403
	Reason string // the Host's reason, from its JSON body; may be empty
}

func (e *UnauthorizedError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("gateway: the host refused the page's credentials (HTTP %d)", e.Status)
	}
	return fmt.Sprintf("gateway: the host refused the page's credentials (HTTP %d): %s", e.Status, e.Reason)
}

// Is makes errors.Is(err, controller.ErrUnauthorized) hold.
func (e *UnauthorizedError) Is(target error) bool { return target == controller.ErrUnauthorized }

// refusedBy returns the *UnauthorizedError for the Host's answer status with body (at most
// wire.MaxRefusalBody bytes of it), or nil when status is not a refusal of credentials. The
// status decides, not the body: a proxy in front of the Host that asks for a credential
// refuses as surely as the Host's app, in whatever format it writes.
func refusedBy(status int, body []byte) error {
	if status != http.StatusUnauthorized && status != http.StatusForbidden {
		return nil
	}
	e := &UnauthorizedError{Status: status}
	if r, err := wire.DecodeRefusal(body); err == nil {
		e.Reason = r.Reason
	}
	return e
}
