//go:build !js

package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/lifeline-go/lifeline/hostplugin"
)

// stored is one event as JetStream holds it: at shard sequence jseq.
type stored struct {
	jseq  uint64
	epoch string
	seq   uint64
	data  []byte
}

func (s stored) event() hostplugin.Event {
	return hostplugin.Event{Epoch: s.epoch, Seq: s.seq, Data: s.data}
}

// errForeign is a message on a stream's subject that this package did not write.
var errForeign = errors.New("jetstream: a message without the Lifeline-Epoch and Lifeline-Seq headers")

// parseStored reads an event from a message of a shard.
func parseStored(jseq uint64, h nats.Header, data []byte) (stored, error) {
	epoch := h.Get(epochHeader)
	seq, err := strconv.ParseUint(h.Get(seqHeader), 10, 64)
	if epoch == "" || err != nil || seq == 0 {
		return stored{}, fmt.Errorf("%w at shard seq %d", errForeign, jseq)
	}
	return stored{jseq: jseq, epoch: epoch, seq: seq, data: data}, nil
}

func parseRaw(m *natsjs.RawStreamMsg) (stored, error) {
	return parseStored(m.Sequence, m.Header, m.Data)
}

// head reads the newest event of a stream through a direct get (answered by the nearest
// replica); nil when the stream holds none.
func (l *Log) head(ctx context.Context, pl placement) (*stored, error) {
	ctx, cancel := l.request(ctx)
	defer cancel()
	m, err := l.shard(pl.shard).GetLastMsgForSubject(ctx, pl.subject)
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s, err := parseRaw(m)
	return &s, err
}

