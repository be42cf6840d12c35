//go:build !js

package main_test

import (
	"context"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// call sends one call frame and returns the reply to it.
func call(t *testing.T, c *websocket.Conn, frame string) wire.HostFrame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		t.Fatal(err)
	}
	f := next(t, c)
	if f.T != wire.TypeReply {
		t.Fatalf("after %s: frame %+v, want a reply", frame, f)
	}
	return f
}

// Two Hosts on one JetStream announce one dedup epoch, the bucket's: a keyed fleet.call
// re-sent to the other Host gets the first Host's reply, and runs only there.
func TestHostsOnJetStreamShareTheCallDedupStore(t *testing.T) {
	natsAddr := freePort(t)
	a := startHost(t, "-web", webDir(t), "-id", "h1", "-nats-embedded", t.TempDir(), "-nats-addr", natsAddr)
	b := startHost(t, "-web", webDir(t), "-id", "h2", "-nats", "nats://"+natsAddr)
	ca, cb := a.dial(), b.dial()
	ra, rb := next(t, ca), next(t, cb)
	if ra.T != wire.TypeReady || ra.Dedup == "" || rb.Dedup != ra.Dedup {
		t.Fatalf("ready frames %+v and %+v, want one dedup epoch, not empty", ra, rb)
	}

	const keyed = `{"t":"call","id":1,"name":"fleet.call","key":"order-1","data":{"id":"one"}}`
	for _, c := range []struct {
		conn *websocket.Conn
		on   string
	}{{ca, "h1"}, {cb, "h2"}} {
		if r := call(t, c.conn, keyed); r.ID != 1 || string(r.Data) != `{"host":"h1","id":"one"}` {
			t.Errorf("keyed call on %s: %+v %s, want h1's reply", c.on, r, r.Data)
		}
	}
	// An unkeyed call on each Host after the keyed ones: a Host logs a run before it replies,
	// but its output reaches the test through a pipe that may lag the socket, so each Host's
	// later run says that every run of the keyed call before it is in the output.
	if r := call(t, ca, `{"t":"call","id":2,"name":"fleet.call","data":{"id":"after"}}`); string(r.Data) != `{"host":"h1","id":"after"}` {
		t.Errorf("unkeyed call on h1: %+v %s, want h1's reply", r, r.Data)
	}
	if r := call(t, cb, `{"t":"call","id":2,"name":"fleet.call","data":{"id":"two"}}`); string(r.Data) != `{"host":"h2","id":"two"}` {
		t.Errorf("unkeyed call on h2: %+v %s, want h2's reply", r, r.Data)
	}
	a.waitLog(`msg="host: fleet.call ran" id=after`)
	b.waitLog(`msg="host: fleet.call ran" id=two`)
	if n := strings.Count(a.out.String(), `msg="host: fleet.call ran" id=one`); n != 1 {
		t.Errorf("h1 logged %d runs of the keyed call, want 1:\n%s", n, a.out)
	}
	if strings.Contains(b.out.String(), `fleet.call ran" id=one`) {
		t.Errorf("h2 ran the keyed call that h1 ran:\n%s", b.out)
	}
	if r := call(t, cb, `{"t":"call","id":3,"name":"fleet.call","data":{"id":"", "holdMs":5}}`); r.Code != wire.CodeApp || !strings.Contains(r.Error, "fleet.call takes") {
		t.Errorf("fleet.call without an id: %+v, want an app error saying what it takes", r)
	}
}
