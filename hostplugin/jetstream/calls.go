//go:build !js

package jetstream

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
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

// CallOptions are the optional parts of a [CallStore]. A nil *CallOptions means all defaults.
type CallOptions struct {
	// Bucket names the JetStream KV bucket that holds the outcomes (its stream is KV_<Bucket>).
	// Default: the log's Prefix and "_calls".
	Bucket string
	// Window is how long an outcome is kept from when its run ended: a re-send within it is
	// answered with the outcome, one after it runs again. JetStream counts a message's TTL in
	// whole seconds, so it is rounded up to one. Default: hostplugin.DefaultCallDedup.
	Window time.Duration
	// Lease is how long a claim stands without an outcome when Do's context has no deadline
	// (a Host's has: its callTimeoutMs). Default: hostplugin.DefaultCallTimeout.
	Lease time.Duration
	// MaxOutcomeBytes bounds one stored outcome (JSON, with the claim's fields). The run of an
	// outcome over it ends as its handler said for its own page; the stored outcome, which a
	// re-send gets, says "internal error: the reply is too big". Default: 128 KiB (the Host's
	// largest reply, maxEventBytes, is 64 KiB by default).
	MaxOutcomeBytes int
	// MaxBytes bounds the bucket. A full bucket refuses new claims: a keyed call is then
	// answered busy, never run without its guarantee. Default: 256 MiB.
	MaxBytes int64
	// MaxWaiters bounds the calls of this Host that wait at once for a run another call of
	// their (identity, key) holds; one more is refused with hostplugin.ErrCallStoreFull.
	// Default: 1024.
	MaxWaiters int
}

// Errors of a [CallStore].
var (
	// ErrCallStoreUnavailable wraps the errors of a call store that cannot reach its bucket:
	// the Host answers the call busy and does not run it.
	ErrCallStoreUnavailable = errors.New("jetstream: the call store is unavailable")
)

// epochCheck is how often a CallStore reads its bucket's epoch back, in case it missed the
// JetStream advisory of the bucket being deleted or made again (while disconnected);
// bucketRetry how often it tries to make a bucket it could not make.
const (
	epochCheck  = 5 * time.Second
	bucketRetry = time.Second
)

// errBucketUnusable marks the errors of a bucket no retry makes usable.
var errBucketUnusable = errors.New("jetstream: the call store's bucket cannot serve")

// CallStore is a [hostplugin.CallStore] on a JetStream KV bucket, shared by every Host of a
// fleet that uses the same bucket: a keyed call runs once in the fleet, and a page that
// re-sends it to another Host (its Host was SIGKILLed, drained, restarted) gets the outcome.
//
// Each (identity, key) is one KV key, a hash of both. The first Do claims it with a KV
// Create, which JetStream makes atomic across the fleet, runs the call and stores the outcome
// over its claim (an update on the claim's revision). A Do that finds a claim waits for the
// outcome (a KV watch of that key). If the claim is older than its lease (the claimant's
// call timeout, which it writes into the claim, plus its NATS timeout to store the outcome)
// with no outcome, the claimant's Host died while it ran: the Do stores and returns
// wire.CodeInterrupted over the claim, and the call never runs a second time. If the waiting
// call's own deadline comes first, the run may be going still (a handler past its timeout):
// the Do returns an error wrapping hostplugin.ErrCallRunning (the Host answers timeout) and
// stores nothing. Both writes are conditional on the claim's revision, so the
// claimant's outcome and a waiter's interrupted cannot both be kept. Outcomes expire after
// the window (a per-message TTL): the bucket's config is the same on every Host, and each
// Host's window is its own.
//
// The epoch is written into the bucket's stream metadata by whichever Host makes the bucket,
// and read by every other: all Hosts of the fleet announce the same one, and a bucket deleted
// and made again (losing the outcomes) has a new one. A Host learns of that from JetStream's
// advisories, and reads the epoch back every few seconds in case it missed one; a session
// opened before announced the old epoch for its life.
//
// While NATS cannot be reached Do returns an error and the Host answers the call busy; the
// log's connection is retried and the store recovers with it. The claim's lease is measured
// from the time JetStream stored the claim against the waiting Host's clock: Hosts' clocks
// must be within the log's Timeout of the NATS servers' (NTP keeps them far closer). A clock
// ahead makes a waiter answer interrupted early, never a run twice.
//
// A Host's NATS user needs, besides the log's permissions, to publish to $KV.<Bucket>.>, use
// the JetStream API for the stream KV_<Bucket> and its consumers, and subscribe to
// $JS.EVENT.ADVISORY.STREAM.*.KV_<Bucket>.
//
// Create one with [NewCallStore]; it is safe for concurrent use.
type CallStore struct {
	log     *Log
	opts    CallOptions
	stream  string // KV_<bucket>
	subject string // $KV.<bucket>.: a key's subject, for the writes that need a TTL
	waiters chan struct{}
	window  atomic.Int64 // nanoseconds
	recheck chan struct{}
	advice  *nats.Subscription
	cancel  context.CancelFunc
	done    chan struct{}

	mu    sync.Mutex      // guards the fields below
	kv    natsjs.KeyValue // nil until the bucket is made
	epoch string
}

