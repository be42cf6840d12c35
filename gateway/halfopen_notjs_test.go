//go:build !js

package gateway_test

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"sync"
)

// halfOpen is the Host's end of a page's socket that the test can cut, as a network does
// when a link goes half-open: while cut, what the page writes is held in the network (it
// reaches the Host later, when the link heals, or never), what the Host writes is lost, and
// neither side hears of it. The page finds out by its watchdog; the Host does not.
type halfOpen struct {
	net.Conn // the Host's end of the pipe

	mu    sync.Mutex
	cut   bool
	queue [][]byte // read from the page, not yet handed to the Host
	end   error    // the page's end of the pipe closed: held while cut, like its FIN
	wake  chan struct{}
	out   chan []byte   // what the Host reads, in order; closed after end
	done  chan struct{} // closed by the Host's Close
	once  sync.Once
	rest  []byte
}

func newHalfOpen(c net.Conn) *halfOpen {
	h := &halfOpen{Conn: c, wake: make(chan struct{}, 1), out: make(chan []byte), done: make(chan struct{})}
	go h.pump()
	go h.deliver()
	return h
}

// pump reads everything the page writes, so that its writes never block on a cut link.
func (h *halfOpen) pump() {
	for {
		b := make([]byte, 4096)
		n, err := h.Conn.Read(b)
		h.mu.Lock()
		if n > 0 {
			h.queue = append(h.queue, b[:n])
		}
		if err != nil {
			h.end = err
		}
		h.mu.Unlock()
		h.poke()
		if err != nil {
			return
		}
	}
}

func (h *halfOpen) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// deliver hands the Host what the page wrote, unless the link is cut. The page's end of the
// pipe (its close) reaches the Host only over a link that is not cut.
func (h *halfOpen) deliver() {
	for {
		select {
		case <-h.wake:
		case <-h.done:
			return
		}
		for {
			h.mu.Lock()
			if h.cut || len(h.queue) == 0 {
				end := !h.cut && h.end != nil
				h.mu.Unlock()
				if end {
					close(h.out)
					return
				}
				break
			}
			b := h.queue[0]
			h.queue = h.queue[1:]
			h.mu.Unlock()
			select {
			case h.out <- b:
			case <-h.done:
				return
			}
		}
	}
}

// Cut makes the link half-open: nothing more passes either way.
func (h *halfOpen) Cut() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cut = true
}

// Deliver hands the Host what the page wrote while the link was cut, late, and keeps it cut
// otherwise: the page's close, and everything the Host writes, are still lost.
func (h *halfOpen) Deliver() {
	h.mu.Lock()
	late := h.queue
	h.queue = nil
	h.mu.Unlock()
	for _, b := range late {
		select {
		case h.out <- b:
		case <-h.done:
			return
		}
	}
}

func (h *halfOpen) Read(p []byte) (int, error) {
	if len(h.rest) == 0 {
		select {
		case b, ok := <-h.out:
			if !ok {
				return 0, h.end
			}
			h.rest = b
		case <-h.done:
			return 0, net.ErrClosed
		}
	}
	n := copy(p, h.rest)
	h.rest = h.rest[n:]
	return n, nil
}

func (h *halfOpen) Write(p []byte) (int, error) {
	h.mu.Lock()
	cut := h.cut
	h.mu.Unlock()
	if cut {
		return len(p), nil // lost on the way
	}
	return h.Conn.Write(p)
}

func (h *halfOpen) Close() error {
	h.once.Do(func() { close(h.done) })
	return h.Conn.Close()
}

// hijacking wraps the connection a handler hijacks from rw in a halfOpen, and hands it to got.
type hijacking struct {
	http.ResponseWriter
	got func(*halfOpen)
}

func (w hijacking) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w hijacking) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the test's transport cannot hijack")
	}
	c, _, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	h := newHalfOpen(c)
	w.got(h)
	return h, bufio.NewReadWriter(bufio.NewReader(h), bufio.NewWriter(h)), nil
}
