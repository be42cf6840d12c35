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

// header is what the page's HTTP requests (the refusal query, the HTTP carrier) add, as the
// handshake adds it.
func (h Handshake) header() map[string][]string { return h.Header }
