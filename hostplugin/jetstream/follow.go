//go:build !js

package jetstream

import (
	"errors"
	"hash/maphash"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/serial"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// Follow implements [hostplugin.StreamLog]. It hears the copies the stream's shard
// republishes of each event once it is stored (RePublish), on a plain subscription to the
// stream's live subject: a Host hears only the streams it follows, at the cost of one NATS
// subscription each, and no JetStream consumer or periodic request per stream.
//
// Each copy carries the shard sequence of the stream's previous event (Nats-Last-Sequence):
// a copy lost on the way shows as a gap before the next one, and the missing events are read
// from the stream and passed to fn first. A copy lost with nothing after it is found by a
// re-check of the heads of the streams followed (one multi-last direct get per 256 streams),
// made when one may have been lost: when the connection to NATS is back, after a slow-consumer
// error, when a shard's leader was elected or its configuration changed, and once a stream has
// been quiet for 5 s after an event.
//
// Follow sends the subscription and a direct get of the stream's head, and returns: it waits
// for no answer, so it can run under the Host's locks. An event appended while Follow
// registers is passed to fn or returned by a later Since: copies heard before the head's
// answer are kept and delivered from the older of the two.
func (l *Log) Follow(stream string, fn func(hostplugin.Event)) (stop func()) {
	pl := l.layout.place(stream)
	f := &follower{l: l, stream: stream, pl: pl, fn: fn}
	f.running.Init(&f.mu, f.round)
	f.running.Claim() // begin's: nothing is read before the head is, then begin runs the loop
	rt := l.routers[maphash.String(routerSeed, pl.live)%routerCount]
	f.rt = rt
	if err := rt.add(f); err != nil {
		// Only a closed connection refuses a subscription: nothing will be delivered.
		l.logger.Warn("jetstream: cannot follow a stream", "stream", wire.Truncate(stream), "err", err)
	}
	// Sent after the subscription, on the same connection: the head it reads is no newer than
	// what a Since sent after Follow returns reads.
	answer, cancel, err := l.asks.send(l.nc, "$JS.API.DIRECT.GET."+l.layout.shardName(pl.shard)+"."+pl.subject)
	go f.begin(answer, cancel, err)
	return f.stop
}

// routerCount is how many goroutines hand the live copies to followers; a stream's copies
// all go through one, in order.
const routerCount = 4

var routerSeed = maphash.MakeSeed()

// follower is one Follow.
type follower struct {
	l      *Log
	rt     *router
	stream string
	pl     placement
	fn     func(hostplugin.Event)

	lastCopy atomic.Int64 // unix nanos of the last copy delivered, for the quiet check
	active   atomic.Bool  // in the quiet check's set

	mu      sync.Mutex // guards the fields below; held while fn runs
	stopped bool
	running serial.Loop // reads the stream and works through pending (round), on a goroutine only while there is work
	based   bool        // last is known: the follow has its start
	last    uint64      // shard seq of the last event delivered (or of the head at the start); 0: none
	epoch   string      // the epoch of that event
	target  uint64      // the stream holds events up to this shard seq that fn was not given: read them
	misses  int         // reads in a row that came back short of target
	pending []liveCopy
}

// liveCopy is an event as its shard republished it.
type liveCopy struct {
	stored
	prev uint64 // the shard seq of the stream's event before it (0: none)
}

// maxPending bounds the copies a follower keeps while it reads the stream; past it they are
// dropped and read from the stream instead.
const maxPending = 4096

func parseCopy(m *nats.Msg) (liveCopy, bool) {
	jseq, err := strconv.ParseUint(m.Header.Get(natsjs.SequenceHeader), 10, 64)
	if err != nil || jseq == 0 {
		return liveCopy{}, false // not a copy JetStream made
	}
	prev, err := strconv.ParseUint(m.Header.Get("Nats-Last-Sequence"), 10, 64)
	if err != nil {
		return liveCopy{}, false
	}
	s, err := parseStored(jseq, m.Header, m.Data)
	if err != nil {
		return liveCopy{}, false
	}
	return liveCopy{stored: s, prev: prev}, true
}

// stop ends the Follow: once it returns, fn is not called again.
func (f *follower) stop() {
	f.mu.Lock()
	f.stopped = true
	f.pending = nil
	f.mu.Unlock()
	f.rt.remove(f)
	if f.active.Load() {
		f.l.quiet.remove(f)
	}
}

// begin waits for the answer to the head read Follow sent, takes it as the start, then does
// what the copies heard meanwhile ask for.
func (f *follower) begin(answer <-chan *nats.Msg, cancel func(), err error) {
	l := f.l
	var h *stored
	if err == nil {
		t := time.NewTimer(l.opts.Timeout)
		select {
		case m := <-answer:
			h, err = parseDirect(m)
		case <-t.C:
			err = nats.ErrTimeout
		case <-l.ctx.Done():
			err = l.ctx.Err()
		}
		t.Stop()
		cancel()
	}
	if err != nil {
		f.running.Run() // not based: it finds nothing to do, and leaves the loop idle
		if l.ctx.Err() == nil {
			l.logger.Debug("jetstream: cannot read a followed stream's head; trying again", "stream", wire.Truncate(f.stream), "err", err)
			// Disconnected: the reconnection re-checks every follower.
			if l.nc.IsConnected() {
				time.AfterFunc(followRetry, func() { l.recheck([]*follower{f}, false) })
			}
		}
		return
	}
	f.mu.Lock()
	f.applyLocked(h)
	f.mu.Unlock()
	f.running.Run() // what the start and the copies heard meanwhile ask for, on this goroutine
}

// parseDirect reads the answer to a direct get: nil when the stream holds no event.
func parseDirect(m *nats.Msg) (*stored, error) {
	if len(m.Data) == 0 {
		switch status := m.Header.Get("Status"); status {
		case "":
		case "404":
			return nil, nil
		default:
			return nil, errors.New("jetstream: direct get: " + status + " " + m.Header.Get("Description"))
		}
	}
	jseq, err := strconv.ParseUint(m.Header.Get(natsjs.SequenceHeader), 10, 64)
	if err != nil {
		return nil, errors.New("jetstream: direct get answered without Nats-Sequence")
	}
	s, err := parseStored(jseq, m.Header, m.Data)
	return &s, err
}

// heard handles one live copy, on its router's goroutine: delivered at once when it follows
// the last event delivered, kept for the follower's own goroutine otherwise.
func (f *follower) heard(c liveCopy) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	if !f.running.Running() && f.based && len(f.pending) == 0 {
		switch f.placeLocked(c) {
		case copyDelivered, copyDuplicate:
			return
		}
		// A gap: placeLocked set the target.
	}
	if len(f.pending) < maxPending {
		f.pending = append(f.pending, c)
	}
	f.runLocked()
}

