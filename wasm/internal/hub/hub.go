// Package hub is what stands behind the page's JavaScript API: one controller and one gateway
// serving any number of tabs, each a page talking to the hub over a message port.
// In in-page mode the hub runs in the page and serves that page alone; in shared mode it runs
// once per origin in a SharedWorker and serves every tab, over one socket.
//
// The package knows no JavaScript: tabs send it [In] messages ([Conn.Handle]) and it
// answers through the [Tab] each attached with; the browser glue (wasm/) turns both into
// postMessage. So the whole of it builds and is tested natively, under -race and synctest.
//
// What a tab gets:
//   - every status of the shared connection, in order, from its first Hello on;
//   - for each subscribe, a delivery stream of its own that starts with a baseline (a reset)
//     and then carries every event once and in order: tabs following the same stream share
//     one subscription on the wire, and a subscriber that joins late is given the last
//     baseline and the events since (a placeable start), or, past maxReplay events, a fresh
//     baseline from the Host;
//   - for a subscribe that names a cursor (the tab followed the stream in a hub that ended:
//     WebKit ends a SharedWorker when one of several windows closes), the events after it,
//     no baseline: from what the hub holds, else from the Host (the first such tab starts
//     the wire subscription at its cursor; one behind the others rewinds it), or a reset
//     where neither can;
//   - for each presence subscription, who is on the stream: the members as they are, then
//     each change. The hub's one session is the browser's one membership of the stream
//     (tabs are sessions of no one: the Host counts the hub's), so a tab that closes while
//     another follows the stream makes no member leave;
//   - the end of a subscription that the Host denied or that the gateway closed.
//
// A tab's unsubscribe or detach never ends another tab's subscription.
package hub

import (
	"cmp"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/internal/tinyfmt"
	"github.com/lifeline-go/lifeline/internal/wire"
	"github.com/lifeline-go/lifeline/wasm/internal/page"
)

// Options tune a [Hub]. A nil *Options means all defaults.
type Options struct {
	// Logger receives the hub's, the controller's and the gateway's logs. Default
	// controller.DefaultLogger().
	Logger controller.Logger
	// Rand is handed to the controller (controller.Options.Rand). Default its own.
	Rand func() float64
	// OnIdle, when set, is called once no tab has been attached for IdleAfter: the hub
	// has nobody left to serve (a SharedWorker's last tab closed) and should be closed. A
	// tab attaching meanwhile (the only tab reloading) cancels it. Default none: a hub
	// in a page lives as long as the page.
	OnIdle func()
	// Mode is the page's mode, which the gateway names to the Host (gateway.Options.Mode):
	// wire.ModeShared or wire.ModeInPage. Default none.
	Mode string
	// IdleAfter is how long the hub waits for a tab before OnIdle. Default 10 s: long
	// enough for a reload or a navigation within the site to come back to a live connection,
	// short enough that the Host does not keep a session nobody reads.
	IdleAfter time.Duration
	// FallbackAfter and UpgradeAfter are the gateway's (gateway.Options). Default its own.
	FallbackAfter, UpgradeAfter time.Duration
}

// DefaultIdleAfter is the default of Options.IdleAfter.
const DefaultIdleAfter = 10 * time.Second

// Tab is the hub's way back to one page. Its methods are called from the hub's goroutines,
// one at a time per tab, and must not block (postMessage does not).
type Tab interface {
	// Status reports the connection's state; the first one comes right after Hello.
	Status(Status)
	// Deliver hands one delivery of the subscription id to the page.
	Deliver(id int, d gateway.Delivery)
	// Ended reports that the subscription id ended, and why (the Host denied it, the hub is
	// closing); it delivers nothing more.
	Ended(id int, err error)
	// Sent reports that the call id is about to be written to a socket, and what the
	// session's ready frame said (its dedup epoch, its identity's tag).
	Sent(id int, on gateway.Sent)
	// Replied reports how the call id ended: the Host's reply, or a *gateway.CallError.
	Replied(id int, reply wire.RawJSON, err error)
	// Presence reports who is on the stream of the presence subscription id: first, the
	// members as they are (p.Joined lists them all); after it, what changed (p.Members is
	// the whole list every time).
	Presence(id int, p gateway.Presence, first bool)
}

// Status is what a page shows of the shared connection.
type Status struct {
	controller.Status
	// Misconfigured is set when the bootstrap or the page's options did not resolve: nothing
	// connects, and the error names the field and the value.
	Misconfigured error
	// Carrier is what carried the last session that was ready (zero before the first): the
	// indicator's data-carrier, and what the page remembers of its network.
	Carrier gateway.Carrier
}

