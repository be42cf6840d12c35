package gateway

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/lifeline-go/lifeline/gateway/wire"
	"github.com/lifeline-go/lifeline/internal/tinyfmt"
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
	// Sent: true, outcome unknown: the session ended after the call was sent and before its
	// reply, and the call was not re-sent (it had no key, or the page came back to a Host
	// whose dedup store is not the one it sent it to). It may or may not have run, once.
	CallInterrupted = "interrupted"
	// The call's timeout passed: Sent says whether it had gone out (then it may still run, or
	// have run, once). Also the Host's own handler timeout (Sent: true).
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
)

// CallError is why a [Gateway.Call] did not return the Host's reply.
type CallError struct {
	// Kind is one of the Call* constants: what happened, and so what the app may do.
	Kind string
	// Sent reports whether the call had been written to a socket. A call never sent has
	// certainly not run; one sent and not answered (Kind interrupted, timeout, closed) may
	// have run, at most once.
	Sent bool
	// Code is the Host's code for a failed reply (wire.Code*); "" when the Host said nothing.
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

// ErrCall is what every *CallError is, for errors.Is.
var ErrCall = errors.New("gateway: call failed")

// Is makes errors.Is(err, ErrCall) hold.
func (e *CallError) Is(target error) bool { return target == ErrCall }

// CallOptions tune one [Gateway.Call].
type CallOptions struct {
	// Key is the app's idempotency key: with it, a call whose session ended before its
	// reply is re-sent to a Host whose dedup store is the one it was sent to, which runs it
	// at most once per (identity, key) and answers a re-send with the first outcome. Without
	// it, such a call fails with [CallInterrupted] and is never sent again.
	Key string
	// Timeout bounds the call from now: waiting to be sent, and for the reply. Default
	// Options.CallTimeout.
	Timeout time.Duration
	// Epoch is for a keyed call made again after whoever sent it first was lost (a tab whose
	// shared hub crashed): the dedup epoch it was sent under. It is then sent only to a Host
	// of that epoch, and fails with [CallInterrupted] elsewhere. "" for a call never sent.
	Epoch string
	// OnSent, when set, is called with the dedup epoch just before the call is written to a
	// socket (on the gateway's writer goroutine: it must not block). A tab records it, so that
	// after a crash of its hub it knows which calls were sent and under which epoch.
	OnSent func(epoch string)
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
	sent   bool   // written to a socket at least once (or CallOptions.Epoch given)
	onSent func(string)

	s  *session // the session it is in flight on; nil while queued
	id uint64   // its id on s

	done  chan struct{} // closed with reply or err set
	reply wire.RawJSON
	err   error
}

// calls is the gateway's state of the calls made on it, guarded by Gateway.mu. Calls reach
// the Host in the order they were made: they are written from the head of queued only, by a
// session that is ready and not draining, and only while no other session has a call in
// flight (during a GOAWAY handover the draining session's calls finish first).
type calls struct {
	queued []*call // made and not in flight: in the order made (keyed re-sends first)
	bytes  int     // of queued's data
}

// Call asks the Host's handler name for its reply to data (one JSON value; nil is null) and
// returns it, or a *[CallError] saying what happened instead. It blocks until then: at most
// opts.Timeout, and no longer than ctx.
//
// The call waits to be sent while the page is not connected: it was never sent, so sending
// it later is no replay. It is written on exactly one session, in the order calls were made
// (calls made at once from several goroutines have no order; [Gateway.Go] makes calls in
// order without waiting for each). If that session ends before the reply, an unkeyed call
// fails with [CallInterrupted] (it may have run) and is never sent again; a keyed one
// (opts.Key) is sent again, first of all, on the next session whose Host has the same dedup
// store, and fails with [CallInterrupted] on a Host with another. Ending ctx before the call
// is sent withdraws it; after, the reply is dropped (the Host still runs it).
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
	c := &call{name: name, data: data, key: opts.Key, epoch: opts.Epoch, sent: opts.Epoch != "", onSent: opts.OnSent, done: make(chan struct{})}
	if err := checkCall(c); err != nil {
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
		return nil, 0, &CallError{Kind: CallClosed, Message: g.cause.Error()}
	case len(g.calls.queued) >= g.maxQueued || g.calls.bytes+len(c.data) > g.maxQueuedBytes:
		return nil, 0, &CallError{Kind: CallBusy, Message: tinyfmt.Sprintf(
			"%d calls (%d bytes) wait to be sent already: at most %d calls, %d bytes",
			len(g.calls.queued), g.calls.bytes, g.maxQueued, g.maxQueuedBytes)}
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
			return &CallError{Kind: CallTimeout, Sent: sent, Message: context.Cause(ctx).Error()}
		})
	}
	return c.reply, c.err
}

// checkCall checks what the page asked for, before anything is queued.
func checkCall(c *call) error {
	invalid := func(err error) error { return &CallError{Kind: CallInvalid, Message: err.Error()} }
	if err := wire.CheckCallName(c.name); err != nil {
		return invalid(err)
	}
	if c.key != "" {
		if err := wire.CheckCallKey(c.key); err != nil {
			return invalid(err)
		}
	}
	if c.epoch != "" && c.key == "" {
		return invalid(errors.New("an epoch is for a keyed call made again; this call has no key"))
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
	} else if i := slices.Index(g.calls.queued, c); i >= 0 {
		g.calls.queued = slices.Delete(g.calls.queued, i, i+1)
		g.calls.bytes -= len(c.data)
	}
	c.reply, c.err = reply, err
	close(c.done)
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
	if !s.ready || s.draining || s.ctx.Err() != nil || len(g.calls.queued) == 0 {
		return nil, nil
	}
	for o := range g.sessions {
		if o != s && len(o.inflight) > 0 {
			return nil, nil
		}
	}
	for len(g.calls.queued) > 0 && len(s.inflight) < g.callsInFlight {
		c := g.calls.queued[0]
		switch {
		case s.dedup == "":
			g.settle(c, nil, &CallError{Kind: CallUnsupported, Sent: c.sent, Message: "the Host takes no calls (its ready frame names no dedup store)"})
			continue
		case c.sent && c.key == "":
			// Never re-sent: it cannot be queued again, but a caller may have made it so.
			g.settle(c, nil, &CallError{Kind: CallInterrupted, Sent: true, Message: "an unkeyed call is never sent twice"})
			continue
		case c.sent && c.epoch != s.dedup:
			g.settle(c, nil, &CallError{Kind: CallInterrupted, Sent: true, Message: tinyfmt.Sprintf(
				"the Host's dedup store is %q, not %q the call was sent to: whether it ran is unknown, and it is not sent again", s.dedup, c.epoch)})
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
		c.s, c.id, c.sent, c.epoch = s, s.nextCall, true, s.dedup
		s.inflight[c.id] = c
		frames = append(frames, b)
		if f := c.onSent; f != nil {
			epoch := c.epoch
			onSent = append(onSent, func() { f(epoch) })
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
// call fails with CallInterrupted, a keyed one goes back to the head of the queue, in the
// order it was made, for a session of the same dedup store. g.mu must be held.
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
			c.err = &CallError{Kind: CallInterrupted, Sent: true, Message: "the session ended before the reply: " + cause.Error()}
			close(c.done)
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
			g.settle(c, nil, &CallError{Kind: CallClosed, Sent: true, Message: cause.Error()})
		}
	}
	for len(g.calls.queued) > 0 {
		c := g.calls.queued[0]
		g.settle(c, nil, &CallError{Kind: CallClosed, Sent: c.sent, Message: cause.Error()})
	}
}
