//go:build !js

package hostplugin

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/lifeline-go/lifeline/internal/serial"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// fanouts are the Host's live fan-outs, one per stream that a session follows.
type fanouts struct {
	mu   sync.Mutex
	live map[string]*fanout
}

// fanout carries the events of one stream to the sessions that follow it. It exists while at
// least one session follows the stream, and follows the log for them.
//
// Every frame of the stream reaches its followers in the order of the log: a follower's
// catch-up when it joins, and each event the log delivers. An event with nothing queued before
// it is sent from the log's Follow callback (deliver); everything else waits in queue for the
// fan-out's goroutine (round, on a serial.Loop), which exists only while there is work, and
// does it in order. What calls out of the Host (the log's Since, the application's
// BaselineFunc) runs in round with no lock held: a baseline may call Publish, a slow one holds
// up its own stream only, and neither a slow baseline nor a slow log read holds up any Publish. (grpc's callback serializer is the
// model.) Frames are queued on a session under mu, after a check that it still follows, so
// that once leave has returned nothing more of the stream reaches it.
//
// Lock order: fanouts.mu, then fanout.mu, then session.mu; baselines.mu alone.
type fanout struct {
	h      *Host
	stream string
	// followed is closed once the Follow is made: joiners wait for it before their catch-up
	// reads the log, so that no event falls between the two.
	followed chan struct{}

	mu        sync.Mutex // guards the fields below
	stop      func()     // ends the Follow, once made; called once, by whoever marks the fan-out dead
	followers map[*session]*follower
	queue     []work
	running   serial.Loop // does queue (round), on a goroutine only while it holds any
	dead      bool        // removed from fanouts.live: a joiner must fetch a new fan-out
}

// follower is one subscription of a session to the stream. A session that subscribes again
// gets a new follower, and whatever was queued for its old one is dropped.
type follower struct {
	s       *session
	cur     Cursor // what it holds; events at or before it are not resent
	joined  bool   // its catch-up is done: live events are for it from now on
	retries int    // failed catch-ups (the log could not be read); round only
}

// maxLogRetry is the longest a catch-up the log could not serve waits before it is tried
// again: the ladder's top cap, so a page waits for a log no longer than for a Host.
const maxLogRetry = 10 * time.Second

// work is one step of round: a follower's catch-up from a cursor, or an event of the log.
type work struct {
	catchUp *follower
	from    Cursor
	done    chan struct{} // closed once the catch-up is queued on the session (or dropped)
	ev      Event
}

// join subscribes s to stream from cur: s is sent what the log holds after cur, or is reset
// to the log's head (a fresh subscription, a cursor too old, from another epoch or from the
// future), then receives live events. The catch-up runs on the fan-out, in order with the
// live events; join waits until it is queued on s, so that whatever s is sent next (the answer
// to its next frame) comes after it, as a page expects. It returns nil, joining nothing, for
// a stream whose access ended on s.
func (h *Host) join(s *session, stream string, cur Cursor) *fanout {
	for {
		fo := h.fanoutFor(stream)
		fo.mu.Lock()
		if fo.dead {
			// The last follower left between fanoutFor and Lock.
			fo.mu.Unlock()
			continue
		}
		if _, revoked := s.revokedReason(stream); revoked {
			// Its access ended since the sub was authorized (EndSubscription): under fo.mu,
			// so that an end cutting the stream either finds this follower or comes first.
			fo.mu.Unlock()
			return nil
		}
		f := &follower{s: s}
		fo.followers[s] = f
		done := make(chan struct{})
		fo.enqueueLocked(work{catchUp: f, from: cur, done: done})
		fo.mu.Unlock()
		<-done
		return fo
	}
}

// fanoutFor returns the live fan-out of stream once its Follow is made, making both when there
// is none. The Follow is made with no lock held: a log shared over the network makes round
// trips there, and every session that subscribes to any stream takes fanouts.mu; only the
// joiners of this stream wait for it.
func (h *Host) fanoutFor(stream string) *fanout {
	h.fanouts.mu.Lock()
	fo := h.fanouts.live[stream]
	made := fo == nil
	if made {
		fo = &fanout{h: h, stream: stream, followers: map[*session]*follower{}, followed: make(chan struct{})}
		fo.running.Init(&fo.mu, fo.round)
		h.fanouts.live[stream] = fo
	}
	h.fanouts.mu.Unlock()
	if made {
		fo.follow()
	}
	<-fo.followed
	return fo
}

