//go:build !js

package restart

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudflare/tableflip"
	"github.com/coreos/go-systemd/v22/activation"

	"github.com/lifeline-go/lifeline/hostplugin"
)

// Errors returned by Upgrade on a Restarter that cannot start a successor.
var (
	// ErrNoUpgrader: an earlier Restarter of the same process owns its upgrader.
	ErrNoUpgrader = errors.New("restart: another Restarter of this process owns its upgrader; this one cannot start a successor")
	// ErrNotSupported: the platform cannot pass sockets to a new process (Windows).
	ErrNotSupported = errors.New("restart: this platform cannot hand sockets to a successor")
)

// Options are the optional parts of a [Restarter]. A nil *Options means all defaults.
type Options struct {
	// PIDFile, when set, receives the process's PID once it is ready ([Restarter.Ready]),
	// replaced by a rename so that nobody reads half a file. A successor writes it before
	// it tells its predecessor to go, so a supervisor that follows the file (systemd's
	// PIDFile=) knows the successor as the main process when the predecessor exits.
	// Default: none.
	PIDFile string
	// UpgradeTimeout is how long a successor may take to become ready; past it the
	// successor is killed and this process carries on serving. Default: one minute.
	UpgradeTimeout time.Duration
	// DrainWithoutSuccessor makes Shutdown drain (an empty-uri GOAWAY, waiting up to the
	// config's drainTimeoutMs) even when no successor took over: for a Host behind a load
	// balancer whose other Hosts take its pages. Default false: with no successor, the
	// sessions are closed at once with 1012.
	DrainWithoutSuccessor bool
	// RetryAfter is the least a page should wait before it dials again after a stop with no
	// successor (sent in wire.RestartReason). Default 0: no minimum, the page's own ladder.
	RetryAfter time.Duration
	// Logger receives the Restarter's logs. Default: slog.Default().
	Logger *slog.Logger
}

// Restarter is this process's side of a restart: it holds the listening sockets the process
// got from its predecessor, from systemd or made itself, starts a successor that inherits
// them ([Restarter.Upgrade]) and ends the process's Host in the way its situation asks
// ([Restarter.Shutdown]). Its methods are safe for concurrent use. Make one per process,
// before anything else listens.
type Restarter struct {
	opts   Options
	logger *slog.Logger
	upg    *tableflip.Upgrader // nil when an earlier Restarter of this process owns it, or...
	noUpg  error               // ...why there is none

	mu        sync.Mutex
	activated []net.Listener // systemd's, not yet taken by Listen
	listeners []*listener    // every listener Listen returned

	replaced     chan struct{} // closed once a successor is ready
	replacedOnce sync.Once
}

// upgraderTaken: tableflip allows one upgrader per process, for its whole life.
var upgraderTaken atomic.Bool

// New returns the Restarter of this process. It takes the sockets systemd passed (if
// LISTEN_PID names this process; LISTEN_FDS, LISTEN_PID and LISTEN_FDNAMES are then removed
// from the environment, so that no child mistakes its own descriptors for them) and, when
// this process is a successor, the ones its predecessor handed over.
func New(opts *Options) (*Restarter, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.UpgradeTimeout <= 0 {
		o.UpgradeTimeout = tableflip.DefaultUpgradeTimeout
	}
	r := &Restarter{opts: o, logger: o.Logger, replaced: make(chan struct{})}
	// Listeners never fails; a descriptor that is not a listening socket comes back nil.
	acts, _ := activation.Listeners()
	for i, ln := range acts {
		if ln == nil {
			closeAll(acts)
			return nil, fmt.Errorf("restart: systemd passed descriptor %d (LISTEN_FDS=%d), which is not a listening socket", 3+i, len(acts))
		}
	}
	r.activated = acts
	r.noUpg = ErrNoUpgrader
	if upgraderTaken.CompareAndSwap(false, true) {
		upg, err := tableflip.New(tableflip.Options{UpgradeTimeout: o.UpgradeTimeout})
		switch {
		case errors.Is(err, tableflip.ErrNotSupported):
			// Serving and shutting down work all the same; only Upgrade cannot.
			r.noUpg = ErrNotSupported
		case err != nil:
			closeAll(acts)
			return nil, fmt.Errorf("restart: %w", err)
		default:
			r.upg = upg
		}
	}
	return r, nil
}

