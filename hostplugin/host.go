//go:build !js

package hostplugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway/wire"
	"github.com/lifeline-go/lifeline/hostplugin/internal/client"
	"github.com/lifeline-go/lifeline/internal/fault"
)

// Errors returned by a [Host].
var (
	// ErrInvalidConfig is returned for a Config that did not come from a resolver.
	ErrInvalidConfig = errors.New("hostplugin: config was not resolved (use ParseConfig, LoadConfig or DefaultConfig)")
	// ErrClosed is returned by methods called after Close.
	ErrClosed = errors.New("hostplugin: host is closed")
	// ErrStreamName is returned for an empty stream name or one longer than wire.MaxStreamName
	// (it is wire.ErrStreamName: the rule is the protocol's).
	ErrStreamName = wire.ErrStreamName
	// ErrEventData is returned when published data is not one JSON value.
	ErrEventData = errors.New("hostplugin: event data is not valid JSON")
)

// Options are the optional parts of a [Host]. A nil *Options means all defaults.
type Options struct {
	// Logger receives the Host's logs. Default: slog.Default().
	Logger *slog.Logger
	// Log is the stream log that Publish appends to and subscriptions replay from.
	// Default: NewRing(cfg.RingSize()), resized when a config with another ringSize is applied.
	Log StreamLog
	// NoClient turns off the client the plugin serves and injects (the wasm, the tab script
	// with the JS API and the Settings indicator, the runner): pages then get the bootstrap
	// only, and must load a client of their own. Default false: Handler serves the client
	// under ClientPrefix and every HTML page gets it with the bootstrap.
	NoClient bool
	// ClientDir serves the client from this directory, laid out as scripts/assets.sh writes it,
	// instead of the one built into the plugin: for trying another build of the client.
	// Default "": the embedded client.
	ClientDir string
	// Authenticate decides who may connect. It is called for every request to the events
	// endpoint, before the upgrade (after the per-address rate, before the session cap and
	// the accept rate, so a refused credential costs no slot and no token), and for every
	// probe (see the package documentation). It returns the identity that Authorize is given
	// for the session's streams, or an error that refuses the request: HTTP 401 when it wraps
	// ErrUnauthenticated, 403 otherwise (ErrForbidden, or any other error), with a JSON body
	// whose reason is the error's first line, truncated. The page is shown that reason: it
	// must name no secret. A hook that panics refuses with 500 and is logged with its stack.
	// It is not called for an origin that allowedOrigins refuses.
	// Default nil: every page may connect, with the identity "".
	Authenticate func(r *http.Request) (identity string, err error)
	// Authorize decides what a session may read. It is called for every sub frame, a
	// resubscription by cursor after a reconnect included, so a page that lost access cannot
	// resume by cursor. An error refuses that one subscription with a denied frame carrying
	// the error's first line, truncated (the page is shown it); nothing else of that stream
	// is sent, and the session and its other streams carry on. A hook that panics denies the
	// subscription ("internal error") and is logged with its stack. It runs on the session's
	// reading goroutine: a slow Authorize delays that page's later frames, no one else's.
	// Default nil: every session may read every stream. An application with private streams
	// must set it.
	Authorize func(identity, stream string) error
}

// BaselineFunc returns the state of stream as of head (the position a reset carries), sent
// as the reset frame's baseline. It is called while the stream's subscriptions are held still,
// so it must return promptly and must not call Publish.
type BaselineFunc func(stream string, head Cursor) (json.RawMessage, error)

