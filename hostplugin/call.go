//go:build !js

package hostplugin

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// A Call is one call a page made: what a [CallHandler] is given.
type Call struct {
	// Identity is who made it, as Options.Authenticate returned it for the session ("" without
	// Authenticate). Authorization is the handler's own: it decides what Identity may do.
	Identity string
	// Name is the handler's name, as registered with [Host.HandleCall].
	Name string
	// Data is the call's argument: one JSON value, as the page sent it (null when it sent
	// none). It is the page's input: untrusted, and the handler's to validate.
	Data json.RawMessage
	// Key is the page's idempotency key, "" for an unkeyed call. A keyed call runs at most
	// once per (Identity, Key) within the config's callDedupMs: a re-send gets the first
	// outcome without running the handler.
	Key string
}

// CallHandler answers one call: its reply, one JSON value (nil is null), or an error whose
// first line the page is shown (truncated; it must name no secret). A panic answers the page
// "internal error" and is logged with its stack; the session lives on.
//
// ctx is not cancelled when the page leaves: a keyed call's page may come back and ask for
// the outcome, which is stored once the handler returns. It ends at the config's
// callTimeoutMs, and when the Host closes. Handlers of one session run one at a time, in the
// order the page made the calls; handlers of different sessions run concurrently.
type CallHandler func(ctx context.Context, c *Call) (json.RawMessage, error)

// HandleCall registers handler for the calls named name, as http.ServeMux registers a
// handler for a pattern. A name is 1..128 bytes of ASCII letters, digits and . _ : / -. It
// panics for an invalid name, a nil handler, or a name registered already (each is a
// programming error, and an app that served the wrong handler would be worse). A call whose
// name has no handler is answered "unknown" (the page's CallUnknown).
func (h *Host) HandleCall(name string, handler CallHandler) {
	if err := wire.CheckCallName(name); err != nil {
		panic(fmt.Sprintf("hostplugin: HandleCall(%q): %v", name, err))
	}
	if handler == nil {
		panic(fmt.Sprintf("hostplugin: HandleCall(%q): nil handler", name))
	}
	h.calls.mu.Lock()
	defer h.calls.mu.Unlock()
	if _, dup := h.calls.handlers[name]; dup {
		panic(fmt.Sprintf("hostplugin: HandleCall(%q): a handler is registered for this name already", name))
	}
	h.calls.handlers[name] = handler
}

// callHandlers is the Host's registry of call handlers.
type callHandlers struct {
	mu       sync.RWMutex
	handlers map[string]CallHandler
}

func (c *callHandlers) lookup(name string) CallHandler {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.handlers[name]
}

// CallOutcome is what a call's run ended with, as a [CallStore] keeps it: the reply, or the
// code (a wire.Code*) and message of a failure.
type CallOutcome struct {
	Reply   json.RawMessage `json:"reply,omitempty"`
	Code    string          `json:"code,omitempty"`
	Message string          `json:"message,omitempty"`
}

