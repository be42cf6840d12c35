package hub

import (
	"fmt"
	"slices"
	"sync"

	"github.com/lifeline-go/lifeline/gateway/wire"
)

// In is one message from a client. T says which; the other fields are its arguments.
type In struct {
	// T is "hello" (Bootstrap, Options, Href, Online), "command" (Command: reconnect, stop,
	// start), "online" (Online), "subscribe" (ID, Stream), "unsubscribe" (ID), "life" (Event),
	// "ping" (still here) or "bye".
	T string
	// Bootstrap is the text of the page's #lifeline-bootstrap element; Options the JSON of
	// its lifelineOptions ("" for none); Href the page's URL, which a path endpoint is
	// resolved against.
	Bootstrap, Options, Href string
	Online                   bool
	Command                  string
	// Event is what a "life" message reports of the page: "visible" (it became visible),
	// "pageshow", "resume" (after a freeze), "network" (the connection type changed),
	// "late" (a timer fired far later than due: the machine slept), "hidden", "freeze".
	Event  string
	ID     int
	Stream string

	ack chan struct{} // closed once every message before it was acted on (tests)
}

// Conn is one attached client. Handle queues its messages: they are acted on in order, on a
// goroutine of the Conn, so a caller on the browser's event loop never waits.
type Conn struct {
	h *Hub
	c Client

	mu    sync.Mutex
	in    []In
	out   []func(Client)
	hello bool      // guarded by h.mu
	early []*member // subscribed before Hello: joined once the hub knows its config (serve only)
	subs  map[int]*member
	gone  bool
	wake  chan struct{}
	done  chan struct{}
}

// Handle queues m. It never blocks.
func (conn *Conn) Handle(m In) {
	conn.mu.Lock()
	if conn.gone {
		conn.mu.Unlock()
		return
	}
	conn.in = append(conn.in, m)
	conn.mu.Unlock()
	conn.kick()
}

// Detach removes the client: its subscriptions end (other clients' carry on) and nothing more
// is sent to it. It is what "bye" does, and what the glue calls for a port that went silent.
func (conn *Conn) Detach() { conn.Handle(In{T: "bye"}) }

// Done is closed once the client is detached and its goroutine gone.
func (conn *Conn) Done() <-chan struct{} { return conn.done }

// send queues a call to the client, in order with every other. It never blocks.
func (conn *Conn) send(f func(Client)) {
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

// serve acts on the client's messages and makes its calls, in order, until bye.
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
			for _, m := range ins {
				if !conn.act(m) {
					return
				}
			}
		}
	}
}

// act acts on one message; it returns false once the client has left.
func (conn *Conn) act(m In) bool {
	h := conn.h
	if m.ack != nil {
		close(m.ack)
		return true
	}
	switch m.T {
	case "hello":
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
		}
	case "command":
		if err := h.command(m.Command); err != nil {
			h.log.Warn(err.Error())
		}
	case "online":
		h.setOnline(m.Online)
	case "life":
		h.life(m.Event)
	case "subscribe":
		conn.subscribe(m.ID, m.Stream)
	case "unsubscribe":
		conn.mu.Lock()
		mem := conn.subs[m.ID]
		delete(conn.subs, m.ID)
		conn.mu.Unlock()
		if mem != nil && mem.s != nil {
			mem.s.leave(mem)
		}
		conn.early = slices.DeleteFunc(conn.early, func(e *member) bool { return e == mem })
	case "ping":
		// A tab saying it is still there; the glue drops ports that stay silent.
	case "bye":
		conn.leave()
		return false
	default:
		h.log.Warn("hub: a client sent an unknown message; ignored", "t", wire.Truncate(m.T))
	}
	return true
}

func (conn *Conn) subscribe(id int, stream string) {
	mem := &member{conn: conn, id: id}
	conn.mu.Lock()
	_, dup := conn.subs[id]
	if !dup {
		conn.subs[id] = mem
	}
	conn.mu.Unlock()
	if dup {
		conn.h.log.Warn("hub: a client reused a subscription id; ignored", "id", id)
		return
	}
	if err := wire.CheckStream(stream); err != nil {
		conn.forget(mem)
		conn.send(func(c Client) { c.Ended(id, fmt.Errorf("hub: subscribe: %w", err)) })
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

// forget drops m from the client's subscriptions (its stream ended it).
func (conn *Conn) forget(m *member) {
	conn.mu.Lock()
	if conn.subs[m.id] == m {
		delete(conn.subs, m.id)
	}
	conn.mu.Unlock()
}

// leave ends the client's subscriptions and detaches it.
func (conn *Conn) leave() {
	conn.mu.Lock()
	conn.gone = true
	subs := conn.subs
	conn.subs = map[int]*member{}
	conn.in, conn.out = nil, nil
	conn.mu.Unlock()
	for _, m := range subs {
		if m.s != nil {
			m.s.leave(m)
		}
	}
	conn.h.detach(conn)
}
