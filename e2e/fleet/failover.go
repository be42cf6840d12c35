//go:build !js

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	lifelinejs "github.com/lifeline-go/lifeline/hostplugin/jetstream"
	"github.com/lifeline-go/lifeline/internal/swarmline"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// failoverBound is how soon every Host must publish and deliver ticks again once the ticks
// stream has a leader after a NATS node died.
const failoverBound = 3 * time.Second

// electionBound is the longest JetStream may take to elect a new stream leader: its raft
// election timeout is 4–9 s, and a split vote takes another round.
const electionBound = 30 * time.Second

// ticksState is the ticks Lifeline stream as NATS holds it.
type ticksState struct {
	shard  string // the JetStream stream holding it (hostplugin/jetstream's shard)
	leader string // the NATS node leading that shard
	seq    uint64 // the ticks' last Lifeline seq
}

// ticksStream reads where the ticks are (the Hosts run hostplugin/jetstream with its default
// layout): their shard's leader as the leader reads it, and the seq of the last tick, which
// the log keeps in the event's Lifeline-Seq header.
func ticksStream(urls string) (ticksState, error) {
	nc, err := nats.Connect(urls)
	if err != nil {
		return ticksState{}, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return ticksState{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	shard, subject := lifelinejs.Place(nil, "ticks")
	s, err := js.Stream(ctx, shard)
	if err != nil {
		return ticksState{}, fmt.Errorf("the ticks' shard %s: %w", shard, err)
	}
	st := ticksState{shard: shard}
	if info := s.CachedInfo(); info.Cluster != nil {
		st.leader = info.Cluster.Leader
	}
	m, err := s.GetLastMsgForSubject(ctx, subject)
	if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return ticksState{}, fmt.Errorf("the last tick on %s: %w", subject, err)
	}
	if m != nil {
		if st.seq, err = strconv.ParseUint(m.Header.Get(lifelinejs.SeqHeader), 10, 64); err != nil {
			return ticksState{}, fmt.Errorf("the last tick's %s: %w", lifelinejs.SeqHeader, err)
		}
	}
	return st, nil
}

// electionWatch records when JetStream advised a new leader of one stream, seen from a NATS
// node that stays up.
type electionWatch struct {
	nc *nats.Conn
	mu sync.Mutex
	at []time.Time
	by []string
}

func watchElections(url, stream string) (*electionWatch, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return nil, err
	}
	w := &electionWatch{nc: nc}
	if _, err := nc.Subscribe("$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED."+stream, func(m *nats.Msg) {
		var adv struct {
			Leader string `json:"leader"`
		}
		_ = json.Unmarshal(m.Data, &adv)
		w.mu.Lock()
		defer w.mu.Unlock()
		w.at = append(w.at, time.Now())
		w.by = append(w.by, adv.Leader)
	}); err != nil {
		nc.Close()
		return nil, err
	}
	if err := nc.Flush(); err != nil {
		nc.Close()
		return nil, err
	}
	return w, nil
}

func (w *electionWatch) close() { w.nc.Close() }

// first returns the first election advised after t0 and the node elected.
func (w *electionWatch) first(t0 time.Time) (time.Time, string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, at := range w.at {
		if at.After(t0) {
			return at, w.by[i], true
		}
	}
	return time.Time{}, "", false
}

// witnessState reads one bin/swarm (a witness) connected straight to one Host (not through nginx): the
// times that Host delivered ticks.
type witnessState struct {
	mu sync.Mutex
	at []time.Time
}

// line reads one line of the witness's process.
func (p *witnessState) line(b []byte) {
	l, err := swarmline.Decode(b)
	if err != nil || l.Event != swarmline.Delivery || l.Reset {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.at = append(p.at, l.At())
}

// after returns the first delivery after t0.
func (p *witnessState) after(t0 time.Time) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, at := range p.at {
		if at.After(t0) {
			return at, true
		}
	}
	return time.Time{}, false
}

