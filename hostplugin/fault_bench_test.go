//go:build !js

package hostplugin_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// benchConfig lifts every limit a benchmark loop would hit: the accept rate, the session cap
// and the per-address rate.
const benchConfig = `{"maxSessions":10000000,"acceptRate":1000000,"acceptBurst":1000000,"perIPRate":1000000,"perIPBurst":1000000}`

// faultCases are a production Host (no fault injector: what an embedder runs) and, in a build
// with -tags lifeline_faults, a Host with an injector in mode "up" (cmd/host -faults): the
// fault checks must cost the first nothing.
var faultCases = append([]faultCase{{name: "no fault injector"}}, injectorCases...)

type faultCase struct {
	name    string
	install func(testing.TB, *hostplugin.Host) // nil: none
}

// BenchmarkEndpointUntilUpgrade runs the events endpoint in process, without a network, up to
// where the fault checks end: an upgrade request that does not offer lifeline.v1 is counted,
// passes the per-address rate and the fault checks, and is answered 400.
func BenchmarkEndpointUntilUpgrade(b *testing.B) {
	for _, bc := range faultCases {
		b.Run(bc.name, func(b *testing.B) {
			h, _ := newHost(b, benchConfig)
			if bc.install != nil {
				bc.install(b, h)
			}
			h.SetReady(true)
			req := httptest.NewRequest(http.MethodGet, hostplugin.DefaultEndpoint, nil)
			req.RemoteAddr = "192.0.2.1:5000"
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "websocket")
			w := &discard{h: http.Header{}}
			handler := endpointOnly(h)
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				handler.ServeHTTP(w, req)
			}
		})
	}
}

// BenchmarkSessionOpen opens a session over loopback, reads its ready frame and closes it:
// the whole path the fault checks sit on (the endpoint and the ready frame).
func BenchmarkSessionOpen(b *testing.B) {
	for _, bc := range faultCases {
		b.Run(bc.name, func(b *testing.B) {
			f := newFixture(b, benchConfig, true)
			if bc.install != nil {
				bc.install(b, f.H)
			}
			opts := &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}}
			b.ReportAllocs()
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				c, _, err := websocket.Dial(ctx, f.WSURL(), opts)
				if err != nil {
					b.Fatalf("dial: %v", err)
				}
				if _, msg, err := c.Read(ctx); err != nil || !strings.Contains(string(msg), `"t":"ready"`) {
					b.Fatalf("first frame %s, %v; want ready", msg, err)
				}
				_ = c.CloseNow()
				cancel()
			}
			b.StopTimer()
			waitFor(b, "the sessions to end", func() bool { return f.H.Sessions() == 0 })
		})
	}
}
