//go:build !js

package hostplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/lifeline-go/lifeline/hostplugin/internal/client"
	"github.com/lifeline-go/lifeline/hostplugin/internal/inject"
	"github.com/lifeline-go/lifeline/internal/wire"
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
	// ErrEventTooBig is returned when published data is over the config's maxEventBytes.
	ErrEventTooBig = errors.New("hostplugin: event data too big")
	// ErrEventData is returned when published data is not one JSON value.
	ErrEventData = errors.New("hostplugin: event data is not valid JSON")
)

// errNoAuthorize is New's answer to options that leave Authorize nil: who may read which
// stream is a decision the application must write down, even when the answer is everyone.
var errNoAuthorize = errors.New("hostplugin: Options.Authorize is nil: set it to decide which streams a session may read, " +
	"or to hostplugin.PublicStreams if every page may read every stream")

// Options are the parts of a [Host] beyond its config. Authorize is required; every other
// field may be left zero.
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
	// Authenticate decides who may connect. It is called for every request to the events
	// endpoint, before the upgrade (after the per-address rate, before the session cap and
	// the accept rate, so a refused credential costs no slot and no token), and for every
	// refusal query (see the package documentation). It returns the identity that Authorize
	// is given for the session's streams, or an error that refuses the request: HTTP 401 when
	// it wraps ErrUnauthenticated, 403 otherwise (ErrForbidden, or any other error), with a
	// JSON body whose reason is the error's first line, truncated. The page is shown that
	// reason: it must name no secret. A hook that panics refuses with 500 and is logged with
	// its stack. It is not called for an origin that allowedOrigins refuses.
	// Default nil: every page may connect, with the identity "".
	Authenticate func(r *http.Request) (identity string, err error)
	// Access is Authenticate with an expiry: it says who the request is and until when its
	// credential holds (access.go). The session ends then, unless its page renews it before
	// (a renewal is answered by this same hook, with the page's cookies and token). Set
	// Authenticate or Access, not both.
	Access func(r *http.Request) (Access, error)
	// Authorize decides what a session may read. It is called for every sub frame, a
	// resubscription by cursor after a reconnect included, so a page that lost access cannot
	// resume by cursor. An error refuses that one subscription with a denied frame carrying
	// the error's first line, truncated (the page is shown it); nothing else of that stream
	// is sent, and the session and its other streams carry on. A hook that panics denies the
	// subscription ("internal error") and is logged with its stack. It runs on the session's
	// reading goroutine: a slow Authorize delays that page's later frames, no one else's.
	//
	// It is required: [New] refuses options without it. An application whose streams are
	// all public says so with [PublicStreams].
	Authorize func(identity, stream string) error
	// Calls is where the outcomes of keyed calls are kept for the dedup window, so that a
	// re-send runs nothing and gets the first outcome. Default: a [MemoryCallStore] of the
	// config's callDedupMs. A fleet of Hosts shares one (hostplugin/jetstream).
	Calls CallStore
	// Observer is told what the Host does, for its operator's metrics (package
	// hostplugin/metrics implements it for Prometheus). Default: none.
	Observer Observer
	// Presence turns on presence: who is on a stream, fleet-wide (see [Presence]). Default
	// nil: none (a sub asking for it is answered as by a Host that never heard of it).
	Presence *Presence
	// Relay carries the HTTP carrier's POSTs that reach this Host for a session of another
	// Host of the fleet, so that a load balancer in front of the fleet needs no sticky
	// sessions (hostplugin/jetstream has one on NATS). Default: none, which one Host needs.
	Relay Relay
	// Bus passes the ends of access (EndSessions, EndSubscription) on to every Host of the
	// fleet (hostplugin/jetstream has one on NATS). Default: none, which one Host needs.
	Bus Bus
}

// PublicStreams is the Authorize of an application whose every stream is public: it lets
// every session read every stream. Set Options.Authorize to it to say so; an application
// with any private stream writes its own Authorize instead.
func PublicStreams(identity, stream string) error { return nil }

// BaselineFunc returns the state of stream as of head (the position a reset carries), sent
// as the reset frame's baseline. It runs on the goroutine that carries stream's frames to its
// pages, with none of the Host's locks held: it may call Publish (the new event follows the
// reset), and a slow one holds up its own stream only (its frames, and a page subscribing to
// it until its reset is out), never a Publish.
type BaselineFunc func(stream string, head Cursor) (json.RawMessage, error)