// CallStore is where a Host keeps the outcomes of keyed calls within the dedup window, so
// that each (identity, key) runs once and a re-send is answered with the first outcome.
// [NewMemoryCallStore] is the default; a fleet of Hosts shares one (package
// hostplugin/jetstream has one on NATS), so that a call re-sent to another Host of the fleet
// finds the outcome too. Implementations must be safe for concurrent use.
type CallStore interface {
	// Epoch names the store's contents. A page re-sends a keyed call only to a Host whose
	// store has the epoch of the Host it sent it to, so the epoch must change whenever the
	// store may have forgotten an outcome it held (a restart of an in-memory store).
	Epoch() string
	// Window is how long the store keeps an outcome from the end of its run, at least. The
	// ready frame names it (dedupMs), and a page sends a keyed call again only within half of
	// it from its first send, so that a re-send never finds its outcome forgotten.
	Window() time.Duration
	// Do runs run for (identity, key) unless it ran, or runs, within the window: then it
	// waits for that run and returns its outcome instead. A run it cannot vouch for (its
	// Host died while it ran) ends with the code wire.CodeInterrupted, never a second run.
	// If ctx ends while it waits for a run still going, it returns an error wrapping
	// [ErrCallRunning] (the Host answers timeout: it may still run, once). Any other error
	// means the store cannot say (it is unreachable): the call must not run (busy).
	Do(ctx context.Context, identity, key string, run func() CallOutcome) (CallOutcome, error)

	// Start records that session is about to start its call id (a session's calls start one
	// at a time, in the order of their ids), unless the session is fenced: then it returns
	// [ErrSessionFenced], and the call must not start. Any other error means the store
	// cannot say: the call must not start either (busy). Every call of every session goes
	// through Start, keyed or not. session is opaque to the store (at most 100 bytes of
	// ASCII): the Host names a session within its identity (session.fenceScope), so that a
	// page can fence only sessions of its own identity.
	Start(ctx context.Context, session string, id uint64) error
	// Fence fences session, on every Host of the store: once it has returned, no call of that
	// session starts (Start refuses it). It returns the highest id Start let start (0: none).
	// A page fences the session it left with calls in flight, from its next session, and
	// learns which of them started: so it is told nothing a late start could make untrue.
	// A session's record is kept for SessionRecordTTL from its last write, at least.
	Fence(ctx context.Context, session string) (started uint64, err error)
}

// ErrSessionFenced is the error of a [CallStore]'s Start for a session its page fenced: the
// page has left it (and been told that calls of it not started never run).
var ErrSessionFenced = errors.New("hostplugin: the session is fenced: its page has left it")

// ErrCallRunning is the error of a [CallStore]'s Do whose context ended while it waited for
// the run of its (identity, key) that is still going: the Host answers the call timeout ("it
// may still run, at most once"), never busy ("it did not run").
var ErrCallRunning = errors.New("hostplugin: the call's first run is still going")

// ErrCallStoreFull is the error of a [MemoryCallStore] that holds as many outcomes as it may,
// none expired: a keyed call is then refused as busy rather than run without its guarantee.
var ErrCallStoreFull = errors.New("hostplugin: the call dedup store is full")

// MemoryCallStore is the default [CallStore]: the outcomes of this process, for the window.
// Its epoch is new for every store, so a page that comes back to a restarted Host does not
// re-send there what it sent to the old process.
type MemoryCallStore struct {
	epoch  string
	window time.Duration
	max    int

	mu       sync.Mutex
	entries  map[callID]*callEntry
	sessions map[string]*sessionEntry // what Start and Fence recorded, by session
	swept    time.Time
}

// sessionEntry is a session's record in a MemoryCallStore.
type sessionEntry struct {
	started uint64 // the highest id Start let start
	fenced  bool
	expires time.Time
}

type callID struct{ identity, key string }

type callEntry struct {
	done    chan struct{} // closed once outcome is set
	outcome CallOutcome
	expires time.Time // set when done
}

// NewMemoryCallStore returns a store that keeps each outcome for window and at most max
// outcomes (max ≤ 0: 100,000), and the records of at most max sessions (those whose calls
// started within the window: a full store answers calls busy).
func NewMemoryCallStore(window time.Duration, max int) *MemoryCallStore {
	if max <= 0 {
		max = 100_000
	}
	return &MemoryCallStore{epoch: newID(8), window: window, max: max, entries: map[callID]*callEntry{}, sessions: map[string]*sessionEntry{}}
}

// Epoch implements [CallStore].
func (m *MemoryCallStore) Epoch() string { return m.epoch }

// Window implements [CallStore].
func (m *MemoryCallStore) Window() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.window
}

// SetWindow changes how long outcomes are kept from now on; the ones kept stay as long as
// they were to.
func (m *MemoryCallStore) SetWindow(window time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.window = window
}