// maxReplay bounds what a stream keeps for subscribers that join late: the events since its
// last baseline. Past it, a late joiner is given a fresh baseline from the Host instead (which
// every subscriber of the stream then gets too: an explicit re-baseline, never a gap).
const maxReplay = 1024

// Hub is one connection shared by its tabs. The zero Hub is not usable; call [New].
// Its methods are safe from any goroutine.
type Hub struct {
	opts Options
	log  controller.Logger

	mu      sync.Mutex
	conns   map[*Conn]struct{}
	ctl     *controller.Controller
	gw      *gateway.Gateway
	cfg     string // the bootstrap and options the hub was built from
	bad     error  // the first Hello did not resolve
	last    *Status
	carrier gateway.Carrier // the last session's carrier (gateway.Options.OnCarrier)
	streams map[string]*stream
	online  bool
	closed  bool
	idle    *time.Timer // running while no tab is attached (with Options.OnIdle)
	renew   renewers    // the tabs that hand over tokens for renewals (access.go)
}

// New returns a hub with no tabs. It connects once a tab says Hello.
func New(opts *Options) *Hub {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = controller.DefaultLogger()
	}
	if o.IdleAfter <= 0 {
		o.IdleAfter = DefaultIdleAfter
	}
	return &Hub{opts: o, log: o.Logger, conns: map[*Conn]struct{}{}, streams: map[string]*stream{}, online: true}
}

