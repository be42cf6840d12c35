package gateway

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/lifeline-go/lifeline/internal/tinyfmt"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// What a [CallError] says happened to a call, for the app to act on and a person to read.
const (
	// Sent: true. The Host's handler returned an error (Message is its first line).
	CallApp = "app"
	// Sent: true. The Host's handler panicked.
	CallInternal = "internal"
	// Sent: true. No handler on the Host has the call's name.
	CallUnknown = "unknown"
	// Sent: true. The Host could not read the call; its handler never ran.
	CallBadRequest = "bad-request"
	// Over the Host's call rate or queue (Sent: true, RetryAfter set), or over the page's own
	// queue of unsent calls (Sent: false): the call did not run.
	CallBusy = "busy"
	// Sent: true. It had started, its reply is lost, and nothing of it starts again: it ran
	// once or not at all, and that is settled. An unkeyed call: the session it was sent on
	// ended before its reply, and the Host has fenced that session, where the call had
	// started (PROTOCOL.md §9.4; it ran, or runs to its end, once). From the Host: a keyed
	// call whose first run's Host died before it had an outcome, or one on a session whose
	// dedup store changed under it.
	CallInterrupted = "interrupted"
	// What became of the call cannot be learned, or not in time: Sent says whether it had gone
	// out (then it may have run, or still run, at most once). Its timeout passed; or the
	// Host's handler ran past the Host's call timeout, or a keyed call's first run was still
	// going then; or a call cut off could neither be sent again nor fenced (a Host of another
	// dedup store, or past half its window).
	CallTimeout = "timeout"
	// Sent: false. The call's frame is over what the Host reads (the ready frame's
	// maxFrameBytes).
	CallTooBig = "too-big"
	// Sent: false. The call is malformed: a name or key the protocol cannot carry, or data
	// that is not one JSON value.
	CallInvalid = "invalid"
	// Sent: false. The Host does not take calls (its ready frame names no dedup store).
	CallUnsupported = "unsupported"
	// The gateway was closed: Sent says whether the call had gone out.
	CallClosed = "closed"
	// Sent: true, and it certainly never ran, nor ever will: the session it was sent on
	// ended before its reply, and the Host fenced that session before the call started.
	CallNotRun = "not-run"
	// Sent: true. A keyed call cut off, not sent again because the page's identity changed
	// since it was sent (the user signed in as someone else): it may have run as the identity
	// it was made as, at most once, and never runs as the new one.
	CallIdentityChanged = "identity-changed"
)

// CallError is why a [Gateway.Call] did not return the Host's reply.
type CallError struct {
	// Kind is one of the Call* constants: what happened, and so what the app may do.
	Kind string
	// Sent reports whether the call had been written to a socket. A call never sent has
	// certainly not run; one sent and not answered (Kind interrupted, timeout, closed) may
	// have run, at most once.
	Sent bool
	// Code is the Host's code for a failed reply, one of the Call* constants (the wire carries
	// the same strings); "" when the Host said nothing.
	Code string
	// Message is the Host's words (a handler's error's first line), or the gateway's.
	Message string
	// RetryAfter is how long the Host asked the page to wait before calling again (busy).
	RetryAfter time.Duration
}

func (e *CallError) Error() string {
	sent := "not sent"
	if e.Sent {
		sent = "sent"
	}
	return tinyfmt.Sprintf("gateway: call %s (%s): %s", e.Kind, sent, e.Message)
}

// callErr is a *CallError of kind, sent or not, saying msg. (One constructor rather than a
// composite literal at each site: the page's wasm is smaller for it.)
func callErr(kind string, sent bool, msg string) *CallError {
	return &CallError{Kind: kind, Sent: sent, Message: msg}
}

// ErrCall is what every *CallError is, for errors.Is.
var ErrCall = errors.New("gateway: call failed")

// Is makes errors.Is(err, ErrCall) hold.
func (e *CallError) Is(target error) bool { return target == ErrCall }

