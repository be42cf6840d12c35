//go:build !js

package faultproxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// Mode is the proxy's behaviour for the connections it accepts.
type Mode int

const (
	// Up forwards to the upstream server.
	Up Mode = iota
	// Refuse accepts and resets at once.
	Refuse
	// Blackhole accepts and then neither forwards nor closes.
	Blackhole
	// Flap forwards and resets each connection FlapAfter after its accept.
	Flap
)

var modeNames = [...]string{"up", "refuse", "blackhole", "flap"}

func (m Mode) String() string {
	if m < 0 || int(m) >= len(modeNames) {
		return fmt.Sprintf("Mode(%d)", int(m))
	}
	return modeNames[m]
}

// MarshalText writes the mode's name.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// ErrMode is wrapped by ParseMode's error.
var ErrMode = errors.New("faultproxy: bad mode")

// ParseMode reads "up", "refuse", "blackhole" or "flap".
func ParseMode(s string) (Mode, error) {
	s = strings.TrimSpace(s)
	for i, n := range modeNames {
		if n == s {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("%w: %q is not one of up, refuse, blackhole, flap", ErrMode, s)
}

// How a connection ended, as recorded in [Record.End].
const (
	EndRefused   = "refused"  // reset at accept (refuse)
	EndFlapped   = "flapped"  // reset FlapAfter after accept (flap)
	EndOutage    = "outage"   // a forwarded connection reset when the mode left up
	EndClient    = "client"   // the client closed or reset it
	EndUpstream  = "upstream" // the upstream closed it, or could not be dialled
	EndProxyDown = "proxy-closed"
)

// Record is one accepted TCP connection.
type Record struct {
	ID       int64     `json:"id"`
	Accepted time.Time `json:"accepted"`
	Mode     Mode      `json:"mode"`           // the mode in force at accept
	Ended    time.Time `json:"ended,omitzero"` // zero while the connection is open
	// FirstReply is when the first byte from the upstream reached the proxy (forwarded
	// connections only): for an HTTP upgrade, when the server accepted it.
	FirstReply time.Time `json:"firstReply,omitzero"`
	End        string    `json:"end,omitempty"` // one of the End* constants
	Client     string    `json:"client"`        // the client's address (its source port)
}

// Open reports whether the connection was still open at t.
func (r Record) Open(t time.Time) bool {
	return !r.Accepted.After(t) && (r.Ended.IsZero() || r.Ended.After(t))
}

// Options tune a [Proxy]. A nil *Options means all defaults.
type Options struct {
	// FlapAfter is how long flap lets a connection live. Default 200 ms.
	FlapAfter time.Duration
	// DialTimeout bounds the dial to the upstream. Default 5 s.
	DialTimeout time.Duration
	// Log receives one JSON line per accepted connection and one per ended connection.
	// Default: none. Writes are serialised.
	Log io.Writer
}

// Proxy is a fault-injecting TCP proxy on one listening address.
type Proxy struct {
	ln       net.Listener
	upstream string
	flap     time.Duration
	dialTO   time.Duration

	mu      sync.Mutex
	mode    Mode
	records []Record
	live    map[int64]*link // open connections
	logw    io.Writer
	closed  bool
	wg      sync.WaitGroup
}

// link is one open connection and whatever it is joined to.
type link struct {
	id     int64
	client *net.TCPConn
	up     net.Conn // nil unless forwarded
	mode   Mode
}

// Listen starts a proxy on addr ("127.0.0.1:0" for any free port) in front of upstream.
func Listen(addr, upstream string, opts *Options) (*Proxy, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.FlapAfter <= 0 {
		o.FlapAfter = 200 * time.Millisecond
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{
		ln: ln, upstream: upstream, flap: o.FlapAfter, dialTO: o.DialTimeout,
		live: make(map[int64]*link), logw: o.Log,
	}
	p.wg.Go(p.acceptLoop)
	return p, nil
}

// Addr is the address the proxy listens on.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Upstream is the address the proxy forwards to.
func (p *Proxy) Upstream() string { return p.upstream }

// Mode returns the mode in force.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// SetMode switches the proxy. Leaving up resets every forwarded connection.
func (p *Proxy) SetMode(m Mode) {
	p.mu.Lock()
	old := p.mode
	p.mode = m
	var cut []*link
	if old == Up && m != Up {
		for _, l := range p.live {
			if l.mode == Up {
				cut = append(cut, l)
			}
		}
	}
	p.mu.Unlock()
	for _, l := range cut {
		p.reset(l, EndOutage)
	}
}

// Records returns every connection accepted so far, in accept order.
func (p *Proxy) Records() []Record {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.records)
}

// OpenCount returns how many connections accepted in mode m are open now.
func (p *Proxy) OpenCount(m Mode) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, l := range p.live {
		if l.mode == m {
			n++
		}
	}
	return n
}

// Close stops listening, closes every connection and waits for the proxy's goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	links := make([]*link, 0, len(p.live))
	for _, l := range p.live {
		links = append(links, l)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	for _, l := range links {
		p.reset(l, EndProxyDown)
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) acceptLoop() {
	var next int64
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// EMFILE and the like: back off briefly rather than spin.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		now := time.Now()
		tc := c.(*net.TCPConn)
		next++
		l := &link{id: next, client: tc}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = tc.SetLinger(0)
			_ = tc.Close()
			return
		}
		l.mode = p.mode
		p.records = append(p.records, Record{ID: l.id, Accepted: now, Mode: l.mode, Client: tc.RemoteAddr().String()})
		p.live[l.id] = l
		p.logLocked(p.records[len(p.records)-1])
		p.mu.Unlock()

		switch l.mode {
		case Refuse:
			p.reset(l, EndRefused)
		case Blackhole:
			p.wg.Go(func() { p.hold(l) })
		case Up, Flap:
			p.wg.Go(func() { p.forward(l) })
		}
	}
}