func closeAll(lns []net.Listener) {
	for _, ln := range lns {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// Listen returns the listening socket for network and addr: the one the predecessor handed
// over under that name, else the next one systemd passed (in the order of the socket unit's
// Listen lines, whatever its address), else a new one. Every socket it returns is handed on
// to a successor, under the same network and addr, which the successor (the same command
// line) asks for again. Call it before Ready.
func (r *Restarter) Listen(network, addr string) (net.Listener, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ln net.Listener
	from := "inherited from the predecessor"
	if r.upg != nil {
		inh, err := r.upg.Fds.Listener(network, addr)
		if err != nil {
			return nil, fmt.Errorf("restart: %w", err)
		}
		ln = inh
	}
	if ln == nil && len(r.activated) > 0 {
		act := r.activated[0]
		if got := act.Addr().Network(); strings.TrimRight(network, "46") != got {
			return nil, fmt.Errorf("restart: systemd passed a %s socket (%s), but %s %s was asked for", got, act.Addr(), network, addr)
		}
		if r.upg != nil {
			tl, ok := act.(tableflip.Listener)
			if !ok {
				return nil, fmt.Errorf("restart: systemd's socket %s (%T) cannot be handed on", act.Addr(), act)
			}
			if err := r.upg.Fds.AddListener(network, addr, tl); err != nil {
				return nil, fmt.Errorf("restart: %w", err)
			}
		}
		r.activated = r.activated[1:]
		ln, from = act, "from systemd (socket activation)"
	}
	if ln == nil {
		var err error
		if ln, err = net.Listen(network, addr); err != nil {
			return nil, fmt.Errorf("restart: %w", err)
		}
		if r.upg != nil {
			tl, ok := ln.(tableflip.Listener)
			if !ok {
				ln.Close()
				return nil, fmt.Errorf("restart: a %s listener (%T) cannot be handed on", network, ln)
			}
			if err := r.upg.Fds.AddListener(network, addr, tl); err != nil {
				ln.Close()
				return nil, fmt.Errorf("restart: %w", err)
			}
		}
		from = "new"
	}
	l := &listener{Listener: ln, closed: make(chan struct{}), unused: map[*conn]struct{}{}}
	r.listeners = append(r.listeners, l)
	r.logger.Info("restart: listening", "addr", ln.Addr().String(), "socket", from)
	return l, nil
}

// listener lets Shutdown stop accepting without shutting the server down. http.Server drops
// a request it reads after Shutdown began (it closes the connection unanswered), so a
// connection accepted here just before the handoff must be read by a server still in its
// normal mode; only then may the server be shut down.
//
// It also keeps the connections that have not sent a byte yet (closeUnused): a browser opens
// spare ones to an origin ahead of need (Firefox's speculative connections), and
// http.Server's Shutdown waits up to 5 s for a connection that has sent no request (Go issue
// 22682), so an old process outlived its pages' move by seconds.
type listener struct {
	net.Listener
	mu      sync.Mutex
	stopped bool               // the socket is closed here: the successor (or nobody) accepts
	unused  map[*conn]struct{} // accepted connections that have not sent a byte
	closed  chan struct{}      // Close was called, by the server's Shutdown
	once    sync.Once
}

// Accept waits for the server's Close once Shutdown has stopped accepting, instead of failing:
// a failed Accept would end Serve with an error before Shutdown.
func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		l.mu.Lock()
		stopped := l.stopped
		l.mu.Unlock()
		if stopped {
			<-l.closed
			return nil, net.ErrClosed
		}
		return nil, err
	}
	tc := &conn{Conn: c, l: l}
	l.mu.Lock()
	l.unused[tc] = struct{}{}
	l.mu.Unlock()
	return tc, nil
}

