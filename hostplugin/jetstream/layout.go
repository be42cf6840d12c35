//go:build !js

package jetstream

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// The headers every event carries: its stream's epoch and its Lifeline seq. JetStream numbers
// the messages of a shard, not of a subject, so the Lifeline seq is the log's own.
const (
	EpochHeader = "Lifeline-Epoch"
	SeqHeader   = "Lifeline-Seq"

	epochHeader = EpochHeader
	seqHeader   = SeqHeader
)

// Place returns where a log with opts (nil: the defaults) keeps stream: the JetStream stream
// of its shard and the subject of its events, for operators and their tools (nats stream get
// <shard> --last-for <subject>); each event's Lifeline seq and epoch are in its headers.
func Place(opts *Options, stream string) (shard, subject string) {
	o, _ := withDefaults(opts)
	ly := layoutOf(o)
	pl := ly.place(stream)
	return ly.shardName(pl.shard), pl.subject
}

// layoutOf is the layout of options with their defaults applied.
func layoutOf(o Options) layout {
	return layout{prefix: o.Prefix, subj: strings.ToLower(o.Prefix), shards: o.Shards}
}

// Metadata of a shard stream, for the layout check at Connect and for operators.
const (
	layoutKey = "lifeline_layout" // layoutVersion
	shardsKey = "lifeline_shards" // how many shards the layout has
	shardKey  = "lifeline_shard"  // which one this is
)

// layoutVersion names the layout of this package: shards with a subject per stream.
const layoutVersion = "shards-1"

// layout names the JetStream streams and subjects of a log.
type layout struct {
	prefix string // Options.Prefix: stream names
	subj   string // the prefix lowercased: subjects
	shards int
}

// placement is where one Lifeline stream lives.
type placement struct {
	shard   int
	hash    string // 32 hex digits of the name's SHA-256, as the previous layout named its streams
	subject string // where its events are stored: <prefix>.ev.<shard>.<hash>
	live    string // where the shard republishes them once stored: <prefix>.live.<shard>.<hash>
}

func (ly layout) place(stream string) placement {
	sum := sha256.Sum256([]byte(stream))
	return ly.placeHash(hex.EncodeToString(sum[:16]))
}

// placeHash places the stream whose name hashes to hash (32 hex digits).
func (ly layout) placeHash(hash string) placement {
	top, _ := hex.DecodeString(hash[:16])
	shard := int(binary.BigEndian.Uint64(top) % uint64(ly.shards))
	return placement{
		shard:   shard,
		hash:    hash,
		subject: fmt.Sprintf("%s.ev.%d.%s", ly.subj, shard, hash),
		live:    fmt.Sprintf("%s.live.%d.%s", ly.subj, shard, hash),
	}
}

// shardName is the JetStream stream of shard i.
func (ly layout) shardName(i int) string { return fmt.Sprintf("%s_SHARD_%d", ly.prefix, i) }

// shardOf returns the shard a JetStream stream name is, or -1.
func (ly layout) shardOf(name string) int {
	n, ok := strings.CutPrefix(name, ly.prefix+"_SHARD_")
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(n)
	if err != nil || i < 0 {
		return -1
	}
	return i
}

// republish is the RePublish of shard i: every stored event, headers and data, to its live
// subject, where the Follows of every Host listen through plain subscriptions.
func (ly layout) republish(i int) *natsjs.RePublish {
	return &natsjs.RePublish{
		Source:      fmt.Sprintf("%s.ev.%d.*", ly.subj, i),
		Destination: fmt.Sprintf("%s.live.%d.{{wildcard(1)}}", ly.subj, i),
	}
}

