package gateway

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/internal/tinyfmt"
	"github.com/lifeline-go/lifeline/internal/weburl"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// Errors a caller may see, reached with errors.Is.
var (
	// ErrClosed is the cause Close uses when it is given none, and what Run returns once the
	// gateway is closed.
	ErrClosed = errors.New("gateway: closed")
	// ErrUnsubscribed ends a subscription on which Unsubscribe was called.
	ErrUnsubscribed = errors.New("gateway: unsubscribed")
	// ErrReplaced ends a subscription when a newer Subscribe names the same stream.
	ErrReplaced = errors.New("gateway: subscription replaced by a newer Subscribe on the same stream")
	// ErrDenied ends a subscription the Host's application refused (a denied frame). It is
	// never retried; errors.As finds the *DeniedError with the Host's reason.
	ErrDenied = errors.New("gateway: subscription denied by the host")
	// ErrBadStream ends a subscription whose stream name the protocol cannot carry (it is
	// wire.ErrStreamName: the rule is the protocol's).
	ErrBadStream = wire.ErrStreamName
	// ErrNilHandler ends a subscription made without a handler.
	ErrNilHandler = errors.New("gateway: nil handler")
	// ErrBadURL is returned for an events URL that is not an absolute ws, wss, http or https URL.
	ErrBadURL = errors.New("gateway: bad events URL")
	// ErrDial is wrapped by the error of a generation whose socket could not be opened.
	ErrDial = errors.New("gateway: dial failed")
	// ErrProtocol is wrapped by every failure caused by a Host that broke the protocol: a
	// frame that does not decode, anything but ready first, a second ready, a seq gap.
	ErrProtocol = errors.New("gateway: host broke the protocol")
	// ErrLinkDead ends a generation that received no frame for 2.5 × the heartbeat.
	ErrLinkDead = errors.New("gateway: link silent for 2.5 × heartbeat")
	// ErrOverloaded is wrapped by the error of a session the Host refused with close code
	// 1013; when the Host gave a retry-after, Run returns it inside a
	// *controller.RetryAfterError.
	ErrOverloaded = errors.New("gateway: host overloaded")
	// ErrSessionClosed is wrapped by the error of a session the Host or the network ended.
	ErrSessionClosed = errors.New("gateway: session closed")
)

// DeniedError is why a subscription ended when the Host's application refused it.
type DeniedError struct {
	Stream string
	Reason string // as the Host gave it; may be empty
}

func (e *DeniedError) Error() string {
	if e.Reason == "" {
		return tinyfmt.Sprintf("gateway: the host denied stream %q", e.Stream)
	}
	return tinyfmt.Sprintf("gateway: the host denied stream %q: %s", e.Stream, e.Reason)
}

// Is makes errors.Is(err, ErrDenied) hold.
func (e *DeniedError) Is(target error) bool { return target == ErrDenied }

// Defaults of [Options].
const (
	DefaultReadLimit  = 1 << 20
	DefaultQueueLen   = 1024
	DefaultCloseGrace = time.Second
	// DefaultProbeTimeout is how long a liveness probe waits for a frame (see Probe).
	DefaultProbeTimeout = 2 * time.Second
)

