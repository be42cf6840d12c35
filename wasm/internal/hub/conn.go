package hub

import (
	"context"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/internal/tinyfmt"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// In is one message from a tab. T says which; the other fields are its arguments.
type In struct {
	T Msg
	// Bootstrap is the text of the page's #lifeline-bootstrap element; Options the JSON of
	// its lifelineOptions ("" for none); Href the page's URL, which a path endpoint is
	// resolved against.
	Bootstrap, Options, Href string
	Online                   bool
	Command                  Command
	Event                    Event
	ID                       int
	Stream                   string
	// A call's name, data (JSON text), idempotency key, timeout and, for a call made again
	// after the hub that sent it was lost, what the hub's "sent" message said: the dedup
	// epoch and identity tag it was sent under, the session it was sent on and its id there
	// (WireID: an unkeyed call waits for that session's fence), and how long ago it was
	// first sent (as the tab timed it).
	Name, Data, Key, Epoch, Who, Session string
	TimeoutMs, SentAgoMs, WireID         int
	// Carrier, in a hello, is the carrier the page remembers its network needs
	// (wire.CarrierStream or CarrierPoll: it did not carry a WebSocket lately), "" for none.
	Carrier string
	// Presence, in a subscribe, makes it a presence subscription: who is on the stream, and
	// no events.
	Presence bool
	// After, in a subscribe, with Epoch, is the cursor the tab had in a hub that ended (the
	// log's epoch and the last seq it was given): it resumes there (no cursor for Epoch "").
	After uint64
	// On, in a renewer message, says whether the page's code set a renewer; Token and
	// Failure answer the hub's question ID for a token (access.go).
	On             bool
	Token, Failure string
}

// maxEpoch bounds the epoch of a tab's cursor, which the hub sends on to the Host: a Host's
// epochs are short ids (hostplugin's Ring: 16 hex digits), a tab's value is outside input.
const maxEpoch = 256

// Msg is the type of a tab's message: the tab's "t" (web/lifeline.js), with the fields of
// [In] it uses.
type Msg string

// The messages a tab sends.
const (
	MsgHello       Msg = "hello"       // Bootstrap, Options, Href, Online, Carrier: the first message
	MsgCommand     Msg = "command"     // Command
	MsgOnline      Msg = "online"      // Online: what the browser says of its network
	MsgSubscribe   Msg = "subscribe"   // ID, Stream, Presence, Epoch, After
	MsgUnsubscribe Msg = "unsubscribe" // ID
	MsgLife        Msg = "life"        // Event
	MsgCall        Msg = "call"        // ID, Name, Data, Key, TimeoutMs, Epoch, Who, Session, WireID, SentAgoMs
	MsgCancel      Msg = "cancel"      // ID: the tab gave up on that call (its timer)
	MsgPing        Msg = "ping"        // still here (the glue drops ports that stay silent)
	MsgRenewer     Msg = "renewer"     // On: the page's code set (or removed) a renewer (access.go)
	MsgToken       Msg = "token"       // ID, Token or Failure: the page's answer to Renewer.Renew
	MsgBye         Msg = "bye"         // the tab leaves
)

// Command is what a tab asks of the shared connection.
type Command string

// The commands, each the controller's method of that name.
const (
	CommandReconnect Command = "reconnect" // Controller.ReconnectNow
	CommandStop      Command = "stop"
	CommandStart     Command = "start"
)

// Event is what a tab saw happen to its page.
type Event string

// The page events a tab reports.
const (
	EventVisible  Event = "visible"  // it became visible
	EventPageShow Event = "pageshow" // it was shown again (from the back/forward cache)
	EventResume   Event = "resume"   // it resumed after a freeze
	EventNetwork  Event = "network"  // the connection type changed
	EventLate     Event = "late"     // a timer fired far later than due: the machine slept
	EventHidden   Event = "hidden"
	EventFreeze   Event = "freeze"
)

// Conn is one attached tab. Handle queues its messages: they are acted on in order, on a
// goroutine of the Conn, so a caller on the browser's event loop never waits.
type Conn struct {
	h *Hub
	c Tab

	mu         sync.Mutex
	in         []func() bool // queued messages: each acts, and reports false once the tab left
	out        []func(Tab)
	hello      bool      // guarded by h.mu
	early      []*member // subscribed before Hello: joined once the hub knows its config (serve only)
	subs       map[int]*member
	calls      map[int]context.CancelFunc // the tab's calls not yet answered, by its id
	earlyCalls []In                       // calls made before Hello (serve only)
	gone       bool
	wake       chan struct{}
	done       chan struct{}
}

// Handle queues m. It never blocks.
func (conn *Conn) Handle(m In) { conn.enqueue(func() bool { return conn.act(m) }) }

// enqueue queues f to run on the tab's goroutine, in order with every message.
func (conn *Conn) enqueue(f func() bool) {
	conn.mu.Lock()
	if conn.gone {
		conn.mu.Unlock()
		return
	}
	conn.in = append(conn.in, f)
	conn.mu.Unlock()
	conn.kick()
}

// Detach removes the tab: its subscriptions end (other tabs' carry on) and nothing more
// is sent to it. It is what [MsgBye] does, and what the glue calls for a port that went silent.
func (conn *Conn) Detach() { conn.Handle(In{T: MsgBye}) }

// Done is closed once the tab is detached and its goroutine gone.
func (conn *Conn) Done() <-chan struct{} { return conn.done }

// send queues a call to the tab, in order with every other. It never blocks.
func (conn *Conn) send(f func(Tab)) {
	conn.mu.Lock()
	if !conn.gone {
		conn.out = append(conn.out, f)
	}
	conn.mu.Unlock()
	conn.kick()
}

func (conn *Conn) kick() {
	select {
	case conn.wake <- struct{}{}:
	default:
	}
}

// serve acts on the tab's messages and makes its calls, in order, until bye.
func (conn *Conn) serve() {
	defer close(conn.done)
	for range conn.wake {
		for {
			conn.mu.Lock()
			ins, outs := conn.in, conn.out
			conn.in, conn.out = nil, nil
			conn.mu.Unlock()
			if len(ins) == 0 && len(outs) == 0 {
				break
			}
			for _, f := range outs {
				f(conn.c)
			}
			for _, act := range ins {
				if !act() {
					return
				}
			}
		}
	}
}

// act acts on one message; it returns false once the tab has left.
func (conn *Conn) act(m In) bool {
	h := conn.h
	switch m.T {
	case MsgHello:
		h.mu.Lock()
		first := !conn.hello
		conn.hello = true
		h.mu.Unlock()
		h.hello(conn, m)
		if first {
			for _, mem := range conn.early {
				h.join(mem, mem.stream)
			}
			conn.early = nil
			for _, c := range conn.earlyCalls {
				conn.call(c)
			}
			conn.earlyCalls = nil
		}
	case MsgCommand:
		if err := h.command(m.Command); err != nil {
			h.log.Warn(err.Error())
		}
	case MsgOnline:
		h.setOnline(m.Online)
	case MsgLife:
		h.life(m.Event)
	case MsgSubscribe:
		conn.subscribe(m.ID, m.Stream, m.Presence, gateway.Cursor{Epoch: m.Epoch, Seq: m.After})
	case MsgUnsubscribe:
		conn.mu.Lock()
		mem := conn.subs[m.ID]
		delete(conn.subs, m.ID)
		conn.mu.Unlock()
		if mem != nil && mem.s != nil {
			mem.s.leave(mem)
		}
		conn.early = slices.DeleteFunc(conn.early, func(e *member) bool { return e == mem })
	case MsgCall:
		if !conn.helloed() {
			conn.earlyCalls = append(conn.earlyCalls, m) // the hub may not be built yet
			break
		}
		conn.call(m)
	case MsgCancel:
		conn.mu.Lock()
		cancel := conn.calls[m.ID]
		delete(conn.calls, m.ID)
		conn.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	case MsgPing:
	case MsgRenewer:
		h.setRenewer(conn, m.On)
	case MsgToken:
		h.tokenAnswered(m.ID, m.Token, m.Failure)
	case MsgBye:
		conn.leave()
		return false
	default:
		h.log.Warn("hub: a tab sent an unknown message; ignored", "t", wire.Truncate(string(m.T)))
	}
	return true
}

// helloed reports whether the tab said Hello.
func (conn *Conn) helloed() bool {
	conn.h.mu.Lock()
	defer conn.h.mu.Unlock()
	return conn.hello
}

// call makes the tab's call m on the shared connection, queued in the order the tab made it,
// waited for on a goroutine of its own: the tab is told when it is sent (with the dedup epoch,
// before the write, so that after a crash of this hub it knows what may have gone out) and how
// it ended. A call under an id the tab has in flight already is refused: never mixed up.
func (conn *Conn) call(m In) {
	id := m.ID
	conn.mu.Lock()
	if conn.calls == nil {
		conn.calls = map[int]context.CancelFunc{}
	}
	_, dup := conn.calls[id]
	var ctx context.Context
	var cancel context.CancelFunc
	if !dup && !conn.gone {
		ctx, cancel = context.WithCancel(context.Background())
		conn.calls[id] = cancel
	}
	conn.mu.Unlock()
	if dup {
		conn.h.log.Warn("hub: a tab reused the id of a call in flight; refused", "id", id)
		err := &gateway.CallError{Kind: gateway.CallInvalid, Message: tinyfmt.Sprintf("call id %d is in flight already", id)}
		conn.send(func(t Tab) { t.Replied(id, nil, err) })
		return
	}
	if cancel == nil {
		return // the tab left
	}
	gw := conn.h.gateway()
	if gw == nil {
		cancel()
		err := &gateway.CallError{Kind: gateway.CallClosed, Message: "the connection is not built: " + conn.h.whyNot().Error()}
		conn.send(func(t Tab) { t.Replied(id, nil, err) })
		return
	}
	opts := gateway.CallOptions{
		Key: m.Key, Epoch: m.Epoch, Timeout: time.Duration(m.TimeoutMs) * time.Millisecond,
		OnSent: func(on gateway.Sent) { conn.send(func(t Tab) { t.Sent(id, on) }) },
	}
	if m.Epoch != "" {
		opts.Who, opts.SentAt = m.Who, time.Now().Add(-time.Duration(m.SentAgoMs)*time.Millisecond)
		if m.Key == "" {
			opts.Session, opts.ID = m.Session, uint64(max(m.WireID, 0))
		}
	}
	// Queued here, on the tab's serve goroutine, so that its calls reach the Host in the order
	// the tab made them (a goroutine per call would queue them in the scheduler's order).
	gw.Go(ctx, m.Name, wire.RawJSON(m.Data), opts, func(reply wire.RawJSON, err error) {
		defer cancel()
		conn.mu.Lock()
		delete(conn.calls, id)
		conn.mu.Unlock()
		if ctx.Err() != nil && err != nil {
			return // the tab cancelled it, or left: nobody waits for the answer
		}
		conn.send(func(t Tab) { t.Replied(id, reply, err) })
	})
}

func (conn *Conn) subscribe(id int, stream string, presence bool, from gateway.Cursor) {
	mem := &member{conn: conn, id: id, presence: presence}
	switch {
	case from.Epoch == "" || presence:
	case len(from.Epoch) > maxEpoch || !utf8.ValidString(from.Epoch):
		conn.h.log.Warn("hub: a tab's cursor has an epoch that no Host gives; it starts from a baseline",
			"stream", wire.Truncate(stream), "epoch", wire.Truncate(from.Epoch))
	default:
		mem.from = from
	}
	conn.mu.Lock()
	_, dup := conn.subs[id]
	if !dup {
		conn.subs[id] = mem
	}
	conn.mu.Unlock()
	if dup {
		conn.h.log.Warn("hub: a tab reused a subscription id; ignored", "id", id)
		return
	}
	if err := wire.CheckStream(stream); err != nil {
		conn.forget(mem)
		conn.send(func(c Tab) { c.Ended(id, tinyfmt.Errorf("hub: subscribe: %w", err)) })
		return
	}
	mem.stream = stream
	conn.h.mu.Lock()
	hello := conn.hello
	conn.h.mu.Unlock()
	if !hello {
		conn.early = append(conn.early, mem) // the hub may not be built yet
		return
	}
	conn.h.join(mem, stream)
}

// forget drops m from the tab's subscriptions (its stream ended it).
func (conn *Conn) forget(m *member) {
	conn.mu.Lock()
	if conn.subs[m.id] == m {
		delete(conn.subs, m.id)
	}
	conn.mu.Unlock()
}

// leave ends the tab's subscriptions and detaches it.
func (conn *Conn) leave() {
	conn.mu.Lock()
	conn.gone = true
	subs := conn.subs
	conn.subs = map[int]*member{}
	conn.in, conn.out = nil, nil
	calls := conn.calls
	conn.calls = nil
	conn.mu.Unlock()
	// The tab's calls end with it: those not yet sent are withdrawn (they never run); those
	// sent go on on the Host, and their replies are dropped.
	for _, cancel := range calls {
		cancel()
	}
	for _, m := range subs {
		if m.s != nil {
			m.s.leave(m)
		}
	}
	conn.h.setRenewer(conn, false)
	conn.h.detach(conn)
}
