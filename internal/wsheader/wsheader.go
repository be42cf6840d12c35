// Package wsheader reads the headers of a WebSocket upgrade request (RFC 6455, section 4.2.1)
// for the Host and for the test Host, which must tell an upgrade from a refusal query alike.
//
// It is the standard library only, so that test tooling (internal/test/testserver) and the
// shipped Host (hostplugin) can share it: hostplugin/internal/... is out of the test tree's
// reach.
package wsheader

import (
	"net/http"
	"strings"
)

// IsUpgrade reports whether h asks for a WebSocket, as coder/websocket checks it: a Connection
// header with the token "upgrade" and an Upgrade header with "websocket", both compared
// without regard to case.
func IsUpgrade(h http.Header) bool {
	return hasToken(h, "Connection", "upgrade", strings.EqualFold) &&
		hasToken(h, "Upgrade", "websocket", strings.EqualFold)
}

// OffersSubprotocol reports whether h lists name in Sec-WebSocket-Protocol. Subprotocol names
// are compared exactly: RFC 6455 makes them case-sensitive.
func OffersSubprotocol(h http.Header, name string) bool {
	return hasToken(h, "Sec-WebSocket-Protocol", name, func(a, b string) bool { return a == b })
}

// hasToken reports whether one of the comma-separated tokens of every key line of h matches
// token by equal.
func hasToken(h http.Header, key, token string, equal func(a, b string) bool) bool {
	for _, v := range h.Values(key) {
		for t := range strings.SplitSeq(v, ",") {
			if equal(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