// Options tune a [Gateway]. A nil *Options means all defaults; zero fields take their default.
type Options struct {
	// Logger receives the gateway's logs (protocol errors, handler panics, overflows).
	// Default: as controller.Options.Logger (slog.Default() natively, none in the browser).
	Logger controller.Logger
	// ReadLimit is the largest frame accepted, in bytes; a larger one ends the session with
	// close code 1009. Default DefaultReadLimit (1 MiB).
	ReadLimit int64
	// QueueLen bounds each subscription's queue of deliveries waiting for its handler. A
	// handler that falls further behind loses the queue and is resynchronised from a fresh
	// baseline once it returns. Default DefaultQueueLen (1024).
	QueueLen int
	// CloseGrace is how long ending a healthy session waits for the Host to answer the close
	// handshake before the socket is torn down. Default DefaultCloseGrace (1 s).
	CloseGrace time.Duration
	// Handshake is what native builds add to the WebSocket handshake (Handshake.Header);
	// the browser build's is empty. Default nothing added.
	Handshake
	// ProbeTimeout is how long [Gateway.Probe] waits for a frame before it declares the link
	// dead. Default DefaultProbeTimeout (2 s).
	ProbeTimeout time.Duration
	// CallTimeout is the timeout of a call that sets none (CallOptions.Timeout). Default
	// DefaultCallTimeout (30 s).
	CallTimeout time.Duration
	// MaxQueuedCalls and MaxQueuedBytes bound the calls waiting to be sent (while not
	// connected): one more is refused with CallBusy, never dropped. Defaults
	// DefaultMaxQueuedCalls (256) and DefaultMaxQueuedBytes (1 MiB of data).
	MaxQueuedCalls int
	MaxQueuedBytes int
	// CallsInFlight is how many calls a session may have sent and not had answered. Default
	// DefaultCallsInFlight (4).
	CallsInFlight int
	// Mode names the page's mode to the Host (wire.ModeShared, wire.ModeInPage, …), on the
	// URL of every dial (wire.ModeParam), for the Host's metrics. Default wire.ModeNative in a
	// native build; none in the browser, whose hub names its own.
	Mode string
	// Carrier is the carrier the first attempt starts on: wire.CarrierWebSocket (the default,
	// "" too), or wire.CarrierStream or CarrierPoll for a page that remembers a path that did
	// not carry a WebSocket (see OnCarrier). Any other value is ErrBadCarrier.
	Carrier string
	// OnCarrier is told, each time a session is ready, what carries it: the page's indicator
	// shows it, and a page remembers a path that does not carry a WebSocket (Blocked) so that
	// its next visit starts on the HTTP carrier. It runs on the session's reading goroutine
	// and must not block. Default none.
	OnCarrier func(Carrier)
	// FallbackAfter is how long a carrier may take to bring the ready frame before the Host is
	// asked, on the side, whether the path is what holds it back (the Host answers a plain GET
	// at once: then the next carrier is tried). Default DefaultFallbackAfter.
	FallbackAfter time.Duration
	// UpgradeAfter is the first wait, on the HTTP carrier, before a WebSocket is tried again
	// on the side; each probe that fails doubles it, up to 10 min, each spread over 100–200%
	// by jitter. Default DefaultUpgradeAfter.
	UpgradeAfter time.Duration
	// RenewToken, when set, is asked before each renewal of a session whose credential
	// expires (the ready frame says when; access.go) for a token to send with it, which the
	// Host hands its Authenticate as "Authorization: Bearer <token>". It runs on the
	// renewal's goroutine, bounded by ctx; an error fails that renewal, which is tried again
	// while there is time. Default none: a renewal carries the page's cookies alone.
	RenewToken func(ctx context.Context) (string, error)
}

// Carrier says what carries the page's connection (Options.OnCarrier).
type Carrier struct {
	// Kind is wire.CarrierWebSocket, CarrierStream or CarrierPoll.
	Kind string
	// Blocked says the path does not carry a WebSocket (found now, or remembered): the
	// connection is on the HTTP carrier, and a WebSocket is tried again now and then.
	Blocked bool
}

// Defaults of the carrier's choice.
const (
	DefaultFallbackAfter = 1500 * time.Millisecond
	DefaultUpgradeAfter  = 15 * time.Second
	// maxUpgradeWait bounds the wait between two probes for a WebSocket.
	maxUpgradeWait = 10 * time.Minute
)

// ErrBadCarrier is returned by New for an Options.Carrier it does not know.
var ErrBadCarrier = errors.New("gateway: unknown carrier")

// A Gateway is the page's WebSocket carrier: the [controller.Source] a controller drives, the
// event pump of each generation, and the domain streams that survive every reconnect.
//
// Create one with [New], hand it to [controller.New], subscribe with [Gateway.Subscribe], and
// Close it after stopping the controller. All methods are safe from any goroutine.
type Gateway struct {
	url       string
	log       controller.Logger
	readLimit int64
	queueLen  int
	grace     time.Duration
	probeWait time.Duration

	callTimeout    time.Duration
	maxQueued      int
	maxQueuedBytes int
	callsInFlight  int
	handshake      Handshake
	mode           string
	dialer         string // wire.DialerParam of every dial: the loader's, or random (newDialer)
	onCarrier      func(Carrier)
	fallbackAfter  time.Duration
	upgradeAfter   time.Duration
	renewToken     func(context.Context) (string, error)

	// life is cancelled by Close with its cause; every session's context derives from it.
	life   context.Context
	finish context.CancelCauseFunc

	mu       sync.Mutex
	cause    error // set by Close
	subs     map[string]*Subscription
	sessions map[*session]struct{}
	calls    calls
	outages  outageRecord  // what the page lives through between two connections (report.go)
	prefer   string        // the carrier the next attempt starts on
	failed   bool          // the last attempt or session failed: a WebSocket is checked before it is dialed again
	upgrades int           // probes for a WebSocket since the last WebSocket session
	runs     int           // Run calls in progress
	idle     chan struct{} // closed when runs drops to 0 after Close
}