// Attach adds a tab. Nothing is sent to it until its Hello.
func (h *Hub) Attach(c Tab) *Conn {
	conn := &Conn{h: h, c: c, subs: map[int]*member{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	h.mu.Lock()
	h.conns[conn] = struct{}{}
	if h.idle != nil {
		h.idle.Stop()
		h.idle = nil
	}
	h.mu.Unlock()
	go conn.serve()
	return conn
}

// Tabs is the number of tabs attached.
func (h *Hub) Tabs() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

// Close stops the connection, closes the gateway with cause and detaches every tab: nothing
// more is sent to them (the browser glue tells the pages itself that their hub is gone).
func (h *Hub) Close(cause error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	ctl, gw := h.ctl, h.gw
	conns := make([]*Conn, 0, len(h.conns))
	for c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	if ctl != nil {
		ctl.Stop()
	}
	if gw != nil {
		gw.Close(cause) // ends every stream: each tells its members
	}
	for _, c := range conns {
		c.Detach()
	}
}

// hello builds the connection from the first tab's bootstrap and options; later tabs
// join it. A hub serves one config: the browser glue names shared hubs by their config, so a
// tab with another bootstrap (a Host whose config changed since) gets a hub of its own.
func (h *Hub) hello(conn *Conn, in In) {
	h.mu.Lock()
	h.online = in.Online
	cfg := in.Bootstrap + "\x00" + in.Options
	switch {
	case h.closed:
	case h.ctl == nil && h.bad == nil:
		h.build(in)
		h.cfg = cfg
	case cfg != h.cfg:
		h.log.Warn("hub: a tab's bootstrap or options differ from the ones this hub serves; it joins with the hub's",
			"href", in.Href)
	}
	last, ctl := h.last, h.ctl
	h.mu.Unlock()
	if last != nil {
		conn.send(func(c Tab) { c.Status(*last) })
	}
	if ctl != nil {
		ctl.SetOnline(in.Online)
		ctl.Start() // does nothing when running
	}
}

// build makes the controller and the gateway. h.mu is held.
func (h *Hub) build(in In) {
	pc, err := page.Resolve([]byte(in.Bootstrap), []byte(in.Options), in.Href)
	if err != nil {
		h.misconfigured(err)
		return
	}
	start := in.Carrier
	switch start {
	case "", wire.CarrierStream, wire.CarrierPoll:
	default:
		h.log.Warn("hub: a tab remembers a carrier this hub does not know; starting on a WebSocket", "carrier", wire.Truncate(start))
		start = ""
	}
	gw, err := gateway.New(pc.URL, &gateway.Options{
		Logger: h.log, CallTimeout: pc.CallTimeout, Mode: h.opts.Mode, Carrier: start, OnCarrier: h.carried,
		FallbackAfter: h.opts.FallbackAfter, UpgradeAfter: cmp.Or(pc.UpgradeAfter, h.opts.UpgradeAfter),
		RenewToken: h.renewToken,
	})
	if err != nil {
		h.misconfigured(err)
		return
	}
	ctl, err := controller.New(gw, pc.Recovery, &controller.Options{
		Logger: h.log, Rand: h.opts.Rand, OnChange: h.publish,
	})
	if err != nil {
		gw.Close(err)
		h.misconfigured(err)
		return
	}
	h.gw, h.ctl = gw, ctl
}

// gateway returns the hub's gateway, nil while it has none (before Hello, misconfigured).
func (h *Hub) gateway() *gateway.Gateway {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gw
}

// whyNot says why the hub has no gateway.
func (h *Hub) whyNot() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.bad != nil {
		return h.bad
	}
	return gateway.ErrClosed
}

// misconfigured records why the hub cannot connect. h.mu is held.
func (h *Hub) misconfigured(err error) {
	h.log.Error("lifeline: connection settings are invalid", "err", err)
	h.bad = err
	h.last = &Status{Misconfigured: err}
	gateway.DropEarly() // the socket the loader opened must not hold a session at the Host
}

// publish sends a status to every tab that said Hello. It runs on the controller's
// delivery goroutine, in order.
func (h *Hub) publish(s controller.Status) {
	h.mu.Lock()
	st := Status{Status: s, Carrier: h.carrier}
	h.last = &st
	conns := h.ready()
	h.mu.Unlock()
	for _, c := range conns {
		c.send(func(cl Tab) { cl.Status(st) })
	}
}

// carried takes the gateway's word on what carries a ready session, and tells the tabs when
// it changed (the state stays connected across a move from the HTTP carrier to a WebSocket).
// It runs on the session's reading goroutine: it must not block, and does not (send queues).
func (h *Hub) carried(c gateway.Carrier) {
	h.mu.Lock()
	if c == h.carrier || h.last == nil || h.last.State != controller.Connected {
		// Told as a session becomes ready, before the controller says connected: that status
		// says it (publish), and none comes before it saying connecting on a carrier.
		h.carrier = c
		h.mu.Unlock()
		return
	}
	h.carrier = c
	st := *h.last
	st.Carrier = c
	h.last = &st
	conns := h.ready()
	h.mu.Unlock()
	for _, conn := range conns {
		conn.send(func(cl Tab) { cl.Status(st) })
	}
}

// ready lists the tabs that said Hello. h.mu is held.
func (h *Hub) ready() []*Conn {
	out := make([]*Conn, 0, len(h.conns))
	for c := range h.conns {
		if c.hello {
			out = append(out, c)
		}
	}
	return out
}

// command runs a tab's command on the shared connection.
func (h *Hub) command(cmd Command) error {
	h.mu.Lock()
	ctl := h.ctl
	h.mu.Unlock()
	if ctl == nil {
		return nil // misconfigured or closed: nothing runs
	}
	switch cmd {
	case CommandReconnect:
		ctl.ReconnectNow()
	case CommandStop:
		ctl.Stop()
	case CommandStart:
		ctl.Start()
	default:
		return tinyfmt.Errorf("hub: unknown command %q (known: %s, %s, %s)",
			wire.Truncate(string(cmd)), string(CommandReconnect), string(CommandStop), string(CommandStart))
	}
	return nil
}

func (h *Hub) setOnline(online bool) {
	h.mu.Lock()
	h.online = online
	ctl, gw := h.ctl, h.gw
	h.mu.Unlock()
	if ctl == nil {
		return
	}
	ctl.SetOnline(online)
	if online {
		gw.Probe() // the network came back, maybe another one: is the link still there?
	}
}

// life acts on what a page saw happen to it. Anything after which the world may have changed
// (it became visible, resumed, was shown again, changed network, or slept) probes the link,
// which the Host answers at once, instead of waiting for the watchdog; and a wait for the next
// attempt that the browser held back ends now (controller.Wake). In shared mode any tab's
// reason is the hub's. Hiding and freezing change nothing: a hidden page adds no dials.
func (h *Hub) life(event Event) {
	h.mu.Lock()
	ctl, gw := h.ctl, h.gw
	h.mu.Unlock()
	if ctl == nil {
		return
	}
	switch event {
	case EventVisible, EventPageShow, EventResume, EventLate:
		gw.SetHidden(false)
		ctl.Wake()
		gw.Probe()
	case EventNetwork:
		gw.Probe()
	case EventHidden, EventFreeze:
		gw.SetHidden(true) // for the report of an outage meanwhile (gateway.SetHidden)
	default:
		h.log.Warn("hub: a tab reported an unknown page event; ignored", "event", wire.Truncate(string(event)))
	}
}

func (h *Hub) detach(conn *Conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.conns, conn)
	if len(h.conns) == 0 && h.opts.OnIdle != nil && h.idle == nil && !h.closed {
		var t *time.Timer
		t = time.AfterFunc(h.opts.IdleAfter, func() {
			h.mu.Lock()
			fire := h.idle == t && len(h.conns) == 0 && !h.closed
			h.idle = nil
			h.mu.Unlock()
			if fire {
				h.opts.OnIdle()
			}
		})
		h.idle = t
	}
}