// CallOptions tune one [Gateway.Call].
type CallOptions struct {
	// Key is the app's idempotency key: with it, a call whose session ended before its
	// reply is re-sent to a Host whose dedup store is the one it was sent to, which runs it
	// at most once per (identity, key) and answers a re-send with the first outcome. Without
	// it, such a call is never sent again: it fails with [CallInterrupted] or [CallNotRun]
	// once that session is fenced.
	Key string
	// Timeout bounds the call from now: waiting to be sent, and for the reply. Default
	// Options.CallTimeout.
	Timeout time.Duration
	// Epoch is for a keyed call made again after whoever sent it first was lost (a tab whose
	// shared hub crashed): the dedup epoch it was sent under. It is then sent only to a Host
	// of that epoch, and fails with [CallInterrupted] elsewhere. "" for a call never sent.
	Epoch string
	// SentAt, with Epoch, is when the call was first sent. It is sent again only within half
	// the Host's dedup window from then (see [Gateway.Call]); zero, it is not sent again.
	SentAt time.Time
	// Session and ID, with Epoch and no Key, are for an unkeyed call made again after whoever
	// sent it was lost: the session it was sent on and its id there ([Sent]). It is not sent
	// again: it waits until a session of Epoch fences that one, and then fails with
	// [CallNotRun] or [CallInterrupted] (or with [CallTimeout] at its timeout).
	Session string
	ID      uint64
	// Who, with Epoch, is the identity tag it was first sent under ([Sent].Who). It is sent
	// again only to a session of that identity; "" matches only a Host that tags none.
	Who string
	// OnSent, when set, is called just before the call is written to a socket, with what the
	// session's ready frame said (on the gateway's writer goroutine: it must not block). A tab
	// records it, so that after a crash of its hub it knows which calls were sent, and under
	// which epoch and identity.
	OnSent func(Sent)
}

// Sent is what [CallOptions].OnSent is told of the session a call is written on.
type Sent struct {
	// Epoch is the session's dedup epoch (its ready frame's dedup).
	Epoch string
	// Who tags the session's identity in that store (its ready frame's who).
	Who string
	// Session is the session's id (its ready frame's session), and ID the call's id on it.
	Session string
	ID      uint64
}

// Defaults of the call options of [Options].
const (
	DefaultCallTimeout    = 30 * time.Second
	DefaultMaxQueuedCalls = 256
	DefaultMaxQueuedBytes = 1 << 20
	// DefaultCallsInFlight is how many calls a session has sent and not had answered at
	// most. The Host runs a page's calls one at a time, so a deeper window saves nothing but
	// round trips, and every call in it is one a dropped session leaves interrupted (sent,
	// outcome unknown) instead of still unsent, and safe to send on the next session.
	DefaultCallsInFlight = 4
)

// call is one Gateway.Call. Its fields are guarded by the gateway's mu.
type call struct {
	name   string
	data   wire.RawJSON
	key    string
	epoch  string // the dedup epoch it was sent under; "" until sent (or as CallOptions.Epoch)
	who    string // the identity tag it was first sent under (or as CallOptions.Who)
	sent   bool   // written to a socket at least once (or CallOptions.Epoch given)
	onSent func(Sent)

	// firstSent is when it was first written (CallOptions.SentAt for one made again), and
	// window the smallest dedup window of the Hosts it was written to (0: none known yet):
	// a keyed call goes out again only within half of it (pastHalfWindow).
	firstSent time.Time
	window    time.Duration

	// An unkeyed call cut off waits in calls.held, told nothing, until a session of its epoch
	// has fenced the session it was sent on (heldOn; askedOn the last session that asked).
	heldOn  string
	askedOn *session

	s  *session // the session it is in flight on; nil while queued
	id uint64   // its id on s

	done  chan struct{} // closed with reply or err set
	reply wire.RawJSON
	err   error
}

// callSession is what a session's ready frame said of calls beyond its dedup epoch and read
// limit. Guarded by Gateway.mu.
type callSession struct {
	window time.Duration // the dedup store's window (dedupMs); 0: not said, so nothing is sent again there
	who    string        // the tag of the session's identity (who)
	sid    string        // the session's id (session), which a later session fences
}