// callRecord is a KV key's value: a claim, and once its run ended its outcome.
type callRecord struct {
	Claim   string                  `json:"claim"`             // the claimant's id for this run
	Host    string                  `json:"host,omitempty"`    // the claimant's NATS connection name, for operators
	LeaseMs int64                   `json:"leaseMs,omitempty"` // how long the claim stands without an outcome
	Outcome *hostplugin.CallOutcome `json:"outcome,omitempty"` // nil while the call runs
}

// NewCallStore returns the call store on the log's NATS connection, making its bucket if no
// Host has. It keeps trying while ctx lasts (a NATS cluster just started has no JetStream
// leader for a few seconds); if the bucket still cannot be made, the store starts without
// it: Do refuses every call (the Host answers busy, and runs nothing), the epoch is one of
// this store's own (so no page re-sends there what it sent elsewhere), and the bucket is
// made in the background. It fails for a bucket that cannot serve (a name JetStream refuses,
// a bucket made by something else without per-message TTLs). It stops with
// [CallStore.Close], which must come before the log's.
func NewCallStore(ctx context.Context, log *Log, opts *CallOptions) (*CallStore, error) {
	var o CallOptions
	if opts != nil {
		o = *opts
	}
	if o.Bucket == "" {
		o.Bucket = log.opts.Prefix + "_calls"
	}
	if o.Window <= 0 {
		o.Window = hostplugin.DefaultCallDedup
	}
	if o.Lease <= 0 {
		o.Lease = hostplugin.DefaultCallTimeout
	}
	if o.MaxOutcomeBytes <= 0 {
		o.MaxOutcomeBytes = 128 << 10
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 256 << 20
	}
	if o.MaxWaiters <= 0 {
		o.MaxWaiters = 1024
	}
	s := &CallStore{
		log:     log,
		opts:    o,
		stream:  "KV_" + o.Bucket,
		subject: "$KV." + o.Bucket + ".",
		waiters: make(chan struct{}, o.MaxWaiters),
		recheck: make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	s.window.Store(int64(o.Window))
	s.epoch = unbornPrefix + newID(6)
	for {
		err := s.ensure(ctx)
		if err == nil {
			break
		}
		if errors.Is(err, errBucketUnusable) {
			return nil, err
		}
		if !s.pause(ctx) {
			log.logger.Warn("jetstream: the call store's bucket cannot be made yet; keyed calls are refused (busy) until it is",
				"bucket", o.Bucket, "err", err)
			break
		}
	}
	var err error
	s.advice, err = log.nc.Subscribe("$JS.EVENT.ADVISORY.STREAM.*."+s.stream, func(*nats.Msg) { s.poke() })
	if err != nil {
		return nil, fmt.Errorf("%w: bucket %q: subscribing to its advisories: %v", ErrCallStoreUnavailable, o.Bucket, err)
	}
	var watchCtx context.Context
	watchCtx, s.cancel = context.WithCancel(context.Background())
	go s.watchEpoch(watchCtx)
	return s, nil
}

// pause waits before NewCallStore tries to make the bucket again, and reports whether ctx
// lets it.
func (s *CallStore) pause(ctx context.Context) bool {
	t := time.NewTimer(bucketRetry / 4)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Epoch implements [hostplugin.CallStore]: the bucket's, or this store's own while it has
// not made the bucket (see [NewCallStore]).
func (s *CallStore) Epoch() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch
}

// Window implements [hostplugin.CallStore]: the window of the outcomes this Host stores.
// Every Host of a fleet should have the same one: a page takes the smaller of the Host it
// sent a call to and the Host it sends it to again.
func (s *CallStore) Window() time.Duration { return time.Duration(s.window.Load()) }

// SetWindow changes the window of the outcomes this Host stores from now on (a config
// reload); those stored keep theirs.
func (s *CallStore) SetWindow(window time.Duration) {
	if window > 0 {
		s.window.Store(int64(window))
	}
}

// Close stops following the bucket's epoch. Calls still in Do finish as they would.
func (s *CallStore) Close() error {
	s.cancel()
	<-s.done
	_ = s.advice.Unsubscribe() // fails only on a connection closed already, which unsubscribed it
	return nil
}

func (s *CallStore) logger() *slog.Logger { return s.log.logger }

// request bounds one request to NATS by the log's Timeout.
func (s *CallStore) request(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.log.opts.Timeout)
}

