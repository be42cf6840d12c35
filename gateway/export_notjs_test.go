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
