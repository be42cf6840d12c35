//go:build js

package gateway

// Handshake is empty in the browser, which sets the WebSocket handshake's headers itself (its
// cookies, its Origin) and lets no page add any.
type Handshake struct{}

func (h Handshake) clone() Handshake { return h }

// header is what the page's HTTP requests add: nothing, in a browser.
func (Handshake) header() map[string][]string { return nil }
