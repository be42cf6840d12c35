//go:build !js

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/lifeline-go/lifeline/bench/fanload"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// Lifeline's HTTP carrier, as a page speaks it (PROTOCOL.md §11): GET
// …?lifeline-carrier=stream opens the session, its answer a text/event-stream of frames whose
// first is the ready frame with the session's secret; frames up go in POSTs whose body's first
// line is the envelope (session, secret, seq).

// pingEvery is how often a page POSTs a ping: the Host ends a session whose page sent nothing
// for 3 heartbeats (15 s each at fanout-server's default), and a page's poster pings after one.
const pingEvery = 10 * time.Second

// httpClient is the pages' one client: every stream holds a connection of its own, and the
// POSTs share what is idle. Connections come from the loopback addresses in turn (each its own
// range of ports).
func httpClient(locals []string) *http.Client {
	var next atomic.Uint64
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := net.Dialer{Timeout: 30 * time.Second}
		if len(locals) > 0 {
			d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(locals[next.Add(1)%uint64(len(locals))])}
		}
		return d.DialContext(ctx, network, addr)
	}
	return &http.Client{Transport: &http.Transport{
		DialContext:         dial,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
}

// httpPage is one page's session over the HTTP carrier.
type httpPage struct {
	body    io.ReadCloser
	scan    *wire.EventScanner
	url     string
	session string
	secret  string
	seq     atomic.Uint64
	buf     []byte // what next reads into: one per page, not one per frame (8 KB each, on the heap)
}

// connectHTTP opens page i's stream and subscribes it to both its channels: it returns once
// the Host confirmed both (a reset each, for a fresh subscription).
func (p *pages) connectHTTP(url string, i int) (*httpPage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequest(http.MethodGet, url+"?"+wire.CarrierParam+"="+wire.CarrierStream, nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, fmt.Errorf("the stream was answered %d: %s", resp.StatusCode, b)
	}
	h := &httpPage{body: resp.Body, scan: &wire.EventScanner{Limit: 1 << 16}, url: url}
	stop := context.AfterFunc(ctx, func() { resp.Body.Close() })
	defer stop()
	f, err := h.next()
	if err != nil {
		return nil, fmt.Errorf("the ready frame: %w", err)
	}
	ready, err := wire.DecodeHost(f)
	if err != nil || ready.T != wire.TypeReady || ready.Secret == "" {
		return nil, fmt.Errorf("the stream's first frame is no ready frame with a secret: %s", f)
	}
	h.session, h.secret = ready.Session, ready.Secret
	user, group := fanload.Personal(i), fanload.Group(i/fanload.GroupSize)
	if err := p.send(ctx, h, `{"t":"sub","stream":"`+user+`"}`, `{"t":"sub","stream":"`+group+`"}`); err != nil {
		return nil, err
	}
	for want := 2; want > 0; { // a reset per stream
		f, err := h.next()
		if err != nil {
			return nil, err
		}
		if bytes.HasPrefix(f, []byte(`{"t":"reset"`)) {
			want--
		}
	}
	return h, nil
}

// next is the stream's next frame.
func (h *httpPage) next() ([]byte, error) {
	if h.buf == nil {
		h.buf = make([]byte, 8192)
	}
	for {
		f, err := h.scan.Next()
		if err != nil || f != nil {
			return f, err
		}
		n, err := h.body.Read(h.buf)
		if n > 0 {
			h.scan.Write(h.buf[:n])
			continue
		}
		if err == nil {
			err = io.ErrNoProgress
		}
		return nil, err
	}
}

// send POSTs frames, in order after every earlier send of h.
func (p *pages) send(ctx context.Context, h *httpPage, frames ...string) error {
	env := wire.Envelope{T: wire.EnvelopeSend, Session: h.session, Secret: h.secret, Seq: h.seq.Add(1)}
	body := append(env.Encode(), '\n')
	for _, f := range frames {
		body = wire.AppendLine(body, []byte(f))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", wire.SendType)
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("a send was answered %d: %s", resp.StatusCode, b)
	}
	return nil
}

// readHTTP counts page i's deliveries until its stream ends, pinging every pingEvery meanwhile.
func (p *pages) readHTTP(h *httpPage, i int) {
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(pingEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := p.send(ctx, h, `{"t":"ping"}`)
			cancel()
			if err != nil {
				p.fail(fmt.Errorf("page %d: ping: %w", i, err))
				h.body.Close()
				return
			}
		}
	}()
	deliver := p.deliverer(i)
	for {
		f, err := h.next()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				p.fail(fmt.Errorf("page %d: the stream ended: %w", i, err))
			}
			return
		}
		p.lifelineFrame(i, f, deliver)
	}
}