// Do implements [CallStore].
func (m *MemoryCallStore) Do(ctx context.Context, identity, key string, run func() CallOutcome) (CallOutcome, error) {
	id := callID{identity, key}
	now := time.Now()
	m.mu.Lock()
	m.sweepLocked(now)
	e := m.entries[id]
	if e != nil && !e.expires.IsZero() && !now.Before(e.expires) {
		delete(m.entries, id)
		e = nil
	}
	if e != nil {
		m.mu.Unlock()
		select {
		case <-e.done:
			return e.outcome, nil
		case <-ctx.Done():
			return CallOutcome{}, fmt.Errorf("%w: %w", ErrCallRunning, context.Cause(ctx))
		}
	}
	if len(m.entries) >= m.max {
		m.mu.Unlock()
		return CallOutcome{}, ErrCallStoreFull
	}
	e = &callEntry{done: make(chan struct{})}
	m.entries[id] = e
	m.mu.Unlock()

	out := run()
	m.mu.Lock()
	e.outcome, e.expires = out, time.Now().Add(m.window)
	close(e.done)
	m.mu.Unlock()
	return out, nil
}

// Start implements [CallStore].
func (m *MemoryCallStore) Start(_ context.Context, session string, id uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.sessionLocked(session)
	switch {
	case err != nil:
		return err
	case e.fenced:
		return ErrSessionFenced
	}
	e.started = max(e.started, id)
	return nil
}

// Fence implements [CallStore].
func (m *MemoryCallStore) Fence(_ context.Context, session string) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.sessionLocked(session)
	if err != nil {
		return 0, err
	}
	e.fenced = true
	e.expires = time.Now().Add(SessionRecordTTL(m.window, true))
	return e.started, nil
}

// SessionRecordTTL is how long a [CallStore] keeps a session's record from its last write:
// the window, which a page's fence comes within; a fenced one at least an hour, longer than a
// half-open link lives (TCP gives up on one within about 15 minutes), so that a call frame
// delivered late to the session it left never finds the fence gone.
func SessionRecordTTL(window time.Duration, fenced bool) time.Duration {
	if fenced {
		return max(window, time.Hour)
	}
	return window
}

// sessionLocked returns session's record, made if there is none, kept for its time from now
// (SessionRecordTTL, set again by the caller once fenced). A record is never dropped before
// that, even to make room: without it a fence could not tell a session whose calls started
// from one whose did not.
func (m *MemoryCallStore) sessionLocked(session string) (*sessionEntry, error) {
	now := time.Now()
	m.sweepLocked(now)
	e := m.sessions[session]
	if e != nil && !now.Before(e.expires) {
		delete(m.sessions, session)
		e = nil
	}
	if e == nil {
		if len(m.sessions) >= m.max {
			return nil, fmt.Errorf("%w: %d sessions' records", ErrCallStoreFull, len(m.sessions))
		}
		e = &sessionEntry{}
		m.sessions[session] = e
	}
	e.expires = now.Add(SessionRecordTTL(m.window, e.fenced))
	return e, nil
}

// sweepLocked drops expired outcomes and session records, at most once a second.
func (m *MemoryCallStore) sweepLocked(now time.Time) {
	if now.Sub(m.swept) < time.Second {
		return
	}
	m.swept = now
	for id, e := range m.entries {
		if !e.expires.IsZero() && !now.Before(e.expires) {
			delete(m.entries, id)
		}
	}
	for id, e := range m.sessions {
		if !now.Before(e.expires) {
			delete(m.sessions, id)
		}
	}
}

// Per-session call limits beside the config's rate.
const (
	// maxSessionCalls bounds the calls one session has waiting or running on the Host; one
	// more is answered busy.
	maxSessionCalls = 64
	// callBusyRetry is the retry-after of a call refused because the session's queue is full.
	callBusyRetry = time.Second
)

// sessionCalls is a session's calls on the Host: what the page sent, run one at a time in
// the order it arrived, by a goroutine that exists only while there is work.
type sessionCalls struct {
	lim     *rate.Limiter // run goroutine only
	fences  int           // fence frames taken (the reading goroutine's)
	mu      sync.Mutex    // guards the fields below
	queue   []wire.PageFrame
	running bool
	closed  bool // the session ended, or its page fenced it: nothing more runs
}

// maxFences bounds the fence frames of one session: a page sends one per session it left
// with calls in flight, and again only on a later session.
const maxFences = 16