// stream is one subscription on the wire and the members that follow it.
type stream struct {
	h    *Hub
	name string
	sub  *gateway.Subscription

	mu       sync.Mutex
	members  map[*member]struct{}
	base     *gateway.Delivery  // the last baseline delivered
	since    []gateway.Delivery // the events after floor, in order
	floor    uint64             // since starts after it: base's seq, or the cursor the wire resumed from
	resumed  bool               // the wire follows from a tab's cursor and has had no reset since: no base
	at       gateway.Cursor     // the last delivery of the wire (zero before the first)
	overflow bool               // more than maxReplay events since floor: a late joiner needs a fresh start
	watching bool               // the wire subscription follows presence (once asked, for its life)
	pres     *gateway.Presence  // the last presence reported; nil before the first
}

// member is one tab subscription.
type member struct {
	conn    *Conn
	id      int
	stream  string
	s       *stream
	started bool // it has had its baseline or resumed at its cursor: events go to it
	// from is the cursor the tab asked to resume at (zero for none); at, once started, is
	// the last delivery it had: only the event next after at reaches it (see deliver).
	from, at gateway.Cursor
	// presence: a presence subscription, told who is on the stream and given no events;
	// told: it has had its first report.
	presence, told bool
}

// join adds m to the stream of name, subscribing it on the wire if it is the first.
func (h *Hub) join(m *member, name string) {
	h.mu.Lock()
	gw := h.gw
	if gw == nil {
		h.mu.Unlock()
		err := h.bad
		if err == nil {
			err = gateway.ErrClosed
		}
		m.conn.send(func(c Tab) { c.Ended(m.id, err) })
		return
	}
	defer h.mu.Unlock()
	st := h.streams[name]
	if st == nil {
		st = &stream{h: h, name: name, members: map[*member]struct{}{}}
		h.streams[name] = st
		var o gateway.SubscribeOptions
		if m.presence {
			st.watching = true
			o.Presence = st.presence
		} else if m.from.Epoch != "" {
			// The first to follow it here followed it in a hub that ended: the wire resumes at
			// its cursor, and the tabs behind it are given what they missed.
			o.From = m.from
			st.at, st.floor, st.resumed = m.from, m.from.Seq, true
		}
		st.sub = gw.SubscribeWith(name, st.deliver, o)
		go st.watch()
	}
	st.add(m) // under h.mu: a member never joins a stream its last member is leaving
}

// presence is the gateway's presence callback of the wire subscription: it runs one report at
// a time, each relative to the one before, which every presence member had (or was given
// whole when it joined).
func (st *stream) presence(p gateway.Presence) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.pres = &p
	for m := range st.members {
		if m.presence {
			first := !m.told
			m.told = true
			m.conn.send(func(c Tab) { c.Presence(m.id, p, first) })
		}
	}
}