// Host is the Host side of Lifeline: in front of an application ([Host.Handler]) it injects
// the bootstrap into HTML pages, serves the client and the events endpoint, and carries the
// streams ([Host.Publish]).
//
// A Host starts not ready: sockets open, but no session gets its ready frame until
// SetReady(true). All methods are safe for concurrent use. Close disposes of it: pages are
// served byte for byte again and every session ends.
type Host struct {
	logger *slog.Logger
	log    StreamLog
	ring   *Ring          // the default log, resized on Apply; nil with Options.Log
	client *client.Client // the client served and injected (applyMu); nil with Options.NoClient
	authn  func(*http.Request) (string, error)
	authz  func(identity, stream string) error
	// maxQueue is the per-session limit maxQueue; a field so that a test can shed a slow
	// page after a few frames, not after megabytes.
	maxQueue int
	// logRetry is the first wait before a catch-up the log failed is tried again (1 s); a
	// field so that a test of a failing log need not wait seconds.
	logRetry time.Duration

	applyMu sync.Mutex // serialises apply, so that concurrent reloads cannot drop an endpoint
	state   atomic.Pointer[pageState]
	inject  *inject.Middleware

	ready     atomic.Bool
	adm       admission
	perIP     perIP
	sessions  sessionSet
	fanouts   fanouts
	baselines baselines

	accepted atomic.Uint64 // requests that reached the events endpoint
	queries  atomic.Uint64 // refusal queries that reached it
	inflight atomic.Int64  // of those, the ones whose handler is still running
	dialers  dialers       // the handshakes under way, by the page that dials (dialers.go)

	closeOnce sync.Once
	closed    atomic.Bool
	done      chan struct{} // closed by Close
	// released is closed as Close returns: a close handshake still waiting for its page then (one
	// Close gave up on, or one an end of access began) is cut, so that nothing of the Host's
	// outlives Close by up to closeHandshake.
	released chan struct{}
	// life ends with Close: the context of every call handler (which a page leaving does not
	// end, so that a keyed re-send finds the outcome).
	life    context.Context
	endLife context.CancelFunc

	calls     callHandlers
	callStore CallStore
	memCalls  *MemoryCallStore // the default store, whose window follows Apply; nil with Options.Calls

	id        string // names the Host in its sessions' ids, for the relay
	relay     Relay
	stopRelay func()

	pres *presence  // Options.Presence; nil without
	acc  hostAccess // access that ends: expiries, ends of identities, the fleet's bus (access.go)

	faults hostFaults // fault injection: empty unless built with -tags lifeline_faults
	thin   thinned
	obs    Observer // Options.Observer, or a NopObserver
}

// thinned are the logs that floods of refusals and bad frames would repeat: each is written a
// few times, then at most once per interval.
type thinned struct {
	origin, overload, perIP, badFrame, auth, denied, authPanic, logRead, callStore, relay, presence rate.Sometimes
}

func (t *thinned) init() {
	for _, s := range []*rate.Sometimes{&t.origin, &t.overload, &t.perIP, &t.badFrame, &t.auth, &t.denied, &t.authPanic, &t.logRead, &t.callStore, &t.relay, &t.presence} {
		s.First, s.Interval = 5, 10*time.Second
	}
}