// readied records what s's ready frame f says, once gen.Ready took it: s may now send.
func (g *Gateway) readied(s *session, f wire.HostFrame) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s.ready = true
	s.dedup, s.maxFrame, s.reportOK, s.presence = f.Dedup, f.MaxFrameBytes, f.Report, f.HasPresence
	s.callsOn = callSession{window: time.Duration(f.DedupMs) * time.Millisecond, who: f.Who, sid: f.Session}
}

// calls is the gateway's state of the calls made on it, guarded by Gateway.mu. Calls reach
// the Host in the order they were made: they are written from the head of queued only, by a
// session that is ready and not draining, and only while no other session has a call in
// flight (during a GOAWAY handover the draining session's calls finish first).
type calls struct {
	queued []*call // made and not in flight: in the order made (keyed re-sends first)
	bytes  int     // of queued's data
	held   []*call // unkeyed calls cut off, waiting for their session's fence
}

// An unkeyed call cut off (its session ended before its reply) is neither sent again nor told
// anything yet: the Host may still start it (its end of the link may be half-open and deliver
// it late, or it waits there behind a slow call). A later session of the same dedup store
// sends a fence frame naming the old session; the Host's fenced answer says which of its
// calls started, and from then on none starts (CallStore.Fence). Only then is each told:
// started, CallInterrupted; not, CallNotRun. So nothing the page is told can be made untrue
// by a start after it. A call that no session can fence in time ends with a timeout.

// Call asks the Host's handler name for its reply to data (one JSON value; nil is null) and
// returns it, or a *[CallError] saying what happened instead. It blocks until then: at most
// opts.Timeout, and no longer than ctx.
//
// The call waits to be sent while the page is not connected: it was never sent, so sending
// it later is no replay. It is written on exactly one session, in the order calls were made
// (calls made at once from several goroutines have no order; [Gateway.Go] makes calls in
// order without waiting for each). If that session ends before the reply, an unkeyed call
// is never sent again, and waits until the next session of its Host's dedup store has fenced
// that one: then it fails with [CallInterrupted] if it had started there (it ran, or runs,
// once) or [CallNotRun] if not (it never runs). A keyed one (opts.Key) is sent again, first
// of all, on the next session whose Host has the same dedup store, as the same identity,
// within half the store's window from its first send; otherwise it fails ([CallTimeout],
// [CallIdentityChanged]). Whatever cannot be learned ends [CallTimeout], at the latest at its
// timeout. Ending ctx before the call is sent withdraws it; after, the reply is dropped (the
// Host still runs it).
func (g *Gateway) Call(ctx context.Context, name string, data wire.RawJSON, opts CallOptions) (wire.RawJSON, error) {
	c, timeout, err := g.queue(name, data, opts)
	if err != nil {
		return nil, err
	}
	return g.await(ctx, c, timeout)
}

// Go makes the call [Gateway.Call] makes, without waiting for it: the call is queued before
// Go returns, so calls made by one goroutine one Go after another reach the Host in that
// order. done gets what Call would return, once, on a goroutine of its own. (A page's calls
// come in order from its tab, and each waits for its reply: the shared hub makes them with
// Go, as net/rpc's Client.Go.)
func (g *Gateway) Go(ctx context.Context, name string, data wire.RawJSON, opts CallOptions, done func(wire.RawJSON, error)) {
	c, timeout, err := g.queue(name, data, opts)
	go func() {
		if err != nil {
			done(nil, err)
			return
		}
		done(g.await(ctx, c, timeout))
	}()
}

// queue checks the call and puts it at the tail of the queue of calls to send, or says why
// not; it returns the call and its timeout.
func (g *Gateway) queue(name string, data wire.RawJSON, opts CallOptions) (*call, time.Duration, error) {
	if len(data) == 0 {
		data = wire.RawJSON("null")
	}
	c := &call{name: name, data: data, key: opts.Key, epoch: opts.Epoch, who: opts.Who, sent: opts.Epoch != "", onSent: opts.OnSent, firstSent: opts.SentAt, id: opts.ID, done: make(chan struct{})}
	if err := checkCall(c, opts.Session); err != nil {
		return nil, 0, err
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = g.callTimeout
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.cause != nil:
		return nil, 0, callErr(CallClosed, false, g.cause.Error())
	case len(g.calls.queued) >= g.maxQueued || g.calls.bytes+len(c.data) > g.maxQueuedBytes:
		return nil, 0, &CallError{Kind: CallBusy, Message: tinyfmt.Sprintf(
			"%d calls (%d bytes) wait to be sent already: at most %d calls, %d bytes",
			len(g.calls.queued), g.calls.bytes, g.maxQueued, g.maxQueuedBytes)}
	}
	if opts.Session != "" {
		c.heldOn = opts.Session // never sent again: told once its session is fenced
		g.calls.held = append(g.calls.held, c)
		g.kickAll()
		return c, timeout, nil
	}
	g.calls.queued = append(g.calls.queued, c)
	g.calls.bytes += len(c.data)
	g.kickAll()
	return c, timeout, nil
}

