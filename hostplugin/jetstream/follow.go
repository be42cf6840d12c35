//go:build !js

package jetstream

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/lifeline-go/lifeline/gateway/wire"
	"github.com/lifeline-go/lifeline/hostplugin"
)

// Follow implements [hostplugin.StreamLog]. It delivers the copies JetStream republishes of
// each event once the event is stored (the stream's RePublish, received on a plain NATS
// subscription), so events of every Host reach fn in seq order. A copy lost on the way (the
// connection to NATS dropped, the stream leader died with copies in flight) shows as a gap
// before the next copy, or is found when the stream is quiet: either way the missing events
// are read from the stream and passed to fn first. An event appended while Follow registers
// is passed to fn or returned by a later Since: the subscription is made before the start is
// read.
//
// Follow needs no JetStream consumer: a consumer lives on one NATS node, and remaking one
// after that node died needs the JetStream meta leader (possibly dead as well, then absent
// for seconds) and may be placed on the dead node again, which blocks it until that node
// returns. Subscriptions survive a lost node: NATS moves them with the connection.
func (l *Log) Follow(stream string, fn func(hostplugin.Event)) (stop func()) {
	ctx, cancel := context.WithCancel(l.ctx)
	st, _ := l.known(stream)
	f := &follower{l: l, stream: stream, fn: fn, copies: make(chan *nats.Msg, 64), looks: make(chan struct{}, 1)}
	sub, err := l.nc.Subscribe(st.live, func(m *nats.Msg) {
		select {
		case f.copies <- m:
		case <-ctx.Done():
		}
	})
	if err != nil {
		// Only a closed connection refuses a subscription: nothing will be delivered.
		l.logger.Warn("jetstream: cannot follow a stream", "stream", wire.Truncate(stream), "err", err)
	} else {
		l.mu.Lock()
		l.followers[sub] = f
		l.mu.Unlock()
	}
	// Follow runs under the Host's hub locks: with NATS away it must not wait for a timeout.
	lookFirst := true
	if l.nc.IsConnected() {
		if s, err := l.info(ctx, stream); err == nil && s != nil {
			info := s.CachedInfo()
			f.s, f.epoch, f.next, f.first, f.head = s, epochOf(info), info.State.LastSeq+1, info.State.FirstSeq, info.State.LastSeq
			lookFirst = !republishes(info, st)
		}
	}
	if f.epoch == "" {
		if known, ok := l.known(stream); ok {
			// NATS is away: start after the last head known; a gap found later is a reset.
			f.epoch, f.next = known.epoch, known.head+1
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.run(ctx, lookFirst)
	}()
	return func() {
		cancel()
		<-done
		if sub != nil {
			_ = sub.Unsubscribe()
			l.mu.Lock()
			delete(l.followers, sub)
			l.mu.Unlock()
		}
	}
}

// followQuiet is how long a followed stream may be quiet before Follow reads its head, to
// find an event whose republished copy never arrived and that no later copy revealed.
const followQuiet = 5 * time.Second

// followRetry is how soon Follow reads the stream again after NATS failed a read.
const followRetry = 250 * time.Millisecond

// follower is one Follow: the fields below looks are its goroutine's own.
type follower struct {
	l      *Log
	stream string
	fn     func(hostplugin.Event)
	copies chan *nats.Msg // republished copies, in the order NATS delivered them
	looks  chan struct{}  // a request to read the stream's head now

	s     natsjs.Stream // from the last read of the stream's state
	epoch string        // "" until the stream is known
	next  uint64        // the seq fn gets next
	first uint64        // the oldest seq the stream held at the last read
	head  uint64        // the newest
	reads uint64        // how many reads of the state were applied
	warn  bool          // whether the stream's missing RePublish was reported
}

// look asks the follower to read the stream's head soon. It never blocks.
func (f *follower) look() {
	select {
	case f.looks <- struct{}{}:
	default:
	}
}

// state is the answer to a read of the stream's state made while copies kept being handled.
type state struct {
	s     natsjs.Stream
	err   error
	reads uint64 // f.reads when the read began
}

func (f *follower) run(ctx context.Context, lookFirst bool) {
	wait := followQuiet
	if lookFirst {
		wait = 0
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	// A look reads the stream's state on a goroutine of its own: while the stream has no
	// leader that read waits out its timeout, and the first copies the new leader sends must
	// not wait behind it.
	var looking chan state
	defer func() {
		if looking != nil {
			<-looking // ctx has ended: the read ends at once
		}
	}()
	startLook := func() {
		if looking != nil {
			return
		}
		looking = make(chan state, 1)
		reads := f.reads
		go func() {
			s, err := f.l.info(ctx, f.stream)
			looking <- state{s: s, err: err, reads: reads}
		}()
	}
	for {
		ok := true
		select {
		case <-ctx.Done():
			return
		case m := <-f.copies:
			ok = f.received(ctx, m)
		case <-f.looks:
			startLook()
		case <-timer.C:
			startLook()
		case st := <-looking:
			looking = nil
			ok = f.looked(ctx, st)
		}
		wait = followQuiet
		if !ok {
			wait = followRetry
		}
		timer.Reset(wait)
	}
}

// received handles one republished copy. It reports false when NATS failed a read the copy
// needed; the copy's event is then read from the stream by a later look.
func (f *follower) received(ctx context.Context, m *nats.Msg) bool {
	seq, err := strconv.ParseUint(m.Header.Get(natsjs.SequenceHeader), 10, 64)
	if err != nil || seq == 0 {
		return true // not a copy JetStream made
	}
	if f.epoch == "" || seq < f.next {
		// The stream was unknown, a new stream leader sent a copy again, or the stream was
		// made anew under the same name (its seqs start over): its state says which.
		if !f.refresh(ctx) || f.epoch == "" {
			return false
		}
	}
	if seq > f.next && (!f.refresh(ctx) || !f.catchUp(ctx, seq-1)) {
		return false
	}
	if seq < f.next {
		return true
	}
	f.deliver(hostplugin.Event{Epoch: f.epoch, Seq: seq, Data: append(json.RawMessage(nil), m.Data...)})
	return true
}

// looked applies the answer of a look, unless a newer read was applied meanwhile, and
// passes fn whatever the stream holds beyond what it delivered.
func (f *follower) looked(ctx context.Context, st state) bool {
	if st.err != nil {
		return false
	}
	if st.reads == f.reads {
		if st.s == nil {
			return true // not made yet: its first copy will come
		}
		f.apply(ctx, st.s)
	}
	return f.catchUp(ctx, f.head)
}

// catchUp passes fn every event after the last one delivered, up to through, as of the last
// read of the stream's state. Events the stream no longer holds are skipped: the hub resets
// whoever misses them.
func (f *follower) catchUp(ctx context.Context, through uint64) bool {
	through = min(through, f.head)
	from := max(f.next, f.first, 1)
	if f.epoch == "" || f.s == nil || from > through {
		return true
	}
	events, err := f.l.read(ctx, f.s, f.epoch, from, through)
	if err != nil {
		if ctx.Err() == nil {
			f.l.logger.Debug("jetstream: cannot read a followed stream; trying again", "stream", wire.Truncate(f.stream), "from", from, "to", through, "err", err)
		}
		return false
	}
	for _, ev := range events {
		f.deliver(ev)
	}
	return true
}

// refresh reads the stream's state and applies it.
func (f *follower) refresh(ctx context.Context) bool {
	s, err := f.l.info(ctx, f.stream)
	if err != nil {
		return false
	}
	if s != nil {
		f.apply(ctx, s)
	}
	return true
}

// apply takes a read of the stream's state: a new epoch restarts the follow at the stream's
// oldest event, and a stream without RePublish (made by an older Lifeline) is given it.
func (f *follower) apply(ctx context.Context, s natsjs.Stream) {
	info := s.CachedInfo()
	if e := epochOf(info); e != f.epoch {
		f.epoch, f.next = e, max(info.State.FirstSeq, 1)
	}
	f.s, f.first, f.head = s, info.State.FirstSeq, info.State.LastSeq
	f.reads++
	if st, _ := f.l.known(f.stream); !republishes(info, st) {
		f.republish(ctx, info, st)
	}
}

func (f *follower) deliver(ev hostplugin.Event) {
	f.next = ev.Seq + 1
	f.l.learn(f.stream, ev.Epoch, ev.Seq)
	f.fn(ev)
}

// republishes reports whether JetStream republishes the stream's events where Follow listens.
func republishes(info *natsjs.StreamInfo, st jsStream) bool {
	rp := info.Config.RePublish
	return rp != nil && rp.Destination == st.live && !rp.HeadersOnly && (rp.Source == "" || rp.Source == st.subject)
}

// republish gives a stream made without RePublish the one Follow listens to. Until it has
// one, its events reach fn only when the follower reads the stream (every followQuiet).
func (f *follower) republish(ctx context.Context, info *natsjs.StreamInfo, st jsStream) {
	cfg := info.Config
	cfg.RePublish = &natsjs.RePublish{Source: st.subject, Destination: st.live}
	rctx, cancel := f.l.request(ctx)
	defer cancel()
	_, err := f.l.js.UpdateStream(rctx, cfg)
	switch {
	case err == nil:
		f.l.logger.Info("jetstream: the stream now republishes its events for live delivery", "stream", wire.Truncate(f.stream), "subject", st.live)
	case !f.warn && ctx.Err() == nil:
		f.warn = true
		f.l.logger.Warn("jetstream: cannot make the stream republish its events; live delivery waits for reads of the stream", "stream", wire.Truncate(f.stream), "err", err)
	}
}
