//go:build !js

package hostplugin

import (
	"bytes"
	"cmp"
	"container/heap"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// presence is a Host's presence: every member of every stream that carries presence, across
// the fleet, and what its pages are shown of them.
//
// A member's true count is the sum of its sessions on every Host (this one's in local, the
// others' in the fleet's peers). What pages are shown follows it by these rules:
//   - a member that pages do not show appears at once (at the next flush);
//   - a lower count, a member leaving included, is shown only once it has held for the grace
//     window (config presenceGraceMs): a session that comes back in time changes nothing;
//   - a higher count, or new metadata, of a member pages show is shown once it has held for
//     presenceSettle: a move that is make-before-break (a GOAWAY, a carrier change) briefly
//     counts the session twice, which nobody should see.
//
// What pages are shown changes only on the flush, at most every presenceFlush: the members
// that changed since the last make one batch, numbered by the stream's seq, sent once to every
// page watching the stream and kept (a bounded history) for a page that comes back with its
// cursor. Everything is guarded by mu; the application's hooks are never called under it.
type presence struct {
	h         *Host
	opts      Presence
	epochBase string    // this Host's life: with a counter, each stream's epoch
	started   time.Time // for the hold of a lone Host's snapshots

	mu      sync.Mutex
	streams map[string]*pstream
	local   map[*pmember]*plocal // this Host's sessions, by member
	gen     uint64               // streams made so far
	dues    dueHeap              // members whose shown state waits for its time
	dueAt   time.Time            // when dueTimer fires
	dueT    *time.Timer
	dirty   []*pstream  // streams with something to flush
	flushT  *time.Timer // set while a flush is due
	closed  bool
	fl      *fleet      // nil: one Host
	out     []fleetSend // messages to the fleet, sent once mu is released (release)
	sendMu  sync.Mutex  // keeps the fleet's messages in the order they were made
}

// Timing of presence.
const (
	// presenceFlush is the longest a change waits to be sent: the changes of a stream within
	// it go out as one batch (a burst of a thousand joins is a few frames per page). Each
	// batch is one send to every page watching, so the window trades CPU for latency: with
	// 2,000 pages watching a stream and 100 joins a second (make bench), 50 ms made a join
	// reach the last page in 113–218 ms (p99) for 76–85% of a core, 20 ms in 87–129 ms for
	// 100–107%, and 10 ms in 104–143 ms for 118–127%; centrifuge, sending each join at once,
	// took 127–294 ms for 152%.
	presenceFlush = 20 * time.Millisecond
	// presenceSettle is how long a higher count (or new metadata) of a member pages show must
	// hold before it is shown: longer than a make-before-break move takes.
	presenceSettle = time.Second
	// presenceHistory and presenceHistoryMembers bound the batches a stream keeps for a page
	// that comes back with its cursor; past them it gets a snapshot.
	presenceHistory        = 64
	presenceHistoryMembers = 4096
)

// pstream is one stream's members.
type pstream struct {
	name     string
	epoch    string // this Host's history of the stream: a page's cursor from another is no good here
	seq      uint64 // batches so far
	members  map[string]*pmember
	shown    int        // members pages show (the total each frame says)
	listed   int        // of those, the ones they are listed (at most MaxMembers)
	unlisted []*pmember // shown members waiting for a place in the list, oldest first (lazy)
	changed  []*pmember // members whose state pages may not hold since the last flush
	sent     int        // the total the last batch said
	hist     []pbatch   // the last batches, oldest first
	histN    int        // members and ids in hist
	watchers map[*session]*pwatcher
	fresh    []*pwatcher // watchers waiting for their first frames
	dirty    bool        // in presence.dirty
	capped   bool        // the Host has logged that it is over MaxMembers
}

// pmember is one identity on one stream.
type pmember struct {
	st    *pstream
	id    string
	total int          // its sessions, fleet-wide
	meta  wire.RawJSON // the newest metadata any Host gave

	shown     int          // the count pages are shown (0: not shown)
	shownMeta wire.RawJSON //
	due       time.Time    // when shown catches up with total (in dues)
	hidx      int          // its place in dues; -1 when not there
	listed    bool         // shown and in the list (not past MaxMembers)

	sent      bool         // pages hold it, as of the last batch
	sentCount int          //
	sentMeta  wire.RawJSON //
	changed   bool         // in st.changed
}

// plocal is this Host's share of a member: its sessions here, and their newest metadata.
type plocal struct {
	n    int
	meta wire.RawJSON
}

// pbatch is one flushed batch: what changed from seq from to seq to.
type pbatch struct {
	from, to uint64
	members  []wire.PresenceMember
	left     []string
}

// pwatcher is one session that asked for a stream's presence.
type pwatcher struct {
	s    *session
	cur  Cursor // what its page holds: where its first frames start from
	live bool   // it has had them: batches are for it
}

func newPresence(h *Host, opts Presence) *presence {
	return &presence{h: h, opts: opts, epochBase: newID(6), started: time.Now(),
		streams: map[string]*pstream{}, local: map[*pmember]*plocal{}}
}

// release unlocks p.mu and sends the fleet what was made meanwhile, in order.
func (p *presence) release() {
	out := p.out
	p.out = nil
	if len(out) == 0 {
		p.mu.Unlock()
		return
	}
	p.sendMu.Lock()
	p.mu.Unlock()
	defer p.sendMu.Unlock()
	p.fl.send(out)
}

// stream returns the stream of name, made if it has none yet.
func (p *presence) stream(name string) *pstream {
	st := p.streams[name]
	if st == nil {
		p.gen++
		st = &pstream{name: name, epoch: p.epochBase + "." + strconv.FormatUint(p.gen, 36),
			members: map[string]*pmember{}, watchers: map[*session]*pwatcher{}}
		p.streams[name] = st
	}
	return st
}

// member returns the member id of st, made if it has none yet.
func (st *pstream) member(id string) *pmember {
	m := st.members[id]
	if m == nil {
		m = &pmember{st: st, id: id, hidx: -1}
		st.members[id] = m
	}
	return m
}

// subscribe makes s a member of stream (join), and a watcher from cur (nil: none; a
// watcher it was stops).
func (p *presence) subscribe(s *session, stream string, join bool, meta wire.RawJSON, cur *Cursor, wasWatcher bool) {
	p.mu.Lock()
	defer p.release()
	if p.closed {
		return
	}
	st := p.stream(stream)
	if join {
		p.addLocal(st, s.identity, 1, meta, time.Now())
	}
	switch {
	case cur != nil:
		w := &pwatcher{s: s, cur: *cur}
		st.watchers[s] = w
		st.fresh = append(st.fresh, w)
		p.markDirty(st)
	case wasWatcher:
		delete(st.watchers, s)
		p.markDirty(st) // the stream may be over now
	}
}

// unsubscribe ends s's membership of stream (member) and its watch (watcher).
func (p *presence) unsubscribe(s *session, stream string, member, watcher bool) {
	p.mu.Lock()
	defer p.release()
	st := p.streams[stream]
	if p.closed || st == nil {
		return
	}
	if member {
		p.addLocal(st, s.identity, -1, nil, time.Now())
	}
	if watcher {
		delete(st.watchers, s)
		p.markDirty(st)
	}
}

// addLocal counts one session more (delta 1) or less (-1) of identity id on st on this Host.
func (p *presence) addLocal(st *pstream, id string, delta int, meta wire.RawJSON, now time.Time) {
	m := st.member(id)
	lc := p.local[m]
	if lc == nil {
		if delta < 0 {
			return // never counted: nothing to take back
		}
		lc = &plocal{}
		p.local[m] = lc
	}
	lc.n += delta
	if delta > 0 {
		lc.meta, m.meta = meta, meta
	}
	m.total += delta
	if lc.n == 0 {
		delete(p.local, m)
	}
	p.retarget(m, now, now)
	if p.fl != nil {
		p.fl.changed(p, m)
	}
}

// retarget is the one rule of what pages are shown (see presence): it runs whenever a member's
// count or metadata changes, with base the time the change counts from (now; the last word of
// a Host found dead, for its members).
func (p *presence) retarget(m *pmember, base, now time.Time) {
	switch {
	case m.total == m.shown && bytes.Equal(m.meta, m.shownMeta):
		p.unschedule(m) // it came back in time: nothing to show
	case m.shown == 0:
		p.unschedule(m)
		p.show(m)
	case m.total < m.shown:
		p.schedule(m, base.Add(p.h.Config().presenceGrace), now)
	default:
		p.schedule(m, base.Add(presenceSettle), now)
	}
}

// show makes what pages are shown of m what it is, for the next flush to send.
func (p *presence) show(m *pmember) {
	st := m.st
	was := m.shown > 0
	m.shown, m.shownMeta = m.total, m.meta
	switch {
	case !was && m.shown > 0:
		st.shown++
		if st.listed < p.opts.MaxMembers {
			m.listed = true
			st.listed++
		} else {
			st.unlisted = append(st.unlisted, m)
		}
	case was && m.shown == 0:
		st.shown--
		if m.listed {
			m.listed = false
			st.listed--
			p.promote(st)
		}
	}
	p.changedMember(m)
}

// promote lists the oldest shown members waiting, while the list has room.
func (p *presence) promote(st *pstream) {
	for st.listed < p.opts.MaxMembers && len(st.unlisted) > 0 {
		m := st.unlisted[0]
		st.unlisted[0] = nil
		st.unlisted = st.unlisted[1:]
		if m.shown == 0 || m.listed || st.members[m.id] != m {
			continue // gone meanwhile
		}
		m.listed = true
		st.listed++
		p.changedMember(m)
	}
	if len(st.unlisted) == 0 {
		st.unlisted = nil // let the array go
	}
}

func (p *presence) changedMember(m *pmember) {
	if !m.changed {
		m.changed = true
		m.st.changed = append(m.st.changed, m)
	}
	p.markDirty(m.st)
}

// markDirty queues st for the next flush, and arms the flush.
func (p *presence) markDirty(st *pstream) {
	if st.dirty {
		return
	}
	st.dirty = true
	p.dirty = append(p.dirty, st)
	if p.flushT == nil && !p.closed {
		p.flushT = time.AfterFunc(presenceFlush, p.flush)
	}
}

// schedule makes m's shown state catch up with its true state at due.
func (p *presence) schedule(m *pmember, due, now time.Time) {
	m.due = due
	if m.hidx < 0 {
		heap.Push(&p.dues, m)
	} else {
		heap.Fix(&p.dues, m.hidx)
	}
	p.armDue(now)
}

func (p *presence) unschedule(m *pmember) {
	if m.hidx >= 0 {
		heap.Remove(&p.dues, m.hidx)
	}
}

// armDue sets the one timer of dues to the earliest.
func (p *presence) armDue(now time.Time) {
	if len(p.dues) == 0 || p.closed {
		return // a timer left armed finds nothing due
	}
	next := p.dues[0].due
	switch {
	case p.dueT == nil:
		p.dueT = time.AfterFunc(next.Sub(now), p.onDue)
	case !next.Equal(p.dueAt):
		p.dueT.Reset(next.Sub(now))
	default:
		return
	}
	p.dueAt = next
}

// onDue shows every member whose time has come.
func (p *presence) onDue() {
	p.mu.Lock()
	defer p.release()
	now := time.Now()
	for len(p.dues) > 0 && !p.dues[0].due.After(now) {
		m := heap.Pop(&p.dues).(*pmember)
		p.show(m)
	}
	p.dueAt = time.Time{}
	p.armDue(now)
}

// flush sends every stream's changes and serves its new watchers.
func (p *presence) flush() {
	p.mu.Lock()
	defer p.release()
	p.flushT = nil
	if p.closed {
		return
	}
	now := time.Now()
	warm := p.fl == nil || p.fl.warm(now)
	dirty := p.dirty
	p.dirty = nil
	for _, st := range dirty {
		st.dirty = false
		p.flushStream(st, now, warm)
	}
}

// flushStream makes st's changes one batch, sends it to the watchers that are live, and sends
// the new ones what they miss (once this Host knows the fleet's members: warm).
func (p *presence) flushStream(st *pstream, now time.Time, warm bool) {
	var ups []wire.PresenceMember
	var left []string
	for _, m := range st.changed {
		m.changed = false
		in := m.shown > 0 && m.listed
		switch {
		case in && (!m.sent || m.sentCount != m.shown || !bytes.Equal(m.sentMeta, m.shownMeta)):
			m.sent, m.sentCount, m.sentMeta = true, m.shown, m.shownMeta
			ups = append(ups, wire.PresenceMember{ID: m.id, Count: m.shown, Meta: m.shownMeta})
		case !in && m.sent:
			m.sent, m.sentCount, m.sentMeta = false, 0, nil
			left = append(left, m.id)
		}
		if m.total == 0 && m.shown == 0 && m.hidx < 0 && st.members[m.id] == m {
			delete(st.members, m.id)
		}
	}
	clear(st.changed)
	st.changed = st.changed[:0]
	if len(ups) > 0 || len(left) > 0 || st.shown != st.sent {
		b := pbatch{from: st.seq, to: st.seq + 1, members: ups, left: left}
		st.seq++
		st.sent = st.shown
		st.remember(b)
		p.noteCap(st)
		var frames []message
		for _, w := range st.watchers {
			if !w.live {
				continue
			}
			if frames == nil {
				frames = p.frames(st, false, b.from, ups, left, 0)
			}
			for _, f := range frames {
				w.s.send(f)
			}
		}
	}
	if len(st.fresh) > 0 {
		if !warm {
			return // served once the fleet's members are known (fleet.warm marks it again)
		}
		var snap []message
		for _, w := range st.fresh {
			if st.watchers[w.s] != w {
				continue // left, or asked again, meanwhile
			}
			w.live = true
			var frames []message
			switch {
			case w.cur.Epoch == st.epoch && w.cur.Seq == st.seq:
				// Its page holds all there is.
			case w.cur.Epoch == st.epoch && st.reaches(w.cur.Seq):
				frames = p.catchUp(st, w.cur.Seq)
			default:
				if snap == nil {
					snap = p.snapshot(st, now)
				}
				frames = snap
			}
			for _, f := range frames {
				w.s.send(f)
			}
		}
		clear(st.fresh)
		st.fresh = st.fresh[:0]
	}
	if len(st.members) == 0 && len(st.watchers) == 0 && p.streams[st.name] == st {
		delete(p.streams, st.name)
	}
}

// remember keeps b in st's history, within its bounds.
func (st *pstream) remember(b pbatch) {
	st.hist = append(st.hist, b)
	st.histN += len(b.members) + len(b.left)
	for len(st.hist) > presenceHistory || st.histN > presenceHistoryMembers && len(st.hist) > 1 {
		st.histN -= len(st.hist[0].members) + len(st.hist[0].left)
		st.hist[0] = pbatch{}
		st.hist = st.hist[1:]
	}
}

// reaches reports whether st's history holds every batch after seq.
func (st *pstream) reaches(seq uint64) bool {
	return seq < st.seq && len(st.hist) > 0 && st.hist[0].from <= seq
}

// catchUp is one diff from seq to st.seq: the last state of each member that changed since.
func (p *presence) catchUp(st *pstream, seq uint64) []message {
	net := map[string]*wire.PresenceMember{}
	var order []string
	for i := range st.hist {
		b := &st.hist[i]
		if b.to <= seq {
			continue
		}
		for j := range b.members {
			if _, ok := net[b.members[j].ID]; !ok {
				order = append(order, b.members[j].ID)
			}
			net[b.members[j].ID] = &b.members[j]
		}
		for _, id := range b.left {
			if _, ok := net[id]; !ok {
				order = append(order, id)
			}
			net[id] = nil
		}
	}
	var ups []wire.PresenceMember
	var left []string
	for _, id := range order {
		if m := net[id]; m != nil {
			ups = append(ups, *m)
		} else {
			left = append(left, id)
		}
	}
	return p.frames(st, false, seq, ups, left, 0)
}

// snapshot is every member pages hold of st, as of st.seq. A lone Host that started less than
// a grace window ago cannot know who is still on the way to it (a restart with a handoff: the
// pages come over one by one), so its snapshot asks the page to hold the members it shows
// that the snapshot does not list, for the rest of the window.
func (p *presence) snapshot(st *pstream, now time.Time) []message {
	ups := make([]wire.PresenceMember, 0, st.listed)
	for _, m := range st.members {
		if m.sent {
			ups = append(ups, wire.PresenceMember{ID: m.id, Count: m.sentCount, Meta: m.sentMeta})
		}
	}
	slices.SortFunc(ups, func(a, b wire.PresenceMember) int { return cmp.Compare(a.ID, b.ID) })
	var hold time.Duration
	if p.fl == nil {
		hold = p.h.Config().presenceGrace - now.Sub(p.started)
	}
	return p.frames(st, true, 0, ups, left0, max(hold, 0))
}

// left0 is a snapshot's left: none.
var left0 []string

// frames makes one batch's frames, each under wire.MaxPresenceFrame.
func (p *presence) frames(st *pstream, snapshot bool, from uint64, ups []wire.PresenceMember, left []string, hold time.Duration) []message {
	base := wire.HostFrame{T: wire.TypePresence, Stream: st.name, Epoch: st.epoch, Seq: st.seq, From: from,
		Snapshot: snapshot, Total: st.sent, HoldMs: hold.Milliseconds()}
	if st.sent > p.opts.MaxMembers {
		base.Limit = p.opts.MaxMembers
	}
	// In order of id, each frame's members and left alike: a page then checks a frame for an id
	// named twice in one pass (wire's namedTwice), where a set cost it a quarter of its
	// decoding. A snapshot comes sorted; sorting it again costs a pass.
	slices.SortFunc(ups, func(a, b wire.PresenceMember) int { return cmp.Compare(a.ID, b.ID) })
	slices.Sort(left)
	budget := wire.MaxPresenceFrame - 256 - 2*len(st.name) - len(st.epoch)
	var frames []wire.HostFrame
	f, size := base, 0
	next := func() {
		frames = append(frames, f)
		f, size = base, 0
	}
	for _, m := range ups {
		n := 2*len(m.ID) + len(m.Meta) + 32 // a member as JSON, with room for escapes
		if size+n > budget && size > 0 {
			next()
		}
		f.Members = append(f.Members, m)
		size += n
	}
	for _, id := range left {
		n := 2*len(id) + 4
		if size+n > budget && size > 0 {
			next()
		}
		f.Left = append(f.Left, id)
		size += n
	}
	next()
	out := make([]message, len(frames))
	for i, fr := range frames {
		if snapshot && fr.Members == nil {
			fr.Members = []wire.PresenceMember{}
		}
		fr.More = i < len(frames)-1
		out[i] = mustEncode(fr)
	}
	return out
}

// noteCap logs, once per stream, that its pages are listed MaxMembers of its members.
func (p *presence) noteCap(st *pstream) {
	if st.shown > p.opts.MaxMembers && !st.capped {
		st.capped = true
		p.h.thin.presence.Do(func() {
			p.h.logger.Warn("hostplugin: presence of a stream is over Presence.MaxMembers: its pages are listed that many and told the count of all",
				"stream", wire.Truncate(st.name), "members", st.shown, "MaxMembers", p.opts.MaxMembers)
		})
	}
}

// members lists stream's members as pages are shown them, every one, ordered by identity.
func (p *presence) members(stream string) []Member {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.streams[stream]
	if st == nil {
		return []Member{}
	}
	out := make([]Member, 0, st.shown)
	for _, m := range st.members {
		if m.shown > 0 {
			out = append(out, Member{Identity: m.id, Count: m.shown, Meta: slices.Clone([]byte(m.shownMeta))})
		}
	}
	slices.SortFunc(out, func(a, b Member) int { return cmp.Compare(a.Identity, b.Identity) })
	return out
}

// close ends presence: nothing more is sent, timers stop, and the fleet is told this Host is
// gone.
func (p *presence) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	for _, t := range []*time.Timer{p.dueT, p.flushT} {
		if t != nil {
			t.Stop()
		}
	}
	fl := p.fl
	if fl != nil {
		fl.stop(p)
	}
	p.release()
	if fl != nil {
		fl.link.Leave()
	}
}

// dueHeap orders members by due.
type dueHeap []*pmember

func (d dueHeap) Len() int           { return len(d) }
func (d dueHeap) Less(i, j int) bool { return d[i].due.Before(d[j].due) }
func (d dueHeap) Swap(i, j int) {
	d[i], d[j] = d[j], d[i]
	d[i].hidx, d[j].hidx = i, j
}
func (d *dueHeap) Push(x any) {
	m := x.(*pmember)
	m.hidx = len(*d)
	*d = append(*d, m)
}
func (d *dueHeap) Pop() any {
	old := *d
	m := old[len(old)-1]
	old[len(old)-1] = nil
	m.hidx = -1
	*d = old[:len(old)-1]
	return m
}