// await waits for c's outcome: its reply or error, its timeout, or the end of ctx.
func (g *Gateway) await(ctx context.Context, c *call, timeout time.Duration) (wire.RawJSON, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		g.abandon(c, func(sent bool) error {
			return &CallError{Kind: CallTimeout, Sent: sent, Message: tinyfmt.Sprintf("no reply within %v", timeout)}
		})
	case <-ctx.Done():
		g.abandon(c, func(sent bool) error {
			return callErr(CallTimeout, sent, context.Cause(ctx).Error())
		})
	}
	return c.reply, c.err
}

// checkCall checks what the page asked for, before anything is queued; session is the one
// an unkeyed call made again was sent on (CallOptions.Session).
func checkCall(c *call, session string) error {
	invalid := func(err error) error { return callErr(CallInvalid, false, err.Error()) }
	if err := wire.CheckCallName(c.name); err != nil {
		return invalid(err)
	}
	if c.key != "" {
		if err := wire.CheckCallKey(c.key); err != nil {
			return invalid(err)
		}
	}
	switch {
	case session != "" && (c.key != "" || c.epoch == "" || c.id == 0 || len(session) > wire.MaxSessionID):
		// The Host checks the rest of the session's rule (wire.CheckSessionID).
		return invalid(errors.New("a session (at most 64 bytes) is for an unkeyed call made again, with its epoch and its id there"))
	case c.epoch != "" && c.key == "" && session == "":
		return invalid(errors.New("an epoch is for a call made again: a keyed one, or an unkeyed one with its session"))
	}
	if err := wire.CheckValue(c.data); err != nil {
		return invalid(err)
	}
	return nil
}

// settle ends c with reply or err, unless it has ended. g.mu must be held.
func (g *Gateway) settle(c *call, reply wire.RawJSON, err error) {
	select {
	case <-c.done:
		return
	default:
	}
	if s := c.s; s != nil {
		delete(s.inflight, c.id)
		c.s = nil
		s.kickWriter() // room in its window for the next call
		if len(s.inflight) == 0 {
			s.callsDone() // a draining session waits for its last reply
			g.kickAll()   // a session waiting for this one's calls to finish may send now
		}
	} else if i := slices.Index(g.calls.held, c); i >= 0 {
		g.calls.held = slices.Delete(g.calls.held, i, i+1)
	} else if i := slices.Index(g.calls.queued, c); i >= 0 {
		g.calls.queued = slices.Delete(g.calls.queued, i, i+1)
		g.calls.bytes -= len(c.data)
	}
	c.reply, c.err = reply, err
	close(c.done)
}

// pastHalfWindow reports whether half the dedup window has passed since c was first sent,
// the smaller window of the Host it went to and s's, or no window or send time is known. Past
// it the Host's store may have forgotten what it kept of c (an outcome or a start, kept for
// the window from when it was written, which came after the send): c is neither sent again
// nor fenced. The other half absorbs a frame that is slow to arrive.
func pastHalfWindow(c *call, s *session) bool {
	w := s.callsOn.window
	if c.window != 0 && c.window < w {
		w = c.window
	}
	return w <= 0 || c.firstSent.IsZero() || time.Since(c.firstSent) >= w/2
}

