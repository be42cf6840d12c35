//go:build !js

package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/lifeline-go/lifeline/hostplugin/jetstream"
)

// The streams scenario's floor: what an Append is set beside, measured in the same window
// on the same cluster, so that the time an Append takes splits into NATS's and the log's.
// Each is made with nats.go alone, as bare as it goes:
//
//   - "bare publish": the publish Append makes (the same headers, Nats-Expected-Last-Subject-
//     Sequence, to a subject of the same shard that no Host follows), by js.PublishMsg on a
//     connection to the same node as the appending Host's: Append less the log's own code;
//   - the same, on a connection to the shard leader's node: less the route to the leader;
//   - a publish to an R1 stream on the node connected to: less the quorum's round trip;
//   - a core NATS request to a responder on the same node: the round trip of two clients
//     through one server, with no JetStream at all.
const (
	floorBare   = "bare js.PublishMsg, through the appending Host's node"
	floorLeader = "bare js.PublishMsg, through the shard leader's node"
	floorR1     = "js.PublishMsg to an R1 stream on the node connected to"
	floorCore   = "core NATS request–reply through one node"
)

var floorKinds = []string{floorBare, floorLeader, floorR1, floorCore}

// streamsFloor holds the connections and state of the floor's publishes.
type streamsFloor struct {
	ncs    [3]*nats.Conn
	jss    [3]natsjs.JetStream
	leader map[string]int // shard name → the node that leads it
	r1Node int            // the node the R1 stream lives on
	echo   *nats.Conn     // the core request's responder, on node 0
	twins  []floorTwin    // by stream: guarded by the stream's mu, as its appends are
	shards int
}

// floorTwin is the subject a stream's bare publishes go to, and what they stored last.
type floorTwin struct {
	shard, subject string
	epoch          string
	seq, jseq      uint64
}

const (
	floorR1Stream = "BENCH_FLOOR_R1"
	floorR1Subj   = "benchfloor.r1"
	floorEcho     = "benchfloor.echo"
)

// newStreamsFloor connects to the three nodes and makes the R1 stream and the responder.
func newStreamsFloor(c *natsCluster, shards, n int) (*streamsFloor, error) {
	f := &streamsFloor{leader: map[string]int{}, twins: make([]floorTwin, n), shards: shards}
	for i := range f.ncs {
		nc, err := nats.Connect(c.urls[i], nats.Name(fmt.Sprintf("bench-floor-%d", i+1)))
		if err != nil {
			f.close()
			return nil, err
		}
		f.ncs[i] = nc
		if f.jss[i], err = natsjs.New(nc); err != nil {
			f.close()
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := f.jss[0].CreateOrUpdateStream(ctx, natsjs.StreamConfig{
		Name: floorR1Stream, Subjects: []string{floorR1Subj}, Storage: natsjs.FileStorage, Replicas: 1,
		MaxMsgsPerSubject: 4096, MaxAge: 24 * time.Hour, Duplicates: 2 * time.Minute, AllowDirect: true,
	})
	if err != nil {
		f.close()
		return nil, fmt.Errorf("the floor's R1 stream: %w", err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		f.close()
		return nil, err
	}
	if f.r1Node, err = nodeIndex(info.Cluster); err != nil {
		f.close()
		return nil, err
	}
	if _, err := f.ncs[0].Subscribe(floorEcho, func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
		f.close()
		return nil, err
	}
	if err := f.ncs[0].Flush(); err != nil {
		f.close()
		return nil, err
	}
	f.echo = f.ncs[0]
	return f, nil
}

// nodeIndex is the index of the node (n1, n2, n3) that leads a stream.
func nodeIndex(ci *natsjs.ClusterInfo) (int, error) {
	if ci == nil || !strings.HasPrefix(ci.Leader, "n") {
		return 0, fmt.Errorf("a stream with no leader known: %+v", ci)
	}
	i, err := strconv.Atoi(strings.TrimPrefix(ci.Leader, "n"))
	if err != nil || i < 1 || i > 3 {
		return 0, fmt.Errorf("a stream led by %q", ci.Leader)
	}
	return i - 1, nil
}

// learnLeaders reads which node leads each shard now (a leader may move between steps).
func (f *streamsFloor) learnLeaders() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range f.shards {
		name := fmt.Sprintf("LIFELINE_SHARD_%d", i) // the log's default Prefix, as the scenario's Hosts have it
		st, err := f.jss[0].Stream(ctx, name)
		if err != nil {
			return err
		}
		info, err := st.Info(ctx)
		if err != nil {
			return err
		}
		if f.leader[name], err = nodeIndex(info.Cluster); err != nil {
			return err
		}
	}
	return nil
}

// twin returns stream i's twin: a subject of the same shard as the stream's, that no Host
// follows.
func (f *streamsFloor) twin(opts *jetstream.Options, i int) *floorTwin {
	t := &f.twins[i]
	if t.subject == "" {
		shard, _ := jetstream.Place(opts, streamName(i))
		for k := 0; ; k++ {
			sh, subj := jetstream.Place(opts, fmt.Sprintf("floor.%d.%d", i, k))
			if sh == shard {
				t.shard, t.subject, t.epoch = sh, subj, fmt.Sprintf("floor%d", i)
				break
			}
		}
	}
	return t
}

// publish makes stream i's bare publish on node's connection: what Append sends, by nats.go
// alone. The caller holds the stream's mu.
func (f *streamsFloor) publish(ctx context.Context, opts *jetstream.Options, node, i int) error {
	t := f.twin(opts, i)
	msg := &nats.Msg{Subject: t.subject, Header: nats.Header{}, Data: []byte(`{"n":2}`)}
	msg.Header.Set(jetstream.EpochHeader, t.epoch)
	msg.Header.Set(jetstream.SeqHeader, strconv.FormatUint(t.seq+1, 10))
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ack, err := f.jss[node].PublishMsg(ctx, msg, natsjs.WithRetryAttempts(0), natsjs.WithExpectLastSequencePerSubject(t.jseq))
	if err != nil {
		return err
	}
	t.seq, t.jseq = t.seq+1, ack.Sequence
	return nil
}

// publishR1 publishes to the R1 stream from the node it lives on.
func (f *streamsFloor) publishR1(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := f.jss[f.r1Node].Publish(ctx, floorR1Subj, []byte(`{"n":2}`), natsjs.WithRetryAttempts(0))
	return err
}

// request makes a core NATS request to the responder, both on node 0.
func (f *streamsFloor) request(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := f.ncs[0].RequestWithContext(ctx, floorEcho, []byte(`{"n":2}`))
	return err
}

func (f *streamsFloor) close() {
	for _, nc := range f.ncs {
		if nc != nil {
			nc.Close()
		}
	}
}