// follow makes the fan-out's Follow. A fan-out removed meanwhile (one that Host.cut found
// empty, by its stream's name) has its Follow stopped here. If the log panics, the fan-out is
// removed before the panic goes on, so that the joiners waiting for it fetch another rather
// than wait forever.
func (fo *fanout) follow() {
	h := fo.h
	made := false
	defer func() {
		if !made {
			h.fanouts.mu.Lock()
			fo.mu.Lock()
			if !fo.dead {
				fo.dead = true
				delete(h.fanouts.live, fo.stream)
			}
			fo.mu.Unlock()
			h.fanouts.mu.Unlock()
		}
		close(fo.followed)
	}()
	stop := h.log.Follow(fo.stream, fo.deliver)
	made = true
	fo.mu.Lock()
	dead := fo.dead
	if !dead {
		fo.stop = stop
	}
	fo.mu.Unlock()
	if dead {
		stop()
	}
}

// leave unsubscribes s; once it returns, no frame of the stream reaches s. The last one out
// removes the fan-out and stops its Follow.
func (h *Host) leave(fo *fanout, s *session) {
	fo.mu.Lock()
	delete(fo.followers, s)
	empty := len(fo.followers) == 0
	fo.mu.Unlock()
	if empty {
		fo.removeIfEmpty()
	}
}

// removeIfEmpty removes the fan-out from the Host if nobody follows it, and stops its Follow.
func (fo *fanout) removeIfEmpty() {
	h := fo.h
	h.fanouts.mu.Lock()
	fo.mu.Lock()
	kill := len(fo.followers) == 0 && !fo.dead
	var dropped []work
	var stop func() // nil while the Follow is being made: follow stops it then
	if kill {
		fo.dead = true
		dropped, fo.queue = fo.queue, nil
		delete(h.fanouts.live, fo.stream)
		stop = fo.stop
	}
	fo.mu.Unlock()
	h.fanouts.mu.Unlock()
	release(dropped)
	if stop != nil {
		stop()
	}
}

// release lets go the joiners waiting on work that will not be done.
func release(dropped []work) {
	for _, w := range dropped {
		if w.done != nil {
			close(w.done)
		}
	}
}

// deliver is the fan-out's Follow callback. An event with nothing queued before it goes out
// from here, on the log's goroutine: sending only queues frames on sessions, so the log
// (which holds the stream's lock meanwhile, as Ring does) is held up by no page, and a
// publication costs no goroutine of the fan-out's. Otherwise, and for the followers it must
// reset (the baseline is the application's, and may call Publish), it is queued for round.
func (fo *fanout) deliver(ev Event) {
	fo.mu.Lock()
	defer fo.mu.Unlock()
	switch {
	case fo.dead:
	case fo.running.Running() || len(fo.queue) > 0:
		fo.enqueueLocked(work{ev: ev})
	case fo.sendLocked(ev):
		// round resets the rest; those sent it now hold it, and are passed over.
		fo.enqueueLocked(work{ev: ev})
	}
}

func (fo *fanout) enqueueLocked(w work) {
	fo.queue = append(fo.queue, w)
	fo.running.Start()
}

// round does the work queued so far, in order, on the fan-out's goroutine; with none left (or
// the fan-out dead) the goroutine exits. fo.mu is held, and released while the work is done.
func (fo *fanout) round() bool {
	batch := fo.queue
	fo.queue = nil
	if len(batch) == 0 || fo.dead {
		release(batch)
		return false
	}
	fo.mu.Unlock()
	for _, w := range batch {
		if w.catchUp != nil {
			fo.catchUp(w.catchUp, w.from)
			if w.done != nil { // a retried catch-up has nobody waiting
				close(w.done)
			}
		} else {
			fo.fanOut(w.ev)
		}
	}
	fo.mu.Lock()
	return true
}

// follows reports whether f is still the subscription of its session. fo.mu is held.
func (fo *fanout) follows(f *follower) bool { return fo.followers[f.s] == f }

