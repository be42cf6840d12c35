//go:build !js

package hostplugin_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/hostplugin"
)

// Moments of the per-address tables: pd is the interval of their rate, 10 per second.
const pd = 100 * time.Millisecond

var (
	p1 = t0.Add(1 * pd)
	p2 = t0.Add(2 * pd)
	p9 = t0.Add(9 * pd)
)

const looper, other = "203.0.113.7", "198.51.100.9"

type socket struct {
	at   time.Time
	addr string
	ok   bool
	wait time.Duration // refused: how long the address must wait
}

func runPerIP(t *testing.T, p *hostplugin.PerIP, sockets []socket) {
	t.Helper()
	for i, s := range sockets {
		wait, ok := p.Allow(s.addr, s.at)
		if ok != s.ok || wait != s.wait {
			t.Errorf("step %d: Allow(%s, %s) = %v, %v; want %v, %v", i, s.addr, since(s.at), wait, ok, s.wait, s.ok)
		}
	}
}

func TestPerIPIsATokenBucketPerAddress(t *testing.T) {
	// 10 per second, burst 3.
	runPerIP(t, hostplugin.NewPerIP(10, 3), []socket{
		{at: t0, addr: looper, ok: true},
		{at: t0, addr: looper, ok: true},
		{at: t0, addr: looper, ok: true},
		{at: t0, addr: looper, wait: pd}, // over the burst
		{at: t0, addr: other, ok: true},  // another address has its own bucket
		{at: t0, addr: looper, wait: pd}, // a refusal took no token: still one interval
		{at: p1, addr: looper, ok: true}, // one token back
		{at: p1, addr: looper, wait: pd}, // and spent
		{at: p1.Add(pd / 2), addr: looper, wait: pd / 2},
		{at: p2, addr: looper, ok: true},
		{at: p9, addr: looper, ok: true}, // the bucket holds no more than its burst
		{at: p9, addr: looper, ok: true},
		{at: p9, addr: looper, ok: true},
		{at: p9, addr: looper, wait: pd},
		{at: p9, addr: "2001:db8::7", ok: true}, // IPv6 alike
		{at: p9, addr: "2001:db8::7", ok: true},
		{at: p9, addr: "2001:db8::7", ok: true},
		{at: p9, addr: "2001:db8::7", wait: pd},
	})
}

func TestPerIPForgetsAnAddressIdleForAMinute(t *testing.T) {
	p := hostplugin.NewPerIP(1, 1)
	runPerIP(t, p, []socket{
		{at: t0, addr: looper, ok: true},
		{at: t0, addr: other, ok: true},
		{at: t0.Add(30 * time.Second), addr: other, ok: true},
	})
	if n := p.Tracked(); n != 2 {
		t.Fatalf("%d addresses tracked, want 2", n)
	}
	// The sweep at t0+61s drops looper (idle 61 s), keeps other (31 s): looper's bucket was
	// full again long before, so forgetting it changes no answer.
	runPerIP(t, p, []socket{{at: t0.Add(61 * time.Second), addr: "192.0.2.1", ok: true}})
	if n := p.Tracked(); n != 2 {
		t.Errorf("%d addresses tracked after the sweep, want 2 (other and 192.0.2.1)", n)
	}
	runPerIP(t, p, []socket{
		{at: t0.Add(61 * time.Second), addr: looper, ok: true},
		{at: t0.Add(61 * time.Second), addr: looper, wait: time.Second},
	})
}

// upgradeFrom sends an upgrade request from remote, with X-Forwarded-For lines xff, straight
// to the endpoint handler. The limiter answers before the upgrade, so no socket is needed; a
// request it lets through fails later (400: no lifeline.v1 offered).
func upgradeFrom(f *fixture, remote string, xff ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, f.h.Config().Endpoint(), nil)
	r.RemoteAddr = remote
	r.Header.Set("Connection", "Upgrade")
	r.Header.Set("Upgrade", "websocket")
	for _, v := range xff {
		r.Header.Add("X-Forwarded-For", v)
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w
}

func TestPerAddressRateRefusesASocketLoop(t *testing.T) {
	f := newFixture(t, `{"perIPRate":1,"perIPBurst":3}`, true)
	for i := range 3 {
		if w := upgradeFrom(f, looper+":40000"); w.Code == http.StatusTooManyRequests {
			t.Fatalf("socket %d within the burst refused with 429", i+1)
		}
	}
	w := upgradeFrom(f, looper+":40000")
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("socket 4 from one address: status %d, want 429", w.Code)
	}
	if ra := w.Header().Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After = %q, want 1 (second)", ra)
	}
	if w := upgradeFrom(f, other+":40000"); w.Code == http.StatusTooManyRequests {
		t.Errorf("another address was refused: one looping client must not limit the others")
	}
	waitFor(t, "the refusal to be logged", func() bool { return f.logs.Has("per-address rate", "client="+looper) })
}

// TestPerAddressRateBehindTrustedProxies is the wiring of the trusted proxies (the rule's
// cases are in clientaddr_test.go): with burst 1, a second socket from the same client is
// refused and one from another client is not.
func TestPerAddressRateBehindTrustedProxies(t *testing.T) {
	tests := []struct {
		name    string
		config  string
		remote  string
		xff     [2]string // the X-Forwarded-For of the first socket, and of the second
		refused bool      // the second socket
	}{
		{name: "a local proxy's clients are limited one by one",
			remote: "127.0.0.1:5000", xff: [2]string{looper, looper}, refused: true},
		{name: "a local proxy's other client is not limited by the first",
			remote: "127.0.0.1:5000", xff: [2]string{looper, other}},
		{name: "a local proxy that names no client is not limited (one loopback address for many clients)",
			remote: "[::1]:5000"},
		{name: "an untrusted peer cannot pick its address with X-Forwarded-For",
			remote: looper + ":5000", xff: [2]string{"192.0.2.1", "192.0.2.2"}, refused: true},
		{name: "a configured proxy's clients are limited one by one",
			config: `"trustedProxies":["10.0.0.0/8"],`, remote: "10.1.2.3:5000", xff: [2]string{looper, looper}, refused: true},
		{name: "trusting no proxy limits loopback like any address",
			config: `"trustedProxies":[],`, remote: "127.0.0.1:5000", xff: [2]string{looper, other}, refused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, `{`+tt.config+`"perIPRate":1,"perIPBurst":1}`, true)
			var codes [2]int
			for i, xff := range tt.xff {
				var lines []string
				if xff != "" {
					lines = append(lines, xff)
				}
				codes[i] = upgradeFrom(f, tt.remote, lines...).Code
			}
			if codes[0] == http.StatusTooManyRequests {
				t.Fatalf("the first socket was refused with 429")
			}
			if refused := codes[1] == http.StatusTooManyRequests; refused != tt.refused {
				t.Errorf("second socket: status %d, want refused %v", codes[1], tt.refused)
			}
		})
	}
}
