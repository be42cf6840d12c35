//go:build !js

package hostplugin

import (
	"time"
)

// A PresenceFleet carries presence between the Hosts of a fleet (Presence.Fleet). It moves
// opaque messages; what they say, and what a Host makes of them, is the Host's:
//
//   - each Host broadcasts the changes of its own members' counts, numbered (a delta), and a
//     heartbeat every presenceHeartbeat naming its last number;
//   - every Host adds up what each Host says into every member's count; a Host that finds it
//     missed a number (a gap, or a Host it has not heard of) asks that Host for all its counts;
//   - a Host not heard from for presenceDead is taken for dead: its members' sessions count
//     from its last word on, so they leave a grace window after it (within a heartbeat of its
//     death), unless they came back elsewhere meanwhile;
//   - a Host that leaves says so (Host.Close): its members' sessions count no more from then.
//
// While a Host's own link is down it takes no other Host for dead: it cannot hear them, which
// says nothing about them. hostplugin/jetstream's NewPresence carries it on core NATS.
type PresenceFleet interface {
	// Join attaches the Host named self to the fleet: recv is given every message another
	// Host broadcast, and every one sent to self (not those self sent). recv may be called
	// from several goroutines; it does not block for long.
	Join(self string, recv func(msg []byte)) (PresenceLink, error)
}

// A PresenceLink is one Host's part in a [PresenceFleet].
type PresenceLink interface {
	// Broadcast sends msg to every other Host of the fleet.
	Broadcast(msg []byte) error
	// Send sends msg to the Host named host.
	Send(host string, msg []byte) error
	// Connected reports whether the link can reach the fleet now.
	Connected() bool
	// Leave detaches the Host; recv is called no more.
	Leave()
}

// Timing of the fleet.
const (
	// presenceHeartbeat is how often a Host says it lives.
	presenceHeartbeat = time.Second
	// presenceDead is how long a Host may be silent before the others take it for dead.
	presenceDead = 3 * presenceHeartbeat
	// presenceAskAgain is how long a Host waits for an answer to its query before it asks
	// again.
	presenceAskAgain = 2 * time.Second
	// fleetBatch is how long a Host gathers its members' changes into one delta.
	fleetBatch = 20 * time.Millisecond
	// maxBuffered bounds the deltas a Host keeps of another while it waits for its state.
	maxBuffered = 256
)

// fleet is a Host's part in a fleet's presence. Its fields are guarded by presence.mu.
type fleet struct {
	link    PresenceLink
	self    string
	started time.Time
	seq     uint64                // this Host's last delta
	outbox  map[*pmember]struct{} // members whose count here changed since the last delta
	outT    *time.Timer
	tick    *time.Timer
	peers   map[string]*peer
	reqs    uint64 // queries made
	down    bool   // the link was seen down: peers get a fresh window when it is back
	warmed  bool   // the fleet's members are known (see warm)
	stopped bool
}

// peer is another Host of the fleet, as this one knows it.
type peer struct {
	id       string
	seq      uint64 // its last delta applied
	heard    time.Time
	counts   map[*pmember]int
	syncing  bool // a query is out: its deltas wait in buffered
	req      uint64
	asked    time.Time
	part     uint64 // the next part of its state
	state    []fleetEntry
	buffered []fleetMsg
	overflow bool // buffered dropped some: ask again once the state is in
}

// fleetSend is one message to send: to "" is a broadcast.
type fleetSend struct {
	to  string
	msg []byte
}

// joinFleet attaches p to f.
func (p *presence) joinFleet(f PresenceFleet) error {
	fl := &fleet{self: p.h.id, started: time.Now(), outbox: map[*pmember]struct{}{}, peers: map[string]*peer{}}
	link, err := f.Join(fl.self, p.recv)
	if err != nil {
		return err
	}
	fl.link = link
	p.mu.Lock()
	p.fl = fl
	// A hello: every Host that hears it answers with a heartbeat, so this one learns of them
	// at once rather than within a heartbeat.
	fl.broadcast(p, &fleetMsg{kind: fleetHeartbeat, seq: 0, hello: true})
	fl.tick = time.AfterFunc(presenceHeartbeat, p.onTick)
	p.release()
	return nil
}

// warm reports whether this Host knows the fleet's members: a heartbeat has passed since it
// started (every live Host has said so) and every Host it asked answered, or the longest wait
// for that is over. Until then new watchers wait: a page that moved here must not be shown a
// fleet with members missing.
func (fl *fleet) warm(now time.Time) bool {
	if fl.warmed {
		return true
	}
	if now.Sub(fl.started) < presenceHeartbeat {
		return false
	}
	if now.Sub(fl.started) < presenceDead {
		for _, pr := range fl.peers {
			if pr.syncing {
				return false
			}
		}
	}
	fl.warmed = true
	return true
}