// closeUnused closes the connections that have sent nothing, and returns how many. Call it
// once this process has stopped accepting and the accept grace has passed: a browser sends
// its request at once on a connection it opened to use, and one it opened ahead of need
// it opens again, to the successor, when the need comes (browsers retry a request on an
// unused spare connection that turns out closed). A connection under TLS has sent its
// handshake, and is left to the server's Shutdown.
func (l *listener) closeUnused() int {
	l.mu.Lock()
	cs := make([]*conn, 0, len(l.unused))
	for c := range l.unused {
		cs = append(cs, c)
	}
	clear(l.unused)
	l.mu.Unlock()
	for _, c := range cs {
		_ = c.Conn.Close()
	}
	return len(cs)
}

// conn is an accepted connection; its first byte read takes it off its listener's unused.
type conn struct {
	net.Conn
	l    *listener
	used atomic.Bool
}

func (c *conn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.used.Load() {
		c.used.Store(true)
		c.l.mu.Lock()
		delete(c.l.unused, c)
		c.l.mu.Unlock()
	}
	return n, err
}

func (c *conn) Close() error {
	if !c.used.Load() {
		c.l.mu.Lock()
		delete(c.l.unused, c)
		c.l.mu.Unlock()
	}
	return c.Conn.Close()
}

// WriteBuffers writes b in one system call where the connection can (a TCP or Unix socket's
// writev): hostplugin writes a session's batch of messages so (hostplugin/socket.go's
// vectorWriter), which a wrapper would otherwise turn into a copy of the batch.
func (c *conn) WriteBuffers(b *net.Buffers) (int64, error) { return b.WriteTo(c.Conn) }

// ReadFrom keeps the connection's own (sendfile for a file) behind the wrapper.
func (c *conn) ReadFrom(r io.Reader) (int64, error) { return io.Copy(c.Conn, r) }

// CloseWrite is the TCP connection's half-close, which http.Server uses to end a connection
// gracefully after an error.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// stopAccepting closes the socket in this process.
func (l *listener) stopAccepting() {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
	_ = l.Listener.Close()
}

func (l *listener) Close() error {
	l.mu.Lock()
	stopped := l.stopped
	l.mu.Unlock()
	var err error
	if !stopped { // else stopAccepting closed it, and it is not an error of the server's
		err = l.Listener.Close()
	}
	l.once.Do(func() { close(l.closed) })
	return err
}

// Ready says that this process serves: it writes the PID file, closes the sockets handed to
// it that it did not ask for, and tells the predecessor, which then drains its pages to this
// process and exits. Call it once every listener is served and the Host's gate is open.
func (r *Restarter) Ready() error {
	if r.opts.PIDFile != "" {
		if err := writePIDFile(r.opts.PIDFile); err != nil {
			return fmt.Errorf("restart: writing the PID file: %w", err)
		}
	}
	r.mu.Lock()
	closeAll(r.activated)
	r.activated = nil
	r.mu.Unlock()
	if r.upg == nil {
		return nil
	}
	if err := r.upg.Ready(); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return nil
}