// fences returns the fence frames s may send now: one for each session of its dedup store
// and identity that ended with unkeyed calls in flight, not asked on s yet. A call sent so long ago that
// the store may have forgotten what started on its session cannot be fenced any more: it
// fails timeout. g.mu must be held.
func (g *Gateway) fences(s *session) [][]byte {
	var frames [][]byte
	last := ""                                    // a session's held calls are next to each other
	for i := len(g.calls.held) - 1; i >= 0; i-- { // backwards: settle drops held[i]
		c := g.calls.held[i]
		if c.epoch != s.dedup || c.who != s.callsOn.who || s.callsOn.window <= 0 || c.askedOn == s {
			// A session of another identity cannot fence it (the Host scopes a fence to the
			// identity asking): it waits for one of its own, or its timeout.
			continue
		}
		if pastHalfWindow(c, s) {
			g.settle(c, nil, callErr(CallTimeout, true, "its session ended before its reply and can no longer be fenced (half the dedup window has passed): it may have run, or still run, at most once"))
			continue
		}
		c.askedOn = s
		if c.heldOn != last { // were they not, a session would be fenced twice, which is harmless
			last = c.heldOn
			frames = append(frames, wire.Fence(c.heldOn))
		}
	}
	return frames
}

// fenced settles the calls held for the session the Host fenced, as its answer f on s says:
// those that started there interrupted, the others not-run. An answer s did not ask for
// changes nothing.
func (g *Gateway) fenced(s *session, f wire.HostFrame) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := len(g.calls.held) - 1; i >= 0; i-- { // backwards: settle drops held[i]
		c := g.calls.held[i]
		if c.heldOn != f.Session || c.askedOn != s {
			continue
		}
		err := callErr(CallNotRun, true, "its session ended before its reply; the Host fenced it before the call started: it never ran, and never will")
		if c.id <= f.Started {
			err.Kind, err.Message = CallInterrupted, "its session ended before its reply; the Host fenced it after the call started: it ran, or runs to its end, once"
		}
		g.settle(c, nil, err)
	}
}

// abandon ends c, unless it has ended, with the error why(sent) makes: its timeout passed or
// its caller left. A queued call is withdrawn; one in flight loses its reply.
func (g *Gateway) abandon(c *call, why func(sent bool) error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.settle(c, nil, why(c.sent))
}

// sendable returns the frames of the calls s may write now, moved in flight on it, and what
// to call before writing each. s may write while it is ready and not draining and no other
// session has calls in flight, up to Options.CallsInFlight calls unanswered; a call whose
// frame is over the Host's read limit, or a keyed call sent before to a dedup store other than
// s's, fails instead.
func (g *Gateway) sendable(s *session) (frames [][]byte, onSent []func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !s.ready || s.draining || s.ctx.Err() != nil {
		return nil, nil
	}
	// Fences first: the Host runs a session's frames in order, so the calls sent after them
	// find the sessions left behind fenced.
	frames = g.fences(s)
	onSent = make([]func(), len(frames))
	if len(g.calls.queued) == 0 {
		return frames, onSent
	}
	for o := range g.sessions {
		if o != s && len(o.inflight) > 0 {
			return frames, onSent
		}
	}
	for len(g.calls.queued) > 0 && len(s.inflight) < g.callsInFlight {
		c := g.calls.queued[0]
		switch {
		case s.dedup == "":
			g.settle(c, nil, callErr(CallUnsupported, c.sent, "the Host takes no calls (its ready frame names no dedup store)"))
			continue
		case c.sent && c.key == "":
			// Never re-sent: it cannot be queued again, but a caller may have made it so.
			g.settle(c, nil, callErr(CallInterrupted, true, "an unkeyed call is never sent twice"))
			continue
		case c.sent && c.epoch != s.dedup:
			// Neither sent again (this store would run it a second time) nor fenced (this
			// store cannot fence a session of another): what became of it cannot be learned.
			g.settle(c, nil, callErr(CallTimeout, true, "not sent again: the Host's dedup store is "+s.dedup+", not "+c.epoch+": it may have run, or still run, at most once"))
			continue
		case c.sent && c.who != s.callsOn.who:
			g.settle(c, nil, callErr(CallIdentityChanged, true, "not sent again: the identity changed since it was sent ("+c.who+", now "+s.callsOn.who+"): it may have run as the first, at most once, never as this one"))
			continue
		case c.sent && pastHalfWindow(c, s):
			g.settle(c, nil, callErr(CallTimeout, true, "not sent again: half the Host's dedup window has passed since it was first sent: it may have run, at most once"))
			continue
		}
		s.nextCall++
		b, _ := wire.PageFrame{T: wire.TypeCall, ID: s.nextCall, Name: c.name, Data: c.data, Key: c.key}.Encode()
		if s.maxFrame > 0 && int64(len(b)) > s.maxFrame {
			g.settle(c, nil, &CallError{Kind: CallTooBig, Sent: c.sent, Message: tinyfmt.Sprintf(
				"the call's frame is %d bytes, over the %d the Host reads", len(b), s.maxFrame)})
			continue
		}
		g.calls.queued = g.calls.queued[1:]
		g.calls.bytes -= len(c.data)
		if !c.sent {
			c.firstSent, c.who = time.Now(), s.callsOn.who
		}
		if w := s.callsOn.window; c.window == 0 || w < c.window {
			c.window = w
		}
		c.s, c.id, c.sent, c.epoch = s, s.nextCall, true, s.dedup
		s.inflight[c.id] = c
		frames = append(frames, b)
		if f := c.onSent; f != nil {
			on := Sent{Epoch: c.epoch, Who: c.who, Session: s.callsOn.sid, ID: c.id}
			onSent = append(onSent, func() { f(on) })
		} else {
			onSent = append(onSent, nil)
		}
	}
	return frames, onSent
}

