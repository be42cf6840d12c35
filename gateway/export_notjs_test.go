//go:build !js

package gateway

import (
	"net/http"
	"testing"
)

// UseHandshakeClient makes every native dial's handshake go through c until t ends: an
// in-memory transport, so that a Host and the gateway run in one synctest bubble.
func UseHandshakeClient(t testing.TB, c *http.Client) {
	old := handshakeClient
	handshakeClient = c
	t.Cleanup(func() { handshakeClient = old })
}

// CheckBeforeRedial turns on, until t ends, what the browser build always does: a WebSocket
// is checked with the refusal query before it is dialed again after a failure.
func CheckBeforeRedial(t testing.TB) {
	old := checkBeforeRedial
	checkBeforeRedial = true
	t.Cleanup(func() { checkBeforeRedial = old })
}