// New returns a Host serving cfg. It is not ready until SetReady(true). opts must set
// Authorize.
func New(cfg Config, opts *Options) (*Host, error) {
	if !cfg.Valid() {
		return nil, ErrInvalidConfig
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Authorize == nil {
		return nil, errNoAuthorize
	}
	var pres Presence
	if o.Presence != nil {
		var err error
		if pres, err = checkPresence(o.Presence); err != nil {
			return nil, err
		}
	}
	if o.Authenticate != nil && o.Access != nil {
		return nil, ErrAccessHooks
	}
	h := &Host{
		logger:    o.Logger,
		log:       o.Log,
		authn:     o.Authenticate,
		authz:     o.Authorize,
		maxQueue:  maxQueue,
		logRetry:  time.Second,
		fanouts:   fanouts{live: map[string]*fanout{}},
		done:      make(chan struct{}),
		released:  make(chan struct{}),
		calls:     callHandlers{handlers: map[string]CallHandler{}},
		callStore: o.Calls,
		obs:       o.Observer,
		id:        newID(4),
		relay:     o.Relay,
		acc:       hostAccess{fn: o.Access, bus: o.Bus},
	}
	h.acc.exp.init(h)
	if h.obs == nil {
		h.obs = NopObserver{}
	}
	h.life, h.endLife = context.WithCancel(context.Background())
	if h.callStore == nil {
		h.memCalls = NewMemoryCallStore(cfg.callDedup, 0)
		h.callStore = h.memCalls
	}
	h.sessions.init()
	h.thin.init()
	if h.logger == nil {
		h.logger = slog.Default()
	}
	if h.log == nil {
		h.ring = NewRing(cfg.RingSize())
		h.log = h.ring
	}
	if !o.NoClient {
		c, err := client.Load()
		if err != nil {
			return nil, err
		}
		h.client = c
	}
	h.inject = inject.New(func() *inject.Page { return &h.state.Load().page }, h.logger)
	h.adm.lim = rate.NewLimiter(rate.Limit(cfg.AcceptRate()), cfg.AcceptBurst())
	h.apply(cfg)
	if err := h.serveRelay(); err != nil {
		return nil, err
	}
	if o.Presence != nil {
		h.pres = newPresence(h, pres)
		if pres.Fleet != nil {
			if err := h.pres.joinFleet(pres.Fleet); err != nil {
				if h.stopRelay != nil {
					h.stopRelay()
				}
				return nil, fmt.Errorf("hostplugin: joining the fleet's presence: %w", err)
			}
		}
	}
	if err := h.serveBus(); err != nil {
		if h.stopRelay != nil {
			h.stopRelay()
		}
		if h.pres != nil {
			h.pres.close()
		}
		return nil, err
	}
	return h, nil
}

// Handler returns app with the Host in front of it: the Host's one entry point. Requests for
// the events endpoint (the configured one, and every one announced by an earlier config, since
// pages loaded before a reload keep theirs) go to the Host, requests under [ClientPrefix] to
// the client it serves, and everything else to app, whose HTML pages get the bootstrap (and
// the client) inserted at the end of their head (see the package documentation). After
// Close, everything goes to app untouched.
//
// Serve it at the root of the site: the endpoint and the client are paths of their own, and a
// mux that sends them elsewhere leaves the injected client without its Host. A middleware
// around it must keep http.Hijacker reachable (an Unwrap method, as http.ResponseController
// reads it), or no socket can open; compression belongs outside it, since a compressed page
// is passed through without the bootstrap.
func (h *Host) Handler(app http.Handler) http.Handler {
	if app == nil {
		panic("hostplugin: Host.Handler(nil): the Host needs the application's handler to inject into (http.NotFoundHandler() for an endpoint alone)")
	}
	pages := h.inject.Wrap(app)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.closed.Load() {
			app.ServeHTTP(w, r)
			return
		}
		st := h.state.Load()
		if st.endpoints[r.URL.Path] {
			h.serveEvents(w, r)
			return
		}
		if dir, _ := path.Split(r.URL.Path); st.clients[dir] {
			st.client.ServeHTTP(w, r)
			return
		}
		pages.ServeHTTP(w, r)
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

// SetReady opens or closes the readiness gate. While it is closed, sockets open but get no
// ready frame (a page sees the "open, not ready" stall its deadline handles); opening it sends
// the ready frame to every session waiting. Closing it again affects new sessions only.
func (h *Host) SetReady(ready bool) {
	h.ready.Store(ready)
	h.obs.Gate(ready)
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
	for _, s := range h.sessions.snapshot() {
		s.sendReady()
	}
}

// Sessions is the number of open sessions (ready or waiting for the gate).
func (h *Host) Sessions() int { return h.sessions.count() }

// Stats is a snapshot of the events endpoint, for health checks and tests.
type Stats struct {
	Ready    bool `json:"ready"`    // the readiness gate is open
	Draining bool `json:"draining"` // Drain or Stop was called
	Sessions int  `json:"sessions"` // open sessions, ready or waiting for the gate
	// Open counts the sockets at the endpoint: sessions plus upgrades in progress, held ones
	// included. For a moment after an upgrade a socket counts twice.
	Open int `json:"open"`
	// Accepted counts the upgrade requests (and the HTTP carrier's opening GETs) that reached
	// the endpoint since the Host started, admitted or not (not the refusal queries, which are
	// no sockets).
	Accepted uint64 `json:"accepted"`
	// Queries counts the refusal queries that reached the endpoint since the Host started:
	// with Accepted, every attempt of a page (a page checks with one before it dials again
	// after a failure, and may dial nothing: PROTOCOL.md §11.5).
	Queries uint64 `json:"queries"`
}

// Stats returns a snapshot of the events endpoint.
func (h *Host) Stats() Stats {
	sessions, draining := h.sessions.state()
	return Stats{
		Ready:    h.ready.Load(),
		Draining: draining,
		Sessions: sessions,
		Open:     sessions + int(h.inflight.Load()),
		Accepted: h.accepted.Load(),
		Queries:  h.queries.Load(),
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
	if limit := h.Config().maxEventBytes; len(data) > limit {
		return 0, fmt.Errorf("%w: %d bytes on stream %q, over maxEventBytes (%d)", ErrEventTooBig, len(data), wire.Truncate(stream), limit)
	}
	if h.closed.Load() {
		return 0, ErrClosed
	}
	start := time.Now()
	ev, err := h.log.Append(ctx, stream, data)
	h.obs.Published(time.Since(start), err)
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
func (h *Host) SetBaseline(stream string, fn BaselineFunc) { h.baselines.set(stream, fn) }
