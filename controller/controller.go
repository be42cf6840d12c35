package controller

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/lifeline-go/lifeline/internal/serial"
	"github.com/lifeline-go/lifeline/internal/tinyfmt"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// Options tune a [Controller]. A nil *Options means all defaults.
type Options struct {
	// Logger receives the controller's logs. Default: slog.Default() natively; none in the
	// browser build, which links no log/slog (see [Logger]).
	Logger Logger
	// OnChange receives every state change, in order, from one goroutine at a time. It may
	// call the controller's methods. Default: none.
	OnChange func(Status)
	// Rand returns values in [0,1) for the ladder's jitter. Default: a source of this
	// controller's own, seeded at random, so that pages do not retry in lockstep.
	Rand func() float64
}

// A Controller keeps one logical connection alive through generations opened by a [Source]:
// it owns the readiness deadline, the slow-host warning, the retry ladder, flap and
// redirect-loop damping, and the offline suspension. It knows no sockets and no DOM.
//
// Create one with [New], then call Start. All methods are safe from any goroutine. Internally
// one goroutine (the loop) owns every piece of state; methods send it commands.
type Controller struct {
	src      Source
	cfg      Config
	log      Logger
	rnd      func() float64
	onChange func(Status)
	observe  func(Status) // the Source's StatusObserver, or nil

	// life serialises Start and Stop. It is a channel rather than a mutex so that a Stop
	// waiting for a slow source is a durable block under testing/synctest.
	life chan struct{}

	mu      sync.Mutex
	cur     *loop // the running loop, nil when idle or stopped
	offline bool  // the browser's last word on connectivity; outlives Stop/Start
	status  Status
	queue   []Status    // statuses not yet delivered to onChange
	sending serial.Loop // delivers queue (deliverOne), on a goroutine only while it holds any
	gens    uint64      // attempt numbering, continuous across Stop/Start
}

// New returns an idle controller. cfg must come from [Resolve] or [DefaultConfig].
func New(src Source, cfg Config, opts *Options) (*Controller, error) {
	if src == nil {
		return nil, ErrNilSource
	}
	if !cfg.Valid() {
		return nil, ErrUnresolvedConfig
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = DefaultLogger()
	}
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())).Float64
	}
	c := &Controller{
		src:      src,
		cfg:      cfg,
		log:      o.Logger,
		rnd:      o.Rand,
		onChange: o.OnChange,
		life:     make(chan struct{}, 1),
	}
	if so, ok := src.(StatusObserver); ok {
		c.observe = so.ObserveStatus
	}
	c.sending.Init(&c.mu, c.deliverOne)
	return c, nil
}

// Config returns the controller's timing config.
func (c *Controller) Config() Config { return c.cfg }

// Status returns the latest status.
func (c *Controller) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

// Start begins a fresh sequence: the first attempt at once, the ladder at its first cap, the
// redirect chain empty. Start on a running controller does nothing.
func (c *Controller) Start() {
	c.life <- struct{}{}
	defer func() { <-c.life }()
	c.mu.Lock()
	if c.cur != nil {
		c.mu.Unlock()
		return
	}
	l := &loop{
		c:       c,
		cmds:    make(chan order),
		events:  make(chan event),
		done:    make(chan struct{}),
		started: make(chan struct{}),
		offline: c.offline,
		attempt: c.gens, // attempt numbers run on across Stop/Start
	}
	c.cur = l
	c.mu.Unlock()
	go l.run()
	// Once Start returns, Status reflects it (the loop publishes under c.mu, so wait unlocked).
	<-l.started
}

// Stop cancels every generation, waits until each has settled, and stops every timer. A ready
// that lands during or after Stop is discarded and its carrier closed. Stop on a stopped
// controller does nothing; on an idle one it only records the Stopped state.
func (c *Controller) Stop() {
	c.life <- struct{}{}
	defer func() { <-c.life }()
	c.mu.Lock()
	l, idle := c.cur, c.status.State == Idle
	c.mu.Unlock()
	if l == nil {
		if idle {
			// Never started: no loop writes the state, so Stop records it itself.
			c.publish(Status{State: Stopped})
		}
		return
	}
	l.send(cmdStop)
	<-l.done
	c.mu.Lock()
	c.cur = nil
	c.mu.Unlock()
}

