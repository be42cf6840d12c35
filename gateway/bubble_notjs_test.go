//go:build !js

package gateway_test

import (
	"testing"
	"testing/synctest"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/internal/test/testserver"
	"github.com/lifeline-go/lifeline/internal/test/wstest"
)

// memoryURL is the base URL of a bubble's Host: any host will do, nothing leaves memory.
const memoryURL = "ws://testserver.invalid"

// inBubble runs f in a testing/synctest bubble with a test Host of its own, served in memory
// (internal/test/wstest): the Host, the gateway and its controller share the bubble's fake
// clock, so the seconds a test waits for heartbeats, probes, deadlines and backoff cost no
// real time, and the durations it measures are exact. The bubble also fails the test if a
// goroutine outlives it. Under js/wasm (bubble_js_test.go) f runs as it is, on the real
// clock against LIFELINE_TEST_SERVER.
//
// Tests whose point is the real network (coder/websocket over TCP, dropped connections,
// refused upgrades, data across many reconnects) stay on the in-process loopback Host.
func inBubble(t *testing.T, f func(t *testing.T)) {
	synctest.Test(t, func(t *testing.T) {
		host := testserver.New()
		client := wstest.Client(host)
		gateway.UseHandshakeClient(t, client)
		url, dial := serverURL, serverDial
		serverURL, serverDial = memoryURL, &websocket.DialOptions{HTTPClient: client}
		t.Cleanup(func() {
			host.Close()
			serverURL, serverDial = url, dial
		})
		f(t)
	})
}
