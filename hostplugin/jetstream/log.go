//go:build !js

package jetstream

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/lifeline-go/lifeline/gateway/wire"
	"github.com/lifeline-go/lifeline/hostplugin"
)

// Options are the optional parts of a [Log]. A nil *Options means all defaults.
type Options struct {
	// Prefix names the JetStream streams and subjects of this log: stream <Prefix>_<hash>,
	// subject <prefix>.s.<hash>, one per Lifeline stream. Default: "LIFELINE".
	Prefix string
	// Replicas is how many NATS servers keep each stream (1, or 3 in a 3-node cluster).
	// Default: 1.
	Replicas int
	// MaxEvents is how many events each stream keeps for replay. Default: 4096.
	MaxEvents int
	// Timeout bounds each request to NATS, and how long an append keeps trying while its
	// stream has no leader (one being elected after a NATS node died). Default: 2 s.
	Timeout time.Duration
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

// UnbornPrefix begins the epoch of a stream that does not exist in JetStream yet. Its first
// event comes in the epoch the stream gets when it is created, so its followers are reset then.
const UnbornPrefix = "unborn-"

// epochKey is the stream metadata key holding the epoch. It is written once, by whichever
// Host creates the stream, and read by every Host: the epoch is the stream's, not a Host's.
const epochKey = "lifeline_epoch"

// nameKey keeps the Lifeline stream name beside its hashed JetStream name, for operators.
const nameKey = "lifeline_stream"

// Log is a [hostplugin.StreamLog] on NATS JetStream, shared by every Host of a fleet that
// connects to the same NATS system with the same Prefix. Each Lifeline stream is one
// JetStream stream, so its JetStream sequence numbers are the stream's own (1, 2, 3, …) and
// every Host hands out and replays the same numbers. The epoch of a stream is made when the
// JetStream stream is created and stored in its metadata; a stream deleted and recreated has
// a new one.
//
// While NATS cannot be reached the log degrades instead of guessing: Append fails (the
// publisher sees the error), Since answers a reset to the last head it knew (a replay it
// could not read is never served) and [Log.Health] says so; the connection is retried forever
// and the log recovers on its own.
//
// Events are published on <prefix>.s.<hash>, and JetStream republishes each one once it is
// stored on <prefix>.live.<hash> (the stream's RePublish), where every Host's Follow hears it:
// a Host's NATS user needs to publish to the first, subscribe to the second and use the
// JetStream API for the streams named <Prefix>_*. A NATS node lost costs a Host no more than
// JetStream's own failover (seconds while a stream leader is elected, nothing otherwise).
//
// A stream nobody has appended to does not exist in JetStream: Since answers it with a
// reset to sequence 0 in an epoch of this log's own ([UnbornPrefix] and a random id: "nothing"
// on one Host is not comparable with "nothing" on another, so a page that moves is reset by
// each Host it lands on), and Follow waits for it to appear.
//
// The zero Log is not usable; call [Connect]. It is safe for concurrent use.
type Log struct {
	nc       *nats.Conn
	js       natsjs.JetStream
	opts     Options
	unborn   string // the epoch of streams not in JetStream yet, this log's own
	logger   *slog.Logger
	ctx      context.Context // ended by Close: stops every Follow
	cancel   context.CancelFunc
	closeOne sync.Once

	mu        sync.Mutex // guards the fields below
	streams   map[string]*jsStream
	health    Health
	conn      context.Context // ended when the NATS connection is lost: requests on it give up
	connLost  context.CancelFunc
	followers map[*nats.Subscription]*follower
}

// jsStream is what the log knows of one Lifeline stream.
type jsStream struct {
	name    string // JetStream stream
	subject string // where events are published
	live    string // where JetStream republishes each event once it is stored: what Follow hears
	epoch   string // "" until the stream is known to exist
	head    uint64 // the highest sequence seen
}

// Health is the state of a [Log]'s NATS connection, for health checks.
type Health struct {
	Backend   string    `json:"backend"`             // "jetstream"
	Connected bool      `json:"connected"`           // the NATS connection is up
	Server    string    `json:"server,omitempty"`    // the NATS server connected to
	DownSince time.Time `json:"downSince,omitzero"`  // when the connection was lost
	Outages   uint64    `json:"outages"`             // connection losses since the start
	LastError string    `json:"lastError,omitempty"` // the last error NATS reported
}

// Connect connects to the NATS servers at url (a comma-separated list) and returns a log on
// their JetStream. It returns once the first connection is made or fails; from then on a lost
// connection is retried forever.
func Connect(url string, opts *Options) (*Log, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Prefix == "" {
		o.Prefix = "LIFELINE"
	}
	if strings.ContainsAny(o.Prefix, ".*> \t\r\n/\\") {
		return nil, fmt.Errorf("jetstream: JetStream prefix %q: must not contain '.', '*', '>', '/', '\\' or spaces", o.Prefix)
	}
	o.Replicas = max(o.Replicas, 1)
	if o.MaxEvents <= 0 {
		o.MaxEvents = 4096
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
	l := &Log{opts: o, logger: o.Logger, streams: map[string]*jsStream{}, unborn: UnbornPrefix + newID(6),
		followers: map[*nats.Subscription]*follower{}}
	l.health = Health{Backend: "jetstream"}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.conn, l.connLost = context.WithCancel(l.ctx)
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
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			l.mu.Lock()
			l.health.LastError = err.Error()
			f := l.followers[sub]
			l.mu.Unlock()
			if f != nil && errors.Is(err, nats.ErrSlowConsumer) {
				f.look() // live copies were dropped: read them from the stream
			}
		}),
	)
	if err != nil {
		l.cancel()
		return nil, fmt.Errorf("%w: connecting to NATS at %s: %v", ErrUnavailable, url, err)
	}
	js, err := natsjs.New(nc)
	if err != nil {
		nc.Close()
		l.cancel()
		return nil, fmt.Errorf("jetstream: JetStream at %s: %w", url, err)
	}
	l.nc, l.js = nc, js
	l.health.Connected = true
	l.health.Server = nc.ConnectedUrlRedacted()
	return l, nil
}