// What a live copy was to its follower.
const (
	copyDelivered = iota // passed to fn
	copyDuplicate        // delivered already (a new shard leader sends copies again)
	copyGap              // events before it are missing: target says up to where
)

// placeLocked delivers c if it follows the last event delivered.
func (f *follower) placeLocked(c liveCopy) int {
	if c.jseq <= f.last {
		if c.epoch == f.epoch {
			return copyDuplicate
		}
		// Shard sequences only grow: this shard was made again, and starts over.
		f.last = 0
	}
	if c.prev > f.last {
		f.target = max(f.target, c.prev)
		return copyGap
	}
	f.deliverLocked(c.stored)
	return copyDelivered
}

func (f *follower) deliverLocked(s stored) {
	f.last, f.epoch = s.jseq, s.epoch
	f.l.learn(f.stream, s)
	f.fn(s.event())
	f.touch()
}

// touch marks the stream active, for the quiet check.
func (f *follower) touch() {
	f.lastCopy.Store(time.Now().UnixNano())
	if f.active.CompareAndSwap(false, true) {
		f.l.quiet.add(f)
	}
}

// applyLocked takes a head read from the stream (nil: it holds no event). The first one is the
// follow's start; copies heard before it are delivered from the older of the two. A later one
// (a re-check) has the follower read what it missed.
func (f *follower) applyLocked(h *stored) {
	if f.stopped {
		return
	}
	if !f.based {
		f.based = true
		if h != nil {
			f.last, f.epoch = h.jseq, h.epoch
		}
		if len(f.pending) > 0 && f.pending[0].prev < f.last {
			f.last = f.pending[0].prev
		}
		f.runLocked()
		return
	}
	switch {
	case h == nil:
	case h.jseq > f.last:
		f.target = max(f.target, h.jseq)
	case h.jseq < f.last && h.epoch != f.epoch:
		f.last, f.target = 0, h.jseq // the shard was made again
	}
	f.runLocked()
}

