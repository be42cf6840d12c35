//go:build !js

package gateway_test

import (
	"net/http"
	"testing"
)

func inNode() bool { return false }

// pageCredential gives the page the cookie "name=value" for the test: natively the header
// to give a gateway.
func pageCredential(_ *testing.T, cookie string) http.Header {
	return http.Header{"Cookie": {cookie}}
}