// writePIDFile replaces path with this process's PID, through a file of its own in the same
// directory, so that a reader sees the old PID or the new one, never a partial write.
func writePIDFile(path string) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, base+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // a no-op once renamed
	if _, err := f.WriteString(strconv.Itoa(os.Getpid()) + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// Upgrade starts the successor: os.Args[0] again, with the same arguments and environment,
// inheriting every socket Listen returned. It waits until the successor is ready
// ([Restarter.Ready]), exits, or outlives Options.UpgradeTimeout (then it is killed). Only on
// success is [Restarter.Replaced] closed; on failure this process carries on as before. Only
// one upgrade runs at a time, and a successor cannot upgrade until its predecessor is gone.
func (r *Restarter) Upgrade() error {
	if r.upg == nil {
		return r.noUpg
	}
	if err := r.upg.Upgrade(); err != nil {
		return fmt.Errorf("restart: no successor took over: %w", err)
	}
	r.replacedOnce.Do(func() { close(r.replaced) })
	return nil
}

// Replaced returns a channel that is closed once a successor is ready: this process should
// then call Shutdown, which drains its pages to the successor.
func (r *Restarter) Replaced() <-chan struct{} { return r.replaced }

func (r *Restarter) isReplaced() bool {
	select {
	case <-r.replaced:
		return true
	default:
		return false
	}
}

// HasPredecessor reports whether this process is a successor.
func (r *Restarter) HasPredecessor() bool { return r.upg != nil && r.upg.HasParent() }

// WaitForPredecessor returns once the predecessor has exited (at once for a process that has
// none), or when ctx ends.
func (r *Restarter) WaitForPredecessor(ctx context.Context) error {
	if r.upg == nil {
		return nil
	}
	if err := r.upg.WaitForParent(ctx); err != nil {
		return fmt.Errorf("restart: waiting for the predecessor: %w", err)
	}
	return nil
}

// Stop prevents any further upgrade and interrupts one in progress (its successor is
// killed). It returns once the copies of the sockets kept for a successor are closed, so
// that with no successor the port closes as soon as the server stops accepting. It is
// idempotent; Shutdown calls it.
func (r *Restarter) Stop() {
	if r.upg != nil {
		r.upg.Stop()
		<-r.upg.Exit() // closed once tableflip has closed its copies
	}
}

// acceptGrace is how long a connection accepted just before Shutdown stopped accepting has to
// send its request before the server is shut down (and would drop a request read later).
const acceptGrace = 250 * time.Millisecond

// Shutdown ends srv and h for a process that is going away. First this process stops
// accepting (when a successor took over, the socket stays open in it and every new
// connection goes there); then the sessions end, in the way this process's situation asks:
//
//   - a successor is ready: h.Drain(ctx, ""). Every page's make-before-break dial back to the
//     same place lands on the successor while its old session still delivers; sessions still
//     here after drainTimeoutMs are closed with 1001.
//   - no successor: h.Stop(ctx, Options.RetryAfter). Every session is closed at once with the
//     restart message and 1012, because nobody accepts in this process's place: a plain
//     stop closes the port, and even a socket-activated port (which systemd keeps open)
//     only queues connections until the next process starts, after this one has exited.
//   - no successor, with Options.DrainWithoutSuccessor: h.Drain(ctx, ""), for a Host behind
//     a load balancer whose other Hosts take the pages.
//
// Requests this process had already accepted are served meanwhile (keep-alives are turned
// off, so each connection closes after its answer). Then h.Shutdown closes h and shuts srv
// down, in that order; ctx bounds the whole. srv must serve every listener Listen returned;
// with a nil srv, Shutdown closes them itself. It returns how many sessions had to be closed (0 when every page left
// of its own accord).
func (r *Restarter) Shutdown(ctx context.Context, srv *http.Server, h *hostplugin.Host) (int, error) {
	r.Stop()
	successor := r.isReplaced()
	r.mu.Lock()
	lns := append([]*listener(nil), r.listeners...)
	r.mu.Unlock()
	// No GOAWAY before this process has stopped accepting: a page told to come back must
	// reach the successor, not this process on its way out.
	stopAt := time.Now()
	for _, l := range lns {
		l.stopAccepting()
	}
	if srv != nil {
		srv.SetKeepAlivesEnabled(false)
	}
	var closed int
	switch {
	case successor:
		r.logger.Info("restart: a successor serves in this process's place: draining the sessions to it", "sessions", h.Sessions())
		closed = h.Drain(ctx, "")
	case r.opts.DrainWithoutSuccessor:
		r.logger.Info("restart: no successor: draining the sessions to the other Hosts behind the load balancer", "sessions", h.Sessions())
		closed = h.Drain(ctx, "")
	default:
		closed = h.Stop(ctx, r.opts.RetryAfter)
	}
	if d := acceptGrace - time.Since(stopAt); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	// Connections that sent nothing in the grace: spares a browser opened ahead of need.
	for _, l := range lns {
		if n := l.closeUnused(); n > 0 {
			r.logger.Debug("restart: closed connections that sent nothing", "addr", l.Addr().String(), "connections", n)
		}
	}
	// The sessions have ended: h.Shutdown closes h (which releases upgrades still held, which
	// srv.Shutdown would wait for), then shuts srv down.
	var servers []*http.Server
	if srv != nil {
		servers = append(servers, srv)
	}
	err := h.Shutdown(ctx, servers...)
	if srv == nil {
		for _, l := range lns {
			_ = l.Close()
		}
	}
	if err != nil {
		return closed, fmt.Errorf("restart: %w", err)
	}
	return closed, nil
}
