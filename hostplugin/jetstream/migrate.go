//go:build !js

package jetstream

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"
)

// Metadata of a stream of the previous layout (one JetStream stream per Lifeline stream).
const (
	oldEpochKey = "lifeline_epoch"
	oldNameKey  = "lifeline_stream"
)

// oldName is a stream of the previous layout: <Prefix>_<32 hex digits of the name's SHA-256>,
// the hash this layout places the stream by.
var oldName = regexp.MustCompile(`_([0-9a-f]{32})$`)

// migrateParallel is how many streams of the previous layout are copied at once.
const migrateParallel = 8

// migrate copies every stream of the previous layout into its shard, with its epoch and its
// seqs (a JetStream stream's own sequence there), so that pages resume by the cursors they
// hold; then it deletes it. A stream copied in part (a Host that stopped during the copy) is
// copied on from where it stopped; one whose subject already holds events of another epoch
// (written by a Host of this layout) is left as it is.
func (l *Log) migrate(old []string) error {
	started := time.Now()
	l.logger.Warn("jetstream: copying the streams of the previous layout into the shards", "streams", len(old))
	g, ctx := errgroup.WithContext(l.ctx)
	g.SetLimit(migrateParallel)
	for _, name := range old {
		g.Go(func() error { return l.migrateOne(ctx, name) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	l.logger.Warn("jetstream: the previous layout is migrated", "streams", len(old), "took", time.Since(started).Round(time.Millisecond))
	return nil
}

func (l *Log) migrateOne(ctx context.Context, name string) error {
	fail := func(err error) error { return fmt.Errorf("jetstream: migrating stream %s: %w", name, err) }
	m := oldName.FindStringSubmatch(name)
	if m == nil {
		return fail(errors.New("not named <Prefix>_<hash>"))
	}
	rctx, cancel := l.request(ctx)
	s, err := l.js.Stream(rctx, name)
	cancel()
	if err != nil {
		return fail(err)
	}
	info := s.CachedInfo()
	epoch := info.Config.Metadata[oldEpochKey]
	if epoch == "" {
		epoch = "t" + strconv.FormatInt(info.Created.UnixNano(), 36) // as the previous layout read it
	}
	pl := l.layout.placeHash(m[1])
	h, err := l.leaderHead(ctx, pl)
	if err != nil {
		return fail(err)
	}
	from, expect := info.State.FirstSeq, uint64(0)
	switch {
	case h == nil:
	case h.epoch == epoch:
		from, expect = h.seq+1, h.jseq
	default:
		l.logger.Warn("jetstream: not migrating a stream the shards hold events of already", "stream", name,
			"lifeline", info.Config.Metadata[oldNameKey], "epoch", h.epoch)
		from = info.State.LastSeq + 1
	}
	if from <= info.State.LastSeq && info.State.Msgs > 0 {
		cons, err := s.OrderedConsumer(ctx, natsjs.OrderedConsumerConfig{DeliverPolicy: natsjs.DeliverByStartSequencePolicy, OptStartSeq: from})
		if err != nil {
			return fail(err)
		}
		for next := from; next <= info.State.LastSeq; {
			batch, err := cons.Fetch(readBatch, natsjs.FetchMaxWait(l.opts.Timeout))
			if err != nil {
				return fail(err)
			}
			got := 0
			for msg := range batch.Messages() {
				md, err := msg.Metadata()
				if err != nil {
					return fail(err)
				}
				if expect, err = l.copyOld(ctx, pl, epoch, md.Sequence.Stream, expect, msg.Data()); err != nil {
					return fail(err)
				}
				next = md.Sequence.Stream + 1
				got++
			}
			if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
				return fail(err)
			}
			if got == 0 {
				return fail(fmt.Errorf("reading stopped at seq %d of %d", next, info.State.LastSeq))
			}
		}
	}
	rctx, cancel = l.request(ctx)
	defer cancel()
	if err := l.js.DeleteStream(rctx, name); err != nil && !errors.Is(err, natsjs.ErrStreamNotFound) {
		return fail(err)
	}
	return nil
}

// copyOld stores one event of the previous layout in its shard, after the event at shard
// seq expect, and returns its shard seq.
func (l *Log) copyOld(ctx context.Context, pl placement, epoch string, seq, expect uint64, data []byte) (uint64, error) {
	msg := &nats.Msg{Subject: pl.subject, Header: nats.Header{}, Data: data}
	msg.Header.Set(epochHeader, epoch)
	msg.Header.Set(seqHeader, strconv.FormatUint(seq, 10))
	rctx, cancel := l.request(ctx)
	defer cancel()
	ack, err := l.js.PublishMsg(rctx, msg, natsjs.WithExpectLastSequencePerSubject(expect))
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}