// Host is the Host side of Lifeline: it injects the bootstrap into HTML pages ([Host.Inject]),
// serves the events endpoint ([Host.ServeHTTP]) and carries the streams ([Host.Publish]).
//
// A Host starts not ready: sockets open, but no session gets its ready frame until
// SetReady(true). All methods are safe for concurrent use. Close disposes of it: pages are
// served byte for byte again and every session ends.
type Host struct {
	logger *slog.Logger
	log    StreamLog
	ring   *Ring          // the default log, resized on Apply; nil with Options.Log
	client *client.Client // the client served and injected; nil with Options.NoClient
	authn  func(*http.Request) (string, error)
	authz  func(identity, stream string) error
	// maxQueue is the per-session limit maxQueue; a field so that a test can shed a slow
	// page after a few frames, not after megabytes.
	maxQueue int

	applyMu sync.Mutex // serialises apply, so that concurrent reloads cannot drop an endpoint
	state   atomic.Pointer[hostState]
	ready   atomic.Bool
	faults  atomic.Pointer[fault.Injector] // nil but in cmd/host -faults and tests
	adm     admission
	perIP   perIP

	mu       sync.Mutex // guards the fields below
	sessions map[*session]struct{}
	draining bool          // Drain or Stop was called: no new session
	drainURI string        // Drain's uri, for sockets that arrive while draining
	stopping bool          // Stop was called: late sockets are closed with 1012, not sent away
	restart  string        // Stop's wire.RestartReason
	idle     chan struct{} // closed whenever sessions is empty

	hubsMu sync.Mutex // guards hubs
	hubs   map[string]*hub

	baseMu    sync.RWMutex // guards baselines
	baselines map[string]BaselineFunc

	accepted atomic.Uint64 // requests that reached the events endpoint
	inflight atomic.Int64  // of those, the ones whose handler is still running

	closeOnce sync.Once
	closed    atomic.Bool
	done      chan struct{} // closed by Close

	// Refusals and bad frames can come in floods; their logs are thinned.
	logOrigin, logOverload, logPerIP, logBadFrame, logPassThrough rate.Sometimes
	logAuth, logDenied, logAuthPanic                              rate.Sometimes
}

// hostState is everything derived from one applied Config, swapped as a whole so that a
// request sees one config from start to end.
type hostState struct {
	cfg       Config
	script    []byte          // the bootstrap element, and the client's tags, injected into pages
	clients   map[string]bool // the prefixes the client is served under: every one announced
	hash      string          // identifies script in derived ETags
	at        time.Time
	endpoints map[string]bool // every endpoint announced so far: older pages still use theirs
}