func (st *stream) add(m *member) {
	st.mu.Lock()
	defer st.mu.Unlock()
	m.s = st
	st.members[m] = struct{}{}
	if m.presence {
		switch {
		case !st.watching:
			// The first presence member of a stream followed for its events only: the wire
			// subscription asks for presence from now on (subscribing again from its cursor).
			st.watching = true
			st.sub.WatchPresence(st.presence)
		case st.pres != nil:
			p := *st.pres
			p.Joined, p.Updated, p.Left = p.Members, nil, nil
			m.told = true
			m.conn.send(func(c Tab) { c.Presence(m.id, p, true) })
		}
		return // no events
	}
	held := (st.base != nil || st.resumed) && !st.overflow // since runs unbroken from floor
	switch {
	case m.from.Epoch != "" && m.from.Epoch == st.at.Epoch && held && m.from.Seq >= st.floor:
		// It resumes within what the hub holds: the events past its cursor, no baseline.
		i, _ := slices.BinarySearchFunc(st.since, m.from.Seq, func(d gateway.Delivery, seq uint64) int { return cmp.Compare(d.Seq, seq+1) })
		missed := st.since[i:]
		m.started, m.at = true, m.from
		if n := len(missed); n > 0 {
			m.at = gateway.Cursor{Epoch: missed[n-1].Epoch, Seq: missed[n-1].Seq}
		}
		m.conn.send(func(c Tab) {
			for _, d := range missed {
				c.Deliver(m.id, d)
			}
		})
	case st.base != nil && !st.overflow:
		// A placeable start: the last baseline and the events since.
		base, since := *st.base, st.since
		m.started, m.at = true, gateway.Cursor{Epoch: base.Epoch, Seq: base.Seq}
		if n := len(since); n > 0 {
			m.at.Seq = since[n-1].Seq
		}
		m.conn.send(func(c Tab) {
			c.Deliver(m.id, base)
			for _, d := range since {
				c.Deliver(m.id, d)
			}
		})
	case m.from.Epoch != "" && m.from.Epoch == st.at.Epoch:
		// Behind what the hub holds: the wire goes back to its cursor. The others are ahead
		// and are given each event only past where they are.
		st.sub.Rewind(m.from)
		st.base, st.since, st.overflow = nil, nil, false
		st.at, st.floor, st.resumed = m.from, m.from.Seq, true
		m.started, m.at = true, m.from
	case st.base == nil && !st.resumed:
		// The wire subscription has not delivered its first baseline yet: m gets it then.
	default:
		// Nothing here makes a start for it: the next delivery is a fresh baseline, for everyone.
		st.sub.Resync()
		st.resumed = false
	}
}

// leave removes m; the last member to leave ends the wire subscription.
func (st *stream) leave(m *member) {
	h := st.h
	h.mu.Lock()
	st.mu.Lock()
	delete(st.members, m)
	last := len(st.members) == 0
	if last && h.streams[st.name] == st {
		delete(h.streams, st.name)
	}
	st.mu.Unlock()
	h.mu.Unlock()
	if last {
		st.sub.Unsubscribe()
	}
}

// deliver is the gateway handler of the wire subscription: it runs one delivery at a time.
func (st *stream) deliver(d gateway.Delivery) {
	st.mu.Lock()
	defer st.mu.Unlock()
	at := gateway.Cursor{Epoch: d.Epoch, Seq: d.Seq}
	if d.Reset {
		st.at = at
		st.base, st.since, st.overflow = &d, nil, false
		st.floor, st.resumed = d.Seq, false
		for m := range st.members {
			if m.presence {
				continue
			}
			m.started, m.at = true, at
			m.conn.send(func(c Tab) { c.Deliver(m.id, d) })
		}
		return
	}
	// Each takes only the next event it lacks. After a rewind the wire repeats what some had,
	// and events it had queued before the rewind still come first, ahead of the replay: a
	// reader (or since) that took them as next would skip the replay between.
	next := func(c gateway.Cursor) bool { return c.Epoch == d.Epoch && d.Seq == c.Seq+1 }
	if next(st.at) {
		st.at = at
		if !st.overflow {
			if len(st.since) < maxReplay {
				st.since = append(st.since, d)
			} else {
				st.since, st.overflow = nil, true
			}
		}
	}
	for m := range st.members {
		if m.started && next(m.at) {
			m.at = at
			m.conn.send(func(c Tab) { c.Deliver(m.id, d) })
		}
	}
}

// watch tells every member when the wire subscription ends on its own (denied by the Host,
// the gateway closed); an end caused by the last member leaving tells nobody.
func (st *stream) watch() {
	<-st.sub.Done()
	err := st.sub.Err()
	h := st.h
	h.mu.Lock()
	if h.streams[st.name] == st {
		delete(h.streams, st.name)
	}
	h.mu.Unlock()
	st.mu.Lock()
	members := st.members
	st.members = map[*member]struct{}{}
	st.mu.Unlock()
	for m := range members {
		m.conn.forget(m)
		m.conn.send(func(c Tab) { c.Ended(m.id, err) })
	}
}

// Kind names the kind of an error for a page to explain to a person (gateway.Kind): "timeout",
// "refused", "busy", "protocol", "unauthorized", "restarting", "silent", "closed", "offline",
// "other"; "" for no error. The raw error stays for developers.
func Kind(err error) string { return gateway.Kind(err) }

// RetryAfter is the wait a Host asked for with err (a 1013 retry-after or a restart hint), or 0.
func RetryAfter(err error) time.Duration {
	if ra := (*controller.RetryAfterError)(nil); errors.As(err, &ra) {
		return ra.After
	}
	return 0
}