// New returns a gateway for the events endpoint rawURL (ws://host/_lifeline/events; http and
// https are accepted and mean ws and wss).
func New(rawURL string, opts *Options) (*Gateway, error) {
	u, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = controller.DefaultLogger()
	}
	if o.ReadLimit <= 0 {
		o.ReadLimit = DefaultReadLimit
	}
	if o.QueueLen <= 0 {
		o.QueueLen = DefaultQueueLen
	}
	if o.CloseGrace <= 0 {
		o.CloseGrace = DefaultCloseGrace
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = DefaultProbeTimeout
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.MaxQueuedCalls <= 0 {
		o.MaxQueuedCalls = DefaultMaxQueuedCalls
	}
	if o.MaxQueuedBytes <= 0 {
		o.MaxQueuedBytes = DefaultMaxQueuedBytes
	}
	if o.CallsInFlight <= 0 {
		o.CallsInFlight = DefaultCallsInFlight
	}
	if o.Mode == "" && runtime.GOOS != "js" {
		o.Mode = wire.ModeNative
	}
	switch o.Carrier {
	case "":
		o.Carrier = wire.CarrierWebSocket
	case wire.CarrierWebSocket, wire.CarrierStream, wire.CarrierPoll:
	default:
		return nil, tinyfmt.Errorf("%w %q: want %q, %q or %q", ErrBadCarrier, o.Carrier, wire.CarrierWebSocket, wire.CarrierStream, wire.CarrierPoll)
	}
	if o.FallbackAfter <= 0 {
		o.FallbackAfter = DefaultFallbackAfter
	}
	if o.UpgradeAfter <= 0 {
		o.UpgradeAfter = DefaultUpgradeAfter
	}
	life, finish := context.WithCancelCause(context.Background())
	return &Gateway{
		url:       u.String(),
		log:       o.Logger,
		readLimit: o.ReadLimit,
		queueLen:  o.QueueLen,
		grace:     o.CloseGrace,
		probeWait: o.ProbeTimeout,

		callTimeout:    o.CallTimeout,
		maxQueued:      o.MaxQueuedCalls,
		maxQueuedBytes: o.MaxQueuedBytes,
		callsInFlight:  o.CallsInFlight,
		handshake:      o.Handshake.clone(),
		mode:           o.Mode,
		dialer:         newDialer(),
		onCarrier:      o.OnCarrier,
		fallbackAfter:  o.FallbackAfter,
		upgradeAfter:   o.UpgradeAfter,
		renewToken:     o.RenewToken,
		prefer:         o.Carrier,
		life:           life,
		finish:         finish,
		subs:           make(map[string]*Subscription),
		sessions:       make(map[*session]struct{}),
	}, nil
}

// URL is the normalised events URL: the page's home, which a generation whose target is ""
// dials. The controller never holds it: a GOAWAY that sends the page back here reaches the
// controller as "", so the two cannot spell the home differently.
func (g *Gateway) URL() string { return g.url }

// parseURL checks an events URL and normalises it (see normalise).
func parseURL(raw string) (*weburl.URL, error) {
	u, err := weburl.Parse(raw)
	if err != nil {
		return nil, tinyfmt.Errorf("%w: %q: %v", ErrBadURL, raw, err)
	}
	if u, err = normalise(u); err != nil {
		return nil, tinyfmt.Errorf("%w in %q", err, raw)
	}
	return u, nil
}