// longestSilence returns the longest time between two deliveries among those that end after t0.
func (p *witnessState) longestSilence(t0 time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var d time.Duration
	for i := 1; i < len(p.at); i++ {
		if p.at[i].After(t0) {
			d = max(d, p.at[i].Sub(p.at[i-1]))
		}
	}
	return d
}

// startWitnesses connects one bin/swarm to each Host directly and waits for each to deliver two
// ticks.
func (f *fleet) startWitnesses() ([3]*witnessState, error) {
	var witnesses [3]*witnessState
	for i := range 3 {
		witnesses[i] = &witnessState{}
		if _, err := f.start(fmt.Sprintf("witness-h%d", i+1), &testbed.Options{Lines: witnesses[i].line}, f.bin+"/swarm", "-url", "ws://"+f.hostAddr[i]+"/_lifeline/events",
			"-n", "1", "-sub", "ticks", "-deliveries"); err != nil {
			return witnesses, err
		}
	}
	since := time.Now()
	err := f.waitFor("a client on each Host to receive ticks", 20*time.Second, func() bool {
		for _, p := range witnesses {
			if _, ok := p.after(since.Add(time.Second)); !ok {
				return false
			}
		}
		return true
	})
	return witnesses, err
}

// killTicksLeader SIGKILLs the NATS node leading the ticks stream and checks that every Host
// publishes and delivers ticks again within failoverBound of the kill (the demo cluster's
// elections take 1–2 s: see natsnode/raft.go). It returns the index of the node killed.
func (f *fleet) killTicksLeader() (int, error) {
	witnesses, err := f.startWitnesses()
	if err != nil {
		return -1, err
	}
	info, err := ticksStream(f.natsURLs)
	if err != nil {
		return -1, fmt.Errorf("finding the ticks stream's leader: %w", err)
	}
	if info.leader == "" {
		return -1, fmt.Errorf("stream %s has no leader", info.shard)
	}
	stream, leader := info.shard, info.leader
	victim := -1
	for i := range 3 {
		if leader == fmt.Sprintf("n%d", i+1) {
			victim = i
		}
	}
	if victim < 0 {
		return -1, fmt.Errorf("the ticks stream's leader %q is none of n1–n3", leader)
	}
	watch, err := watchElections("nats://"+f.natsAddr[(victim+1)%3], stream)
	if err != nil {
		return -1, err
	}
	defer watch.close()

	logf("SIGKILL NATS node %s, the leader of the ticks stream", leader)
	killed := time.Now()
	f.nats[victim].signal(syscall.SIGKILL)
	_ = f.nats[victim].wait(10 * time.Second)
	var elected time.Time
	var by string
	if err := f.waitFor("JetStream to elect a new leader of the ticks stream", electionBound, func() bool {
		var ok bool
		elected, by, ok = watch.first(killed)
		return ok
	}); err != nil {
		return victim, err
	}
	if err := f.waitFor("every Host to deliver a tick after the election", failoverBound+5*time.Second, func() bool {
		for _, p := range witnesses {
			if _, ok := p.after(elected); !ok {
				return false
			}
		}
		return true
	}); err != nil {
		return victim, err
	}
	logf("  new leader %s elected %v after the kill", by, elected.Sub(killed).Round(time.Millisecond))
	var slow []string
	for i, p := range witnesses {
		first, _ := p.after(elected)
		gap := first.Sub(elected)
		logf("  h%d: first tick %v after the kill, %v after the election; longest silence %v",
			i+1, first.Sub(killed).Round(time.Millisecond), gap.Round(time.Millisecond), p.longestSilence(killed).Round(time.Millisecond))
		if back := first.Sub(killed); back > failoverBound {
			slow = append(slow, fmt.Sprintf("h%d %v (%v after the election)", i+1, back.Round(time.Millisecond), gap.Round(time.Millisecond)))
		}
	}
	if len(slow) > 0 {
		return victim, fmt.Errorf("ticks came back more than %v after the stream leader's SIGKILL: %s", failoverBound, strings.Join(slow, ", "))
	}
	return victim, nil
}