// replied settles the call s sent as id with the Host's reply f. A reply to a call no longer
// in flight (abandoned meanwhile) is dropped.
func (g *Gateway) replied(s *session, f wire.HostFrame) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := s.inflight[f.ID]
	if c == nil {
		return
	}
	if f.Code == "" {
		g.settle(c, f.Data, nil)
		return
	}
	if f.Code == wire.CodeAccessEnded {
		// The Host ended the session's access; its error frame follows. No call goes out on
		// the session meanwhile, though this reply opens room for one (access.go).
		s.draining = true
	}
	kind := f.Code
	switch f.Code {
	case wire.CodeApp, wire.CodeInternal, wire.CodeUnknown, wire.CodeBadRequest, wire.CodeBusy, wire.CodeInterrupted, wire.CodeTimeout,
		wire.CodeAccessEnded:
	default:
		kind = CallApp // a later Host's code: the handler's call failed, as far as the page knows
	}
	g.settle(c, nil, &CallError{Kind: kind, Sent: true, Code: f.Code, Message: f.Error,
		RetryAfter: min(time.Duration(f.RetryAfterMs)*time.Millisecond, wire.MaxRetryAfter)})
}

// orphan acts on the calls in flight on s when it ends without their replies: an unkeyed
// call waits for a later session to fence s (calls.held), a keyed one goes back to the head of the
// queue, in the order it was made, for a session of the same dedup store. g.mu must be held.
func (g *Gateway) orphan(s *session, cause error) {
	if len(s.inflight) == 0 {
		return
	}
	var again []*call
	for _, id := range sortedKeys(s.inflight) {
		c := s.inflight[id]
		delete(s.inflight, id)
		c.s = nil
		if c.key == "" {
			c.heldOn = s.callsOn.sid // told once a later session has fenced s
			g.calls.held = append(g.calls.held, c)
			continue
		}
		again = append(again, c)
		g.calls.bytes += len(c.data)
	}
	g.calls.queued = append(again, g.calls.queued...)
	g.kickAll()
}

// closeCalls ends every call of a gateway being closed with cause. g.mu must be held.
func (g *Gateway) closeCalls(cause error) {
	for s := range g.sessions {
		for _, c := range s.inflight {
			g.settle(c, nil, callErr(CallClosed, true, cause.Error()))
		}
	}
	for len(g.calls.queued) > 0 {
		c := g.calls.queued[0]
		g.settle(c, nil, callErr(CallClosed, c.sent, cause.Error()))
	}
	for len(g.calls.held) > 0 {
		g.settle(g.calls.held[0], nil, callErr(CallClosed, true, cause.Error()))
	}
}
