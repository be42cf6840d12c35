package gateway

import (
	"slices"
	"time"

	"github.com/lifeline-go/lifeline/internal/serial"
	"github.com/lifeline-go/lifeline/internal/tinyfmt"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// Presence, the page's side (PROTOCOL.md §12): a subscription that asks for it keeps the
// stream's members as the Host lists them, applies the Host's batches of changes in order,
// and after a reconnect asks from its cursor, so that a Host that still holds the batches
// since sends only those (no fresh snapshot, and no one seen to leave and join again).

// A Member is one member of a stream: an identity (what the Host's Authenticate returned),
// how many of its sessions follow the stream across the fleet, and the application's
// metadata for it (nil: none).
type Member struct {
	ID    string
	Count int
	Meta  wire.RawJSON
}

// Presence is what a subscription's presence callback is told: the members now, and what
// changed since the callback was last called.
type Presence struct {
	Stream string
	// Members are the members listed now, ordered by ID: at most Limit of them when the
	// Host caps its lists.
	Members []Member
	// Total counts every member of the stream, listed or not (Beyond is the difference).
	Total int
	// Limit is the Host's cap on the members it lists, when the stream is over it; 0 when
	// every member is listed.
	Limit int
	// Joined are the members listed now that were not at the last call; Updated those whose
	// count or metadata changed; Left the identities listed then and not now.
	Joined, Updated []Member
	Left            []string
	// Reason, when not "", is why the stream shows no presence (the Host's words when it
	// refused it, or that the Host carries none); Members is then empty.
	Reason string
}

// Beyond is how many members the Host counts and does not list (past its cap).
func (p Presence) Beyond() int { return max(0, p.Total-len(p.Members)) }

// SubscribeOptions are the options of [Gateway.SubscribeWith].
type SubscribeOptions struct {
	// Presence, when set, asks the Host for the stream's members: it is called with them
	// once they are known, and again after each batch of changes, on a goroutine of its own,
	// never two calls at once (a call that takes long sees the changes meanwhile at once in
	// its next). A panic is recovered and logged.
	Presence func(Presence)
	// From, when its Epoch is set, starts the subscription at a cursor that another follower
	// of the stream reached: the Host delivers the events of that log after From.Seq, or a
	// reset where it can no longer (PROTOCOL.md §4.3). The shared hub that replaces one that
	// ended resumes its tabs' streams so, rather than from fresh baselines.
	From Cursor
}

// Cursor is a point in a stream: the log's epoch and the last seq delivered from it.
type Cursor struct {
	Epoch string
	Seq   uint64
}

// noPresence is Presence.Reason for a Host whose ready frame does not say it carries presence.
const noPresence = "the host carries no presence"

// presence is a subscription's presence. Guarded by g.mu, except shown (its reporter's).
type presence struct {
	fn func(Presence)

	epoch string // cursor: the log of the batches applied ("" before the first)
	seq   uint64 // cursor: the last batch applied

	members map[string]Member
	held    map[string]time.Time // members a snapshot did not list, kept until then (its hold)
	hold    *time.Timer          // fires at the first of held
	total   int                  // the Host's total, without held
	limit   int
	reason  string
	known   bool // a snapshot or a reason came: there is something to report

	dirty   bool        // changed since the reporter last looked
	running serial.Loop // tells fn what changed (reportRound), on a goroutine only while anything has

	// What fn was last told (its reporter's): a report that would tell nothing new is not made.
	shown                  map[string]Member
	shownTotal, shownLimit int
	shownReason            string
}

// presBatch is a batch of presence frames as it arrives on a session: "more" on all but the
// last frame.
type presBatch struct {
	first   wire.HostFrame
	members []wire.PresenceMember
	left    []string
}

// SubscribeWith is [Gateway.Subscribe] with options: with o.Presence, the subscription
// also follows who is on the stream.
func (g *Gateway) SubscribeWith(stream string, handler func(Delivery), o SubscribeOptions) *Subscription {
	s := g.subscribe(stream, handler, o.From)
	if o.Presence != nil {
		s.WatchPresence(o.Presence)
	}
	return s
}

// WatchPresence starts following who is on the subscription's stream (see
// SubscribeOptions.Presence), or changes the callback that is told. Called on a subscription
// that is on the wire without presence, it subscribes it again asking for it (from its
// cursor: no event is lost or repeated). It does nothing on a subscription that has ended.
func (s *Subscription) WatchPresence(fn func(Presence)) {
	if fn == nil {
		return
	}
	g := s.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.err != nil {
		return
	}
	if s.pres != nil {
		s.pres.fn = fn
		return
	}
	p := &presence{fn: fn, members: map[string]Member{}}
	p.running.Init(&g.mu, func() bool { return g.reportRound(s, p) })
	s.pres = p
	s.token++ // every session subscribes again, asking for presence
	g.kickAll()
}

// presenceAsk fills in a sub frame's ask for presence, from the cursor. g.mu is held.
func (s *Subscription) presenceAsk(f *wire.PageFrame) {
	p := s.pres
	f.Presence = true
	if p.epoch != "" {
		f.PresenceEpoch, f.PresenceAfter = p.epoch, p.seq
	}
}

// noPresenceHere tells a subscription's callback that the session's Host carries no
// presence. g.mu is held.
func (g *Gateway) noPresenceHere(s *Subscription) {
	p := s.pres
	if p.known && p.reason == noPresence {
		return
	}
	g.presenceRefused(s, noPresence)
}

// presenceRefused empties s's presence with reason. g.mu is held.
func (g *Gateway) presenceRefused(s *Subscription, reason string) {
	p := s.pres
	p.epoch, p.seq = "", 0
	clear(p.members)
	p.unhold()
	p.total, p.limit, p.reason, p.known = 0, 0, reason, true
	g.reportPresence(s)
}

// unhold forgets the members held. g.mu is held.
func (p *presence) unhold() {
	clear(p.held)
	if p.hold != nil {
		p.hold.Stop()
		p.hold = nil
	}
}

// onPresence applies a presence frame received on s. Frames of a session that ended, of a
// stream not (or no longer) subscribed on it, or whose access ended (a denial removed it) are
// dropped, as events are.
func (g *Gateway) onPresence(s *session, f wire.HostFrame) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.ctx.Err() != nil {
		return
	}
	sub, w := g.subs[f.Stream], s.wire[f.Stream]
	if sub == nil || w.sub != sub || w.token != sub.token || !w.presence || sub.pres == nil {
		return
	}
	if f.Reason != "" {
		w.batch = nil
		s.wire[f.Stream] = w
		g.presenceRefused(sub, f.Reason)
		return
	}
	b := w.batch
	if b != nil && (b.first.Epoch != f.Epoch || b.first.Seq != f.Seq || b.first.From != f.From || b.first.Snapshot != f.Snapshot) {
		// A batch that changes course halfway: the Host broke it. Its state is unknown to
		// the page: ask afresh, from no cursor.
		g.log.Warn("gateway: a presence batch changed halfway; asking for a fresh snapshot", "stream", f.Stream)
		w.batch = nil
		s.wire[f.Stream] = w
		g.presenceAfresh(sub)
		return
	}
	if b == nil {
		b = &presBatch{first: f}
	}
	b.members = append(b.members, f.Members...)
	b.left = append(b.left, f.Left...)
	if f.More {
		w.batch = b
		s.wire[f.Stream] = w
		return
	}
	w.batch = nil
	s.wire[f.Stream] = w
	f.Members, f.Left = b.members, b.left
	g.applyPresence(sub, f)
}