// normalise is the one rule for events URLs: the scheme becomes ws or wss (http and https
// mean them), a host is required, and the fragment goes. The controller compares places as
// strings, so every URL that names one (the gateway's own, GOAWAY targets) passes through here.
func normalise(u *weburl.URL) (*weburl.URL, error) {
	switch strings.ToLower(u.Scheme) {
	case "ws", "http":
		u.Scheme = "ws"
	case "wss", "https":
		u.Scheme = "wss"
	default:
		return nil, tinyfmt.Errorf("%w: scheme must be ws, wss, http or https, got %q", ErrBadURL, u.Scheme)
	}
	if u.Host == "" {
		return nil, tinyfmt.Errorf("%w: no host", ErrBadURL)
	}
	u.Fragment = ""
	return u, nil
}

// sameURL reports whether a and b name the same events URL once normalised (the page's loader
// spells a URL as a browser does, the gateway as net/url does).
func sameURL(a, b string) bool {
	ua, err := parseURL(a)
	if err != nil {
		return false
	}
	ub, err := parseURL(b)
	return err == nil && ua.String() == ub.String()
}

// Subscribe follows stream: handler receives its events once each and in order, or a reset
// carrying a baseline, across every reconnect, until the subscription ends. A gateway holds
// one subscription per stream: subscribing again replaces the older one, which ends with
// [ErrReplaced], and the new one starts from a fresh baseline.
//
// handler runs on the subscription's own goroutine, never two calls at once; a handler that
// blocks delays only its own stream, and a panic is recovered and logged. Subscribe never
// blocks on the network: while disconnected, calls collapse to the newest request per stream.
//
// A stream name the protocol cannot carry, a nil handler or a closed gateway yield a
// subscription that has already ended with the reason.
func (g *Gateway) Subscribe(stream string, handler func(Delivery)) *Subscription {
	return g.subscribe(stream, handler, Cursor{})
}

// subscribe is Subscribe from the cursor from (none when its Epoch is "").
func (g *Gateway) subscribe(stream string, handler func(Delivery), from Cursor) *Subscription {
	s := &Subscription{g: g, stream: stream, handler: handler, done: make(chan struct{}), epoch: from.Epoch}
	if from.Epoch != "" {
		s.last = from.Seq
	}
	s.running.Init(&g.mu, func() bool { return g.deliverOne(s) })
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case handler == nil:
		g.end(s, tinyfmt.Errorf("%w: Subscribe(%q)", ErrNilHandler, stream))
	case wire.CheckStream(stream) != nil:
		g.end(s, tinyfmt.Errorf("gateway: Subscribe(%q): %w", wire.Truncate(stream), wire.CheckStream(stream)))
	case g.cause != nil:
		g.end(s, g.cause)
	default:
		if old := g.subs[stream]; old != nil {
			g.end(old, ErrReplaced)
		}
		g.subs[stream] = s
		g.kickAll()
	}
	return s
}

// Close closes the gateway: every subscription ends with cause (ErrClosed when nil), every
// session is torn down, and Run refuses new generations. Close returns once every Run in
// progress has released its socket (under js/wasm: once each has asked the browser to close
// it); a dial that completes meanwhile is closed at once. Stop the controller first, or it
// keeps retrying against a closed gateway. Close is idempotent; later causes are ignored.
func (g *Gateway) Close(cause error) {
	if cause == nil {
		cause = ErrClosed
	}
	g.mu.Lock()
	if g.cause == nil {
		g.cause = cause
		g.finish(cause)
		for _, name := range sortedKeys(g.subs) {
			g.end(g.subs[name], cause)
		}
		clear(g.subs)
		g.closeCalls(cause)
	}
	var idle chan struct{}
	if g.runs > 0 {
		if g.idle == nil {
			g.idle = make(chan struct{})
		}
		idle = g.idle
	}
	g.mu.Unlock()
	if idle != nil {
		<-idle
	}
}

// Err returns the cause Close was given, or nil while the gateway is open.
func (g *Gateway) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cause
}

// Run performs one generation for a controller; see [controller.Source]. It dials
// gen.Target() (the gateway's URL when "") once, waits for the Host's ready frame, reports
// it with gen.Ready, resubscribes every stream from its cursor, and pumps frames until the
// session ends or ctx is cancelled. It returns only after the socket is closed and its
// goroutines are gone (see the package documentation for the browser's close handshake).
func (g *Gateway) Run(ctx context.Context, gen *controller.Generation) error {
	target := gen.Target()
	if target == "" {
		target = g.url
	}
	u, err := parseURL(target)
	if err != nil {
		return err
	}
	s, err := g.register(ctx, gen, u)
	if err != nil {
		return err
	}
	err = s.run()
	s.stopRenewals()
	g.unregister(s, err)
	return err
}