// runLocked starts the follower's goroutine if it has work and none runs.
func (f *follower) runLocked() {
	if f.stopped || !f.based || f.target <= f.last && len(f.pending) == 0 {
		return
	}
	f.running.Start()
}

// followRetry is how soon a follower reads the stream again after NATS failed a read, or
// answered short of what a copy said the stream holds (a replica a moment behind).
const followRetry = 250 * time.Millisecond

// maxMisses is how many short reads a follower makes before it takes the missing events as
// discarded (by MaxEvents or MaxAge) and goes on without them: the Host resets whoever
// misses them.
const maxMisses = 8

// round reads what the stream holds up to target, or works through the next copy kept
// meanwhile, in order, on the follower's goroutine; with nothing left to do (or a read to try
// again later) the goroutine exits. f.mu is held, and released while NATS is read.
func (f *follower) round() bool {
	l := f.l
	if f.stopped || !f.based {
		return false
	}
	if f.target > f.last {
		from, target := f.last+1, f.target
		f.mu.Unlock()
		got, err := l.readFrom(l.ctx, f.pl, from, readBatch)
		if err != nil && l.ctx.Err() == nil {
			l.logger.Debug("jetstream: cannot read a followed stream; trying again", "stream", wire.Truncate(f.stream), "from", from, "to", target, "err", err)
		}
		f.mu.Lock()
		if f.stopped {
			return false
		}
		if err != nil {
			if l.ctx.Err() == nil {
				time.AfterFunc(followRetry, f.retry)
			}
			return false
		}
		for _, s := range got {
			if s.jseq > f.last {
				f.deliverLocked(s)
			}
		}
		if f.last < target && len(got) < readBatch {
			if f.misses++; f.misses < maxMisses {
				time.AfterFunc(followRetry, f.retry)
				return false
			}
			f.last = target
		}
		f.misses = 0
		return true
	}
	if len(f.pending) == 0 {
		return false
	}
	c := f.pending[0]
	if f.placeLocked(c) != copyGap {
		f.pending = f.pending[1:]
	}
	return true
}

// retry starts the follower's goroutine again after a read that failed or came back short.
func (f *follower) retry() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runLocked()
}

// router hands the copies of the subjects it holds to their followers, on one goroutine.
// Each followed subject has one subscription per Log, shared by its followers.
type router struct {
	l      *Log
	copies chan *nats.Msg

	mu     sync.Mutex
	bySubj map[string]*liveSub
	bySub  map[*nats.Subscription]*liveSub
}

// liveSub is a subscription to one live subject.
type liveSub struct {
	subject   string
	sub       *nats.Subscription
	followers []*follower // replaced, never changed in place: the router reads it unlocked
}

// routerBuffer is how many copies a router holds before NATS reports a slow consumer (and
// the followers concerned re-check their streams).
const routerBuffer = 8192

func (rt *router) run() {
	for {
		select {
		case <-rt.l.ctx.Done():
			return
		case m := <-rt.copies:
			rt.mu.Lock()
			ls := rt.bySubj[m.Subject]
			rt.mu.Unlock()
			if ls == nil {
				continue
			}
			if drop := rt.l.dropCopy.Load(); drop != nil && (*drop)(m.Subject) {
				continue
			}
			c, ok := parseCopy(m)
			if !ok {
				continue
			}
			for _, f := range ls.followers {
				f.heard(c)
			}
		}
	}
}

// add makes f a follower of its live subject, subscribing when it is the first.
func (rt *router) add(f *follower) error {
	subject := f.pl.live
	rt.mu.Lock()
	if ls := rt.bySubj[subject]; ls != nil {
		ls.followers = append(ls.followers[:len(ls.followers):len(ls.followers)], f)
		rt.mu.Unlock()
		return nil
	}
	ls := &liveSub{subject: subject, followers: []*follower{f}}
	rt.bySubj[subject] = ls
	rt.mu.Unlock()
	sub, err := rt.l.nc.ChanSubscribe(subject, rt.copies)
	if err != nil {
		return err
	}
	rt.mu.Lock()
	if rt.bySubj[subject] != ls {
		// Every follower left meanwhile.
		rt.mu.Unlock()
		_ = sub.Unsubscribe()
		return nil
	}
	ls.sub = sub
	rt.bySub[sub] = ls
	rt.mu.Unlock()
	return nil
}

