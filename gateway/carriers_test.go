package gateway_test

// The HTTP carrier through the browser's own fetch (and net/http natively), against the test
// server's real Host behind each middlebox (testserver.PathURL).

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/internal/test/testserver"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// carriers records what Options.OnCarrier was told.
type carriers struct {
	mu  sync.Mutex
	got []gateway.Carrier
}

func (c *carriers) on(k gateway.Carrier) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, k)
}

func (c *carriers) all() []gateway.Carrier {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]gateway.Carrier(nil), c.got...)
}

func (c *carriers) last() gateway.Carrier {
	all := c.all()
	if len(all) == 0 {
		return gateway.Carrier{}
	}
	return all[len(all)-1]
}

// wait waits until the last carrier told is of kind (OnCarrier runs on the session's reading
// goroutine, as its ready frame comes), and returns it.
func (c *carriers) wait(t *testing.T, kind string) gateway.Carrier {
	t.Helper()
	deadline := time.Now().Add(bound)
	for c.last().Kind != kind {
		if time.Now().After(deadline) {
			t.Fatalf("carrier %+v after %v, want %s", c.last(), bound, kind)
		}
		time.Sleep(time.Millisecond)
	}
	return c.last()
}

// carrierRecovery leaves a carrier the time to fall back within one attempt.
func carrierRecovery() controller.Recovery {
	return controller.Recovery{DeadlineMs: new(5000.0), InitialDelayMs: new(20.0), MaxDelayMs: new(200.0), StableAfterMs: new(0.0)}
}

func TestEveryBlockedPathConnectsAndCarriesStreamsAndCalls(t *testing.T) {
	if serverURL == "" {
		t.Skip("no test server: set " + testserver.EnvServer)
	}
	for _, tc := range []struct {
		mode, want string
	}{
		{"strip-upgrade", wire.CarrierStream},
		{"refuse-403", wire.CarrierStream},
		{"close-at-once", wire.CarrierStream},
		{"silent", wire.CarrierStream},
		{"buffer", wire.CarrierPoll},
		{"open", wire.CarrierWebSocket},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			var cs carriers
			var r *rig
			var toldAt []controller.State // the controller's state each time a carrier was told
			on := func(k gateway.Carrier) {
				cs.mu.Lock()
				toldAt = append(toldAt, r.ctl.Status().State)
				cs.mu.Unlock()
				cs.on(k)
			}
			r = newRig(t, testserver.PathURL(serverURL, tc.mode), carrierRecovery(),
				&gateway.Options{FallbackAfter: 500 * time.Millisecond, UpgradeAfter: time.Hour, OnCarrier: on})
			rec := newRecorder()
			r.gw.Subscribe(testserver.TicksStream, rec.handle)
			r.ctl.Start()
			if st := r.waitConnected(); st.Attempt != 1 {
				t.Errorf("connected at attempt %d, want the first", st.Attempt)
			}
			if got := cs.wait(t, tc.want); got.Blocked != (tc.want != wire.CarrierWebSocket) {
				t.Fatalf("carrier %+v, want %s", got, tc.want)
			}
			// The carrier is told before the controller says connected, so that the status
			// saying connected can say what carries it.
			cs.mu.Lock()
			if toldAt[0] == controller.Connected {
				t.Errorf("the carrier was told after the controller said connected")
			}
			cs.mu.Unlock()
			ds := rec.waitFor(t, "ten ticks", func(ds []gateway.Delivery) bool { return len(ds) > 10 })
			checkStream(t, ds)
			key := fmt.Sprintf("k-%d", rand.Uint64())
			for i := range 2 {
				out, err := r.gw.Call(context.Background(), testserver.CountCall, nil, gateway.CallOptions{Key: key})
				if err != nil || string(out) != "1" {
					t.Fatalf("call %d with key %s: %s, %v; want the first run's answer", i, key, out, err)
				}
			}
		})
	}
}
