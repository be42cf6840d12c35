//go:build !js

package jetstream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// Options are the optional parts of a [Log]. A nil *Options means all defaults.
type Options struct {
	// Prefix names the JetStream streams and subjects of this log: streams <Prefix>_SHARD_<i>,
	// subjects <prefix>.ev.<i>.<hash> and <prefix>.live.<i>.<hash>. Default: "LIFELINE".
	Prefix string
	// Shards is how many JetStream streams hold the log, each Lifeline stream in one of them by
	// the hash of its name. One stream leader takes every append of its shard: more shards
	// spread the appends over more NATS nodes. Every Host of a fleet must use the same count.
	// Default: 1.
	Shards int
	// Replicas is how many NATS servers keep each shard (1, or 3 in a 3-node cluster).
	// Default: 1.
	Replicas int
	// MaxEvents is how many events each stream keeps for replay (the shards' MaxMsgsPerSubject).
	// Default: 4096.
	MaxEvents int
	// MaxAge is how long an event is kept for replay (the shards' MaxAge): it bounds the store
	// of a log with many streams, which MaxEvents alone would let grow to MaxEvents per stream
	// ever written. A stream whose every event has expired starts a new epoch with its next
	// event. Default: 24 h; negative: no limit.
	MaxAge time.Duration
	// Timeout bounds each request to NATS, and how long an append keeps trying while its
	// shard has no leader (one being elected after a NATS node died). Default: 2 s.
	Timeout time.Duration
	// Migrate lets Connect copy the streams of the previous layout (one JetStream stream per
	// Lifeline stream) into the shards, keeping their epochs and seqs, and delete them. Without
	// it, Connect refuses to start on that layout ([ErrOldLayout]). Stop every Host of the
	// previous version first: what they append during the copy is lost.
	Migrate bool
	// Logger receives connection losses and recoveries. Default: slog.Default().
	Logger *slog.Logger
	// Name is the NATS connection name (shown by the server's monitoring). Default: "lifeline".
	Name string
}

// Errors of a [Log].
var (
	// ErrUnavailable wraps the errors of a JetStream log that cannot reach NATS.
	ErrUnavailable = errors.New("jetstream: the stream log is unavailable")
)

// unbornPrefix begins the epoch that Since answers for a stream that holds no event: it is
// this log's own, so that "nothing" on one Host is not comparable with "nothing" on another.
const unbornPrefix = "unborn-"

// Log is a [hostplugin.StreamLog] on NATS JetStream, shared by every Host of a fleet that
// connects to the same NATS system with the same Prefix and Shards. The package doc says how
// it lays the streams out and which JetStream features it relies on.
//
// While NATS cannot be reached the log degrades instead of guessing: Append fails (the
// publisher sees the error), Since answers a reset to the last head it knew (a replay it
// could not read is never served) and [Log.Health] says so; the connection is retried forever
// and the log recovers on its own.
//
// The zero Log is not usable; call [Connect]. It is safe for concurrent use.
type Log struct {
	nc       *nats.Conn
	js       natsjs.JetStream
	jsLeader nats.JetStreamContext // for reads the shard leader must answer (no direct get)
	opts     Options
	layout   layout
	unborn   string // the epoch of streams that hold no event, this log's own
	logger   *slog.Logger
	ctx      context.Context // ended by Close: stops every Follow
	cancel   context.CancelFunc
	closeOne sync.Once

	routers [routerCount]*router // the live subscriptions of Follow, by the subject's hash
	asks    asker                // requests whose answer a Follow waits for without blocking
	quiet   quietCheck           // followers whose streams went quiet after events

	// dropCopy, when set (tests only), says which live copies are lost on the way.
	dropCopy atomic.Pointer[func(subject string) bool]

	mu      sync.Mutex // guards the fields below
	shards  []natsjs.Stream
	heads   map[string]*headEntry
	health  Health
	conn    context.Context // ended when the NATS connection is lost: requests on it give up
	conLost context.CancelFunc
}