// catchUp sends f what it misses after from, then makes it a follower of live events. Every
// event appended before this ran is in the log's answer; every later one is queued behind.
func (fo *fanout) catchUp(f *follower, from Cursor) {
	fo.mu.Lock()
	current := fo.follows(f)
	fo.mu.Unlock()
	if !current {
		return // it left, or subscribed again, meanwhile
	}
	frames, last, err := fo.missed(from)

	fo.mu.Lock()
	if !fo.follows(f) {
		fo.mu.Unlock()
		return
	}
	if err != nil {
		// The follower stays, not joined, and its catch-up is tried again, further apart
		// each time: a log that comes back (a NATS leader elected, a network healed) serves
		// the page from its cursor without a word from it. The page is told once, so its
		// developer sees why the stream is quiet.
		f.retries++
		if f.retries == 1 {
			f.s.send(errorFrame(fmt.Sprintf("sub %q: the stream log is unavailable; the Host retries", wire.Truncate(fo.stream))))
		}
		wait := min(fo.h.logRetry<<min(f.retries-1, 8), maxLogRetry)
		fo.mu.Unlock()
		fo.h.thin.logRead.Do(func() {
			fo.h.logger.Error("hostplugin: cannot read the stream log; retrying the catch-up", "stream", fo.stream, "in", wait, "err", err)
		})
		time.AfterFunc(wait, func() {
			fo.mu.Lock()
			defer fo.mu.Unlock()
			if !fo.dead && fo.follows(f) {
				fo.enqueueLocked(work{catchUp: f, from: from})
			}
		})
		return
	}
	for _, frame := range frames {
		f.s.send(frame)
	}
	f.cur, f.joined = last, true
	fo.mu.Unlock()
}

// missed returns the frames a reader at from needs, and the cursor they bring it to. It calls
// the log and the baseline, so no lock may be held.
func (fo *fanout) missed(from Cursor) (frames []message, last Cursor, err error) {
	events, head, ok, err := fo.since(from)
	if err != nil {
		return nil, Cursor{}, err
	}
	fo.h.obs.Subscribed(catchUpOf(from, head, ok))
	if !ok {
		return []message{fo.resetFrame(head)}, head, nil
	}
	last = from
	for _, ev := range events {
		frame, err := fo.eventFrame(ev)
		if err != nil {
			// Never a silent gap: reset to the head instead.
			fo.h.logger.Error("hostplugin: cannot encode a logged event; resetting the page", "stream", fo.stream, "seq", ev.Seq, "err", err)
			return []message{fo.resetFrame(head)}, head, nil
		}
		frames = append(frames, frame)
		last = Cursor{Epoch: ev.Epoch, Seq: ev.Seq}
	}
	return frames, last, nil
}

// since is the log's Since, with a panic of the log turned into an error: the log may be the
// application's, and one bad read must not take the Host down.
func (fo *fanout) since(from Cursor) (events []Event, head Cursor, ok bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("hostplugin: the stream log's Since panicked: %v", p)
			fo.h.logger.Error("hostplugin: the stream log's Since panicked", "stream", fo.stream, "panic", p, "stack", string(debug.Stack()))
		}
	}()
	return fo.h.log.Since(context.Background(), fo.stream, from)
}

// fanOut sends one event to every follower that does not hold it: the event to those that hold
// the one before, a reset to it to the others (another epoch, or a gap in what the log
// delivered: never a silent gap).
func (fo *fanout) fanOut(ev Event) {
	fo.mu.Lock()
	resets := fo.sendLocked(ev)
	fo.mu.Unlock()
	if !resets {
		return
	}
	// The baseline is the application's: it runs with no lock held. Only round moves cursors
	// while it runs, so the followers to reset are the same afterwards, less those that left
	// or subscribed again.
	at := Cursor{Epoch: ev.Epoch, Seq: ev.Seq}
	reset := fo.resetFrame(at)
	fo.mu.Lock()
	defer fo.mu.Unlock()
	n := 0
	for _, f := range fo.followers {
		if f.joined && needsReset(f.cur, ev) {
			f.s.send(reset)
			f.cur = at
			n++
		}
	}
	fo.h.obs.Reset(n)
}