// ReconnectNow attempts at once from the first cap of the ladder: it cancels a pending
// handshake (the new one starts once it settled), skips a wait, or replaces a connected
// generation. On an idle controller it is Start; on a stopped one it does nothing.
func (c *Controller) ReconnectNow() {
	c.mu.Lock()
	l, idle := c.cur, c.status.State == Idle
	c.mu.Unlock()
	switch {
	case l != nil:
		l.send(cmdReconnect)
	case idle:
		c.Start()
	}
}

// SetOnline tells the controller what the browser says of its network. Offline is
// authoritative: it cancels the attempt or generation and arms no timer. Online attempts at
// once, from the first cap.
func (c *Controller) SetOnline(online bool) {
	c.mu.Lock()
	c.offline = !online
	l := c.cur
	c.mu.Unlock()
	if l == nil {
		return
	}
	if online {
		l.send(cmdOnline)
	} else {
		l.send(cmdOffline)
	}
}

// Wake tells the controller that the page may have been asleep or held back: it became
// visible, it resumed after a freeze, or one of its timers fired far later than due (the
// machine slept; a hidden tab's timers are throttled). A wait that is already over — its
// timer was held back — ends now, and the attempt goes at the ladder's current rung: waking is
// no evidence that the Host is back, so the ladder keeps its position, and a wait still
// running is kept as it is. Wake never adds an attempt the ladder would not make.
func (c *Controller) Wake() {
	c.mu.Lock()
	l := c.cur
	c.mu.Unlock()
	if l != nil {
		l.send(cmdWake)
	}
}

// publish records s and queues it for OnChange. Called only by the loop (the one writer).
func (c *Controller) publish(s Status) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status = s
	if c.onChange == nil && c.observe == nil {
		return
	}
	c.queue = append(c.queue, s)
	c.sending.Start()
}

// deliverOne hands the next queued status to the Source's ObserveStatus and OnChange, in
// order, on the sending goroutine: the loop never waits for an observer and an observer may
// call the controller; with the queue empty the goroutine exits, so a stopped controller leaves
// none behind. c.mu is held, and released while the observers run.
func (c *Controller) deliverOne() bool {
	if len(c.queue) == 0 {
		c.queue = c.queue[:0]
		return false
	}
	s := c.queue[0]
	c.queue[0] = Status{}
	c.queue = c.queue[1:]
	c.mu.Unlock()
	if c.observe != nil {
		c.observe(s)
	}
	if c.onChange != nil {
		c.onChange(s)
	}
	c.mu.Lock()
	return true
}

func (c *Controller) nextGeneration() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gens++
	return c.gens
}

type command int

const (
	cmdStop command = iota
	cmdReconnect
	cmdOffline
	cmdOnline
	cmdWake
)

// order is a command on its way to the loop; done is closed once the loop has acted on it and
// published the resulting status, so a caller that reads Status afterwards sees the effect.
type order struct {
	cmd  command
	done chan struct{}
}

type eventKind int

const (
	evReady eventKind = iota
	evGoAway
	evReplace
	evEnded
)

type event struct {
	kind  eventKind
	gen   *Generation
	uri   string     // evGoAway
	err   error      // evEnded
	reply chan error // evReady, evGoAway
}

// gen is the loop's record of one started generation.
type gen struct {
	h         *Generation
	cancel    context.CancelCauseFunc
	ready     bool
	startedAt time.Time
	readyAt   time.Time
}

// loop is one run of the controller, from Start to Stop. Only its goroutine touches its fields.
type loop struct {
	c       *Controller
	cmds    chan order
	events  chan event
	done    chan struct{}
	started chan struct{} // closed after the first status is published

	live []*gen // started and not yet settled, current or cancelled
	cur  *gen   // the generation that defines the state: a handshake or the connected one
	old  *gen   // a connected generation draining after GOAWAY while cur handshakes

	pending  bool      // an attempt is wanted
	due      bool      // ... and its wait is over
	target   string    // where the pending attempt dials
	next     time.Time // when the pending attempt is due
	failures int       // ladder position
	chain    []string  // endpoints that redirected the page in this chain
	outage   time.Time // when the current outage began; zero when none
	lastErr  error
	attempt  uint64 // number of the latest generation started
	slow     bool
	offline  bool
	stopping bool

	// A redirect target is a hint, not a new home: after redirectTries failed attempts in a
	// row there, or once it has failed for maxDelay, the page goes back to its endpoint.
	targetFails int
	targetSince time.Time // when the first of those failed attempts started
	redirected  bool      // l.old was handed over by a GOAWAY with a uri (not a restart)
	replacing   bool      // l.old was handed over by Replace: no flap when its successor is ready

	// restartUntil ends the restart window: a Host restarting in place (an empty-uri GOAWAY,
	// or a session closed with "service restart") is coming back soon, so the attempts that
	// fail meanwhile hold the ladder at its first cap instead of climbing it. It closes at
	// the first ready, or maxDelay after it opened (then it is an outage like any other).
	restartUntil time.Time
	// restarted is set once a "service restart" close has opened a restart window, and
	// cleared by a session that lived maxDelay (or a new sequence): a Host that says ready
	// and closes with 1012 again at once is flapping, and must not hold its pages at the
	// first cap by repeating the word "restart".
	restarted bool

	slowT, deadlineT, retryT, stableT, chainT *time.Timer
	last                                      Status
}