// shardConfig is the configuration of shard i that the log's options ask for.
func (l *Log) shardConfig(i int) natsjs.StreamConfig {
	ly, o := l.layout, l.opts
	return natsjs.StreamConfig{
		Name:              ly.shardName(i),
		Description:       fmt.Sprintf("Lifeline stream log, shard %d of %d: a subject per Lifeline stream", i, ly.shards),
		Subjects:          []string{fmt.Sprintf("%s.ev.%d.*", ly.subj, i)},
		Storage:           natsjs.FileStorage,
		Retention:         natsjs.LimitsPolicy,
		Discard:           natsjs.DiscardOld,
		MaxMsgsPerSubject: int64(o.MaxEvents),
		MaxAge:            max(o.MaxAge, 0),
		Replicas:          o.Replicas,
		Duplicates:        dedup(o.MaxAge),
		AllowDirect:       true,
		RePublish:         ly.republish(i),
		Metadata: map[string]string{
			layoutKey: layoutVersion,
			shardsKey: strconv.Itoa(ly.shards),
			shardKey:  strconv.Itoa(i),
		},
	}
}

// dedupWindow is how long an AppendUnique id is remembered.
const dedupWindow = 2 * time.Minute

// dedup is the shards' Duplicates window: JetStream keeps it within MaxAge.
func dedup(maxAge time.Duration) time.Duration {
	if maxAge > 0 {
		return min(dedupWindow, maxAge)
	}
	return dedupWindow
}

// Errors of the layout check at Connect.
var (
	// ErrOldLayout is returned by Connect when NATS holds streams of the previous layout (one
	// JetStream stream per Lifeline stream) and Options.Migrate is not set.
	ErrOldLayout = errors.New("jetstream: NATS holds the previous layout (a JetStream stream per Lifeline stream)")
	// ErrLayout is returned by Connect when the shards in NATS are not the ones the options
	// describe (another shard count, another layout).
	ErrLayout = errors.New("jetstream: the shards in NATS do not match the options")
)

// setUp checks the layout in NATS and makes every shard exist with the configuration the
// options ask for. It waits for JetStream (a cluster electing its meta leader) up to wait.
func (l *Log) setUp(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := l.setUpOnce()
		var apiErr *natsjs.APIError
		retry := errors.As(err, &apiErr) && apiErr.Code == 503 ||
			errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, natsjs.ErrJetStreamNotEnabled) ||
			errors.Is(err, nats.ErrNoResponders)
		if err == nil || !retry || time.Now().After(deadline) {
			return err
		}
		l.logger.Info("jetstream: waiting for JetStream to answer", "err", err)
		time.Sleep(250 * time.Millisecond)
	}
}

func (l *Log) setUpOnce() error {
	ctx, cancel := context.WithTimeout(l.ctx, l.opts.Timeout)
	defer cancel()
	old, err := l.oldStreams(ctx)
	if err != nil {
		return err
	}
	if len(old) > 0 {
		if !l.opts.Migrate {
			return fmt.Errorf("%w: %d streams such as %s on subjects %s.s.*: stop every Host, then start one with Options.Migrate (cmd/host: -nats-migrate) to copy their events into the shards, epochs and seqs kept",
				ErrOldLayout, len(old), old[0], l.layout.subj)
		}
	}
	if err := l.checkShards(ctx); err != nil {
		return err
	}
	for i := range l.layout.shards {
		if err := l.makeShard(ctx, i); err != nil {
			return err
		}
	}
	if len(old) > 0 {
		return l.migrate(old)
	}
	return nil
}

// oldStreams lists the streams of the previous layout under this prefix.
func (l *Log) oldStreams(ctx context.Context) ([]string, error) {
	var names []string
	list := l.js.StreamNames(ctx, natsjs.WithStreamListSubject(l.layout.subj+".s.*"))
	for name := range list.Name() {
		names = append(names, name)
	}
	if err := list.Err(); err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// checkShards refuses a layout in NATS that another shard count, or another layout, made:
// a stream's shard is its hash modulo the count, so Hosts that disagree on it would not
// find each other's events.
func (l *Log) checkShards(ctx context.Context) error {
	list := l.js.ListStreams(ctx, natsjs.WithStreamListSubject(l.layout.subj+".ev.>"))
	var bad []string
	for info := range list.Info() {
		md := info.Config.Metadata
		i := l.layout.shardOf(info.Config.Name)
		if i < 0 || i >= l.layout.shards || md[layoutKey] != layoutVersion || md[shardsKey] != strconv.Itoa(l.layout.shards) {
			bad = append(bad, fmt.Sprintf("%s (layout %q, shards %q)", info.Config.Name, md[layoutKey], md[shardsKey]))
		}
	}
	if err := list.Err(); err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: want %d shards of layout %s, found %s: every Host of a fleet must use the same Shards, and changing it needs a new Prefix",
			ErrLayout, l.layout.shards, layoutVersion, strings.Join(bad, ", "))
	}
	return nil
}

