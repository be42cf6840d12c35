//go:build !js

package jetstream_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/gateway/wire"
	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/test/testlog"
)

// bound is the longest any test waits for something that should happen.
const bound = 5 * time.Second

// logs records a Host's log lines for assertions.
type logs = testlog.Recorder

// fixture is a Host on a stream log, serving its events endpoint over loopback.
type fixture struct {
	h    *hostplugin.Host
	srv  *httptest.Server
	logs *logs
}

// client is a page's socket, driven by the test.
type client struct {
	t    testing.TB
	conn *websocket.Conn
}

// dial opens a lifeline.v1 socket to the fixture, or fails the test.
func (f *fixture) dial(t testing.TB) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	url := "ws" + strings.TrimPrefix(f.srv.URL, "http") + f.h.Config().Endpoint()
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	return &client{t: t, conn: conn}
}

// expect reads the next frame and checks its type, failing the test after bound.
func (c *client) expect(typ string) wire.HostFrame {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	_, b, err := c.conn.Read(ctx)
	if err != nil {
		c.t.Fatalf("reading a frame: %v", err)
	}
	f, err := wire.DecodeHost(b)
	if err != nil {
		c.t.Fatalf("DecodeHost(%s): %v", b, err)
	}
	if f.T != typ {
		c.t.Fatalf("frame %+v, want type %q", f, typ)
	}
	return f
}

// send writes one text frame.
func (c *client) send(frame string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := c.conn.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		c.t.Fatalf("writing %s: %v", frame, err)
	}
}

// waitFor polls cond until it holds, failing the test after bound.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", bound, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