// redirectTries is how many failed attempts a redirect target gets before the page goes home.
const redirectTries = 2

// home is the target that names the source's own endpoint (see Generation.Target). The
// controller never holds its string: the source names every place, home included, so the two
// cannot disagree on how a place is spelled.
const home = ""

func (l *loop) send(cmd command) {
	o := order{cmd: cmd, done: make(chan struct{})}
	select {
	case l.cmds <- o:
	case <-l.done:
		return
	}
	select {
	case <-o.done:
	case <-l.done:
	}
}

func (l *loop) run() {
	defer close(l.done)
	c := l.c
	l.slowT = stoppedTimer()
	l.deadlineT = stoppedTimer()
	l.retryT = stoppedTimer()
	l.stableT = stoppedTimer()
	l.chainT = stoppedTimer()
	l.target = home
	if !l.offline {
		l.attemptNow()
	}
	l.step()
	close(l.started)
	for !(l.stopping && len(l.live) == 0) {
		select {
		case o := <-l.cmds:
			l.command(o.cmd)
			l.step()
			close(o.done)
			continue
		case ev := <-l.events:
			err := l.event(ev)
			// Publish before answering: a Source that reads Status after Ready or GoAway
			// returned sees their effect.
			l.step()
			if ev.reply != nil {
				ev.reply <- err
			}
			continue
		case <-l.slowT.C:
			if l.cur != nil && !l.cur.ready && !l.slow {
				l.slow = true
				c.log.Warn("lifeline: host is slow to respond",
					"attempt", l.cur.h.n, "after", c.cfg.slowAfter)
			}
		case <-l.deadlineT.C:
			if g := l.cur; g != nil && !g.ready {
				c.log.Warn("lifeline: handshake cancelled at deadline",
					"attempt", g.h.n, "deadline", c.cfg.deadline)
				l.cur = nil
				l.fail(g, tinyfmt.Errorf("%w after %v", ErrDeadline, c.cfg.deadline), ErrDeadline)
			}
		case <-l.retryT.C:
			l.due = true
			l.next = time.Now()
		case <-l.stableT.C:
			// While a redirect chain is open the ladder keeps its position: a Host pair
			// bouncing the page must not get a fresh ladder on every hop (chainT decides).
			if l.cur != nil && l.cur.ready && len(l.chain) == 0 {
				l.failures = 0
			}
		case <-l.chainT.C:
			// A session that lived maxDelay ends the redirect chain, whatever stableAfter is.
			if g := l.cur; g != nil && g.ready {
				l.chain = l.chain[:0]
				if time.Since(g.readyAt) >= c.cfg.stableAfter {
					l.failures = 0
				}
			}
		}
		l.step()
	}
	l.stopTimers()
}

// step starts the pending attempt if it is due and nothing blocks it, then publishes the
// status if it changed. Every path through the loop ends here.
func (l *loop) step() {
	if l.pending && l.due && !l.stopping && !l.offline && l.canStart() {
		l.start()
	}
	s := l.status()
	if !s.equal(l.last) {
		s.At = time.Now()
		l.last = s
		l.c.publish(s)
	}
}

// canStart reports whether every live generation has settled, but for a draining old one:
// no two handshakes ever overlap, and a cancelled generation settles before the next starts.
func (l *loop) canStart() bool {
	for _, g := range l.live {
		if g != l.old {
			return false
		}
	}
	return true
}