// checkWarm serves the watchers that waited for this Host to know the fleet.
func (fl *fleet) checkWarm(p *presence, now time.Time) {
	if fl.warmed || !fl.warm(now) {
		return
	}
	for _, st := range p.streams {
		if len(st.fresh) > 0 {
			p.markDirty(st)
		}
	}
}

func (fl *fleet) broadcast(p *presence, m *fleetMsg) {
	m.from = fl.self
	p.out = append(p.out, fleetSend{msg: m.encode()})
}

func (fl *fleet) sendTo(p *presence, to string, m *fleetMsg) {
	m.from = fl.self
	p.out = append(p.out, fleetSend{to: to, msg: m.encode()})
}

// send sends what release took, in order (presence.sendMu held).
func (fl *fleet) send(out []fleetSend) {
	for _, o := range out {
		var err error
		if o.to == "" {
			err = fl.link.Broadcast(o.msg)
		} else {
			err = fl.link.Send(o.to, o.msg)
		}
		_ = err // a lost message is a gap the others find (seq), or a query asked again
	}
}

// changed notes that this Host's count of m changed, for the next delta.
func (fl *fleet) changed(p *presence, m *pmember) {
	fl.outbox[m] = struct{}{}
	if fl.outT == nil && !fl.stopped {
		fl.outT = time.AfterFunc(fleetBatch, p.flushFleet)
	}
}

// flushFleet broadcasts the changes of this Host's counts.
func (p *presence) flushFleet() {
	p.mu.Lock()
	defer p.release()
	fl := p.fl
	fl.outT = nil
	if fl.stopped || len(fl.outbox) == 0 {
		return
	}
	entries := make([]fleetEntry, 0, len(fl.outbox))
	for m := range fl.outbox {
		e := fleetEntry{stream: m.st.name, id: m.id}
		if lc := p.local[m]; lc != nil {
			e.count, e.meta = lc.n, lc.meta
		}
		entries = append(entries, e)
	}
	clear(fl.outbox)
	for _, part := range chunk(entries) {
		fl.seq++
		fl.broadcast(p, &fleetMsg{kind: fleetDelta, seq: fl.seq, entries: part})
	}
}

// chunk splits entries into parts of at most fleetMsgBytes.
func chunk(entries []fleetEntry) [][]fleetEntry {
	var parts [][]fleetEntry
	start, size := 0, 0
	for i, e := range entries {
		if size+e.bytes() > fleetMsgBytes && i > start {
			parts = append(parts, entries[start:i])
			start, size = i, 0
		}
		size += e.bytes()
	}
	return append(parts, entries[start:])
}

// localState is every count this Host has, for a query.
func (p *presence) localState() []fleetEntry {
	entries := make([]fleetEntry, 0, len(p.local))
	for m, lc := range p.local {
		entries = append(entries, fleetEntry{stream: m.st.name, id: m.id, count: lc.n, meta: lc.meta})
	}
	return entries
}

// onTick is the heartbeat: say this Host lives, take the silent for dead, ask again what was
// not answered.
func (p *presence) onTick() {
	p.mu.Lock()
	defer p.release()
	fl := p.fl
	if fl.stopped {
		return
	}
	now := time.Now()
	up := fl.link.Connected()
	switch {
	case !up:
		fl.down = true
	case fl.down:
		// Back: what this Host heard of the others while it could not hear is no news of them.
		fl.down = false
		for _, pr := range fl.peers {
			pr.heard = now
		}
	}
	fl.broadcast(p, &fleetMsg{kind: fleetHeartbeat, seq: fl.seq})
	if up {
		for _, pr := range fl.peers {
			switch {
			case now.Sub(pr.heard) >= presenceDead:
				p.dropPeer(pr, pr.heard, now)
			case pr.syncing && now.Sub(pr.asked) >= presenceAskAgain:
				fl.ask(p, pr, now)
			}
		}
	}
	fl.checkWarm(p, now)
	fl.tick.Reset(presenceHeartbeat)
}

// dropPeer counts pr's sessions no more, from base on (its last word), and forgets it: if it
// is heard again, it is asked for everything.
func (p *presence) dropPeer(pr *peer, base, now time.Time) {
	for m, n := range pr.counts {
		m.total -= n
		p.retarget(m, base, now)
	}
	delete(p.fl.peers, pr.id)
}

// ask asks pr for all its counts; its deltas wait meanwhile.
func (fl *fleet) ask(p *presence, pr *peer, now time.Time) {
	fl.reqs++
	pr.syncing, pr.req, pr.asked, pr.part, pr.state = true, fl.reqs, now, 0, nil
	fl.sendTo(p, pr.id, &fleetMsg{kind: fleetQuery, req: pr.req})
}