// register records a new session, refusing it once the gateway is closed. The session's
// context ends with the generation's or with Close, whichever comes first.
func (g *Gateway) register(ctx context.Context, gen *controller.Generation, u *weburl.URL) (*session, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cause != nil {
		return nil, closedError(g.cause)
	}
	s := newSession(g, gen, u)
	s.ctx, s.cancel = context.WithCancelCause(ctx)
	s.stopLife = context.AfterFunc(g.life, func() { s.cancel(closedError(context.Cause(g.life))) })
	g.sessions[s] = struct{}{}
	g.runs++
	return s, nil
}

func (g *Gateway) unregister(s *session, err error) {
	s.stopLife()
	s.cancel(nil)
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.sessions, s)
	if err == nil {
		err = controller.ErrEnded
	}
	// The page's own doing is no failure: a WebSocket dialed after it needs no check first.
	// Nor does a link found dead: its end says nothing of the Host, and the browser may keep
	// HTTP connections of the page's that the same network left half-open, on which the
	// check would wait (a WebSocket always gets a connection of its own).
	g.failed = !errors.Is(err, controller.ErrStopped) && !errors.Is(err, controller.ErrReplaced) &&
		!errors.Is(err, controller.ErrOffline) && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrLinkDead)
	g.closeAccess(s, err) // access.go: none of its calls goes to a later session
	g.orphan(s, err)
	g.runs--
	if g.runs == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// closedError is what a generation of a closed gateway ends with.
func closedError(cause error) error {
	if errors.Is(cause, ErrClosed) {
		return cause
	}
	return tinyfmt.Errorf("%w: %w", ErrClosed, cause)
}

// Probe checks that the links are alive now, instead of waiting for the watchdog (2.5 ×
// heartbeat of silence, 37.5 s by default): every ready session sends a ping, which the Host
// answers at once, and a session that receives no frame within Options.ProbeTimeout ends with
// ErrLinkDead. Call it when the world may have changed: the page became visible or resumed,
// the network changed, the machine slept. A probe is one small frame on an open socket;
// probes while one is outstanding on a session are folded into it, so calls never storm.
//
// A session still in its handshake sends its ping once its ready frame has come: the probe
// is not lost when the page wakes just as the Host answers (the controller may report the
// connection before the session has marked itself ready).
//
// A Host that does not know the frame answers it with an error frame, which proves the link
// alive all the same; the session then sends no more pings (such a Host would close a session
// after enough frames it does not know) and relies on its watchdog.
func (g *Gateway) Probe() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for s := range g.sessions {
		s.probe()
	}
}

// kickAll asks every session to reconcile its subscriptions. g.mu must be held.
func (g *Gateway) kickAll() {
	for s := range g.sessions {
		s.kickWriter()
	}
}

// startCarrier is the carrier the next attempt starts on.
func (g *Gateway) startCarrier() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.prefer
}

// checksFirst reports whether a WebSocket is to be checked before it is dialed: in the
// browser, after a failure (see session.checkFirst).
func (g *Gateway) checksFirst() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return checkBeforeRedial && g.failed
}

// carried records that s is ready on its carrier, and tells Options.OnCarrier.
func (g *Gateway) carried(s *session) {
	g.mu.Lock()
	g.failed = false
	g.prefer = s.kind
	if s.kind == wire.CarrierWebSocket {
		g.upgrades = 0
	}
	on := g.onCarrier
	g.mu.Unlock()
	if on != nil {
		on(Carrier{Kind: s.kind, Blocked: s.kind != wire.CarrierWebSocket})
	}
}

// upgradeWait is the wait before the next probe for a WebSocket: UpgradeAfter doubled by each
// probe since the last WebSocket session, up to maxUpgradeWait, spread over 100–200%.
func (g *Gateway) upgradeWait() time.Duration {
	g.mu.Lock()
	n := g.upgrades
	g.upgrades++
	g.mu.Unlock()
	d := g.upgradeAfter
	for ; n > 0 && d < maxUpgradeWait; n-- {
		d *= 2
	}
	d = min(d, maxUpgradeWait)
	return d + rand.N(d)
}

// retryUpgrades starts the probes for a WebSocket over from UpgradeAfter: the world changed.
func (g *Gateway) retryUpgrades() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.upgrades = 0
}