func (l *loop) start() {
	c := l.c
	l.pending, l.due = false, false
	ctx, cancel := context.WithCancelCause(context.Background())
	l.attempt = c.nextGeneration()
	h := &Generation{n: l.attempt, target: l.target, ctx: ctx, events: l.events, done: l.done}
	g := &gen{h: h, cancel: cancel, startedAt: time.Now()}
	l.live = append(l.live, g)
	l.cur = g
	l.slow = false
	if c.cfg.slowAfter < c.cfg.deadline {
		l.slowT.Reset(c.cfg.slowAfter)
	}
	l.deadlineT.Reset(c.cfg.deadline)
	go l.runSource(g)
}

// runSource runs one generation and reports its settle. The loop keeps receiving events until
// every live generation has settled, so this send always lands.
func (l *loop) runSource(g *gen) {
	err := l.c.src.Run(g.h.ctx, g.h)
	g.cancel(ErrStale) // a late Ready or GoAway from a leftover goroutine is refused
	l.events <- event{kind: evEnded, gen: g.h, err: err}
}

func (l *loop) find(h *Generation) *gen {
	for _, g := range l.live {
		if g.h == h {
			return g
		}
	}
	return nil
}

func (l *loop) command(cmd command) {
	if l.stopping {
		return // Stop is final for this loop; Start makes a new one
	}
	switch cmd {
	case cmdStop:
		l.stopping = true
		l.pending = false
		l.cancelAll(ErrStopped)
		l.stopTimers()
	case cmdReconnect:
		// The ladder starts again; a restart window stays open: the click says nothing of
		// the Host, which said it is coming back, and must never make the return slower.
		l.cancelAll(ErrReplaced)
		l.failures = 0
		l.goHome()
		l.chain = l.chain[:0]
		l.attemptNow()
	case cmdOffline:
		if l.offline {
			return
		}
		l.offline = true
		l.cancelAll(ErrOffline)
		l.retryT.Stop()
		l.pending = false
	case cmdWake:
		if l.pending && !l.due && !time.Now().Before(l.next) {
			l.retryT.Stop()
			l.due = true
		}
	case cmdOnline:
		if !l.offline {
			return
		}
		l.offline = false
		l.failures = 0 // a restart window stays open, as for Reconnect now
		l.goHome()
		l.attemptNow()
	}
}

// attemptNow makes the pending attempt due at once, cancelling any wait.
func (l *loop) attemptNow() {
	l.retryT.Stop()
	l.pending, l.due = true, true
	l.next = time.Now()
}

// goHome makes the source's own endpoint the target again.
func (l *loop) goHome() {
	l.target = home
	l.targetFails = 0
}

// event acts on what a generation reported; the loop sends the result to ev.reply.
func (l *loop) event(ev event) error {
	g := l.find(ev.gen)
	switch ev.kind {
	case evReady:
		return l.ready(g)
	case evGoAway:
		return l.goAway(g, ev.uri)
	case evReplace:
		return l.replace(g)
	case evEnded:
		l.ended(g, ev.err)
	}
	return nil
}

func (l *loop) ready(g *gen) error {
	if g == nil || g != l.cur || g.ready || g.h.ctx.Err() != nil || l.stopping || l.offline {
		return ErrStale
	}
	c := l.c
	g.ready, g.readyAt = true, time.Now()
	l.restartUntil = time.Time{}
	l.slowT.Stop()
	l.deadlineT.Stop()
	l.slow = false
	l.lastErr = nil
	l.targetFails = 0
	if o := l.old; o != nil {
		// A generation handed over before it was stable is a flap like any other: it must
		// not let a Host that says ready and redirects at once pull the page round a loop at
		// full speed. A redirect from a session younger than maxDelay is unstable whatever
		// stableAfter says (0 included): it is what keeps a redirect chain open.
		age := time.Since(o.readyAt)
		if !l.replacing && (age < c.cfg.stableAfter || (l.redirected && age < c.cfg.maxDelay)) {
			l.failures++
		}
		o.cancel(ErrReplaced)
		l.old = nil
	}
	l.replacing = false
	if !l.outage.IsZero() {
		c.log.Info("lifeline: connection recovered",
			"attempt", g.h.n, "outage", time.Since(l.outage), "failures", l.failures)
		l.outage = time.Time{}
	}
	switch {
	case len(l.chain) > 0:
		// Inside a redirect chain the ladder resets only once the chain ends.
		l.chainT.Reset(c.cfg.maxDelay)
		if c.cfg.stableAfter > 0 {
			l.stableT.Reset(c.cfg.stableAfter)
		}
	case c.cfg.stableAfter == 0:
		l.failures = 0
	default:
		l.stableT.Reset(c.cfg.stableAfter)
	}
	return nil
}

