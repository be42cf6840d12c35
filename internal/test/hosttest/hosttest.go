//go:build !js

// Package hosttest serves a Host over loopback and drives pages' sockets against it, for the
// tests of hostplugin and of the packages that plug into it (jetstream, metrics): one fixture
// and one page client where each package had its own copy. Tests only.
package hosttest

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

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/test/testlog"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// Bound is the longest any helper waits for something that should happen.
const Bound = 5 * time.Second

// Page is the tiny HTML page a fixture serves at every path but the Host's own.
const Page = "<!doctype html><html><head><title>t</title></head><body>hi</body></html>"

// Fixture is a Host serving Page and its events endpoint over loopback.
type Fixture struct {
	H    *hostplugin.Host
	Srv  *httptest.Server
	Logs *testlog.Recorder // what the Host logged
}

// MustConfig parses a config document or fails the test.
func MustConfig(t testing.TB, doc string) hostplugin.Config {
	t.Helper()
	cfg, err := hostplugin.ParseConfig([]byte(doc))
	if err != nil {
		t.Fatalf("ParseConfig(%s): %v", doc, err)
	}
	return cfg
}

// New starts a Host with the config document doc and opts (its Logger is always the
// fixture's Logs; its Authorize PublicStreams unless opts sets one), ready or not, and tears
// it down with the test.
func New(t testing.TB, doc string, ready bool, opts hostplugin.Options) *Fixture {
	t.Helper()
	l := &testlog.Recorder{}
	opts.Logger = slog.New(l)
	if opts.Authorize == nil {
		opts.Authorize = hostplugin.PublicStreams
	}
	h, err := hostplugin.New(MustConfig(t, doc), &opts)
	if err != nil {
		t.Fatalf("hostplugin.New: %v", err)
	}
	h.SetReady(ready)
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(Page))
	})
	srv := httptest.NewServer(h.Handler(page))
	t.Cleanup(func() {
		_ = h.Close()
		srv.Close()
	})
	return &Fixture{H: h, Srv: srv, Logs: l}
}

// WSURL is the events endpoint's URL.
func (f *Fixture) WSURL() string {
	return "ws" + strings.TrimPrefix(f.Srv.URL, "http") + f.H.Config().Endpoint()
}

// Client is a page's socket, driven by the test.
type Client struct {
	T    testing.TB
	Conn *websocket.Conn
}

// Dial opens a lifeline.v1 socket to the fixture, or fails the test.
func (f *Fixture) Dial(t testing.TB) *Client {
	t.Helper()
	c, err := f.TryDial(t, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", f.WSURL(), err)
	}
	return c
}

// DialMode is Dial as a page of mode says it is (wire.ModeParam: "shared", "in-page", ...).
func (f *Fixture) DialMode(t testing.TB, mode string) *Client {
	t.Helper()
	url := f.WSURL() + "?" + wire.ModeParam + "=" + mode
	c, err := dial(t, url, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	return c
}

// TryDial opens a lifeline.v1 socket to the fixture with header, closed with the test.
func (f *Fixture) TryDial(t testing.TB, header http.Header) (*Client, error) {
	t.Helper()
	return dial(t, f.WSURL(), header)
}

func dial(t testing.TB, url string, header http.Header) (*Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Bound)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		Subprotocols: []string{wire.Subprotocol},
		HTTPHeader:   header,
	})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	return &Client{T: t, Conn: conn}, nil
}

// Next reads and decodes the next frame, a text frame, failing the test after Bound.
func (c *Client) Next() wire.HostFrame {
	c.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Bound)
	defer cancel()
	typ, b, err := c.Conn.Read(ctx)
	if err != nil {
		c.T.Fatalf("reading a frame: %v", err)
	}
	if typ != websocket.MessageText {
		c.T.Fatalf("frame type %v, want text", typ)
	}
	f, err := wire.DecodeHost(b)
	if err != nil {
		c.T.Fatalf("DecodeHost(%s): %v", b, err)
	}
	return f
}

// Expect reads the next frame and checks its type.
func (c *Client) Expect(typ string) wire.HostFrame {
	c.T.Helper()
	f := c.Next()
	if f.T != typ {
		c.T.Fatalf("frame %+v, want type %q", f, typ)
	}
	return f
}

// Send writes one text frame.
func (c *Client) Send(frame string) {
	c.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Bound)
	defer cancel()
	if err := c.Conn.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		c.T.Fatalf("writing %s: %v", frame, err)
	}
}

// Closed reads until the socket ends and returns its close status and reason. Frames before
// the close are skipped.
func (c *Client) Closed() (websocket.StatusCode, string) {
	c.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Bound)
	defer cancel()
	for {
		_, _, err := c.Conn.Read(ctx)
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			c.T.Fatalf("the socket did not close within %v", Bound)
		}
		var ce websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code, ce.Reason
		}
		return websocket.CloseStatus(err), err.Error()
	}
}

// WaitFor polls cond until it holds, failing the test after Bound.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", Bound, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