// headEntry is what the log knows of one stream's newest event, for the next append.
type headEntry struct {
	append sync.Mutex // one append of this Host to the stream at a time: they would refuse each other
	users  int        // appends holding the entry (l.mu): an entry in use is not evicted

	known bool // the fields below are a head seen in NATS (l.mu)
	head  stored
}

// maxHeads bounds how many streams' heads a log remembers; past it, the next append to a
// forgotten stream costs one refused publish and one read.
const maxHeads = 1 << 16

// Health is the state of a [Log]'s NATS connection, for health checks.
type Health struct {
	Backend   string    `json:"backend"`             // "jetstream"
	Connected bool      `json:"connected"`           // the NATS connection is up
	Server    string    `json:"server,omitempty"`    // the NATS server connected to
	DownSince time.Time `json:"downSince,omitzero"`  // when the connection was lost
	Outages   uint64    `json:"outages"`             // connection losses since the start
	LastError string    `json:"lastError,omitempty"` // the last error NATS reported
}

// withDefaults returns a copy of opts with every default applied.
func withDefaults(opts *Options) (Options, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Prefix == "" {
		o.Prefix = "LIFELINE"
	}
	if strings.ContainsAny(o.Prefix, ".*> \t\r\n/\\") {
		return o, fmt.Errorf("jetstream: JetStream prefix %q: must not contain '.', '*', '>', '/', '\\' or spaces", o.Prefix)
	}
	o.Shards = max(o.Shards, 1)
	o.Replicas = max(o.Replicas, 1)
	if o.MaxEvents <= 0 {
		o.MaxEvents = 4096
	}
	if o.MaxAge == 0 {
		o.MaxAge = 24 * time.Hour
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Name == "" {
		o.Name = "lifeline"
	}
	return o, nil
}

// startWait bounds how long Connect waits for JetStream to answer (a cluster electing its
// meta leader just after it started).
const startWait = 30 * time.Second

// Connect connects to the NATS servers at url (a comma-separated list), checks the layout in
// JetStream and makes the shards exist, and returns a log on them. It returns an error when
// NATS cannot be reached, when JetStream did not answer within 30 s, and when NATS holds
// another layout ([ErrOldLayout], [ErrLayout]). From then on a lost connection is retried
// forever.
func Connect(url string, opts *Options) (*Log, error) {
	o, err := withDefaults(opts)
	if err != nil {
		return nil, err
	}
	l := &Log{opts: o, logger: o.Logger, unborn: unbornPrefix + newID(6), layout: layoutOf(o),
		shards: make([]natsjs.Stream, o.Shards), heads: map[string]*headEntry{}}
	l.health = Health{Backend: "jetstream"}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.conn, l.conLost = context.WithCancel(l.ctx)
	nc, err := nats.Connect(url,
		nats.Name(o.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250*time.Millisecond),
		nats.ReconnectJitter(100*time.Millisecond, 100*time.Millisecond),
		nats.Timeout(o.Timeout),
		// No buffering while reconnecting: an Append that reported an error must not land
		// later behind the publisher's back.
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(l.onDisconnect),
		nats.ReconnectHandler(l.onReconnect),
		nats.ErrorHandler(l.onAsyncError),
	)
	if err != nil {
		l.cancel()
		return nil, fmt.Errorf("%w: connecting to NATS at %s: %v", ErrUnavailable, url, err)
	}
	fail := func(err error) (*Log, error) {
		nc.Close()
		l.cancel()
		return nil, err
	}
	js, err := natsjs.New(nc)
	if err != nil {
		return fail(fmt.Errorf("jetstream: JetStream at %s: %w", url, err))
	}
	jsLeader, err := nc.JetStream()
	if err != nil {
		return fail(fmt.Errorf("jetstream: JetStream at %s: %w", url, err))
	}
	l.nc, l.js, l.jsLeader = nc, js, jsLeader
	if err := l.setUp(startWait); err != nil {
		if errors.Is(err, ErrOldLayout) || errors.Is(err, ErrLayout) {
			return fail(err)
		}
		return fail(fmt.Errorf("%w: setting up the shards at %s: %v", ErrUnavailable, url, err))
	}
	if err := l.startFollowing(); err != nil {
		return fail(fmt.Errorf("%w: %v", ErrUnavailable, err))
	}
	l.health.Connected = true
	l.health.Server = nc.ConnectedUrlRedacted()
	return l, nil
}

func (l *Log) onDisconnect(nc *nats.Conn, err error) {
	if l.ctx.Err() != nil {
		return
	}
	l.mu.Lock()
	l.conLost()
	l.health.Connected = false
	l.health.DownSince = time.Now()
	l.health.Outages++
	if err != nil {
		l.health.LastError = err.Error()
	}
	l.mu.Unlock()
	l.logger.Error("jetstream: lost the NATS connection; replays are reset until it is back", "server", nc.ConnectedUrlRedacted(), "err", err)
}

func (l *Log) onReconnect(nc *nats.Conn) {
	l.mu.Lock()
	down := time.Since(l.health.DownSince)
	l.health.Connected = true
	l.health.Server = nc.ConnectedUrlRedacted()
	l.health.DownSince = time.Time{}
	l.conLost()
	l.conn, l.conLost = context.WithCancel(l.ctx)
	l.mu.Unlock()
	l.logger.Info("jetstream: NATS connection is back", "server", nc.ConnectedUrlRedacted(), "outage", down.Round(time.Millisecond))
	// What was republished while the connection was down never reached this Host.
	go func() {
		for i := range l.layout.shards {
			l.repairShard(l.ctx, i)
		}
	}()
	go l.recheck(l.followers(-1), true)
}

func (l *Log) onAsyncError(_ *nats.Conn, sub *nats.Subscription, err error) {
	l.mu.Lock()
	l.health.LastError = err.Error()
	l.mu.Unlock()
	if sub != nil && errors.Is(err, nats.ErrSlowConsumer) {
		// Live copies were dropped on this Host: read them from the stream.
		if fs := l.followersOf(sub); len(fs) > 0 {
			go l.recheck(fs, true)
		}
	}
}

// Health returns the state of the log's NATS connection.
func (l *Log) Health() Health {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.health
	h.Connected = h.Connected && l.nc.IsConnected()
	return h
}

// Close stops every Follow and closes the NATS connection. It is idempotent.
func (l *Log) Close() error {
	l.closeOne.Do(func() {
		l.cancel()
		l.nc.Close()
	})
	return nil
}

// known returns the last head the log saw of stream.
func (l *Log) known(stream string) (stored, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.heads[stream]; e != nil && e.known {
		return e.head, true
	}
	return stored{}, false
}

// learn records a head seen in NATS: a newer event of the epoch known, or another epoch.
func (l *Log) learn(stream string, s stored) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.heads[stream]
	if e == nil {
		e = l.newHeadLocked(stream)
	}
	if !e.known || e.head.epoch != s.epoch || s.seq > e.head.seq {
		e.known, e.head = true, stored{jseq: s.jseq, epoch: s.epoch, seq: s.seq}
	}
}