// hold reads and discards until the client gives up: a blackhole never answers.
func (p *Proxy) hold(l *link) {
	_, _ = io.Copy(io.Discard, l.client)
	p.finish(l, EndClient)
	_ = l.client.Close()
}

func (p *Proxy) forward(l *link) {
	up, err := net.DialTimeout("tcp", p.upstream, p.dialTO)
	if err != nil {
		p.reset(l, EndUpstream)
		return
	}
	p.mu.Lock()
	if _, ok := p.live[l.id]; !ok { // reset while dialling
		p.mu.Unlock()
		_ = up.Close()
		return
	}
	l.up = up
	p.mu.Unlock()
	if l.mode == Flap {
		t := time.AfterFunc(p.flap, func() { p.reset(l, EndFlapped) })
		defer t.Stop()
	}
	done := make(chan string, 2)
	go func() {
		_, _ = io.Copy(up, l.client)
		done <- EndClient
	}()
	go func() {
		p.copyReplies(l, up)
		done <- EndUpstream
	}()
	first := <-done
	p.finish(l, first)
	_ = l.client.Close()
	_ = up.Close()
	<-done
}

// copyReplies copies the upstream's bytes to the client, noting when the first one came.
func (p *Proxy) copyReplies(l *link, up net.Conn) {
	buf := make([]byte, 32<<10)
	first := true
	for {
		n, err := up.Read(buf)
		if n > 0 {
			if first {
				first = false
				now := time.Now()
				p.mu.Lock()
				p.records[l.id-1].FirstReply = now
				p.mu.Unlock()
			}
			if _, werr := l.client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// reset ends l with an RST to the client and closes its upstream side.
func (p *Proxy) reset(l *link, why string) {
	if !p.finish(l, why) {
		return
	}
	_ = l.client.SetLinger(0)
	_ = l.client.Close()
	p.mu.Lock()
	up := l.up
	p.mu.Unlock()
	if up != nil {
		_ = up.Close()
	}
}

// finish records the end of l once; it reports whether this call did.
func (p *Proxy) finish(l *link, why string) bool {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.live[l.id]; !ok {
		return false
	}
	delete(p.live, l.id)
	// Records are appended in id order starting at 1.
	r := &p.records[l.id-1]
	r.Ended, r.End = now, why
	p.logLocked(*r)
	return true
}

func (p *Proxy) logLocked(r Record) {
	if p.logw == nil {
		return
	}
	b, _ := json.Marshal(r)
	_, _ = p.logw.Write(append(b, '\n'))
}