// fence takes a fence frame from the page (on the session's reading goroutine). It waits its
// turn among the session's calls, so that it is in place before the calls sent after it run.
func (s *session) fence(f wire.PageFrame) bool {
	if s.calls.fences++; s.calls.fences > maxFences {
		return s.badFrame(fmt.Sprintf("fence: a session fences at most %d others", maxFences), f)
	}
	if f.Session == s.id {
		return s.badFrame("fence: a session cannot fence itself", f)
	}
	if !s.enqueue(f) {
		s.send(errorFrame(fmt.Sprintf("fence %q: %d calls of this page wait on the Host already; fence it from the next session", f.Session, maxSessionCalls)))
	}
	return true
}

// enqueue puts f in the session's queue of calls and starts the goroutine that runs them if
// none runs, or reports that the queue is full.
func (s *session) enqueue(f wire.PageFrame) bool {
	c := &s.calls
	c.mu.Lock()
	if len(c.queue) >= maxSessionCalls {
		c.mu.Unlock()
		return false
	}
	c.queue = append(c.queue, f)
	start := !c.running && !c.closed
	c.running = c.running || start
	c.mu.Unlock()
	if start {
		go s.runCalls()
	}
	return true
}

// call takes one call frame from the page (on the session's reading goroutine): an unknown
// name, a call over the session's rate or queue is answered at once; any other waits its
// turn.
func (s *session) call(f wire.PageFrame) {
	h := s.h
	if h.calls.lookup(f.Name) == nil {
		h.obs.Call("", wire.CodeUnknown, 0)
		s.send(replyFrame(wire.Failed(f.ID, wire.CodeUnknown, fmt.Sprintf("no handler for the call %q", f.Name), 0)))
		return
	}
	if s.calls.lim == nil {
		cfg := h.Config()
		s.calls.lim = rate.NewLimiter(rate.Limit(cfg.callRate), cfg.callBurst)
	}
	now := time.Now()
	if r := s.calls.lim.ReserveN(now, 1); r.DelayFrom(now) > 0 {
		wait := r.DelayFrom(now)
		r.CancelAt(now)
		h.obs.Call(f.Name, wire.CodeBusy, 0)
		s.send(replyFrame(wire.Failed(f.ID, wire.CodeBusy, "over the session's call rate", max(wait, time.Millisecond))))
		return
	}
	if !s.enqueue(f) {
		h.obs.Call(f.Name, wire.CodeBusy, 0)
		s.send(replyFrame(wire.Failed(f.ID, wire.CodeBusy, fmt.Sprintf("%d calls of this page wait on the Host already", maxSessionCalls), callBusyRetry)))
	}
}

// runCalls runs the session's calls in order until none is left (or the session ended).
func (s *session) runCalls() {
	c := &s.calls
	for {
		c.mu.Lock()
		if len(c.queue) == 0 || c.closed {
			c.running = false
			c.queue = nil
			c.mu.Unlock()
			return
		}
		f := c.queue[0]
		c.queue = c.queue[1:]
		c.mu.Unlock()
		if f.T == wire.TypeFence {
			s.h.fenceFor(s, f)
			continue
		}
		if !s.h.startCall(s, f) {
			continue
		}
		start := time.Now()
		out := s.h.runCall(s, f)
		s.h.obs.Call(f.Name, cmp.Or(out.Code, CallOK), time.Since(start))
		if out.Code == "" {
			s.send(replyFrame(wire.Reply(f.ID, wire.RawJSON(out.Reply))))
		} else {
			s.send(replyFrame(wire.Failed(f.ID, out.Code, out.Message, retryOf(out))))
		}
	}
}