func (s *CallStore) unavailable(what string, err error) error {
	return fmt.Errorf("%w: bucket %q: %s: %v", ErrCallStoreUnavailable, s.opts.Bucket, what, err)
}

// ensure makes the bucket, or binds to the one another Host made, and reads its epoch.
func (s *CallStore) ensure(ctx context.Context) error {
	ctx, cancel := s.request(ctx)
	defer cancel()
	js := s.log.js
	kv, err := js.CreateKeyValue(ctx, natsjs.KeyValueConfig{
		Bucket:       s.opts.Bucket,
		Description:  "Lifeline: the outcomes of keyed calls",
		MaxValueSize: int32(min(s.opts.MaxOutcomeBytes, 1<<31-1)),
		History:      1,
		MaxBytes:     s.opts.MaxBytes,
		Storage:      natsjs.FileStorage,
		Replicas:     s.log.opts.Replicas,
		// Per-message TTLs (each Host's window) need it; the marker itself is not used.
		LimitMarkerTTL: time.Second,
		Metadata:       map[string]string{bucketEpochKey: newID(8)},
	})
	if errors.Is(err, natsjs.ErrBucketExists) {
		// Another Host made it first (its epoch is the one), or it is an older bucket whose
		// config differs: its own config stands.
		kv, err = js.KeyValue(ctx, s.opts.Bucket)
	}
	if errors.Is(err, natsjs.ErrInvalidBucketName) {
		return fmt.Errorf("%w: bucket name %q: JetStream takes letters, digits, - and _", errBucketUnusable, s.opts.Bucket)
	}
	if err != nil {
		return s.unavailable("making it", err)
	}
	st, err := js.Stream(ctx, s.stream)
	if err != nil {
		return s.unavailable("reading its stream", err)
	}
	info := st.CachedInfo()
	if !info.Config.AllowMsgTTL {
		return fmt.Errorf("%w: bucket %q does not allow per-message TTLs (made by something else?): delete it, and the Hosts make it again", errBucketUnusable, s.opts.Bucket)
	}
	s.learn(kv, bucketEpoch(info))
	return nil
}

// bucketEpochKey is the bucket's stream metadata key holding the store's epoch: written once,
// by whichever Host makes the bucket, and read by every Host, so the fleet announces one
// epoch, and a bucket made again is a new one.
const bucketEpochKey = "lifeline_epoch"

// bucketEpoch is the store's epoch as the bucket's stream info says it.
func bucketEpoch(info *natsjs.StreamInfo) string {
	if e := info.Config.Metadata[bucketEpochKey]; e != "" {
		return e
	}
	// A bucket made by something else: its creation time is as stable as it gets.
	return "t" + strconv.FormatInt(info.Created.UnixNano(), 36)
}

// learn records the bucket's epoch as read from NATS.
func (s *CallStore) learn(kv natsjs.KeyValue, epoch string) {
	s.mu.Lock()
	old, had := s.epoch, s.kv != nil
	s.kv, s.epoch = kv, epoch
	s.mu.Unlock()
	switch {
	case !had && strings.HasPrefix(old, unbornPrefix):
		s.logger().Info("jetstream: the call store's bucket is ready", "bucket", s.opts.Bucket, "epoch", epoch)
	case old != epoch:
		s.logger().Warn("jetstream: the call store's bucket was made again: keyed calls sent before are not re-sent to this Host",
			"bucket", s.opts.Bucket, "epoch", epoch, "was", old)
	}
}