// New returns a Host serving cfg. It is not ready until SetReady(true).
func New(cfg Config, opts *Options) (*Host, error) {
	if !cfg.Valid() {
		return nil, ErrInvalidConfig
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	h := &Host{
		logger:    o.Logger,
		log:       o.Log,
		authn:     o.Authenticate,
		authz:     o.Authorize,
		maxQueue:  maxQueue,
		sessions:  map[*session]struct{}{},
		idle:      make(chan struct{}),
		hubs:      map[string]*hub{},
		baselines: map[string]BaselineFunc{},
		done:      make(chan struct{}),

		logOrigin:      rate.Sometimes{First: 5, Interval: 10 * time.Second},
		logOverload:    rate.Sometimes{First: 5, Interval: 10 * time.Second},
		logPerIP:       rate.Sometimes{First: 5, Interval: 10 * time.Second},
		logBadFrame:    rate.Sometimes{First: 5, Interval: 10 * time.Second},
		logPassThrough: rate.Sometimes{First: 5, Interval: time.Minute},
		logAuth:        rate.Sometimes{First: 5, Interval: 10 * time.Second},
		logDenied:      rate.Sometimes{First: 5, Interval: 10 * time.Second},
		logAuthPanic:   rate.Sometimes{First: 5, Interval: 10 * time.Second},
	}
	close(h.idle)
	if h.logger == nil {
		h.logger = slog.Default()
	}
	if h.log == nil {
		h.ring = NewRing(cfg.RingSize())
		h.log = h.ring
	}
	if !o.NoClient {
		c, err := client.Load()
		if o.ClientDir != "" {
			c, err = client.LoadFS(os.DirFS(o.ClientDir), "the client directory "+o.ClientDir)
		}
		if err != nil {
			return nil, err
		}
		h.client = c
	}
	h.adm.lim = rate.NewLimiter(rate.Limit(cfg.AcceptRate()), cfg.AcceptBurst())
	h.apply(cfg)
	return h, nil
}

// Apply makes cfg the Host's config. Pages loaded afterwards carry its timing and endpoint;
// sessions opened afterwards use its heartbeat and limits; the session cap, accept rate and
// ring size apply at once. Sessions already open keep the heartbeat they announced.
func (h *Host) Apply(cfg Config) error {
	if !cfg.Valid() {
		return ErrInvalidConfig
	}
	h.apply(cfg)
	return nil
}

func (h *Host) apply(cfg Config) {
	h.applyMu.Lock()
	defer h.applyMu.Unlock()
	script := bootstrapElement(cfg)
	clients := map[string]bool{}
	if h.client != nil {
		prefix := ClientPrefix(cfg.endpoint)
		script = append(script, h.client.Tags(prefix)...)
		clients[prefix] = true
	}
	sum := sha256.Sum256(script)
	endpoints := map[string]bool{cfg.endpoint: true}
	// at dates the bootstrap for Last-Modified, whose resolution is a second: two configs
	// applied within one second must still get different dates, or a cache validating by
	// date would keep the older bootstrap. A config with the same bootstrap keeps the date,
	// so caches stay valid.
	at := time.Now().Truncate(time.Second)
	if old := h.state.Load(); old != nil {
		for ep := range old.endpoints {
			endpoints[ep] = true
		}
		for p := range old.clients {
			clients[p] = true
		}
		switch {
		case string(old.script) == string(script):
			at = old.at
		case !at.After(old.at):
			at = old.at.Add(time.Second)
		}
	}
	h.state.Store(&hostState{
		cfg:       cfg,
		script:    script,
		clients:   clients,
		hash:      hex.EncodeToString(sum[:4]),
		at:        at,
		endpoints: endpoints,
	})
	h.adm.mu.Lock()
	h.adm.lim.SetLimit(rate.Limit(cfg.acceptRate))
	h.adm.lim.SetBurst(cfg.acceptBurst)
	h.adm.mu.Unlock()
	h.perIP.configure(cfg.perIPRate, cfg.perIPBurst)
	if h.ring != nil {
		h.ring.SetSize(cfg.ringSize)
	}
}

// Config returns the config in force.
func (h *Host) Config() Config { return h.state.Load().cfg }

// Reload reads the config file at path and applies it. An invalid file changes nothing: the
// Host keeps its config, logs why, and returns the error.
func (h *Host) Reload(path string) error {
	cfg, err := LoadConfig(path)
	if err != nil {
		h.logger.Error("hostplugin: config reload refused, keeping the current config", "path", path, "err", err)
		return err
	}
	h.apply(cfg)
	h.logger.Info("hostplugin: config reloaded", "path", path)
	return nil
}

// Bootstrap returns the JSON that pages receive in their bootstrap element: the resolved
// timing, the endpoint and the heartbeat; nothing secret. It is safe inside an HTML script
// element: "<", ">", "&", U+2028 and U+2029 appear only as \u escapes.
func (c Config) Bootstrap() []byte {
	// json.Marshal escapes all five: <, > and & because it escapes HTML by default (only an
	// Encoder with SetEscapeHTML(false) does not), U+2028 and U+2029 always. The guarantee
	// rests on that, and TestBootstrapNeverHoldsRawScriptBreakers holds it to it.
	b, err := json.Marshal(struct {
		Recovery    controller.Config `json:"recovery"`
		Endpoint    string            `json:"endpoint"`
		HeartbeatMs int64             `json:"heartbeatMs"`
	}{c.recovery, c.endpoint, c.heartbeat.Milliseconds()})
	if err != nil {
		// Every field is a plain number or a string: Marshal cannot fail.
		panic(fmt.Sprintf("hostplugin: encoding the bootstrap: %v", err))
	}
	return b
}

const (
	scriptOpen  = `<script type="application/json" id="` + wire.BootstrapID + `">`
	scriptClose = `</script>`
)

func bootstrapElement(cfg Config) []byte {
	b := cfg.Bootstrap()
	out := make([]byte, 0, len(scriptOpen)+len(b)+len(scriptClose))
	out = append(out, scriptOpen...)
	out = append(out, b...)
	return append(out, scriptClose...)
}

// BootstrapElement returns the element [Host.Inject] inserts into pages, for embedders that
// render their own head.
func (h *Host) BootstrapElement() []byte {
	return append([]byte(nil), h.state.Load().script...)
}

// SetReady opens or closes the readiness gate. While it is closed, sockets open but get no
// ready frame (a page sees the "open, not ready" stall its deadline handles); opening it sends
// the ready frame to every session waiting. Closing it again affects new sessions only.
func (h *Host) SetReady(ready bool) {
	h.ready.Store(ready)
	if ready {
		h.openGate()
	}
}

// Ready reports whether the readiness gate is open.
func (h *Host) Ready() bool { return h.ready.Load() }

func (h *Host) openGate() {
	if !h.Ready() {
		return
	}
	for _, s := range h.snapshot() {
		s.sendReady()
	}
}

// Sessions is the number of open sessions (ready or waiting for the gate).
func (h *Host) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

// Stats is a snapshot of the events endpoint, for health checks and tests.
type Stats struct {
	Ready    bool `json:"ready"`    // the readiness gate is open
	Draining bool `json:"draining"` // Drain or Stop was called
	Sessions int  `json:"sessions"` // open sessions, ready or waiting for the gate
	// Open counts the sockets at the endpoint: sessions plus upgrades in progress, held ones
	// included. For a moment after an upgrade a socket counts twice.
	Open int `json:"open"`
	// Accepted counts the upgrade requests that reached the endpoint since the Host started,
	// admitted or not (not the probes, which are no sockets).
	Accepted uint64 `json:"accepted"`
}

// Stats returns a snapshot of the events endpoint.
func (h *Host) Stats() Stats {
	h.mu.Lock()
	sessions, draining := len(h.sessions), h.draining
	h.mu.Unlock()
	return Stats{
		Ready:    h.ready.Load(),
		Draining: draining,
		Sessions: sessions,
		Open:     sessions + int(h.inflight.Load()),
		Accepted: h.accepted.Load(),
	}
}

// Draining reports whether Drain or Stop was called.
func (h *Host) Draining() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.draining
}

