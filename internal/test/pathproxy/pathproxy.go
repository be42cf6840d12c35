//go:build !js

// Package pathproxy is a middlebox between a page and its Host, for the tests of the HTTP
// carrier: an HTTP proxy that passes what a path passes and breaks WebSockets the ways real
// networks do (PROTOCOL.md §11.3). Its mode can change while pages use it, so a test can open a
// blocked path and see the page move back to a WebSocket.
package pathproxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Mode is what the path does to WebSockets (and, Buffer, to streamed answers).
type Mode int

// The modes.
const (
	// Open passes everything, WebSockets included.
	Open Mode = iota
	// StripUpgrade drops the Upgrade and Connection headers, as a proxy that knows no
	// WebSocket does: the Host sees a plain GET.
	StripUpgrade
	// Refuse403 answers every upgrade itself with 403 and an HTML page.
	Refuse403
	// CloseAtOnce accepts the upgrade (101, the subprotocol echoed) and closes the socket.
	CloseAtOnce
	// Silent accepts the upgrade and then passes nothing, either way, and closes nothing.
	Silent
	// Buffer strips Upgrade, and holds every answer back until it is complete, as some
	// proxies and antivirus software do: a stream never arrives, long polls do.
	Buffer
)

var names = []string{"open", "strip-upgrade", "refuse-403", "close-at-once", "silent", "buffer"}

func (m Mode) String() string {
	if int(m) < len(names) {
		return names[m]
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode reads a mode's name.
func ParseMode(s string) (Mode, error) {
	for i, n := range names {
		if n == s {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("pathproxy: no mode %q (modes: %s)", s, strings.Join(names, ", "))
}

// Proxy is a path to the backend. Serve it with an http.Server (it is an http.Handler).
type Proxy struct {
	backend *url.URL
	mode    atomic.Int32
	rp      *httputil.ReverseProxy

	mu    sync.Mutex
	conns map[net.Conn]struct{} // hijacked connections, closed by Cut
	// Upgrades counts the upgrade requests that reached the path.
	upgrades atomic.Int64
}

// New returns a path to backend (http://host:port) in mode.
func New(backend string, mode Mode) (*Proxy, error) {
	u, err := url.Parse(backend)
	if err != nil {
		return nil, fmt.Errorf("pathproxy: backend %q: %w", backend, err)
	}
	p := &Proxy{backend: u, conns: map[net.Conn]struct{}{}}
	p.mode.Store(int32(mode))
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host // the Host checks the origin against the page's host
		},
		FlushInterval: -1, // pass each write on as it comes: a stream is a stream
		ModifyResponse: func(resp *http.Response) error {
			if Mode(p.mode.Load()) != Buffer {
				return nil
			}
			// Hold the whole answer back, as a buffering middlebox does.
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return err
			}
			resp.Body = io.NopCloser(bytes.NewReader(b))
			resp.ContentLength = int64(len(b))
			resp.Header.Del("Transfer-Encoding")
			return nil
		},
	}
	return p, nil
}

// SetMode changes what the path does from now on; connections already through are kept.
func (p *Proxy) SetMode(m Mode) { p.mode.Store(int32(m)) }

// Mode is the path's mode.
func (p *Proxy) Mode() Mode { return Mode(p.mode.Load()) }

// Upgrades is how many upgrade requests reached the path.
func (p *Proxy) Upgrades() int64 { return p.upgrades.Load() }

// Cut drops every WebSocket through the path, without a close, as a network that broke.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	upgrade := strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
	if upgrade {
		p.upgrades.Add(1)
	}
	mode := p.Mode()
	switch {
	case !upgrade:
	case mode == StripUpgrade || mode == Buffer:
		r.Header.Del("Upgrade")
		r.Header.Del("Connection")
		for _, h := range []string{"Sec-Websocket-Key", "Sec-Websocket-Version", "Sec-Websocket-Extensions"} {
			r.Header.Del(h)
		}
	case mode == Refuse403:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, "<html><body><h1>403 Forbidden</h1>WebSockets are not allowed here.</body></html>")
		return
	case mode == CloseAtOnce, mode == Silent:
		p.fakeUpgrade(w, r, mode == CloseAtOnce)
		return
	default:
		p.tunnel(w, r)
		return
	}
	p.rp.ServeHTTP(w, r)
}

// fakeUpgrade answers an upgrade as if it went through, then closes at once or passes nothing.
func (p *Proxy) fakeUpgrade(w http.ResponseWriter, r *http.Request, closeAtOnce bool) {
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n", acceptKey(r.Header.Get("Sec-WebSocket-Key")))
	if proto, _, _ := strings.Cut(r.Header.Get("Sec-WebSocket-Protocol"), ","); proto != "" {
		fmt.Fprintf(brw, "Sec-WebSocket-Protocol: %s\r\n", strings.TrimSpace(proto))
	}
	fmt.Fprint(brw, "\r\n")
	_ = brw.Flush()
	if closeAtOnce {
		c.Close()
		return
	}
	p.track(c)
	// Read and throw away what the page sends, until it or Cut closes the connection.
	go func() {
		defer p.untrack(c)
		_, _ = io.Copy(io.Discard, c)
	}()
}

// tunnel passes an upgrade through to the backend, byte for byte both ways.
func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	var d net.Dialer
	back, err := d.DialContext(ctx, "tcp", p.backend.Host)
	if err != nil {
		http.Error(w, "pathproxy: backend down: "+err.Error(), http.StatusBadGateway)
		return
	}
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		back.Close()
		return
	}
	if err := r.Write(back); err != nil {
		back.Close()
		c.Close()
		return
	}
	p.track(c)
	p.track(back)
	go func() {
		defer p.untrack(back)
		defer c.Close()
		_, _ = io.Copy(c, back)
	}()
	go func() {
		defer p.untrack(c)
		defer back.Close()
		_, _ = io.Copy(back, io.MultiReader(bufferedOf(brw.Reader), c))
	}()
}

func bufferedOf(br *bufio.Reader) io.Reader {
	b, _ := br.Peek(br.Buffered())
	return bytes.NewReader(bytes.Clone(b))
}

func (p *Proxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns[c] = struct{}{}
	p.mu.Unlock()
}

func (p *Proxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// acceptKey is the Sec-WebSocket-Accept of a handshake's key (RFC 6455 §4.2.2).
func acceptKey(key string) string {
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}
