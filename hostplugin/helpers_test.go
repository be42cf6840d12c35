//go:build !js

package hostplugin_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
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

// mustConfig parses a config document or fails the test.
func mustConfig(t testing.TB, doc string) hostplugin.Config {
	t.Helper()
	cfg, err := hostplugin.ParseConfig([]byte(doc))
	if err != nil {
		t.Fatalf("ParseConfig(%s): %v", doc, err)
	}
	return cfg
}

// fixture is a Host serving a tiny page and its events endpoint over loopback.
type fixture struct {
	h    *hostplugin.Host
	srv  *httptest.Server
	logs *logs
}

// newFixture starts a Host with the config document doc (ready unless the caller says
// otherwise) and tears it down with the test.
func newFixture(t testing.TB, doc string, ready bool) *fixture {
	t.Helper()
	return newFixtureWith(t, doc, ready, hostplugin.Options{})
}

// newFixtureWith is newFixture with options (hooks, a log); its Logger is always the
// fixture's, and its Authorize PublicStreams unless the test sets one.
func newFixtureWith(t testing.TB, doc string, ready bool, opts hostplugin.Options) *fixture {
	t.Helper()
	l := &logs{}
	opts.Logger = slog.New(l)
	if opts.Authorize == nil {
		opts.Authorize = hostplugin.PublicStreams
	}
	h, err := hostplugin.New(mustConfig(t, doc), &opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.SetReady(ready)
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<!doctype html><html><head><title>t</title></head><body>hi</body></html>"))
	})
	srv := httptest.NewServer(h.Handler(page))
	t.Cleanup(func() {
		_ = h.Close()
		srv.Close()
	})
	return &fixture{h: h, srv: srv, logs: l}
}

// newHost returns a Host with the config document doc whose streams are all public, and its
// logs, closed with the test.
func newHost(t testing.TB, doc string) (*hostplugin.Host, *logs) {
	t.Helper()
	l := &logs{}
	h, err := hostplugin.New(mustConfig(t, doc), &hostplugin.Options{Logger: slog.New(l), Authorize: hostplugin.PublicStreams})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h, l
}

// endpointOnly serves h's events endpoint (and its client), with no application behind it.
func endpointOnly(h *hostplugin.Host) http.Handler { return h.Handler(http.NotFoundHandler()) }

func (f *fixture) wsURL() string {
	return "ws" + strings.TrimPrefix(f.srv.URL, "http") + f.h.Config().Endpoint()
}

// client is a page's socket, driven by the test.
type client struct {
	t    testing.TB
	conn *websocket.Conn
}

// dial opens a lifeline.v1 socket to the fixture, or fails the test.
func (f *fixture) dial(t testing.TB) *client {
	t.Helper()
	c, err := f.tryDial(t, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", f.wsURL(), err)
	}
	return c
}

func (f *fixture) tryDial(t testing.TB, header http.Header) (*client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, f.wsURL(), &websocket.DialOptions{
		Subprotocols: []string{wire.Subprotocol},
		HTTPHeader:   header,
	})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	return &client{t: t, conn: conn}, nil
}

// next reads and decodes the next frame, failing the test after bound.
func (c *client) next() wire.HostFrame {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	typ, b, err := c.conn.Read(ctx)
	if err != nil {
		c.t.Fatalf("reading a frame: %v", err)
	}
	if typ != websocket.MessageText {
		c.t.Fatalf("frame type %v, want text", typ)
	}
	f, err := wire.DecodeHost(b)
	if err != nil {
		c.t.Fatalf("DecodeHost(%s): %v", b, err)
	}
	return f
}

// expect reads the next frame and checks its type.
func (c *client) expect(typ string) wire.HostFrame {
	c.t.Helper()
	f := c.next()
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

// closed reads until the socket ends and returns its close status and reason. Frames before
// the close are skipped.
func (c *client) closed() (websocket.StatusCode, string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for {
		_, _, err := c.conn.Read(ctx)
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			c.t.Fatalf("the socket did not close within %v", bound)
		}
		var ce websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code, ce.Reason
		}
		return websocket.CloseStatus(err), err.Error()
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