func (h *Host) snapshot() []*session {
	h.mu.Lock()
	defer h.mu.Unlock()
	list := make([]*session, 0, len(h.sessions))
	for s := range h.sessions {
		list = append(list, s)
	}
	return list
}

// addSession registers s, unless the Host is draining or closed.
func (h *Host) addSession(s *session) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.draining || h.closed.Load() {
		return false
	}
	if len(h.sessions) == 0 {
		h.idle = make(chan struct{})
	}
	h.sessions[s] = struct{}{}
	return true
}

func (h *Host) removeSession(s *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.sessions[s]; !ok {
		return
	}
	delete(h.sessions, s)
	h.adm.release()
	if len(h.sessions) == 0 {
		close(h.idle)
	}
}

// Publish appends data (one JSON value) to stream and returns its sequence number. Pages
// subscribed to stream receive it live; pages that come back later replay it while the log
// still holds it.
func (h *Host) Publish(ctx context.Context, stream string, data json.RawMessage) (uint64, error) {
	if err := checkStreamName(stream); err != nil {
		return 0, err
	}
	if !json.Valid(data) {
		return 0, fmt.Errorf("%w: stream %q", ErrEventData, stream)
	}
	if h.closed.Load() {
		return 0, ErrClosed
	}
	ev, err := h.log.Append(ctx, stream, data)
	if err != nil {
		return 0, fmt.Errorf("hostplugin: publish to %q: %w", stream, err)
	}
	return ev.Seq, nil
}

func checkStreamName(stream string) error {
	if err := wire.CheckStream(stream); err != nil {
		return fmt.Errorf("hostplugin: stream %q: %w", wire.Truncate(stream), err)
	}
	return nil
}

// SetBaseline sets the function that supplies stream's baseline in reset frames; nil removes
// it (resets then carry no baseline).
func (h *Host) SetBaseline(stream string, fn BaselineFunc) {
	h.baseMu.Lock()
	defer h.baseMu.Unlock()
	if fn == nil {
		delete(h.baselines, stream)
		return
	}
	h.baselines[stream] = fn
}

// Drain sends goaway with uri to every session (an empty uri asks pages to come back to the
// same place, as after a restart), waits until they have left or ctx ends (and at most the
// config's drainTimeout), then closes the rest with 1001. From then on new sockets get the same
// goaway and 1001 at once. It returns how many sessions had to be closed.
//
// Drain is for a Host whose pages have somewhere to go while it still serves them (the
// GOAWAY is make-before-break: a page keeps its session until its dial elsewhere is ready):
// a uri naming another Host, a successor that took over this listening socket (see the
// restart package), or, with an empty uri, a load balancer whose other Hosts take the pages.
// A Host with nobody in its place should call [Host.Stop] instead: its pages' dials would
// only fail, and the process would wait out drainTimeout for nothing.
func (h *Host) Drain(ctx context.Context, uri string) int {
	ctx, cancel := context.WithTimeout(ctx, h.state.Load().cfg.drainTimeout)
	defer cancel()

	h.mu.Lock()
	h.draining = true
	h.drainURI = uri
	idle := h.idle
	h.mu.Unlock()

	frame := goAwayFrame(uri)
	list := h.snapshot()
	h.logger.Info("hostplugin: draining", "sessions", len(list), "uri", uri)
	for _, s := range list {
		s.goAway(frame)
	}
	select {
	case <-idle:
		return 0
	case <-ctx.Done():
	}
	// ctx is over: the close handshakes get closeWait of their own.
	return h.closeAll(context.Background(), closeWait, func(s *session) { s.closeWith(wire.CloseDrained, "drained") })
}

