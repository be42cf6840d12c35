//go:build !js

package jetstream

// UnbornPrefix begins the epoch of a stream that holds no event.
const UnbornPrefix = unbornPrefix

// DropCopies makes l lose the live copies for which drop returns true, as a copy lost on the
// way (with a NATS node, or its connection) is; nil loses none.
func DropCopies(l *Log, drop func(subject string) bool) {
	if drop == nil {
		l.dropCopy.Store(nil)
		return
	}
	l.dropCopy.Store(&drop)
}

// ShardOf names the JetStream stream that holds stream.
func ShardOf(l *Log, stream string) string { return l.layout.shardName(l.layout.place(stream).shard) }

// Started reports whether every Follow of stream on l has its start: the subscription and
// the head read that Follow sends without waiting have been answered, so every event appended
// from now on reaches its fn. (A Host needs no such wait: its Since, sent after Follow, returns
// what was appended before.)
func Started(l *Log, stream string) bool {
	pl := l.layout.place(stream)
	fs := l.followers(pl.shard)
	n := 0
	for _, f := range fs {
		if f.stream != stream {
			continue
		}
		f.mu.Lock()
		based := f.based
		f.mu.Unlock()
		if !based {
			return false
		}
		n++
	}
	return n > 0
}
