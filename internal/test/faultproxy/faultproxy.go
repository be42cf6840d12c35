//go:build !js

package faultproxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
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
	// Latency forwards, each direction's bytes held for the latency (± the jitter) first.
	Latency
	// Reset resets every open connection at once, stalled or held ones too, and each new
	// one at the first byte its upstream sends back.
	Reset
	// Stall freezes every connection, open or new: nothing is forwarded either way, nothing
	// is closed.
	Stall
	// Throttle forwards over a slow link: each direction's bytes take their turn on the
	// bandwidth its connections share, then the latency; a new connection's first bytes wait
	// one round trip more (TCP's handshake).
	Throttle
)

var modeNames = [...]string{"up", "refuse", "blackhole", "flap", "latency", "reset", "stall", "throttle"}

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

// ParseMode reads a mode's name: up, refuse, blackhole, flap, latency, reset, stall or
// throttle.
func ParseMode(s string) (Mode, error) {
	s = strings.TrimSpace(s)
	if i := slices.Index(modeNames[:], s); i >= 0 {
		return Mode(i), nil
	}
	return 0, fmt.Errorf("%w: %q is not one of %s", ErrMode, s, strings.Join(modeNames[:], ", "))
}

// forwards reports whether a connection accepted in m is forwarded and follows the modes
// after it: up, latency, reset, throttle. (Flap forwards too, but each of its connections
// ends on its own clock.)
func (m Mode) forwards() bool { return m == Up || m == Latency || m == Reset || m == Throttle }

// How a connection ended, as recorded in [Record.End].
const (
	EndRefused   = "refused"  // reset at accept (refuse)
	EndFlapped   = "flapped"  // reset FlapAfter after accept (flap)
	EndOutage    = "outage"   // a forwarded connection reset when the mode went to refuse, blackhole or flap
	EndReset     = "reset"    // a forwarded connection reset by reset
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
	// Latency is what latency and throttle add to each direction (one way: a round trip is
	// twice it); Jitter spreads it in latency mode, uniformly in [Latency-Jitter,
	// Latency+Jitter], drawn per chunk of bytes (the order of the bytes is kept). Defaults
	// 200 ms and 0; [Proxy.SetLatency] changes them.
	Latency, Jitter time.Duration
	// Down and Up are throttle's bandwidth, in bits per second, towards the client and
	// towards the upstream, each shared by every connection. Default 0: unlimited;
	// [Proxy.SetBandwidth] changes them.
	Down, Up int64
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

	mu              sync.Mutex
	mode            Mode
	changed         chan struct{} // closed and replaced at every SetMode and SetLatency
	latency, jitter time.Duration
	down, up        lane // throttle's two directions
	records         []Record
	live            map[int64]*link // open connections
	logw            io.Writer
	closed          bool
	quit            chan struct{} // closed by Close
	wg              sync.WaitGroup
}

// link is one open connection and whatever it is joined to.
type link struct {
	id     int64
	client *net.TCPConn
	up     net.Conn // nil unless forwarded
	mode   Mode     // the mode at accept
	frozen bool     // stalled: its bytes are dropped from then on (guarded by Proxy.mu)
	spoke  bool     // the client's first bytes went out (throttle; its upstream pipe's alone)
}

// lane is one direction of a throttled link: the bytes of every connection go through it one
// after the other, as through a link's bottleneck. Guarded by Proxy.mu.
type lane struct {
	bits int64     // per second; 0: unlimited
	free time.Time // when the bytes already on it have gone through
}

// piece is the most bytes throttle sends at once: a few TCP segments, so that a download
// arrives as a stream, not in the proxy's 32 KB reads.
const piece = 4 << 10

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
	if o.Latency <= 0 {
		o.Latency = 200 * time.Millisecond
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{
		ln: ln, upstream: upstream, flap: o.FlapAfter, dialTO: o.DialTimeout,
		changed: make(chan struct{}), latency: o.Latency, jitter: max(o.Jitter, 0),
		down: lane{bits: max(o.Down, 0)}, up: lane{bits: max(o.Up, 0)},
		live: make(map[int64]*link), logw: o.Log, quit: make(chan struct{}),
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

// SetMode switches the proxy. The connections it forwards (those accepted in up, latency or
// reset) follow: refuse, blackhole and flap reset them, stall freezes them, up and latency
// keep them. A frozen connection stays frozen whatever comes next, but for reset, which
// resets every open connection, whatever it came in.
func (p *Proxy) SetMode(m Mode) {
	p.mu.Lock()
	p.mode = m
	p.changedLocked()
	var cut []*link
	for _, l := range p.live {
		switch {
		case m == Reset:
			cut = append(cut, l)
		case !l.mode.forwards() || l.frozen:
			// Held, flapping on its own clock, or as lost as it was: left as it is.
		case m == Refuse, m == Blackhole, m == Flap:
			cut = append(cut, l)
		case m == Stall:
			l.frozen = true
		}
	}
	p.mu.Unlock()
	why := EndOutage
	if m == Reset {
		why = EndReset
	}
	for _, l := range cut {
		p.reset(l, why)
	}
}

// SetLatency sets what latency adds to each direction, and its jitter (see [Options]).
func (p *Proxy) SetLatency(latency, jitter time.Duration) {
	p.mu.Lock()
	p.latency, p.jitter = max(latency, 0), max(jitter, 0)
	p.changedLocked()
	p.mu.Unlock()
}

// SetBandwidth sets throttle's bandwidth towards the client (down) and the upstream (up), in
// bits per second; 0 is unlimited (see [Options]).
func (p *Proxy) SetBandwidth(down, up int64) {
	p.mu.Lock()
	p.down.bits, p.up.bits = max(down, 0), max(up, 0)
	p.mu.Unlock()
}

// Bandwidth returns throttle's bandwidth towards the client and the upstream, in bits per
// second.
func (p *Proxy) Bandwidth() (down, up int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.down.bits, p.up.bits
}

// Latency returns what latency adds to each direction, and its jitter.
func (p *Proxy) Latency() (latency, jitter time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.latency, p.jitter
}

// changedLocked wakes every chunk held for the latency, to weigh it again.
func (p *Proxy) changedLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
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
	if !p.closed {
		close(p.quit)
	}
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
		case Blackhole, Stall:
			p.wg.Go(func() { p.hold(l) })
		default:
			p.wg.Go(func() { p.forward(l) })
		}
	}
}