// presenceAfresh forgets s's presence cursor and has every session subscribe it again: the
// next batch is a snapshot. What the page shows stays until then. g.mu is held.
func (g *Gateway) presenceAfresh(s *Subscription) {
	s.pres.epoch, s.pres.seq = "", 0
	s.token++
	g.kickAll()
}

// applyPresence applies one whole batch f. g.mu is held.
func (g *Gateway) applyPresence(s *Subscription, f wire.HostFrame) {
	p := s.pres
	if f.Snapshot {
		listed := make(map[string]struct{}, len(f.Members))
		for _, m := range f.Members {
			listed[m.ID] = struct{}{}
		}
		var until time.Time
		if f.HoldMs > 0 {
			until = time.Now().Add(time.Duration(f.HoldMs) * time.Millisecond)
		}
		for id := range p.members {
			if _, ok := listed[id]; ok {
				continue
			}
			if until.IsZero() {
				delete(p.members, id)
				delete(p.held, id)
				continue
			}
			// A Host that started less than a grace window ago cannot know who is still on
			// the way to it: a member it does not list stays, for the rest of the window.
			if p.held == nil {
				p.held = map[string]time.Time{}
			}
			if t, ok := p.held[id]; !ok || t.Before(until) {
				p.held[id] = until
			}
		}
	} else {
		switch {
		case p.epoch == "":
			return // a snapshot is awaited (frames of an older sub still in flight)
		case f.Epoch == p.epoch && f.Seq <= p.seq:
			return // a batch applied already (a replay across a reconnect)
		case f.Epoch != p.epoch || f.From != p.seq:
			// A gap: batches the page missed. Only a snapshot can say what they were.
			g.log.Warn("gateway: presence jumped past the page's cursor; asking for a fresh snapshot", "stream", s.stream)
			g.presenceAfresh(s)
			return
		}
		for _, id := range f.Left {
			delete(p.members, id)
			delete(p.held, id)
		}
	}
	for _, m := range f.Members {
		p.members[m.ID] = Member{ID: m.ID, Count: m.Count, Meta: m.Meta}
		delete(p.held, m.ID)
	}
	p.epoch, p.seq = f.Epoch, f.Seq
	p.total, p.limit, p.reason, p.known = f.Total, f.Limit, "", true
	g.armHold(s)
	g.reportPresence(s)
}