// leaderHead reads the newest event of a stream from the shard's leader. A replica answers
// direct gets from what it has applied, a moment behind the leader: where that moment
// matters (a refused append, a cursor ahead of the head read), the leader says.
func (l *Log) leaderHead(ctx context.Context, pl placement) (*stored, error) {
	ctx, cancel := l.request(ctx)
	defer cancel()
	m, err := l.jsLeader.GetLastMsg(l.layout.shardName(pl.shard), pl.subject, nats.Context(ctx))
	if errors.Is(err, nats.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s, err := parseStored(m.Sequence, m.Header, m.Data)
	return &s, err
}

// nextFrom reads the first event of a stream at or after shard sequence jseq; nil if none.
func (l *Log) nextFrom(ctx context.Context, pl placement, jseq uint64) (*stored, error) {
	m, err := l.shard(pl.shard).GetMsg(ctx, max(jseq, 1), natsjs.WithGetMsgSubject(pl.subject))
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s, err := parseRaw(m)
	return &s, err
}

// errGap is a range the log no longer holds in full (discarded by MaxEvents or MaxAge).
var errGap = errors.New("jetstream: the log no longer holds the range")

// locate returns the shard sequence of the event seq of a stream whose head is head, by an
// interpolation search over direct gets (each answers the stream's first event at or after
// a shard sequence): a stream's events are spread over its shard's sequence, so each guess
// lands near. errGap when the stream no longer holds seq.
func (l *Log) locate(ctx context.Context, pl placement, head stored, seq uint64) (uint64, error) {
	if seq == head.seq {
		return head.jseq, nil
	}
	lo, err := l.nextFrom(ctx, pl, 1) // the oldest the stream holds
	if err != nil {
		return 0, err
	}
	if lo == nil || lo.epoch != head.epoch || lo.seq > seq {
		return 0, errGap
	}
	hi := head
	for probe := 0; lo.seq != seq; probe++ {
		if probe > 128 || hi.jseq <= lo.jseq {
			return 0, fmt.Errorf("jetstream: locating seq %d of %s: the stream's seqs do not follow its shard's", seq, pl.subject)
		}
		// Bounds: the event seq lies in (lo.jseq, hi.jseq]. Every other guess bisects, so a
		// stream written in bursts cannot make the interpolation crawl.
		span := hi.jseq - lo.jseq
		step := span / 2
		if probe%2 == 0 {
			step = uint64(float64(span) * float64(seq-lo.seq) / float64(hi.seq-lo.seq))
		}
		guess := lo.jseq + min(max(step, 1), span)
		got, err := l.nextFrom(ctx, pl, guess)
		if err != nil {
			return 0, err
		}
		switch {
		case got == nil || got.epoch != head.epoch:
			return 0, errGap
		case got.seq == seq:
			return got.jseq, nil
		case got.seq < seq:
			lo = got
		default:
			// The stream has nothing in [guess, got.jseq): the event before got, and so
			// seq, lies before guess.
			hi = stored{jseq: guess - 1, epoch: got.epoch, seq: got.seq - 1}
		}
	}
	return lo.jseq, nil
}

// readBatch is how many events one batch direct get asks for.
const readBatch = 256

// readFrom reads up to n events of a stream from shard sequence jseq on, oldest first,
// through batch direct gets (JetStream 2.11): a stream's events are scattered over its shard,
// and the server finds them by its index of subjects.
func (l *Log) readFrom(ctx context.Context, pl placement, jseq uint64, n int) ([]stored, error) {
	ctx, cancel := l.request(ctx)
	defer cancel()
	name := l.layout.shardName(pl.shard)
	out := make([]stored, 0, min(n, readBatch))
	for len(out) < n {
		msgs, err := jetstreamext.GetBatch(ctx, l.js, name, min(n-len(out), readBatch),
			jetstreamext.GetBatchSeq(max(jseq, 1)), jetstreamext.GetBatchSubject(pl.subject))
		if err != nil {
			return nil, err
		}
		got := 0
		for m, err := range msgs {
			if errors.Is(err, jetstreamext.ErrNoMessages) {
				return out, nil
			}
			if err != nil {
				return nil, err
			}
			s, err := parseRaw(m)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
			jseq = s.jseq + 1
			got++
		}
		if got == 0 {
			return out, nil
		}
	}
	return out, nil
}

// range reads the events from..head.seq of a stream, every one of them, or errGap.
func (l *Log) readRange(ctx context.Context, pl placement, head stored, from uint64) ([]stored, error) {
	start, err := l.locate(ctx, pl, head, from)
	if err != nil {
		return nil, err
	}
	n := int(head.seq - from + 1)
	got, err := l.readFrom(ctx, pl, start, n)
	if err != nil {
		return nil, err
	}
	if len(got) < n {
		return nil, errGap
	}
	for i, s := range got[:n] {
		if s.epoch != head.epoch || s.seq != from+uint64(i) {
			return nil, errGap
		}
	}
	return got[:n], nil
}

// lastOf reads the newest event of each of subjects, all of one shard, in batches of
// multi-last direct gets (JetStream 2.11): what a Host re-checks for every stream it follows
// costs a request per headsBatch streams. A subject without events is absent from the answer.
func (l *Log) lastOf(ctx context.Context, shard int, subjects []string) (map[string]stored, error) {
	out := make(map[string]stored, len(subjects))
	name := l.layout.shardName(shard)
	for len(subjects) > 0 {
		chunk := subjects[:min(len(subjects), headsBatch)]
		subjects = subjects[len(chunk):]
		rctx, cancel := l.request(ctx)
		msgs, err := jetstreamext.GetLastMsgsFor(rctx, l.js, name, chunk, jetstreamext.GetLastMsgsBatchSize(len(chunk)))
		if err != nil {
			cancel()
			return nil, err
		}
		for m, err := range msgs {
			if errors.Is(err, jetstreamext.ErrNoMessages) {
				break
			}
			if err != nil {
				cancel()
				return nil, err
			}
			if s, err := parseRaw(m); err == nil {
				out[m.Subject] = s
			}
		}
		cancel()
	}
	return out, nil
}

// headsBatch is how many subjects one multi-last direct get asks for (the server answers
// at most 1024 messages to one).
const headsBatch = 256
