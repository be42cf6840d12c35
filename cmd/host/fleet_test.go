//go:build !js

package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/test/testbed"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// freePort is a loopback address nothing listens on, never one handed out before in this
// process (testbed.FreePort says why that matters).
func freePort(t *testing.T) string {
	t.Helper()
	addr, err := testbed.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func subscribe(t *testing.T, c *websocket.Conn, stream string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, fmt.Appendf(nil, `{"t":"sub","stream":%q}`, stream)); err != nil {
		t.Fatal(err)
	}
}

// Two Hosts on one JetStream (embedded in the first) publish one tick per second between
// them, with n equal to the shared seq; each says who it is in health and on the host stream.
func TestTwoHostsShareTicksThroughEmbeddedNATS(t *testing.T) {
	natsAddr := freePort(t)
	a := startHost(t, "-web", webDir(t), "-id", "h1", "-nats-embedded", t.TempDir(), "-nats-addr", natsAddr)
	b := startHost(t, "-web", webDir(t), "-id", "h2", "-nats", "nats://"+natsAddr)

	resp, body := b.get("/_lifeline/health", nil)
	var st struct {
		Host string
		Log  struct {
			Backend   string
			Connected bool
		}
	}
	if err := json.Unmarshal(body, &st); err != nil || resp.StatusCode != 200 || st.Host != "h2" || st.Log.Backend != "jetstream" || !st.Log.Connected {
		t.Fatalf("health of h2 = %d %s, want 200 with host h2 and a connected jetstream log", resp.StatusCode, body)
	}

	c := b.dial()
	if f := next(t, c); f.T != wire.TypeReady {
		t.Fatalf("first frame %+v", f)
	}
	subscribe(t, c, "host")
	if f := next(t, c); f.T != wire.TypeReset || string(f.Baseline) != `{"host":"h2"}` {
		t.Fatalf("host stream on h2 = %+v %s, want a reset with baseline {\"host\":\"h2\"}", f, f.Baseline)
	}
	subscribe(t, c, "ticks")
	reset := next(t, c)
	for reset.T != wire.TypeReset || reset.Stream != "ticks" {
		reset = next(t, c)
	}
	// Before the first tick the stream does not exist yet: its birth is one more reset.
	if reset.Seq == 0 {
		if reset = next(t, c); reset.T != wire.TypeReset {
			t.Fatalf("first tick of an unborn stream = %+v, want a reset", reset)
		}
	}
	start := time.Now()
	for want := reset.Seq + 1; want <= reset.Seq+3; want++ {
		ev := next(t, c)
		var tick struct{ N int64 }
		if err := json.Unmarshal(ev.Data, &tick); err != nil || ev.T != wire.TypeEvent || ev.Seq != want || uint64(tick.N) != want {
			t.Fatalf("event %+v %s, want tick n=%d", ev, ev.Data, want)
		}
	}
	// Two publishers, one tick per second: 3 ticks take about 3 s, not 1.5.
	if d := time.Since(start); d < 1500*time.Millisecond {
		t.Fatalf("3 ticks in %v: both Hosts' ticks landed", d)
	}
	_ = a
}