// armHold sets s's timer for the first member held to end. g.mu is held.
func (g *Gateway) armHold(s *Subscription) {
	p := s.pres
	if p.hold != nil {
		p.hold.Stop()
		p.hold = nil
	}
	if len(p.held) == 0 {
		return
	}
	var first time.Time
	for _, t := range p.held {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	var t *time.Timer
	t = time.AfterFunc(time.Until(first), func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if s.err != nil || s.pres != p || p.hold != t {
			return
		}
		now := time.Now()
		for id, until := range p.held {
			if !until.After(now) {
				delete(p.held, id)
				delete(p.members, id)
			}
		}
		g.armHold(s)
		g.reportPresence(s)
	})
	p.hold = t
}

// reportPresence has s's callback told of the state now, on its reporter goroutine. g.mu is
// held.
func (g *Gateway) reportPresence(s *Subscription) {
	p := s.pres
	p.dirty = true
	p.running.Start()
}

// reportRound tells p's callback what changed, on p's reporter goroutine (a serial.Loop),
// which exits once nothing has: calls that take long fold the changes meanwhile into their
// next (presence is a state, not a log). g.mu is held, and released while the callback runs.
func (g *Gateway) reportRound(s *Subscription, p *presence) bool {
	if !p.dirty || s.err != nil {
		return false
	}
	p.dirty = false
	// Ordered by ID through a sort of strings, which the program has anyway: a sort of
	// Members would add its own copy of the sorting code to the wasm.
	ids := make([]string, 0, len(p.members))
	for id := range p.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	now := Presence{Stream: s.stream, Members: make([]Member, len(ids)), Total: p.total + len(p.held), Limit: p.limit, Reason: p.reason}
	for i, id := range ids {
		now.Members[i] = p.members[id]
	}
	fn := p.fn
	g.mu.Unlock()
	first := p.shown == nil
	if first {
		p.shown = map[string]Member{}
	}
	for _, m := range now.Members {
		was, ok := p.shown[m.ID]
		switch {
		case !ok:
			now.Joined = append(now.Joined, m)
		case was.Count != m.Count || string(was.Meta) != string(m.Meta):
			now.Updated = append(now.Updated, m)
		}
	}
	if len(p.shown) > len(now.Members)-len(now.Joined) {
		cur := make(map[string]struct{}, len(ids))
		for _, id := range ids {
			cur[id] = struct{}{}
		}
		for id := range p.shown {
			if _, found := cur[id]; !found {
				now.Left = append(now.Left, id)
			}
		}
		slices.Sort(now.Left)
	}
	if !first && len(now.Joined)+len(now.Updated)+len(now.Left) == 0 &&
		now.Total == p.shownTotal && now.Limit == p.shownLimit && now.Reason == p.shownReason {
		g.mu.Lock()
		return true // a reconnect's snapshot that says what the page knew: nothing to tell
	}
	clear(p.shown)
	for _, m := range now.Members {
		p.shown[m.ID] = m
	}
	p.shownTotal, p.shownLimit, p.shownReason = now.Total, now.Limit, now.Reason
	g.callPresence(s, fn, now)
	g.mu.Lock()
	return true
}

// callPresence runs the presence callback once, containing a panic.
func (g *Gateway) callPresence(s *Subscription, fn func(Presence), p Presence) {
	defer func() {
		if v := recover(); v != nil {
			g.log.Error("gateway: presence callback panicked; presence continues",
				"stream", s.stream, "panic", tinyfmt.Sprint(v), "stack", stack())
		}
	}()
	fn(p)
}