// Stop ends every session at once, for a Host that stops with no successor: its listener is
// closed and nobody accepts in its place, so a goaway would only send the pages to a closed
// port while the process waited out drainTimeout. Each page gets an error frame carrying
// wire.RestartReason(retryAfter) (what a browser page can read; retryAfter is the least the
// page should wait before it dials again, 0 for no minimum), then close 1012 (service
// restart) with the same reason. Sockets that arrive afterwards get the same at once. Stop
// waits for the close handshakes until ctx ends, and at most half a second (a page that
// reads answers within a round trip; a dead peer would hold each for seconds, and the page
// has what it needs once the frames are out), and returns how many sessions it closed.
// Close the Host afterwards.
//
// Stop is the choice of a supervisor's plain restart (stop, start again) and of a
// socket-activated Host under systemctl restart: the port stays open in systemd, but nobody
// accepts until this process is gone. With somewhere to send the pages, [Host.Drain] is.
func (h *Host) Stop(ctx context.Context, retryAfter time.Duration) int {
	reason := wire.RestartReason(retryAfter)
	h.mu.Lock()
	h.draining = true
	h.stopping = true
	h.restart = reason
	h.mu.Unlock()
	frame := errorFrame(reason)
	n := h.closeAll(ctx, stopWait, func(s *session) { s.finish(frame, wire.CloseServiceRestart, reason) })
	h.logger.Info("hostplugin: stopped with no successor: sessions closed with 1012", "sessions", n, "reason", reason)
	return n
}

// turnAway answers a socket that arrived after Drain or Stop and never became a session:
// Drain's goaway and 1001, or Stop's restart message and 1012.
func (h *Host) turnAway(conn *websocket.Conn) {
	h.mu.Lock()
	stopping, reason, uri := h.stopping, h.restart, h.drainURI
	h.mu.Unlock()
	if stopping {
		_ = writeFrame(conn, errorFrame(reason))
		_ = conn.Close(wire.CloseServiceRestart, reason)
		return
	}
	_ = writeFrame(conn, goAwayFrame(uri))
	_ = conn.Close(wire.CloseDrained, "drained")
}

// closeAll ends every session with end, concurrently, waiting until ctx ends and at most wait
// for the close handshakes (a dead peer would otherwise hold each for seconds).
func (h *Host) closeAll(ctx context.Context, wait time.Duration, end func(*session)) int {
	list := h.snapshot()
	var wg sync.WaitGroup
	for _, s := range list {
		wg.Go(func() { end(s) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
	return len(list)
}

// How long Drain and Close (closeWait), and Stop (stopWait), wait for close handshakes. A
// stopping process has nothing to gain from a dead peer's answer.
const (
	closeWait = 3 * time.Second
	stopWait  = 500 * time.Millisecond
)

// Close disposes of the Host: the middleware passes pages through untouched, the events
// endpoint refuses sockets, and every session is closed with 1001. It is idempotent. A
// process that is going away calls Drain or Stop first, so that its pages know where to go.
func (h *Host) Close() error {
	h.closeOnce.Do(func() {
		h.mu.Lock()
		h.closed.Store(true)
		h.mu.Unlock()
		close(h.done)
		// Sessions Stop is finishing are left to it: a second close would wait for the first.
		h.closeAll(context.Background(), closeWait, func(s *session) { s.closeUnlessEnding(wire.CloseDrained, "host closed") })
	})
	return nil
}

// Handler returns next with the Host in front of it: requests for the events endpoint (the
// configured one, and every one announced by an earlier config, since pages loaded before a
// reload keep theirs) go to the Host, everything else through [Host.Inject]. After Close,
// everything goes to next untouched.
func (h *Host) Handler(next http.Handler) http.Handler {
	inject := h.Inject(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.closed.Load() {
			next.ServeHTTP(w, r)
			return
		}
		st := h.state.Load()
		if st.endpoints[r.URL.Path] {
			h.ServeHTTP(w, r)
			return
		}
		if dir, _ := path.Split(r.URL.Path); st.clients[dir] {
			h.client.ServeHTTP(w, r)
			return
		}
		inject.ServeHTTP(w, r)
	})
}

// ClientPrefix is the URL path under which Handler serves the client for the events endpoint
// endpoint: "client/" beside it ("/_lifeline/events" → "/_lifeline/client/"), or
// "/_lifeline/client/" for an endpoint at the root.
func ClientPrefix(endpoint string) string {
	dir := path.Dir(endpoint)
	if dir == "/" || dir == "." {
		return "/_lifeline/client/"
	}
	return dir + "/client/"
}
