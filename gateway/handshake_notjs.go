//go:build !js

package gateway

import "net/http"

// Handshake is what native builds add to the WebSocket handshake. The browser build has none
// of it: a browser sets its own headers.
type Handshake struct {
	// Header is sent with the handshake (for example an Origin, or the Cookie a browser
	// would send). Default none.
	Header http.Header
}

func (h Handshake) clone() Handshake { return Handshake{Header: h.Header.Clone()} }