func (l *loop) goAway(g *gen, uri string) error {
	if g == nil || g != l.cur || !g.ready || g.h.ctx.Err() != nil || l.stopping || l.offline {
		return ErrStale
	}
	l.redirected = uri != g.h.target
	if !l.redirected {
		// Come back to the same place: a restart, never a loop.
		l.openRestartWindow()
	} else {
		loop := slices.Contains(l.chain, uri)
		if !slices.Contains(l.chain, g.h.target) {
			l.chain = append(l.chain, g.h.target)
		}
		if loop {
			// Honoured, only slowed down: the hop waits out the ladder while the draining
			// generation keeps delivering.
			l.failures++
			d := Delay(l.c.cfg, l.failures, l.c.rnd)
			l.c.log.Warn("lifeline: redirect loop, slowing the hop down",
				"attempt", g.h.n, "to", uri, "delay", d)
			l.handOver(g, uri)
			l.schedule(d)
			return nil
		}
	}
	l.handOver(g, uri)
	l.attemptNow()
	return nil
}

// replace hands g over to a new generation to the same place at once, with no restart window
// and no move of the ladder (Generation.Replace).
func (l *loop) replace(g *gen) error {
	if g == nil || g != l.cur || !g.ready || g.h.ctx.Err() != nil || l.stopping || l.offline {
		return ErrStale
	}
	l.redirected = false
	l.replacing = true
	l.handOver(g, g.h.target)
	l.attemptNow()
	return nil
}

// handOver makes g the draining generation and uri the target of the next attempt.
func (l *loop) handOver(g *gen, uri string) {
	l.old, l.cur = g, nil
	l.stableT.Stop()
	l.chainT.Stop()
	if uri != l.target {
		l.targetFails = 0
	}
	l.target = uri
}

func (l *loop) ended(g *gen, err error) {
	if g == nil {
		return
	}
	for i, x := range l.live {
		if x == g {
			l.live = append(l.live[:i], l.live[i+1:]...)
			break
		}
	}
	switch g {
	case l.old:
		// The draining generation left before its successor was ready: the page is not
		// connected any more, and its status says why (the successor's attempt goes on).
		l.old = nil
		if err == nil {
			err = ErrEnded
		}
		l.lastErr = err
	case l.cur:
		l.cur = nil
		if err == nil {
			err = ErrEnded // a Source should say why; never leave lastErr empty on a failure
		}
		if g.ready {
			l.stableT.Stop()
			if time.Since(g.readyAt) >= l.c.cfg.stableAfter {
				l.failures = 0
			}
			// A session that ends without GOAWAY breaks the redirect chain and sends the
			// page back to its own endpoint.
			l.chain = l.chain[:0]
			l.chainT.Stop()
			l.goHome()
		}
		l.fail(g, err, nil)
	}
}

// fail records a failed attempt or a lost generation and schedules the next attempt on the
// ladder. cause, when set, cancels g with it.
func (l *loop) fail(g *gen, err, cause error) {
	c := l.c
	if cause != nil {
		g.cancel(cause)
	}
	l.slowT.Stop()
	l.deadlineT.Stop()
	l.slow = false
	l.failures++
	restart := errors.Is(err, ErrHostRestarting)
	if restart {
		l.hostRestarting(g)
	}
	if time.Now().Before(l.restartUntil) {
		l.failures = 1 // the Host said it is coming back: wait at the first cap only
	}
	l.lastErr = err
	attrs := []any{"attempt", g.h.n, "failures", l.failures, "err", err}
	if l.outage.IsZero() {
		l.outage = time.Now()
		if errors.Is(err, ErrLeaving) {
			c.log.Info("lifeline: the page is going away; its connection with it", attrs...)
		} else {
			c.log.Error("lifeline: connection failed", attrs...)
		}
	} else {
		c.log.Warn("lifeline: connection failed again", attrs...)
	}
	if l.offline || l.stopping {
		return
	}
	if !g.ready && g.h.target != home && l.target == g.h.target {
		l.redirectFailed(g)
	}
	if re := (*RedirectError)(nil); errors.As(err, &re) && re.To != g.h.target {
		l.redirectBeforeReady(g, re.To)
	}
	d := Delay(c.cfg, l.failures, c.rnd)
	if errors.Is(err, ErrUnauthorized) {
		// A refused credential stays refused until the user acts: only the top cap, so it
		// neither storms nor looks like an outage. (MaxInt failures: the top cap, jittered.)
		d = Delay(c.cfg, math.MaxInt, c.rnd)
	}
	if ra := (*RetryAfterError)(nil); errors.As(err, &ra) {
		after := min(ra.After, wire.MaxRetryAfter)
		if restart {
			// Every page of a restarting Host has the same hint: spread them above it, as
			// the ladder spreads below its caps, so they do not all come back at once.
			after += time.Duration(float64(after) * c.cfg.jitter * c.rnd())
		}
		d = max(d, after)
	}
	l.schedule(d)
}

