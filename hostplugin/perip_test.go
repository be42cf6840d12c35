//go:build !js

package hostplugin_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// upgradeFrom sends an upgrade request from remote straight to the endpoint handler and
// returns the HTTP status. The limiter answers before the upgrade, so no socket is needed;
// a request it lets through fails later (400: no lifeline.v1 offered).
func upgradeFrom(f *fixture, remote string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, f.h.Config().Endpoint(), nil)
	r.RemoteAddr = remote
	r.Header.Set("Connection", "Upgrade")
	r.Header.Set("Upgrade", "websocket")
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w
}

func TestPerAddressRateRefusesASocketLoop(t *testing.T) {
	f := newFixture(t, `{"perIPRate":1,"perIPBurst":3}`, true)
	const looper, other = "203.0.113.7:40000", "198.51.100.9:40000"
	for i := range 3 {
		if w := upgradeFrom(f, looper); w.Code == http.StatusTooManyRequests {
			t.Fatalf("socket %d within the burst refused with 429", i+1)
		}
	}
	w := upgradeFrom(f, looper)
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("socket 4 from one address: status %d, want 429", w.Code)
	}
	if ra := w.Header().Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After = %q, want 1 (second)", ra)
	}
	if w := upgradeFrom(f, other); w.Code == http.StatusTooManyRequests {
		t.Errorf("another address was refused: one looping client must not limit the others")
	}
	waitFor(t, "the refusal to be logged", func() bool { return f.logs.has("per-address rate") })
}

func TestPerAddressRateExemptsLoopback(t *testing.T) {
	f := newFixture(t, `{"perIPRate":1,"perIPBurst":1}`, true)
	for _, remote := range []string{"127.0.0.1:5000", "[::1]:5000"} {
		for i := range 10 {
			if w := upgradeFrom(f, remote); w.Code == http.StatusTooManyRequests {
				t.Fatalf("%s socket %d refused: loopback (a local proxy) is exempt", remote, i+1)
			}
		}
	}
}