// startCall records in the dedup store that s starts its call f, and reports whether it may.
// A session whose page fenced it starts nothing more: the page has left it, and has been
// told, or will be, that its calls not started never run. A store that cannot say refuses
// the call (busy): it did not start.
func (h *Host) startCall(s *session, f wire.PageFrame) bool {
	ctx, cancel := context.WithTimeout(h.life, h.Config().callTimeout)
	defer cancel()
	err := h.callStore.Start(ctx, s.fenceScope(s.id), f.ID)
	switch {
	case err == nil:
		return true
	case errors.Is(err, ErrSessionFenced):
		s.calls.mu.Lock()
		s.calls.closed, s.calls.queue = true, nil
		s.calls.mu.Unlock()
		h.logger.Info("hostplugin: a session's page moved on and fenced it: its calls not yet started never run",
			"session", s.id, "call", f.Name, "id", f.ID)
		return false
	}
	h.thin.callStore.Do(func() {
		h.logger.Error("hostplugin: the call dedup store cannot record that a call starts; refused as busy",
			"session", s.id, "call", f.Name, "err", err)
	})
	h.obs.Call(f.Name, wire.CodeBusy, 0)
	s.send(replyFrame(wire.Failed(f.ID, wire.CodeBusy, "the Host cannot record this call now; try again", callBusyRetry)))
	return false
}

// fenceScope is what names session in the dedup store's Start and Fence when s asks: the
// session within s's identity (its who tag, the same on every Host of the store). So a page
// fences only sessions of its own identity: a session id is no secret (the HTTP carrier asks
// for one besides it), and a fence from anyone else names a record no call of that session
// ever starts under, which stops nothing and says nothing started.
func (s *session) fenceScope(session string) string {
	return whoTag(s.currentDedup(), s.identity) + "/" + session
}

// fenceFor fences the session the page's fence frame f names, from s (the page's session
// now), and answers the page with what started there. A store that is not the one s
// announced cannot answer for the sessions of the one before; one that cannot say leaves
// the page to fence from a later session.
func (h *Host) fenceFor(s *session, f wire.PageFrame) {
	if now := h.callStore.Epoch(); now != s.currentDedup() {
		s.send(errorFrame(fmt.Sprintf("fence %q: the Host's dedup store changed since this connection began; it cannot fence sessions of the one before", f.Session)))
		return
	}
	ctx, cancel := context.WithTimeout(h.life, h.Config().callTimeout)
	defer cancel()
	started, err := h.callStore.Fence(ctx, s.fenceScope(f.Session))
	if err != nil {
		h.thin.callStore.Do(func() {
			h.logger.Error("hostplugin: the call dedup store cannot fence a session now; the page will ask again",
				"session", s.id, "fence", f.Session, "err", err)
		})
		s.send(errorFrame(fmt.Sprintf("fence %q: the Host cannot fence it now; fence it from the next session", f.Session)))
		return
	}
	s.send(mustEncode(wire.HostFrame{T: wire.TypeFenced, Session: f.Session, Started: started}))
}

// endCalls stops a session's calls: those still waiting never run (the page learns of
// them as of any call its session lost); a running one finishes, and its outcome is kept
// for a keyed re-send.
func (s *session) endCalls() {
	s.calls.mu.Lock()
	s.calls.closed = true
	s.calls.queue = nil
	s.calls.mu.Unlock()
}

// retryOf is the retry-after a failed outcome tells the page: a busy store's.
func retryOf(out CallOutcome) time.Duration {
	if out.Code == wire.CodeBusy {
		return callBusyRetry
	}
	return 0
}

// runCall runs one call: through the dedup store when it is keyed, the handler directly
// when not.
func (h *Host) runCall(s *session, f wire.PageFrame) CallOutcome {
	c := &Call{Identity: s.identity, Name: f.Name, Data: json.RawMessage(f.Data), Key: f.Key}
	if len(c.Data) == 0 {
		c.Data = json.RawMessage("null")
	}
	ctx, cancel := context.WithTimeout(h.life, h.Config().callTimeout)
	defer cancel()
	if c.Key == "" {
		return h.handle(ctx, c)
	}
	if now := h.callStore.Epoch(); now != s.currentDedup() {
		// The store is not the one this session announced (a shared bucket made again): the
		// page may be re-sending a call the old store ran, and this one cannot say. Neither
		// busy (the page would send it again) nor a run (it may have run): interrupted.
		h.logger.Warn("hostplugin: the call dedup store changed under a session; a keyed call is answered interrupted",
			"session", s.id, "call", c.Name, "announced", s.currentDedup(), "now", now)
		return CallOutcome{Code: wire.CodeInterrupted, Message: "the Host's dedup store changed since this connection began; whether the call ran is unknown"}
	}
	out, err := h.callStore.Do(ctx, c.Identity, c.Key, func() CallOutcome { return h.handle(ctx, c) })
	if errors.Is(err, ErrCallRunning) {
		// The first run of this key (another session's, or this page's before a reconnect)
		// outlasted this call's timeout: its handler runs past its own. It ran, or runs, once:
		// busy would tell the page it did not.
		return CallOutcome{Code: wire.CodeTimeout, Message: fmt.Sprintf(
			"the first run of this call is still running past the Host's call timeout (%v); it runs once: send it again with the same key for its outcome",
			h.Config().callTimeout)}
	}
	if err != nil {
		h.thin.callStore.Do(func() {
			h.logger.Error("hostplugin: the call dedup store cannot say whether a keyed call ran; refused as busy",
				"session", s.id, "call", c.Name, "err", err)
		})
		return CallOutcome{Code: wire.CodeBusy, Message: "the Host cannot check this call's key now; try again"}
	}
	return out
}