func (s *CallStore) bucket() natsjs.KeyValue {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kv
}

// poke asks watchEpoch to read the epoch back now.
func (s *CallStore) poke() {
	select {
	case s.recheck <- struct{}{}:
	default:
	}
}

// watchEpoch reads the bucket's epoch back when JetStream says its stream changed, when a
// call found it missing, and every epochCheck; a bucket deleted is made again.
func (s *CallStore) watchEpoch(ctx context.Context) {
	defer close(s.done)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		next := epochCheck
		if s.bucket() == nil {
			next = bucketRetry
		}
		t.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.recheck:
		}
		if !s.log.nc.IsConnected() {
			continue
		}
		rctx, cancel := s.request(ctx)
		st, err := s.log.js.Stream(rctx, s.stream)
		cancel()
		switch {
		case s.bucket() == nil || errors.Is(err, natsjs.ErrStreamNotFound):
			if err := s.ensure(ctx); err != nil && ctx.Err() == nil {
				s.logger().Error("jetstream: the call store's bucket cannot be made; keyed calls are refused (busy)", "err", err)
			}
		case err == nil:
			s.learn(s.bucket(), bucketEpoch(st.CachedInfo()))
		}
	}
}

// callKey is the KV key of (identity, key): a hash, as KV keys have a small alphabet and
// identities and keys do not.
func callKey(identity, key string) string {
	h := sha256.New()
	h.Write([]byte(strconv.Itoa(len(identity))))
	h.Write([]byte{':'})
	h.Write([]byte(identity))
	h.Write([]byte(key))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// ttl is d as JetStream keeps a message: whole seconds, at least one.
func ttl(d time.Duration) time.Duration {
	return max(time.Second, (d + time.Second - 1).Truncate(time.Second))
}

// lease is how long a claim made now stands without an outcome: until ctx's deadline (the
// run's), and the log's Timeout more to store the outcome.
func (s *CallStore) lease(ctx context.Context) time.Duration {
	l := s.opts.Lease
	if d, ok := ctx.Deadline(); ok {
		l = max(time.Until(d), 0)
	}
	return l + s.log.opts.Timeout
}

// maxTries bounds how often Do goes round when the key changes under it (it expired between
// two reads, or a replica answered a read from behind).
const maxTries = 4

// Do implements [hostplugin.CallStore].
func (s *CallStore) Do(ctx context.Context, identity, key string, run func() hostplugin.CallOutcome) (hostplugin.CallOutcome, error) {
	k := callKey(identity, key)
	claim := callRecord{Claim: newID(8), Host: s.log.opts.Name, LeaseMs: s.lease(ctx).Milliseconds()}
	for range maxTries {
		kv := s.bucket()
		if kv == nil {
			s.poke()
			return hostplugin.CallOutcome{}, fmt.Errorf("%w: bucket %q is not made yet", ErrCallStoreUnavailable, s.opts.Bucket)
		}
		rev, err := s.claim(ctx, kv, k, claim)
		switch {
		case err == nil:
			out := run()
			s.store(ctx, k, rev, claim, out)
			return out, nil
		case !errors.Is(err, natsjs.ErrKeyExists):
			return hostplugin.CallOutcome{}, err
		}
		out, settled, err := s.await(ctx, kv, k)
		if err != nil || settled {
			return out, err
		}
	}
	return hostplugin.CallOutcome{}, fmt.Errorf("%w: bucket %q: key %s changed %d times while this call read it", ErrCallStoreUnavailable, s.opts.Bucket, k, maxTries)
}

// claim makes k claimed by this run. It returns the claim's revision, or an error that is
// natsjs.ErrKeyExists when another run holds k (or held it, within the window).
func (s *CallStore) claim(ctx context.Context, kv natsjs.KeyValue, k string, claim callRecord) (uint64, error) {
	b, _ := json.Marshal(claim)
	rctx, cancel := s.request(ctx)
	defer cancel()
	lease := time.Duration(claim.LeaseMs) * time.Millisecond
	rev, err := kv.Create(rctx, k, b, natsjs.KeyTTL(ttl(time.Duration(s.window.Load())+lease)))
	if err == nil || errors.Is(err, natsjs.ErrKeyExists) {
		return rev, err
	}
	if ctx.Err() != nil {
		return 0, s.unavailable("claiming a call", err)
	}
	if errors.Is(err, natsjs.ErrNoStreamResponse) {
		s.poke() // the bucket may be gone
	}
	// The answer may have been lost with the claim stored: then it is this run's.
	gctx, gcancel := s.request(ctx)
	defer gcancel()
	if e, gerr := kv.Get(gctx, k); gerr == nil {
		if r, err := s.decode(k, e); err == nil && r.Claim == claim.Claim && r.Outcome == nil {
			return e.Revision(), nil
		}
		return 0, natsjs.ErrKeyExists
	}
	return 0, s.unavailable("claiming a call", err)
}

// store writes the outcome of the run that holds claim at rev. It runs after the run's
// deadline too (a handler past its timeout still has an outcome), bounded by the log's
// Timeout. An outcome it cannot store is logged: a re-send of the call is answered
// interrupted once the claim's lease is over.
func (s *CallStore) store(ctx context.Context, k string, rev uint64, claim callRecord, out hostplugin.CallOutcome) {
	rec := callRecord{Claim: claim.Claim, Host: claim.Host, Outcome: &out}
	b, _ := json.Marshal(rec)
	if len(b) > s.opts.MaxOutcomeBytes {
		s.logger().Error("jetstream: a call's outcome is over the call store's MaxOutcomeBytes; a re-send is told internal error",
			"bytes", len(b), "maxOutcomeBytes", s.opts.MaxOutcomeBytes)
		rec.Outcome = &hostplugin.CallOutcome{Code: wire.CodeInternal, Message: "internal error: the reply is too big for the call dedup store"}
		b, _ = json.Marshal(rec)
	}
	rctx, cancel := s.request(context.WithoutCancel(ctx))
	defer cancel()
	err := s.update(rctx, k, rev, b)
	switch {
	case err == nil:
	case wrongLastSeq(err):
		s.logger().Warn("jetstream: a call ran past its lease and another Host answered its re-send interrupted",
			"bucket", s.opts.Bucket, "key", k, "lease", time.Duration(claim.LeaseMs)*time.Millisecond)
	default:
		s.logger().Error("jetstream: a call's outcome could not be stored; a re-send is answered interrupted after its lease",
			"bucket", s.opts.Bucket, "key", k, "err", err)
	}
}

// update writes b over revision rev of k, with the window's TTL (KV's Update keeps none).
func (s *CallStore) update(ctx context.Context, k string, rev uint64, b []byte) error {
	_, err := s.log.js.PublishMsg(ctx, &nats.Msg{Subject: s.subject + k, Data: b},
		natsjs.WithExpectLastSequencePerSubject(rev), natsjs.WithMsgTTL(ttl(time.Duration(s.window.Load()))))
	return err
}

// await waits for the outcome of the run that holds k and returns it (settled), or
// settled=false when k changed meanwhile (it expired and may be claimed again, or another
// run claimed it): Do goes round.
func (s *CallStore) await(ctx context.Context, kv natsjs.KeyValue, k string) (out hostplugin.CallOutcome, settled bool, err error) {
	rctx, cancel := s.request(ctx)
	e, err := kv.Get(rctx, k)
	cancel()
	switch {
	case errors.Is(err, natsjs.ErrKeyNotFound) || errors.Is(err, natsjs.ErrKeyDeleted):
		return out, false, nil
	case err != nil:
		return out, false, s.unavailable("reading a call's outcome", err)
	}
	r, err := s.decode(k, e)
	if err != nil {
		return out, false, err
	}
	if r.Outcome != nil {
		return *r.Outcome, true, nil
	}
	// The wait ends with the lease, or with this call's own deadline. Only the lease's end
	// says the claimant's Host is gone (its run would have stored an outcome by then); at this
	// call's own deadline the run may well be going still (a handler past its timeout), and
	// this call is told so: nothing is stored, and the claimant's outcome stands.
	lease := e.Created().Add(time.Duration(r.LeaseMs) * time.Millisecond)
	end, own := lease, false
	if d, ok := ctx.Deadline(); ok && d.Before(end) {
		end, own = d, true
	}
	if time.Now().Before(end) {
		select {
		case s.waiters <- struct{}{}:
		default:
			return out, false, fmt.Errorf("%w: %d calls of this Host wait for other runs already", hostplugin.ErrCallStoreFull, s.opts.MaxWaiters)
		}
		var seen watched
		out, seen, err = s.watch(ctx, kv, k, r.Claim, end)
		<-s.waiters
		switch {
		case err != nil:
			return out, false, err
		case seen == outcomeKnown:
			return out, true, nil
		case seen == keyChanged:
			return out, false, nil
		}
	}
	if own {
		return out, false, fmt.Errorf("%w: bucket %q: key %s, claimed by %q, whose lease runs %v more",
			hostplugin.ErrCallRunning, s.opts.Bucket, k, r.Host, time.Until(lease).Round(time.Millisecond))
	}
	return s.interrupt(context.WithoutCancel(ctx), k, e.Revision(), r)
}

// What [CallStore.watch] saw of a claim.
type watched int

const (
	outcomeKnown watched = iota // the run's outcome (or the claimant's Host's end) is known
	claimStands                 // without an outcome at the lease's end
	keyChanged                  // the key holds another claim: it expired, and was claimed again
)

// watch waits until end (at the latest ctx's deadline) for the outcome of the run that
// claimed k as claim. ctx cancelled (its Host closing) is an error.
func (s *CallStore) watch(ctx context.Context, kv natsjs.KeyValue, k, claim string, end time.Time) (hostplugin.CallOutcome, watched, error) {
	var none hostplugin.CallOutcome
	wctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	over := func() bool { return !errors.Is(ctx.Err(), context.Canceled) && wctx.Err() != nil }
	w, err := kv.Watch(wctx, k)
	if err != nil {
		if over() {
			return none, claimStands, nil
		}
		return none, 0, s.unavailable("watching a call's outcome", err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-wctx.Done():
			if !over() {
				return none, 0, s.unavailable("waiting for a call's outcome", context.Cause(ctx))
			}
			return none, claimStands, nil
		case e, ok := <-w.Updates():
			switch {
			case !ok:
				return none, 0, s.unavailable("watching a call's outcome", nats.ErrConnectionClosed)
			case e == nil: // the watch's initial values are all delivered
				continue
			case e.Operation() != natsjs.KeyValuePut:
				// Deleted or purged under the call (by an operator): no outcome can be vouched for.
				return hostplugin.CallOutcome{Code: wire.CodeInterrupted, Message: "the call's record was deleted from the dedup store"}, outcomeKnown, nil
			}
			r, err := s.decode(k, e)
			switch {
			case err != nil:
				return none, 0, err
			case r.Claim != claim:
				return none, keyChanged, nil
			case r.Outcome != nil:
				return *r.Outcome, outcomeKnown, nil
			}
		}
	}
}

// interrupt answers the claim at rev, whose lease is over without an outcome, with
// wire.CodeInterrupted, for every re-send within the window. If the claimant (or another
// waiter) stored an outcome first, Do goes round and reads it.
func (s *CallStore) interrupt(ctx context.Context, k string, rev uint64, claim callRecord) (hostplugin.CallOutcome, bool, error) {
	out := hostplugin.CallOutcome{Code: wire.CodeInterrupted, Message: "the Host running this call stopped before it had an outcome"}
	b, _ := json.Marshal(callRecord{Claim: claim.Claim, Host: claim.Host, Outcome: &out})
	rctx, cancel := s.request(ctx)
	defer cancel()
	err := s.update(rctx, k, rev, b)
	switch {
	case err == nil:
		s.logger().Warn("jetstream: a keyed call's Host stopped while it ran; its re-send is answered interrupted",
			"bucket", s.opts.Bucket, "key", k, "host", claim.Host)
		return out, true, nil
	case wrongLastSeq(err):
		return hostplugin.CallOutcome{}, false, nil
	}
	return hostplugin.CallOutcome{}, false, s.unavailable("answering a call interrupted", err)
}

// sessionRecord is a session's KV value: the highest id of its calls that started, and
// whether its page fenced it. Start and Fence write it only over the revision they read, so
// no call starts after a fence and the fence knows every call that started before it.
type sessionRecord struct {
	Started uint64 `json:"started,omitempty"`
	Fenced  bool   `json:"fenced,omitempty"`
	Host    string `json:"host,omitempty"` // the last writer's NATS connection name, for operators
}

// sessionKey is the KV key of a session's record: a hash, like callKey's, in a space of its
// own ("s." never begins a callKey).
func sessionKey(session string) string {
	h := sha256.Sum256([]byte("session:" + session))
	return "s." + base64.RawURLEncoding.EncodeToString(h[:])
}

// Start implements [hostplugin.CallStore]: one read and one conditional write per call.
func (s *CallStore) Start(ctx context.Context, session string, id uint64) error {
	_, err := s.session(ctx, session, func(r *sessionRecord) error {
		if r.Fenced {
			return hostplugin.ErrSessionFenced
		}
		r.Started = max(r.Started, id)
		return nil
	})
	return err
}

// Fence implements [hostplugin.CallStore].
func (s *CallStore) Fence(ctx context.Context, session string) (uint64, error) {
	r, err := s.session(ctx, session, func(r *sessionRecord) error {
		r.Fenced = true
		return nil
	})
	return r.Started, err
}

// session reads session's record, lets change decide on it (an error refuses), and writes it
// back over the revision it read, with the window's TTL, trying again when another write came
// first. It returns the record written.
func (s *CallStore) session(ctx context.Context, session string, change func(*sessionRecord) error) (sessionRecord, error) {
	k := sessionKey(session)
	for range maxTries {
		kv := s.bucket()
		if kv == nil {
			s.poke()
			return sessionRecord{}, fmt.Errorf("%w: bucket %q is not made yet", ErrCallStoreUnavailable, s.opts.Bucket)
		}
		var r sessionRecord
		var rev uint64
		rctx, cancel := s.request(ctx)
		e, err := kv.Get(rctx, k)
		cancel()
		switch {
		case errors.Is(err, natsjs.ErrKeyNotFound) || errors.Is(err, natsjs.ErrKeyDeleted):
		case err != nil:
			return r, s.unavailable("reading a session's record", err)
		case json.Unmarshal(e.Value(), &r) != nil:
			return r, fmt.Errorf("jetstream: bucket %q: key %s holds %.64q, not a session's record", s.opts.Bucket, k, e.Value())
		default:
			rev = e.Revision()
		}
		if err := change(&r); err != nil {
			return r, err
		}
		r.Host = s.log.opts.Name
		b, _ := json.Marshal(r)
		keep := ttl(hostplugin.SessionRecordTTL(time.Duration(s.window.Load()), r.Fenced))
		wctx, cancel := s.request(ctx)
		if rev == 0 {
			_, err = kv.Create(wctx, k, b, natsjs.KeyTTL(keep))
		} else {
			_, err = s.log.js.PublishMsg(wctx, &nats.Msg{Subject: s.subject + k, Data: b},
				natsjs.WithExpectLastSequencePerSubject(rev), natsjs.WithMsgTTL(keep))
		}
		cancel()
		switch {
		case err == nil:
			return r, nil
		case errors.Is(err, natsjs.ErrKeyExists) || wrongLastSeq(err):
			continue // another write came first: read it
		}
		// The answer may have been lost with the write stored: then it stands.
		gctx, gcancel := s.request(ctx)
		e, gerr := kv.Get(gctx, k)
		gcancel()
		if gerr == nil && string(e.Value()) == string(b) {
			return r, nil
		}
		return r, s.unavailable("writing a session's record", err)
	}
	return sessionRecord{}, fmt.Errorf("%w: bucket %q: key %s changed %d times while this call read it", ErrCallStoreUnavailable, s.opts.Bucket, k, maxTries)
}

// decode reads the record e of k.
func (s *CallStore) decode(k string, e natsjs.KeyValueEntry) (callRecord, error) {
	var r callRecord
	if json.Unmarshal(e.Value(), &r) != nil || r.Claim == "" {
		return r, fmt.Errorf("jetstream: bucket %q: key %s holds %.64q, not a call's record", s.opts.Bucket, k, e.Value())
	}
	return r, nil
}

// wrongLastSeq reports whether a write was refused because the key had changed since the
// revision it named (JetStream's code differs between replicated and single streams).
func wrongLastSeq(err error) bool {
	var apiErr *natsjs.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == natsjs.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == natsjs.JSErrCodeStreamWrongLastSequenceConstant)
}