// remove ends f's share of its subscription, unsubscribing when it was the last.
func (rt *router) remove(f *follower) {
	rt.mu.Lock()
	ls := rt.bySubj[f.pl.live]
	if ls == nil {
		rt.mu.Unlock()
		return
	}
	kept := make([]*follower, 0, len(ls.followers))
	for _, g := range ls.followers {
		if g != f {
			kept = append(kept, g)
		}
	}
	ls.followers = kept
	var sub *nats.Subscription
	if len(kept) == 0 {
		delete(rt.bySubj, ls.subject)
		if sub = ls.sub; sub != nil {
			delete(rt.bySub, sub)
		}
	}
	rt.mu.Unlock()
	if sub != nil {
		// A Follow of the same stream made meanwhile has a subscription of its own; the
		// copies both deliver are told apart by their shard seq.
		_ = sub.Unsubscribe()
	}
}

// followers returns every follower of shard (-1: of every shard).
func (l *Log) followers(shard int) []*follower {
	var out []*follower
	for _, rt := range l.routers {
		rt.mu.Lock()
		for _, ls := range rt.bySubj {
			for _, f := range ls.followers {
				if shard < 0 || f.pl.shard == shard {
					out = append(out, f)
				}
			}
		}
		rt.mu.Unlock()
	}
	return out
}

// followersOf returns the followers of the live subscription sub.
func (l *Log) followersOf(sub *nats.Subscription) []*follower {
	for _, rt := range l.routers {
		rt.mu.Lock()
		ls := rt.bySub[sub]
		rt.mu.Unlock()
		if ls != nil {
			return ls.followers
		}
	}
	return nil
}

// recheck reads the heads of the followers' streams, a multi-last direct get per shard and
// 256 streams, and has each follower read what it missed. With again, each is re-checked once
// more when the quiet check next runs: a replica answers from what it has applied, and just
// after a failover that can be a moment behind. It retries while NATS fails, until the
// connection is lost (its return re-checks everyone).
func (l *Log) recheck(fs []*follower, again bool) {
	byShard := map[int][]*follower{}
	for _, f := range fs {
		byShard[f.pl.shard] = append(byShard[f.pl.shard], f)
	}
	for shard, fs := range byShard {
		seen := map[string]bool{}
		var subjects []string
		for _, f := range fs {
			if !seen[f.pl.subject] {
				seen[f.pl.subject] = true
				subjects = append(subjects, f.pl.subject)
			}
		}
		heads, err := l.lastOf(l.ctx, shard, subjects)
		if err != nil {
			if l.ctx.Err() == nil && l.nc.IsConnected() {
				l.logger.Debug("jetstream: cannot re-check the followed streams of a shard; trying again", "stream", l.layout.shardName(shard), "err", err)
				time.AfterFunc(followRetry, func() { l.recheck(fs, again) })
			}
			continue
		}
		for _, f := range fs {
			var h *stored
			if s, ok := heads[f.pl.subject]; ok {
				h = &s
			}
			f.mu.Lock()
			f.applyLocked(h)
			f.mu.Unlock()
			if again {
				f.touch()
			}
		}
	}
}

// followQuiet is how long a stream that had events must be quiet before its head is read
// once, to find an event whose copy was lost and that no later copy revealed.
const followQuiet = 5 * time.Second

// quietCheck holds the followers whose streams had events since their last check. A stream
// nobody writes to costs nothing.
type quietCheck struct {
	mu   sync.Mutex
	set  map[*follower]struct{}
	kick chan struct{}
}