func (l *Log) onDisconnect(nc *nats.Conn, err error) {
	if l.ctx.Err() != nil {
		return
	}
	l.mu.Lock()
	l.connLost()
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
	l.connLost()
	l.conn, l.connLost = context.WithCancel(l.ctx)
	followers := make([]*follower, 0, len(l.followers))
	for _, f := range l.followers {
		followers = append(followers, f)
	}
	l.mu.Unlock()
	// What was republished while the connection was down never reached this Host.
	for _, f := range followers {
		f.look()
	}
	l.logger.Info("jetstream: NATS connection is back", "server", nc.ConnectedUrlRedacted(), "outage", down.Round(time.Millisecond))
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

// names returns the stream's JetStream names (created on first use, not in NATS).
func (l *Log) names(stream string) *jsStream {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.streams[stream]
	if st == nil {
		sum := sha256.Sum256([]byte(stream))
		h := hex.EncodeToString(sum[:16])
		p := strings.ToLower(l.opts.Prefix)
		st = &jsStream{name: l.opts.Prefix + "_" + h, subject: p + ".s." + h, live: p + ".live." + h}
		l.streams[stream] = st
	}
	return st
}

// known returns what the log knows of stream: its names, epoch ("" if unknown) and head.
func (l *Log) known(stream string) (jsStream, bool) {
	st := l.names(stream)
	l.mu.Lock()
	defer l.mu.Unlock()
	return *st, st.epoch != ""
}

// learn records an epoch and a head seen in NATS. A new epoch replaces the head.
func (l *Log) learn(stream, epoch string, head uint64) {
	st := l.names(stream)
	l.mu.Lock()
	defer l.mu.Unlock()
	if st.epoch != epoch {
		st.epoch, st.head = epoch, head
		return
	}
	st.head = max(st.head, head)
}

func (l *Log) forget(stream string) {
	st := l.names(stream)
	l.mu.Lock()
	defer l.mu.Unlock()
	st.epoch, st.head = "", 0
}

func epochOf(info *natsjs.StreamInfo) string {
	if e := info.Config.Metadata[epochKey]; e != "" {
		return e
	}
	// A stream made by something else: its creation time is as stable as it gets.
	return "t" + strconv.FormatInt(info.Created.UnixNano(), 36)
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

// info reads the stream's state from NATS; a stream that does not exist is (nil, nil). The
// handle it returns carries that state (CachedInfo).
func (l *Log) info(ctx context.Context, stream string) (natsjs.Stream, error) {
	st, _ := l.known(stream)
	ctx, cancel := l.request(ctx)
	defer cancel()
	s, err := l.js.Stream(ctx, st.name)
	if errors.Is(err, natsjs.ErrStreamNotFound) {
		l.forget(stream)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	info := s.CachedInfo()
	l.learn(stream, epochOf(info), info.State.LastSeq)
	return s, nil
}

// ensure makes the stream exist in JetStream and returns what the log knows of it.
func (l *Log) ensure(ctx context.Context, stream string) (jsStream, error) {
	if st, ok := l.known(stream); ok {
		return st, nil
	}
	st, _ := l.known(stream)
	ctx, cancel := l.request(ctx)
	defer cancel()
	cfg := natsjs.StreamConfig{
		Name:        st.name,
		Description: "Lifeline stream " + wire.Truncate(stream),
		Subjects:    []string{st.subject},
		Storage:     natsjs.FileStorage,
		Retention:   natsjs.LimitsPolicy,
		Discard:     natsjs.DiscardOld,
		MaxMsgs:     int64(l.opts.MaxEvents),
		Replicas:    l.opts.Replicas,
		Duplicates:  2 * time.Minute,
		RePublish:   &natsjs.RePublish{Source: st.subject, Destination: st.live},
		Metadata:    map[string]string{epochKey: newID(8), nameKey: wire.Truncate(stream)},
	}
	s, err := l.js.CreateStream(ctx, cfg)
	if errors.Is(err, natsjs.ErrStreamNameAlreadyInUse) {
		// Another Host made it first: its epoch is the one.
		s, err = l.js.Stream(ctx, st.name)
	}
	if err != nil {
		return jsStream{}, fmt.Errorf("%w: stream %q: %v", ErrUnavailable, wire.Truncate(stream), err)
	}
	info := s.CachedInfo()
	l.learn(stream, epochOf(info), info.State.LastSeq)
	st, _ = l.known(stream)
	return st, nil
}

// Append implements [hostplugin.StreamLog]: the event is stored in JetStream before it is
// returned, and every Host's Follow delivers it. While the stream has no leader (JetStream is
// electing one after a NATS node died) Append keeps trying for the log's Timeout: nothing was
// stored then, so trying again cannot store the event twice. An answer lost on the way (a
// timeout, the connection lost meanwhile) is reported as an error: the event may or may not
// be stored.
func (l *Log) Append(ctx context.Context, stream string, data json.RawMessage) (hostplugin.Event, error) {
	ev, _, err := l.append(ctx, stream, func(uint64) json.RawMessage { return data }, "")
	return ev, err
}

// AppendUnique appends build(seq) as the next event of stream, unless an event with id was
// appended in the last two minutes, by this Host or any other of the fleet. build receives
// the sequence number the event will have. It reports whether this call stored the event:
// false when an event with id was there already (stored by another Host, or by an earlier
// try of this call whose answer was lost).
//
// Several Hosts running the same periodic publisher each call it with the same id for the
// same period (a tick's second): exactly one event per id lands. Because the id makes a
// retry harmless, AppendUnique also tries again, for the log's Timeout, after an answer lost
// with a NATS node and while another Host's append of the same id is in progress.
func (l *Log) AppendUnique(ctx context.Context, stream, id string, build func(seq uint64) json.RawMessage) (hostplugin.Event, bool, error) {
	return l.append(ctx, stream, build, id)
}

// publishRetry is how long append waits before it tries again a publish that found no stream
// leader, or (with an id) lost its answer.
const publishRetry = 100 * time.Millisecond

// JetStream's code for a publish whose message id another publish is storing right now.
const jsErrCodeDuplicateInProcess = 10158

func (l *Log) append(ctx context.Context, stream string, build func(uint64) json.RawMessage, id string) (hostplugin.Event, bool, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	deadline := time.Now().Add(l.opts.Timeout)
	fail := func(err error) (hostplugin.Event, bool, error) {
		return hostplugin.Event{}, false, fmt.Errorf("%w: append to %q: %v", ErrUnavailable, wire.Truncate(stream), err)
	}
	checked := false // whether a missing stream leader was told from a deleted stream
	for refusals := 0; ; {
		st, err := l.ensure(ctx, stream)
		if err != nil {
			return hostplugin.Event{}, false, err
		}
		// Retries are this loop's: it tells a deleted stream from one without a leader.
		popts := []natsjs.PublishOpt{natsjs.WithRetryAttempts(0)}
		if id != "" {
			// The expected last sequence makes build's seq the real one: a Host that missed
			// another's event is refused, reads the head and tries again.
			popts = append(popts, natsjs.WithMsgID(id), natsjs.WithExpectLastSequence(st.head))
		}
		data := build(st.head + 1)
		rctx, cancel := l.requestUntil(ctx, deadline)
		ack, err := l.js.Publish(rctx, st.subject, data, popts...)
		cancel()
		var apiErr *natsjs.APIError
		errors.As(err, &apiErr)
		switch {
		case err == nil && ack.Duplicate:
			return hostplugin.Event{}, false, nil
		case err == nil:
			if ack.Sequence <= st.head && id == "" {
				// Sequences only grow in one stream: this one was recreated.
				if _, err := l.info(ctx, stream); err != nil {
					return fail(err)
				}
			}
			l.learn(stream, st.epoch, ack.Sequence)
			cur, _ := l.known(stream)
			return hostplugin.Event{Epoch: cur.epoch, Seq: ack.Sequence, Data: append(json.RawMessage(nil), data...)}, true, nil
		case errors.Is(err, natsjs.ErrNoStreamResponse):
			// Nobody stored it: the stream is electing a leader, or it was deleted. A deleted
			// stream is told at once by the meta leader; a stream being failed over is not.
			if !checked {
				checked = true
				if l.deleted(ctx, stream) {
					l.forget(stream) // make it again, with a new epoch
					continue
				}
			}
		case apiErr != nil && (apiErr.ErrorCode == natsjs.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == natsjs.JSErrCodeStreamWrongLastSequenceConstant):
			if refusals++; refusals > 4 {
				return fail(err)
			}
			if _, err := l.info(ctx, stream); err != nil {
				return fail(err)
			}
			continue
		case id != "" && (apiErr != nil && apiErr.ErrorCode == jsErrCodeDuplicateInProcess || lostAnswer(ctx, err)):
			// Safe to try again: the id keeps a second copy out.
		default:
			return fail(err)
		}
		if !sleepUntil(ctx, time.Now().Add(publishRetry), deadline) {
			return fail(err)
		}
	}
}

// deleted reports whether NATS says stream does not exist, asking for no longer than a
// healthy cluster takes to answer.
func (l *Log) deleted(ctx context.Context, stream string) bool {
	st, _ := l.known(stream)
	ctx, cancel := l.requestUntil(ctx, time.Now().Add(min(l.opts.Timeout, 250*time.Millisecond)))
	defer cancel()
	_, err := l.js.Stream(ctx, st.name)
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

// Since implements [hostplugin.StreamLog]. It never returns an error: when NATS cannot be read
// it answers a reset to the last head it knew, because a replay it cannot read in full is one
// it cannot vouch for.
func (l *Log) Since(ctx context.Context, stream string, cur hostplugin.Cursor) ([]hostplugin.Event, hostplugin.Cursor, bool, error) {
	degraded := func(err error) ([]hostplugin.Event, hostplugin.Cursor, bool, error) {
		st, _ := l.known(stream)
		if st.epoch == "" {
			st.epoch = l.unborn // never seen: all the page can hold is nothing
		}
		l.logger.Warn("jetstream: cannot read the stream log; resetting the page to the last known head",
			"stream", wire.Truncate(stream), "epoch", st.epoch, "seq", st.head, "err", err)
		return nil, hostplugin.Cursor{Epoch: st.epoch, Seq: st.head}, false, nil
	}
	// A NATS node failing over (a stream leader elected again) takes a few seconds: retry
	// within sinceRetry before settling for a reset.
	var s natsjs.Stream
	var err error
	found := false
	for deadline := time.Now().Add(sinceRetry); ; {
		if !l.nc.IsConnected() {
			err = nats.ErrConnectionReconnecting
		} else if s, err = l.info(ctx, stream); err == nil {
			found = s != nil
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return degraded(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !found {
		return nil, hostplugin.Cursor{Epoch: l.unborn}, false, nil
	}
	info := s.CachedInfo()
	epoch, first, last := epochOf(info), info.State.FirstSeq, info.State.LastSeq
	head := hostplugin.Cursor{Epoch: epoch, Seq: last}
	if cur.Epoch != epoch || cur.Seq > last || cur.Seq+1 < first {
		return nil, head, false, nil
	}
	n := last - cur.Seq
	if n == 0 {
		return nil, head, true, nil
	}
	events, err := l.read(ctx, s, epoch, cur.Seq+1, last)
	if err != nil && !errors.Is(err, errGap) {
		time.Sleep(200 * time.Millisecond)
		events, err = l.read(ctx, s, epoch, cur.Seq+1, last)
	}
	if err != nil {
		if errors.Is(err, errGap) {
			return nil, head, false, nil // the oldest were discarded meanwhile
		}
		return degraded(err)
	}
	return events, head, true, nil
}

// sinceRetry bounds how long Since keeps trying NATS before it answers a reset.
const sinceRetry = 5 * time.Second

var errGap = errors.New("jetstream: the log no longer holds the range")

// readParallel is how many reads of single events read keeps in flight.
const readParallel = 16

// replayBatch is the range length from which read tries a consumer first.
const replayBatch = 32

// consumerWait bounds how long read waits for a consumer to be made before it reads the
// events one by one: made in milliseconds in a healthy cluster, a consumer cannot be made
// while the JetStream meta leader is being elected, and is never answered for when it was
// placed on a NATS node that just died.
const consumerWait = 500 * time.Millisecond

// read returns the events from..to of a JetStream stream, every one of them, or an error.
// A long range is fetched through a consumer of its own; when none can be made at once, and
// for short ranges, the events are read one request each, several at a time, from the
// stream leader, which needs nothing but the stream.
func (l *Log) read(ctx context.Context, s natsjs.Stream, epoch string, from, to uint64) ([]hostplugin.Event, error) {
	if to-from+1 >= replayBatch {
		events, err := l.fetch(ctx, s, epoch, from, to)
		if err == nil || errors.Is(err, errGap) {
			return events, err
		}
	}
	ctx, cancel := l.request(ctx)
	defer cancel()
	out := make([]hostplugin.Event, to-from+1)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(readParallel)
	for seq := from; seq <= to && gctx.Err() == nil; seq++ {
		g.Go(func() error {
			m, err := s.GetMsg(gctx, seq)
			if errors.Is(err, natsjs.ErrMsgNotFound) {
				return errGap
			}
			if err != nil {
				return err
			}
			out[seq-from] = hostplugin.Event{Epoch: epoch, Seq: m.Sequence, Data: m.Data}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err // ended before every read was started
	}
	return out, nil
}

// fetch reads from..to through an ephemeral consumer made for this read and deleted after.
func (l *Log) fetch(ctx context.Context, s natsjs.Stream, epoch string, from, to uint64) ([]hostplugin.Event, error) {
	cctx, cancel := l.requestUntil(ctx, time.Now().Add(min(l.opts.Timeout, consumerWait)))
	c, err := s.CreateConsumer(cctx, natsjs.ConsumerConfig{
		DeliverPolicy:     natsjs.DeliverByStartSequencePolicy,
		OptStartSeq:       from,
		AckPolicy:         natsjs.AckNonePolicy,
		MemoryStorage:     true,
		Replicas:          1,
		InactiveThreshold: time.Minute, // in case the delete below is lost
	})
	cancel()
	if err != nil {
		return nil, err
	}
	defer func() {
		name := c.CachedInfo().Name
		go func() {
			dctx, cancel := l.request(l.ctx)
			defer cancel()
			_ = s.DeleteConsumer(dctx, name)
		}()
	}()
	ctx, cancel = l.request(ctx)
	defer cancel()
	out := make([]hostplugin.Event, 0, to-from+1)
	next := from
	for next <= to {
		batch, err := c.Fetch(int(min(to-next+1, 1024)), natsjs.FetchContext(ctx))
		if err != nil {
			return nil, err
		}
		got := 0
		for m := range batch.Messages() {
			got++
			md, err := m.Metadata()
			if err != nil {
				return nil, err
			}
			if md.Sequence.Stream != next {
				return nil, errGap
			}
			out = append(out, hostplugin.Event{Epoch: epoch, Seq: next, Data: append(json.RawMessage(nil), m.Data()...)})
			if next++; next > to {
				break
			}
		}
		if err := batch.Error(); err != nil && next <= to {
			return nil, err
		}
		if got == 0 {
			return nil, fmt.Errorf("jetstream: replay of %s stalled at %d", s.CachedInfo().Config.Name, next)
		}
	}
	return out, nil
}

// newID returns n random bytes in hex.
func newID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}
