//go:build js

package gateway_test

import (
	"strings"
	"syscall/js"
	"testing"

	"github.com/lifeline-go/lifeline/gateway"
)

// inNode reports whether the test runs in Node rather than in a browser page.
func inNode() bool { return js.Global().Get("document").IsUndefined() }

// pageCredential gives the page the cookie "name=value" for the test: in the browser a
// cookie of the test page, which the browser adds to its dials and probes of the test Host
// (another port of the same host: another origin, the same site), and refusal queries; it
// returns the handshake to give a gateway, which has nothing to add here.
func pageCredential(t *testing.T, cookie string) gateway.Handshake {
	t.Helper()
	doc := js.Global().Get("document")
	doc.Set("cookie", cookie+"; path=/")
	name, _, _ := strings.Cut(cookie, "=")
	t.Cleanup(func() { doc.Set("cookie", name+"=; path=/; max-age=0") })
	return gateway.Handshake{}
}

// browserChecks: the browser build always checks the Host before it dials a WebSocket again.
func browserChecks(*testing.T) {}