// handle runs the handler of c, turning a panic, an error, a timeout and a reply the page
// could not take into the outcome the page is told.
func (h *Host) handle(ctx context.Context, c *Call) (out CallOutcome) {
	fn := h.calls.lookup(c.Name)
	if fn == nil {
		return CallOutcome{Code: wire.CodeUnknown, Message: fmt.Sprintf("no handler for the call %q", c.Name)}
	}
	defer func() {
		if p := recover(); p != nil {
			h.logger.Error("hostplugin: a call handler panicked; the page is told internal error",
				"call", c.Name, "panic", p, "stack", string(debug.Stack()))
			out = CallOutcome{Code: wire.CodeInternal, Message: "internal error"}
		}
	}()
	reply, err := fn(ctx, c)
	switch {
	case err != nil && ctx.Err() == context.DeadlineExceeded:
		return CallOutcome{Code: wire.CodeTimeout, Message: fmt.Sprintf("the handler ran past the Host's call timeout (%v)", h.Config().callTimeout)}
	case err != nil:
		msg := reasonText(err)
		if msg == "" {
			msg = "the call failed"
		}
		return CallOutcome{Code: wire.CodeApp, Message: msg}
	case len(reply) == 0:
		return CallOutcome{Reply: json.RawMessage("null")}
	case !json.Valid(reply):
		h.logger.Error("hostplugin: a call handler's reply is not valid JSON; the page is told internal error", "call", c.Name)
		return CallOutcome{Code: wire.CodeInternal, Message: "internal error"}
	case len(reply) > h.Config().maxEventBytes:
		h.logger.Error("hostplugin: a call handler's reply is over maxEventBytes; the page is told internal error",
			"call", c.Name, "bytes", len(reply), "maxEventBytes", h.Config().maxEventBytes)
		return CallOutcome{Code: wire.CodeInternal, Message: "internal error: the reply is too big"}
	}
	return CallOutcome{Reply: reply}
}

func replyFrame(f wire.HostFrame) message { return mustEncode(f) }

// callsReady fills in what the ready frame rf tells the page of calls, and records the dedup
// epoch it announces. s.mu is held.
func (s *session) callsReady(rf *wire.HostFrame) {
	s.dedup = s.h.callStore.Epoch()
	rf.Dedup, rf.DedupMs, rf.Who = s.dedup, s.h.callStore.Window().Milliseconds(), whoTag(s.dedup, s.identity)
}

// whoTag is the ready frame's who: a tag of identity in the dedup store of epoch, the same on
// every Host of the store and for every session of the identity, from which the identity
// cannot be read back. The page compares it, and sends a keyed call again only as the
// identity it was first sent as: the store keeps outcomes by (identity, key), so a re-send
// as another identity would run it again, as someone else.
func whoTag(epoch, identity string) string {
	h := sha256.New()
	h.Write([]byte("lifeline who\x00"))
	h.Write([]byte(epoch))
	h.Write([]byte{0})
	h.Write([]byte(identity))
	return hex.EncodeToString(h.Sum(nil)[:8])
}
