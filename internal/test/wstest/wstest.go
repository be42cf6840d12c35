//go:build !js

// Package wstest carries HTTP, WebSocket upgrades included, in memory, as coder/websocket's
// own internal/test/wstest does: a [Client] whose requests an http.Handler serves over
// net.Pipe, with no socket and no listener. A net.Pipe blocks durably, so a test can run a
// Host and the clients that dial it in one testing/synctest bubble, on its fake clock, where
// loopback TCP would stall the clock. Tests, bench and e2e only.
//
// Native only: under js/wasm a WebSocket is the browser's, which no Go transport carries.
package wstest

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"syscall"
)

// Client returns an http.Client whose every request h serves in memory, on a goroutine of
// its own. The response is what h wrote once it returns; a handler that hijacks the
// connection (a WebSocket upgrade) answers with the status it wrote before hijacking, and the
// response's body is the client's end of a net.Pipe whose other end h holds, as
// coder/websocket's Dial expects of a transport. Give it as websocket.DialOptions.HTTPClient.
//
// As with a real server, h's request context ends when the client's does before the answer
// (a dial given up), and not after a hijack; the connection of an upgrade that completes
// after the client gave up is closed, as a client's TCP stack would reset it.
func Client(h http.Handler) *http.Client { return &http.Client{Transport: transport{h}} }

type transport struct{ h http.Handler }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	sr, err := serverRequest(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer context.AfterFunc(req.Context(), cancel)() // tied until the handler answers
	sr = sr.WithContext(ctx)
	w := &responseWriter{ResponseRecorder: httptest.NewRecorder(), upgraded: make(chan net.Conn, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cancel() // a server ends the request's context when its handler returns
		t.h.ServeHTTP(w, sr)
	}()
	var conn net.Conn
	select {
	case conn = <-w.upgraded:
	case <-done:
		select { // a handler that returns right after hijacking has upgraded all the same
		case conn = <-w.upgraded:
		default:
		}
	case <-req.Context().Done():
		go func() { // the handler may still hijack: nobody will read that connection
			select {
			case conn := <-w.upgraded:
				conn.Close()
			case <-done:
			}
		}()
		return nil, context.Cause(req.Context())
	}
	resp := w.Result()
	resp.Request = req
	if conn != nil {
		resp.Body = conn
	}
	return resp, nil
}

// serverRequest is req as a server's handler sees it: a request URI and a path-only URL, a
// non-nil body, the host in Host.
func serverRequest(req *http.Request) (*http.Request, error) {
	sr := req.Clone(req.Context())
	sr.RequestURI = req.URL.RequestURI()
	u, err := url.ParseRequestURI(sr.RequestURI)
	if err != nil {
		return nil, errors.New("wstest: request URI " + sr.RequestURI + ": " + err.Error())
	}
	sr.URL = u
	if sr.Host == "" {
		sr.Host = req.URL.Host
	}
	if sr.Body == nil {
		sr.Body = http.NoBody
	}
	sr.RemoteAddr = "pipe"
	return sr, nil
}

// responseWriter records a handler's answer and lets it hijack the connection once.
type responseWriter struct {
	*httptest.ResponseRecorder
	upgraded chan net.Conn // the client's end of the hijacked pipe (capacity 1)
	hijacked bool          // owned by the handler's goroutine
}

func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked {
		return nil, nil, errors.New("wstest: connection already hijacked")
	}
	w.hijacked = true
	client, server := net.Pipe()
	w.upgraded <- client
	return server, bufio.NewReadWriter(bufio.NewReader(server), bufio.NewWriter(server)), nil
}

// Listener is a net.Listener whose connections are in memory (net.Pipe), for a real
// http.Server in a synctest bubble: Serve it, and reach it with [Listener.Client] or
// [Listener.Dial]. Unlike [Client], every request goes through the server, so what the
// server itself does (its Shutdown above all) is what a test sees.
type Listener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

// NewListener returns a Listener that accepts until it is closed.
func NewListener() *Listener {
	return &Listener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Accept waits for the next Dial, or for Close.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close stops accepting; connections already accepted live on. It is idempotent.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr is the listener's pseudo-address.
func (l *Listener) Addr() net.Addr { return pipeAddr{} }

// Dial connects to the listener, as an http.Transport's DialContext: it fails with
// syscall.ECONNREFUSED once the listener is closed, as a closed port refuses a TCP dial.
func (l *Listener) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, &net.OpError{Op: "dial", Net: "pipe", Err: syscall.ECONNREFUSED}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Client returns an http.Client whose every connection is a Dial of the listener. Close its
// idle connections (CloseIdleConnections) before the bubble ends.
func (l *Listener) Client() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: l.Dial}}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