// forget records that stream holds no event, or that the log no longer knows its head.
func (l *Log) forget(stream string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.heads[stream]; e != nil {
		e.known = false
	}
}

// newHeadLocked adds an entry for stream, evicting unused ones when there are too many.
func (l *Log) newHeadLocked(stream string) *headEntry {
	if len(l.heads) >= maxHeads {
		evict := maxHeads / 8
		for name, e := range l.heads { // map order: a random choice
			if evict == 0 {
				break
			}
			if e.users == 0 {
				delete(l.heads, name)
				evict--
			}
		}
	}
	e := &headEntry{}
	l.heads[stream] = e
	return e
}

// hold returns the stream's entry, kept from eviction until release.
func (l *Log) hold(stream string) *headEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.heads[stream]
	if e == nil {
		e = l.newHeadLocked(stream)
	}
	e.users++
	return e
}

func (l *Log) release(e *headEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.users--
}

// request bounds one request to NATS by the log's Timeout, and ends it as soon as the
// connection it was sent on is lost: its answer would never come, and the caller can try
// again on the next connection instead of waiting out the timeout.
func (l *Log) request(ctx context.Context) (context.Context, context.CancelFunc) {
	return l.requestUntil(ctx, time.Now().Add(l.opts.Timeout))
}

func (l *Log) requestUntil(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	l.mu.Lock()
	conn := l.conn
	l.mu.Unlock()
	stop := context.AfterFunc(conn, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// Append implements [hostplugin.StreamLog]: the event is stored in JetStream before it is
// returned, and every Host's Follow delivers it. While the stream's shard has no leader
// (JetStream is electing one after a NATS node died) Append keeps trying for the log's
// Timeout: nothing was stored then, so trying again cannot store the event twice. An answer
// lost on the way (a timeout, the connection lost meanwhile) is reported as an error: the
// event may or may not be stored.
func (l *Log) Append(ctx context.Context, stream string, data json.RawMessage) (hostplugin.Event, error) {
	ev, _, err := l.append(ctx, stream, func(uint64) json.RawMessage { return data }, "")
	return ev, err
}

// AppendUnique appends build(seq) as the next event of stream, unless an event with id was
// appended to stream in the last two minutes, by this Host or any other of the fleet. build
// receives the sequence number the event will have. It reports whether this call stored the
// event: false when an event with id was there already (stored by another Host, or by an
// earlier try of this call whose answer was lost).
//
// Several Hosts running the same periodic publisher each call it with the same id for the
// same period (a tick's second): exactly one event per id lands. Because the id makes a
// retry harmless, AppendUnique also tries again, for the log's Timeout, after an answer lost
// with a NATS node and while another Host's append of the same id is in progress.
func (l *Log) AppendUnique(ctx context.Context, stream, id string, build func(seq uint64) json.RawMessage) (hostplugin.Event, bool, error) {
	return l.append(ctx, stream, build, id)
}

// publishRetry is how long append waits before it tries again a publish that found no shard
// leader, or (with an id) lost its answer.
const publishRetry = 100 * time.Millisecond

// JetStream's code for a publish whose message id another publish is storing right now.
const jsErrCodeDuplicateInProcess = 10158

// append publishes the next event of a stream: headers with its epoch and seq, and the
// expected shard sequence of the stream's last event (Nats-Expected-Last-Subject-Sequence),
// so that JetStream stores it only if no other event of the stream came in between. When one
// did (another Host appended), the publish is refused: the head is read from the shard's
// leader and the event is numbered again. A stream that holds no event begins a new epoch.
func (l *Log) append(ctx context.Context, stream string, build func(uint64) json.RawMessage, id string) (hostplugin.Event, bool, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	pl := l.layout.place(stream)
	e := l.hold(stream)
	defer l.release(e)
	e.append.Lock()
	defer e.append.Unlock()

	deadline := time.Now().Add(l.opts.Timeout)
	fail := func(err error) (hostplugin.Event, bool, error) {
		return hostplugin.Event{}, false, fmt.Errorf("%w: append to %q: %v", ErrUnavailable, wire.Truncate(stream), err)
	}
	checked := false // whether a missing shard leader was told from a deleted shard
	for refusals := 0; ; {
		// With no head known, the stream is taken to hold nothing: a new stream is stored at
		// the first try, and one that holds events refuses the publish and is read.
		head, known := l.known(stream)
		if !known {
			head = stored{epoch: newID(8)}
		}
		data := build(head.seq + 1)
		msg := &nats.Msg{Subject: pl.subject, Header: nats.Header{}, Data: data}
		msg.Header.Set(epochHeader, head.epoch)
		msg.Header.Set(seqHeader, strconv.FormatUint(head.seq+1, 10))
		// Retries are this loop's: it tells a deleted shard from one without a leader.
		popts := []natsjs.PublishOpt{natsjs.WithRetryAttempts(0), natsjs.WithExpectLastSequencePerSubject(head.jseq)}
		if id != "" {
			// Ids are remembered per shard: the stream's hash makes them the stream's.
			popts = append(popts, natsjs.WithMsgID(pl.hash+"/"+id))
		}
		rctx, cancel := l.requestUntil(ctx, deadline)
		ack, err := l.js.PublishMsg(rctx, msg, popts...)
		cancel()
		var apiErr *natsjs.APIError
		errors.As(err, &apiErr)
		switch {
		case err == nil && ack.Duplicate:
			l.forget(stream) // stored by another Host, or by a try whose answer was lost
			return hostplugin.Event{}, false, nil
		case err == nil:
			s := stored{jseq: ack.Sequence, epoch: head.epoch, seq: head.seq + 1}
			l.learn(stream, s)
			return hostplugin.Event{Epoch: s.epoch, Seq: s.seq, Data: append(json.RawMessage(nil), data...)}, true, nil
		case errors.Is(err, natsjs.ErrNoStreamResponse):
			// Nobody stored it: the shard is electing a leader, or it was deleted. A deleted
			// shard is told at once by the meta leader; a shard being failed over is not.
			if !checked {
				checked = true
				if l.deleted(ctx, pl.shard) {
					mctx, cancel := l.requestUntil(ctx, deadline)
					err = l.makeShard(mctx, pl.shard)
					cancel()
					if err == nil {
						l.logger.Warn("jetstream: a shard was missing; made it again (its streams start new epochs)", "stream", l.layout.shardName(pl.shard))
						continue
					}
					// Made again too soon after its deletion (the server still removing its
					// store): try again.
					checked = false
				}
			}
		case apiErr != nil && (apiErr.ErrorCode == natsjs.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == natsjs.JSErrCodeStreamWrongLastSequenceConstant):
			// Another event of the stream came first (or is being stored right now).
			if refusals++; refusals > 1 && !sleepUntil(ctx, time.Now().Add(time.Duration(min(refusals, 20))*time.Millisecond), deadline) {
				return fail(err)
			}
			h, err := l.leaderHead(ctx, pl)
			if err != nil {
				return fail(err)
			}
			if h == nil {
				l.forget(stream)
			} else {
				l.learn(stream, *h)
			}
			continue
		case id != "" && (apiErr != nil && apiErr.ErrorCode == jsErrCodeDuplicateInProcess || lostAnswer(ctx, err)):
			// Safe to try again: the id keeps a second copy out.
		default:
			if lostAnswer(ctx, err) {
				l.forget(stream) // it may have been stored
			}
			return fail(err)
		}
		if !sleepUntil(ctx, time.Now().Add(publishRetry), deadline) {
			return fail(err)
		}
	}
}

// deleted reports whether NATS says shard i does not exist, asking for no longer than a
// healthy cluster takes to answer.
func (l *Log) deleted(ctx context.Context, i int) bool {
	ctx, cancel := l.requestUntil(ctx, time.Now().Add(min(l.opts.Timeout, 250*time.Millisecond)))
	defer cancel()
	_, err := l.js.Stream(ctx, l.layout.shardName(i))
	return errors.Is(err, natsjs.ErrStreamNotFound)
}

// lostAnswer reports whether err means the answer to a request was lost (with its NATS
// node, or its connection) while the caller still waits.
func lostAnswer(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrReconnectBufExceeded)
}

// sleepUntil waits until at, and reports whether the caller may go on: at is before the
// deadline and ctx did not end.
func sleepUntil(ctx context.Context, at, deadline time.Time) bool {
	if !at.Before(deadline) {
		return false
	}
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// sinceRetry bounds how long Since keeps trying NATS before it answers a reset.
const sinceRetry = 5 * time.Second

// gapRetry is how long Since first waits before it reads again a range that came back short
// (then twice and four times as long).
const gapRetry = 25 * time.Millisecond

// Since implements [hostplugin.StreamLog]. It never returns an error: when NATS cannot be read
// it answers a reset to the last head it knew, because a replay it cannot read in full is one
// it cannot vouch for.
//
// It reads the stream's head with a direct get, and a replay with batch direct gets from the
// shard sequence of the first event the reader misses, found by an interpolation search.
func (l *Log) Since(ctx context.Context, stream string, cur hostplugin.Cursor) ([]hostplugin.Event, hostplugin.Cursor, bool, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	pl := l.layout.place(stream)
	// A NATS node failing over (a shard leader elected again) takes a few seconds: retry
	// within sinceRetry before settling for a reset.
	for deadline := time.Now().Add(sinceRetry); ; {
		var err error
		if !l.nc.IsConnected() {
			err = nats.ErrConnectionReconnecting
		} else {
			var events []hostplugin.Event
			var head hostplugin.Cursor
			var ok bool
			if events, head, ok, err = l.since(ctx, stream, pl, cur); err == nil {
				return events, head, ok, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return l.degraded(stream, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// degraded is Since's answer when NATS cannot be read: a reset to the last head known.
func (l *Log) degraded(stream string, err error) ([]hostplugin.Event, hostplugin.Cursor, bool, error) {
	head, ok := l.known(stream)
	if !ok {
		head.epoch = l.unborn // never seen: all the page can hold is nothing
	}
	l.logger.Warn("jetstream: cannot read the stream log; resetting the page to the last known head",
		"stream", wire.Truncate(stream), "epoch", head.epoch, "seq", head.seq, "err", err)
	return nil, hostplugin.Cursor{Epoch: head.epoch, Seq: head.seq}, false, nil
}

func (l *Log) since(ctx context.Context, stream string, pl placement, cur hostplugin.Cursor) ([]hostplugin.Event, hostplugin.Cursor, bool, error) {
	h, err := l.head(ctx, pl)
	if err != nil {
		return nil, hostplugin.Cursor{}, false, err
	}
	// A cursor ahead of the head read may be one the nearest replica has not applied yet.
	if ahead := cur.Seq > 0 && (h == nil && !strings.HasPrefix(cur.Epoch, unbornPrefix) || h != nil && cur.Epoch == h.epoch && cur.Seq > h.seq); ahead {
		if h, err = l.leaderHead(ctx, pl); err != nil {
			return nil, hostplugin.Cursor{}, false, err
		}
	}
	if h == nil {
		l.forget(stream)
		return nil, hostplugin.Cursor{Epoch: l.unborn}, false, nil
	}
	l.learn(stream, *h)
	head := hostplugin.Cursor{Epoch: h.epoch, Seq: h.seq}
	if cur.Epoch != h.epoch || cur.Seq > h.seq || h.seq-cur.Seq > uint64(l.opts.MaxEvents) {
		return nil, head, false, nil
	}
	switch h.seq - cur.Seq {
	case 0:
		return nil, head, true, nil
	case 1:
		return []hostplugin.Event{h.event()}, head, true, nil // the head read holds it
	}
	rctx, cancel := l.request(ctx)
	defer cancel()
	got, err := l.readRange(rctx, pl, *h, cur.Seq+1)
	// The replica that answers a read may be another than the one that answered the head, and
	// a moment behind it: a range that ends at an event seen must be there in a moment.
	for wait := gapRetry; errors.Is(err, errGap) && wait <= 4*gapRetry && sleepUntil(rctx, time.Now().Add(wait), time.Now().Add(l.opts.Timeout)); wait *= 2 {
		got, err = l.readRange(rctx, pl, *h, cur.Seq+1)
	}
	if errors.Is(err, errGap) {
		return nil, head, false, nil // older than the stream keeps, or discarded meanwhile
	}
	if err != nil {
		return nil, hostplugin.Cursor{}, false, err
	}
	events := make([]hostplugin.Event, len(got))
	for i, s := range got {
		events[i] = s.event()
	}
	return events, head, true, nil
}

// newID returns n random bytes in hex.
func newID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}