// makeShard creates shard i, or updates it to the options' configuration when it differs.
func (l *Log) makeShard(ctx context.Context, i int) error {
	want := l.shardConfig(i)
	s, err := l.js.CreateStream(ctx, want)
	if errors.Is(err, natsjs.ErrStreamNameAlreadyInUse) {
		if s, err = l.js.Stream(ctx, want.Name); err == nil && !sameShard(s.CachedInfo().Config, want) {
			s, err = l.js.UpdateStream(ctx, want)
			if err == nil {
				l.logger.Info("jetstream: updated a shard to this Host's options", "stream", want.Name,
					"maxEvents", want.MaxMsgsPerSubject, "maxAge", want.MaxAge, "replicas", want.Replicas)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("jetstream: shard %s: %w", want.Name, err)
	}
	l.setShard(i, s)
	return nil
}

// sameShard reports whether a shard's configuration is the one wanted, in what the log
// sets.
func sameShard(have, want natsjs.StreamConfig) bool {
	return servesFollow(have, want) && have.MaxMsgsPerSubject == want.MaxMsgsPerSubject &&
		have.MaxAge == want.MaxAge && have.Replicas == want.Replicas && have.Duplicates == want.Duplicates
}

// servesFollow reports whether a shard has what Append, Since and Follow rely on: its
// subjects, direct gets and the RePublish to the live subjects.
func servesFollow(have, want natsjs.StreamConfig) bool {
	rp := have.RePublish
	return slices.Equal(have.Subjects, want.Subjects) && have.AllowDirect &&
		rp != nil && *rp == *want.RePublish
}

// repairShard gives shard i back what Follow relies on, when something else took it away
// (an operator's update, a stream made again by hand). Limits are left as they are: Hosts
// with other options would otherwise undo each other's updates forever.
func (l *Log) repairShard(ctx context.Context, i int) {
	want := l.shardConfig(i)
	ctx, cancel := l.request(ctx)
	defer cancel()
	s, err := l.js.Stream(ctx, want.Name)
	if errors.Is(err, natsjs.ErrStreamNotFound) {
		if err = l.makeShard(ctx, i); err == nil {
			l.logger.Warn("jetstream: a shard was missing; made it again (its streams start new epochs)", "stream", want.Name)
			return
		}
	}
	if err != nil {
		l.logger.Warn("jetstream: cannot read a shard's configuration", "stream", want.Name, "err", err)
		return
	}
	have := s.CachedInfo().Config
	if servesFollow(have, want) {
		l.setShard(i, s)
		return
	}
	fix := have
	fix.Subjects, fix.AllowDirect, fix.RePublish = want.Subjects, true, want.RePublish
	if s, err = l.js.UpdateStream(ctx, fix); err != nil {
		l.logger.Warn("jetstream: cannot give a shard back its subjects, direct gets and RePublish; live delivery waits for the streams' next events", "stream", want.Name, "err", err)
		return
	}
	l.setShard(i, s)
	l.logger.Info("jetstream: gave a shard back its subjects, direct gets and RePublish", "stream", want.Name)
}

func (l *Log) setShard(i int, s natsjs.Stream) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.shards[i] = s
}

// shard returns the handle of shard i, for direct gets.
func (l *Log) shard(i int) natsjs.Stream {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.shards[i]
}
