// Package jetstream is a stream log on NATS JetStream for the Host plugin: a
// [hostplugin.StreamLog] shared by every Host of a fleet, so that a page resumes by its cursor
// on whichever Host it reaches.
//
//	log, err := jetstream.Connect("nats://127.0.0.1:4222", &jetstream.Options{Replicas: 3})
//	h, err := hostplugin.New(cfg, &hostplugin.Options{Log: log, Authorize: authorize})
//
// [CallStore] keeps the outcomes of keyed calls in a KV bucket on the same NATS, so that the
// fleet runs each keyed call once and a page that re-sends one to another Host (its own was
// SIGKILLed) gets the first outcome:
//
//	calls, err := jetstream.NewCallStore(ctx, log, &jetstream.CallOptions{Window: cfg.CallDedup()})
//	h, err := hostplugin.New(cfg, &hostplugin.Options{Log: log, Calls: calls, Authorize: authorize})
//
// It is a package of its own so that an application that keeps the default in-memory log
// links and downloads no NATS client: only importing this package brings in
// github.com/nats-io/nats.go (the go command downloads a module only for the packages a
// build imports).
//
// # Layout
//
// A JetStream stream is a raft group, and a raft group costs every NATS node CPU and memory
// while idle (about 0.02% of a core and 0.23 MiB per node each, measured): a stream per user
// cannot be one each. The log is a few JetStream streams, the shards, <Prefix>_SHARD_<i>
// (Options.Shards, default 1), and each Lifeline stream is one subject of one shard:
//
//	<prefix>.ev.<i>.<hash>    its events (hash: the first 16 bytes of the name's SHA-256, in hex;
//	                          i: the hash's first 8 bytes modulo Shards)
//	<prefix>.live.<i>.<hash>  the copy of each event the shard republishes once it is stored
//
// A shard keeps MaxEvents events per subject (MaxMsgsPerSubject: the ring) and drops events
// older than MaxAge (default 24 h), which bounds the store however many streams were ever
// written. More shards spread the appends over more stream leaders; every Host of a fleet must
// use the same count, and Connect refuses shards made with another ([ErrLayout]).
//
// # Sequences and epochs
//
// JetStream numbers the messages of a shard, not of a subject, so each event carries its
// Lifeline seq and its stream's epoch in headers (Lifeline-Seq, Lifeline-Epoch). An append
// publishes seq n+1 with Nats-Expected-Last-Subject-Sequence set to the shard sequence of the
// stream's event n: JetStream stores it only if no other event of the stream came in between,
// and it also refuses a second publish on a subject while one is in flight. A refused append
// reads the head from the shard's leader and numbers the event again. Two Hosts appending to one
// stream therefore never give two events the same seq, nor leave a gap. A Host appends to one
// stream one event at a time (they would refuse each other); appends to different streams
// run in parallel.
//
// The epoch begins with a stream's first event: an append to a stream that holds no event
// (never written, every event expired by MaxAge, its shard deleted and made again) expects
// no event on the subject and starts a new random epoch. Since all events of a subject share one
// epoch, a cursor's epoch says whether its seqs are comparable with the stream's. Since answers a
// stream that holds no event with a reset to seq 0 in an epoch of this log's own ("unborn-" and
// a random id): "nothing" on one Host is not comparable with "nothing" on another.
//
// # Resume by cursor
//
// Since reads the head with a direct get (last by subject, answered by the nearest replica).
// A replay needs the shard sequence of the first event the reader misses: an interpolation
// search over direct gets (next by subject from a shard sequence) finds it in a few requests,
// since a stream's events are spread over its shard's sequence; then batch direct gets read the
// range. A replica answers from what it has applied, a moment behind the leader: a cursor ahead
// of the head read is checked with the leader before it is reset.
//
// # Live delivery
//
// Each shard republishes every stored event, headers and data, to its live subject
// (RePublish). Follow subscribes to the stream's live subject with a plain NATS subscription:
// a Host receives the events of the streams its pages follow and no others, at the cost of one
// subscription each (100,000 of them add no idle CPU to a NATS node, measured), with no
// JetStream consumer and no request per stream while the stream is quiet. Each copy carries the
// shard sequence of the stream's previous event (Nats-Last-Sequence), so a copy lost on the
// way shows as a gap before the next one, and the missing events are read (batch direct get)
// and delivered first. A lost copy with nothing after it is found by a re-check of the heads
// of the streams a Host follows, one multi-last direct get per 256 streams, when a copy may
// have been lost: when the connection to NATS is back, after a slow-consumer error, on a
// shard's advisories (a leader elected: its last copies may be lost with the old one; its
// configuration updated, the shard made again), and once a stream has been quiet for 5 s
// after events. Follow sends its subscription and a direct get of the head and returns without
// waiting, so it can run under the Host's locks; no re-check holds a lock every Follow needs.
//
// # The NATS features it relies on
//
//   - Subject-per-stream limits, MaxMsgsPerSubject and MaxAge: the ring and the bound on
//     storage, kept by the server.
//   - Nats-Expected-Last-Subject-Sequence (and the server's refusal of a second publish on a
//     subject in flight): contiguous seqs across Hosts without a lock service.
//   - Nats-Msg-Id deduplication (2 minutes): AppendUnique, a fleet's periodic publishers.
//   - Direct get (AllowDirect) for heads and single events; batch and multi-last direct gets
//     (NATS 2.11, through github.com/synadia-io/orbit.go/jetstreamext) for ranges and re-checks.
//     A NATS server older than 2.11 cannot serve this layout.
//   - RePublish with Nats-Last-Sequence: live delivery on core NATS interest, with gaps found
//     without polling.
//   - Stream advisories ($JS.EVENT.ADVISORY.STREAM.*.<shard>): when to re-check.
//
// A Host's NATS user needs to publish to <prefix>.ev.>, subscribe to <prefix>.live.>, to its
// inbox and to $JS.EVENT.ADVISORY.STREAM.*.<Prefix>_SHARD_*, and use the JetStream API and
// direct gets of the streams <Prefix>_SHARD_*.
//
// # The previous layout
//
// Lifeline's previous layout made a JetStream stream per Lifeline stream (<Prefix>_<hash>,
// subject <prefix>.s.<hash>). Connect refuses to start while NATS holds any ([ErrOldLayout]),
// unless Options.Migrate is set: then it copies each into its shard with its epoch and seqs, so
// that pages resume by the cursors they hold, and deletes it. The two layouts cannot serve one
// fleet at once: stop every Host of the previous version first.
//
// The package builds natively only, as hostplugin does.
package jetstream