// recv is the fleet's message from another Host.
func (p *presence) recv(b []byte) {
	m, err := decodeFleet(b)
	if err != nil {
		p.h.thin.presence.Do(func() { p.h.logger.Warn("hostplugin: a presence message from the fleet does not read", "err", err) })
		return
	}
	p.mu.Lock()
	defer p.release()
	fl := p.fl
	if fl == nil || fl.stopped || m.from == fl.self {
		return
	}
	now := time.Now()
	pr := fl.peers[m.from]
	switch m.kind {
	case fleetQuery:
		entries := p.localState()
		parts := chunk(entries)
		for i, part := range parts {
			fl.sendTo(p, m.from, &fleetMsg{kind: fleetState, req: m.req, seq: fl.seq, part: uint64(i), last: i == len(parts)-1, entries: part})
		}
		return
	case fleetBye:
		if pr != nil {
			p.dropPeer(pr, now, now)
		}
		return
	}
	if pr == nil {
		pr = &peer{id: m.from, counts: map[*pmember]int{}}
		fl.peers[m.from] = pr
	}
	pr.heard = now
	switch m.kind {
	case fleetHeartbeat:
		if m.hello {
			fl.sendTo(p, m.from, &fleetMsg{kind: fleetHeartbeat, seq: fl.seq})
		}
		if !pr.syncing && m.seq != pr.seq {
			fl.ask(p, pr, now) // it said more than this Host heard (or it is new here)
		}
	case fleetDelta:
		switch {
		case pr.syncing:
			pr.buffer(m)
		case m.seq <= pr.seq:
			// Had it already (in a state that covered it).
		case m.seq == pr.seq+1:
			p.applyDelta(pr, m, now)
		default:
			fl.ask(p, pr, now)
			pr.buffer(m)
		}
	case fleetState:
		if !pr.syncing || m.req != pr.req || m.part != pr.part {
			return // an answer to an older query, or a part lost: asked again on time
		}
		pr.state = append(pr.state, m.entries...)
		pr.part++
		if !m.last {
			return
		}
		p.applyState(pr, m.seq, now)
		fl.checkWarm(p, now)
	}
}

func (pr *peer) buffer(m fleetMsg) {
	if len(pr.buffered) >= maxBuffered {
		pr.buffered, pr.overflow = nil, true
		return
	}
	pr.buffered = append(pr.buffered, m)
}

// applyDelta counts what pr's delta says.
func (p *presence) applyDelta(pr *peer, m fleetMsg, now time.Time) {
	for _, e := range m.entries {
		p.setPeerCount(pr, e, now)
	}
	pr.seq = m.seq
}

// setPeerCount makes pr's count of e's member e.count.
func (p *presence) setPeerCount(pr *peer, e fleetEntry, now time.Time) {
	st := p.streams[e.stream]
	if st == nil && e.count == 0 {
		return
	}
	if st == nil {
		st = p.stream(e.stream)
	}
	mm := st.members[e.id]
	if mm == nil && e.count == 0 {
		return
	}
	m := st.member(e.id)
	old := pr.counts[m]
	if e.count == 0 {
		delete(pr.counts, m)
	} else {
		pr.counts[m] = e.count
		if e.meta != nil {
			m.meta = e.meta
		}
	}
	m.total += e.count - old
	p.retarget(m, now, now)
}

// applyState makes pr's counts what its state says (as of its seq), then applies the deltas
// that came after it.
func (p *presence) applyState(pr *peer, seq uint64, now time.Time) {
	next := make(map[*pmember]bool, len(pr.state))
	for _, e := range pr.state {
		if e.count == 0 {
			continue
		}
		p.setPeerCount(pr, e, now)
		next[p.streams[e.stream].members[e.id]] = true
	}
	for m := range pr.counts {
		if !next[m] {
			p.setPeerCount(pr, fleetEntry{stream: m.st.name, id: m.id}, now)
		}
	}
	pr.seq, pr.syncing, pr.state, pr.part = seq, false, nil, 0
	buffered, overflow := pr.buffered, pr.overflow
	pr.buffered, pr.overflow = nil, false
	for _, m := range buffered {
		switch {
		case m.seq <= pr.seq:
		case m.seq == pr.seq+1:
			p.applyDelta(pr, m, now)
		default:
			overflow = true
		}
	}
	if overflow {
		p.fl.ask(p, pr, now)
	}
}

// stop ends the fleet's timers and says goodbye (presence.mu held; the link is left once it
// is sent).
func (fl *fleet) stop(p *presence) {
	fl.stopped = true
	for _, t := range []*time.Timer{fl.tick, fl.outT} {
		if t != nil {
			t.Stop()
		}
	}
	fl.broadcast(p, &fleetMsg{kind: fleetBye, seq: fl.seq})
}