// hold reads and discards until the client gives up: a blackhole (or a stalled link) never
// answers.
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
	ends := make(chan string, 2)
	go func() { ends <- p.pipe(l, l.client, up, false) }()
	go func() { ends <- p.pipe(l, up, l.client, true) }()
	first, pending := <-ends, 1
	if first == EndUpstream && p.isFrozen(l) {
		// A stalled link tells the client nothing, not even that the upstream has gone: it
		// is held until the client gives up.
		_ = up.Close()
		first, pending = <-ends, 0
	}
	p.finish(l, first)
	_ = l.client.Close()
	_ = up.Close()
	for range pending {
		<-ends
	}
}

// chunk is bytes read from one side, and when.
type chunk struct {
	b  []byte
	at time.Time
}

// pipe copies src to dst, one direction of a forwarded link, as the mode says: latency
// holds each chunk, a frozen link drops it, reset resets the link at its first reply. It
// returns who ended the direction: src by closing, dst by failing a write.
func (p *Proxy) pipe(l *link, src, dst net.Conn, downstream bool) string {
	srcEnd, dstEnd := EndClient, EndUpstream
	if downstream {
		srcEnd, dstEnd = EndUpstream, EndClient
	}
	chunks := make(chan chunk, 64)
	quit := make(chan struct{})
	defer close(quit)
	p.wg.Go(func() {
		defer close(chunks)
		buf := make([]byte, 32<<10)
		first := downstream
		for {
			n, err := src.Read(buf)
			if n > 0 {
				c := chunk{b: slices.Clone(buf[:n]), at: time.Now()}
				if first {
					first = false
					p.mu.Lock()
					p.records[l.id-1].FirstReply = c.at
					p.mu.Unlock()
				}
				select {
				case chunks <- c:
				case <-quit:
					return
				}
			}
			if err != nil {
				return
			}
		}
	})
	for c := range chunks {
		if p.isFrozen(l) {
			continue // lost, as on a link that went down
		}
		if p.Mode() == Throttle {
			if err := p.shape(l, c, dst, downstream); err != nil {
				return dstEnd
			}
			continue
		}
		p.await(c.at)
		if p.isFrozen(l) {
			continue
		}
		if downstream && p.Mode() == Reset {
			p.reset(l, EndReset)
			return EndReset
		}
		if _, err := dst.Write(c.b); err != nil {
			if p.isFrozen(l) {
				continue // frozen while writing: what follows is dropped
			}
			return dstEnd
		}
	}
	return srcEnd
}

// await returns when a chunk read at at has been held as long as the latency mode says
// (at once in any other mode); a change of mode or latency weighs it again.
func (p *Proxy) await(at time.Time) {
	for {
		p.mu.Lock()
		var d time.Duration
		if p.mode == Latency {
			d = p.latency
			if p.jitter > 0 {
				d += time.Duration(rand.Int64N(int64(2*p.jitter)+1)) - p.jitter
			}
		}
		changed := p.changed
		p.mu.Unlock()
		wait := time.Until(at.Add(d))
		if wait <= 0 {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
			return
		case <-changed:
			t.Stop()
		}
	}
}

// shape writes c to dst as a slow link delivers it: piece by piece, each once its turn on the
// direction's wire is over and the latency has passed. The first bytes the client sends on a
// connection wait a round trip more: the proxy accepted at once on loopback, where a real
// link would have spent one on TCP's handshake before the client could send them.
func (p *Proxy) shape(l *link, c chunk, dst net.Conn, downstream bool) error {
	p.mu.Lock()
	lat := p.latency
	w, quit := &p.up, p.quit
	if downstream {
		w = &p.down
	}
	p.mu.Unlock()
	extra := time.Duration(0)
	if !downstream && !l.spoke {
		l.spoke = true
		extra = 2 * lat
	}
	for b := c.b; len(b) > 0; {
		n := min(len(b), piece)
		p.mu.Lock()
		through := c.at
		if w.bits > 0 {
			start := w.free
			if start.Before(c.at) {
				start = c.at
			}
			through = start.Add(time.Duration(int64(n) * 8 * int64(time.Second) / w.bits))
			w.free = through
		}
		p.mu.Unlock()
		// Due times are absolute: a late wake-up is caught up by the next piece.
		if wait := time.Until(through.Add(lat + extra)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-quit:
				t.Stop()
				return net.ErrClosed
			}
		}
		if p.isFrozen(l) {
			return nil
		}
		if _, err := dst.Write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func (p *Proxy) isFrozen(l *link) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return l.frozen
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