func (q *quietCheck) add(f *follower) {
	q.mu.Lock()
	q.set[f] = struct{}{}
	q.mu.Unlock()
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

func (q *quietCheck) remove(f *follower) {
	q.mu.Lock()
	delete(q.set, f)
	q.mu.Unlock()
}

// runQuiet re-checks, every followQuiet/2 while there are any, the followers whose streams
// have been quiet for followQuiet.
func (l *Log) runQuiet() {
	q := &l.quiet
	t := time.NewTimer(followQuiet / 2)
	t.Stop()
	for {
		select {
		case <-l.ctx.Done():
			t.Stop()
			return
		case <-q.kick:
			t.Reset(followQuiet / 2)
		case <-t.C:
			now := time.Now().UnixNano()
			var due []*follower
			q.mu.Lock()
			for f := range q.set {
				if now-f.lastCopy.Load() >= int64(followQuiet) {
					delete(q.set, f)
					f.active.Store(false)
					due = append(due, f)
				}
			}
			left := len(q.set)
			q.mu.Unlock()
			if len(due) > 0 {
				l.recheck(due, false)
			}
			if left > 0 {
				t.Reset(followQuiet / 2)
			}
		}
	}
}

// asker sends requests whose answers come on a subscription of the log's own, so that the
// request is on the connection when send returns (nats.go's requests are sent by a call that
// waits for the answer).
type asker struct {
	prefix string // the inbox, with a trailing dot

	mu   sync.Mutex
	next uint64
	wait map[string]chan *nats.Msg
}

func (a *asker) start(nc *nats.Conn) error {
	a.prefix = nc.NewInbox() + "."
	a.wait = map[string]chan *nats.Msg{}
	_, err := nc.Subscribe(a.prefix+"*", func(m *nats.Msg) {
		tok := strings.TrimPrefix(m.Subject, a.prefix)
		a.mu.Lock()
		ch := a.wait[tok]
		delete(a.wait, tok)
		a.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	})
	return err
}

// send publishes an empty request to subject; its answer comes on the channel, until cancel.
func (a *asker) send(nc *nats.Conn, subject string) (<-chan *nats.Msg, func(), error) {
	ch := make(chan *nats.Msg, 1)
	a.mu.Lock()
	a.next++
	tok := strconv.FormatUint(a.next, 36)
	a.wait[tok] = ch
	a.mu.Unlock()
	cancel := func() {
		a.mu.Lock()
		delete(a.wait, tok)
		a.mu.Unlock()
	}
	if err := nc.PublishRequest(subject, a.prefix+tok, nil); err != nil {
		cancel()
		return nil, nil, err
	}
	return ch, cancel, nil
}

// startFollowing sets up what Follow needs: the routers, the answers' subscription, the
// shards' advisories and the quiet check.
func (l *Log) startFollowing() error {
	for i := range l.routers {
		rt := &router{l: l, copies: make(chan *nats.Msg, routerBuffer), bySubj: map[string]*liveSub{}, bySub: map[*nats.Subscription]*liveSub{}}
		l.routers[i] = rt
		go rt.run()
	}
	if err := l.asks.start(l.nc); err != nil {
		return err
	}
	l.quiet = quietCheck{set: map[*follower]struct{}{}, kick: make(chan struct{}, 1)}
	go l.runQuiet()
	for i := range l.layout.shards {
		// Every advisory of the shard: a leader elected, its configuration updated, the
		// stream made or deleted.
		if _, err := l.nc.Subscribe("$JS.EVENT.ADVISORY.STREAM.*."+l.layout.shardName(i), func(m *nats.Msg) { l.advised(i, m) }); err != nil {
			return err
		}
	}
	return nil
}

// advised handles an advisory about shard i.
func (l *Log) advised(i int, m *nats.Msg) {
	kind := strings.TrimPrefix(m.Subject, "$JS.EVENT.ADVISORY.STREAM.")
	kind, _, _ = strings.Cut(kind, ".")
	switch kind {
	case "LEADER_ELECTED":
		// The copies the last leader had in flight may be lost with it.
		go l.recheck(l.followers(i), true)
	case "UPDATED", "CREATED":
		// Its RePublish may go elsewhere now, or it starts over: copies may have been lost.
		// (A deleted shard is made again by the next append that finds it missing: made at
		// once, within milliseconds of the deletion, its first publishes went unanswered.)
		go func() {
			l.repairShard(l.ctx, i)
			l.recheck(l.followers(i), true)
		}()
	}
}
