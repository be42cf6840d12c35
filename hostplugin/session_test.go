//go:build !js

package hostplugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/test/wstest"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// readFrame is one frame a page read, and when, on the bubble's clock.
type readFrame struct {
	f  wire.HostFrame
	at time.Time
}

// bubblePage dials h in memory (in a synctest bubble) and returns the frames it reads, as it
// reads them, until the socket ends.
func bubblePage(t *testing.T, h *hostplugin.Host) (*websocket.Conn, <-chan readFrame) {
	t.Helper()
	conn, _, err := websocket.Dial(t.Context(), "ws://host.invalid"+wire.DefaultPath, &websocket.DialOptions{
		Subprotocols: []string{wire.Subprotocol},
		HTTPClient:   wstest.Client(endpointOnly(h)),
	})
	if err != nil {
		t.Fatal(err)
	}
	frames := make(chan readFrame, 64)
	t.Cleanup(func() {
		_ = conn.CloseNow()
		for range frames {
		}
	})
	go func() {
		defer close(frames)
		for {
			_, b, err := conn.Read(context.Background())
			if err != nil {
				return
			}
			f, err := wire.DecodeHost(b)
			if err != nil {
				t.Errorf("DecodeHost(%s): %v", b, err)
				return
			}
			frames <- readFrame{f, time.Now()}
		}
	}()
	return conn, frames
}

func TestHeartbeatsComeOnlyAfterAHeartbeatOfSilence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, err := hostplugin.New(mustConfig(t, `{"heartbeatMs":1000}`), &hostplugin.Options{
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Authorize: hostplugin.PublicStreams, NoClient: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Close() })
		h.SetReady(true)
		conn, frames := bubblePage(t, h)
		next := func(want string) readFrame {
			t.Helper()
			f, ok := <-frames
			if !ok || f.f.T != want {
				t.Fatalf("frame %+v (socket open %v), want %s", f.f, ok, want)
			}
			return f
		}
		ready := next(wire.TypeReady)
		if hb := next(wire.TypeHeartbeat); hb.at.Sub(ready.at) != time.Second {
			t.Errorf("an idle session's heartbeat came %v after its ready frame, want 1s", hb.at.Sub(ready.at))
		}
		if err := conn.Write(t.Context(), websocket.MessageText, []byte(`{"t":"sub","stream":"s"}`)); err != nil {
			t.Fatal(err)
		}
		next(wire.TypeReset)
		// Events 600 ms apart: never a second of silence, so never a heartbeat.
		var last readFrame
		for i := range 8 {
			time.Sleep(600 * time.Millisecond)
			if _, err := h.Publish(t.Context(), "s", json.RawMessage(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
			last = next(wire.TypeEvent)
		}
		if hb := next(wire.TypeHeartbeat); hb.at.Sub(last.at) != time.Second {
			t.Errorf("the heartbeat came %v after the last event, want 1s", hb.at.Sub(last.at))
		}
	})
}
