//go:build !js

package gateway_test

import (
	"net/http"
	"testing"

	"github.com/lifeline-go/lifeline/gateway"
)

func inNode() bool { return false }

// pageCredential gives the page the cookie "name=value" for the test: natively the
// handshake header to give a gateway.
func pageCredential(_ *testing.T, cookie string) gateway.Handshake {
	return gateway.Handshake{Header: http.Header{"Cookie": {cookie}}}
}

// browserChecks makes the gateway check the Host before it dials a WebSocket again after a
// failure, as the browser build always does, until t ends.
func browserChecks(t *testing.T) { gateway.CheckBeforeRedial(t) }