// sendLocked sends ev to the followers that hold the event before it, and reports whether
// any must be reset to it instead (fanOut does that, with the baseline). fo.mu is held.
func (fo *fanout) sendLocked(ev Event) (resets bool) {
	frame, err := fo.eventFrame(ev)
	if err != nil {
		// Its followers' cursors stay put: the next event finds the gap and resets them.
		fo.h.logger.Error("hostplugin: cannot encode an event; its followers will be reset", "stream", fo.stream, "seq", ev.Seq, "err", err)
	}
	at := Cursor{Epoch: ev.Epoch, Seq: ev.Seq}
	sent := 0
	for _, f := range fo.followers {
		switch {
		case !f.joined:
			// Its catch-up is queued behind this event and reads the log after it.
		case f.cur.Epoch == ev.Epoch && ev.Seq <= f.cur.Seq:
			// Replayed already (or sent: see deliver).
		case f.cur.Epoch == ev.Epoch && ev.Seq == f.cur.Seq+1:
			if err == nil {
				f.s.send(frame)
				f.cur = at
				sent++
			}
		default:
			resets = true
		}
	}
	fo.h.obs.Delivered(sent)
	return resets
}

// needsReset reports whether a follower holding cur must be reset to ev: it holds neither ev
// nor the event before it in ev's epoch.
func needsReset(cur Cursor, ev Event) bool {
	return cur.Epoch != ev.Epoch || ev.Seq > cur.Seq+1
}

// eventFrame encodes ev. Data over maxEventBytes cannot come from this Host's Publish, but a
// log shared by a fleet may hold it from a Host configured otherwise: sent, it would end every
// page's session at its read limit, again at each resume, so it is refused like an event that
// does not encode (its followers are reset past it: never a silent gap).
func (fo *fanout) eventFrame(ev Event) (message, error) {
	if limit := fo.h.Config().maxEventBytes; len(ev.Data) > limit {
		return message{}, fmt.Errorf("%w: %d bytes, over maxEventBytes (%d)", ErrEventTooBig, len(ev.Data), limit)
	}
	return encode(wire.HostFrame{T: wire.TypeEvent, Stream: fo.stream, Seq: ev.Seq, Data: wire.RawJSON(ev.Data)})
}

// resetFrame builds the reset to head, with the stream's baseline when it has one.
func (fo *fanout) resetFrame(head Cursor) message {
	f := wire.HostFrame{T: wire.TypeReset, Stream: fo.stream, Epoch: head.Epoch, Seq: head.Seq}
	if base, err := fo.h.baselines.call(fo.stream, head); err != nil {
		fo.h.logger.Error("hostplugin: baseline failed; the reset carries none", "stream", fo.stream, "err", err)
	} else if base != nil && !json.Valid(base) {
		fo.h.logger.Error("hostplugin: baseline is not valid JSON; the reset carries none", "stream", fo.stream)
	} else if limit := fo.h.Config().maxEventBytes; len(base) > limit {
		fo.h.logger.Error("hostplugin: baseline over maxEventBytes; the reset carries none", "stream", fo.stream, "bytes", len(base), "maxEventBytes", limit)
	} else if base != nil {
		f.Baseline = wire.RawJSON(base)
	}
	return mustEncode(f)
}

// baselines are the streams' BaselineFuncs, set by SetBaseline.
type baselines struct {
	mu  sync.RWMutex
	fns map[string]BaselineFunc
}

func (b *baselines) set(stream string, fn BaselineFunc) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if fn == nil {
		delete(b.fns, stream)
		return
	}
	if b.fns == nil {
		b.fns = map[string]BaselineFunc{}
	}
	b.fns[stream] = fn
}

// call calls the stream's BaselineFunc, if any, turning a panic into an error: the function
// belongs to the application, and one bad baseline must not end a session.
func (b *baselines) call(stream string, head Cursor) (base json.RawMessage, err error) {
	b.mu.RLock()
	fn := b.fns[stream]
	b.mu.RUnlock()
	if fn == nil {
		return nil, nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("hostplugin: baseline of %q panicked: %v", stream, p)
		}
	}()
	return fn(stream, head)
}