// hostRestarting opens a restart window for a session (or attempt) g the Host closed with
// "service restart", once per session that lived maxDelay: a second restart sooner than that
// is a flap, and its failures climb the ladder like any other's (the window of the first
// still holds if it is open).
func (l *loop) hostRestarting(g *gen) {
	if g.ready && time.Since(g.readyAt) >= l.c.cfg.maxDelay {
		l.restarted = false
	}
	if l.restarted {
		if time.Now().After(l.restartUntil) {
			l.c.log.Warn("lifeline: the Host restarted again within maxDelay of the last restart; retrying on the ladder",
				"attempt", g.h.n, "failures", l.failures)
		}
		return
	}
	l.restarted = true
	l.openRestartWindow()
}

// openRestartWindow starts a restart window, unless one is open already.
func (l *loop) openRestartWindow() {
	if now := time.Now(); !now.Before(l.restartUntil) {
		l.restartUntil = now.Add(l.c.cfg.maxDelay)
	}
}

// redirectFailed counts a failed attempt at a redirect target. A misaimed drain must never
// strand a page: after redirectTries failures in a row, or once the target has been failing
// for maxDelay (one that stalls until the deadline), the next attempt goes back to the page's
// own endpoint, on the same ladder.
func (l *loop) redirectFailed(g *gen) {
	if l.targetFails == 0 {
		l.targetSince = g.startedAt
	}
	l.targetFails++
	if l.targetFails >= redirectTries || time.Since(l.targetSince) >= l.c.cfg.maxDelay {
		l.c.log.Warn("lifeline: redirect target keeps failing; going back to the page's own endpoint",
			"attempt", g.h.n, "target", g.h.target, "failures", l.targetFails)
		l.goHome()
	}
}

// redirectBeforeReady aims the next attempt at to, where a Host that turned attempt g away
// sent it. g's target joins the redirect chain as a GOAWAY's does, so a redirect back there
// in this chain is seen as a loop; the failure itself keeps the next attempt on the ladder.
func (l *loop) redirectBeforeReady(g *gen, to string) {
	if !slices.Contains(l.chain, g.h.target) {
		l.chain = append(l.chain, g.h.target)
	}
	if to != l.target {
		l.targetFails = 0
	}
	l.target = to
	l.c.log.Info("lifeline: the Host turned the attempt away to another place; the next attempt goes there",
		"attempt", g.h.n, "to", to)
}

func (l *loop) schedule(d time.Duration) {
	l.pending, l.due = true, false
	l.next = time.Now().Add(d)
	l.retryT.Reset(d)
}

func (l *loop) cancelAll(cause error) {
	for _, g := range l.live {
		g.cancel(cause)
	}
	l.cur, l.old = nil, nil
	l.slowT.Stop()
	l.deadlineT.Stop()
	l.stableT.Stop()
	l.chainT.Stop()
	l.slow = false
}

func (l *loop) stopTimers() {
	l.slowT.Stop()
	l.deadlineT.Stop()
	l.retryT.Stop()
	l.stableT.Stop()
	l.chainT.Stop()
}

// status derives the observable status from the loop's facts; nothing stores the state.
func (l *loop) status() Status {
	s := Status{Failures: l.failures, Err: l.lastErr, Attempt: l.attempt}
	switch {
	case l.stopping:
		s.State = Stopped
	case l.offline:
		s.State = Offline
	case l.old != nil || (l.cur != nil && l.cur.ready):
		s.State = Connected
	case l.cur != nil:
		s.State, s.Slow = Connecting, l.slow
	default:
		s.State = Reconnecting
		if errors.Is(l.lastErr, ErrUnauthorized) {
			s.State = Unauthorized
		}
		s.NextAttempt = l.next // when due, the moment it fell due: waiting for a settle
	}
	return s
}

func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}
