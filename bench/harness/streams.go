//go:build !js

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/hostplugin/jetstream"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// The "streams" scenario's defaults: the stream counts it grows the log through, and how much
// load each step gets.
const (
	streamsCounts     = "1000,10000,100000"
	streamsCreators   = 64               // concurrent appends while creating
	streamsAppenders  = 16               // concurrent publishes while measuring
	streamsRate       = 1000             // publishes per second while measuring: Appends and the floor's, half each
	streamsSettle     = 5 * time.Second  // after the follows, before the idle figures
	streamsIdle       = 10 * time.Second // the idle figures' window
	streamsAppendTime = 20 * time.Second
	streamsResumes    = 2000
)

// sStreams: the fleet's JetStream log (hostplugin/jetstream) with a stream per user. A 3-node
// NATS cluster (e2e/fleet/natsnode, stock raft timers, as the issue measured), three Hosts'
// logs in this process (each on its own node, R3), and the streams user.0 … user.N-1 added
// step by step: each step creates the new streams (one append each), has the Hosts follow
// them (stream i on Host i mod 3, as pages spread over three Hosts would), waits, measures the
// idle cluster, then appends from the Host after the follower and replays by cursor.
func (e *env) sStreams(r *report) error {
	counts, err := e.streamCounts()
	if err != nil {
		return err
	}
	if err := e.buildNATSNode(); err != nil {
		return err
	}
	c, err := e.startNATSCluster("streams")
	if err != nil {
		return err
	}
	defer c.stop()
	var hosts [3]*jetstream.Log
	opts := &jetstream.Options{Replicas: 3, Shards: e.streamShards, Logger: slog.New(slog.DiscardHandler)}
	for i := range hosts {
		o := *opts
		o.Name = fmt.Sprintf("bench-host-%d", i+1)
		hosts[i], err = jetstream.Connect(c.urls[i], &o)
		if err != nil {
			return fmt.Errorf("the log of Host %d: %w", i+1, err)
		}
		defer hosts[i].Close()
	}
	floor, err := newStreamsFloor(c, e.streamShards, counts[len(counts)-1])
	if err != nil {
		return fmt.Errorf("the floor's connections: %w", err)
	}
	defer floor.close()
	t := r.table(fmt.Sprintf("streams. The fleet's JetStream log with a stream per user: 3 NATS nodes, R3, %d shard(s), three Hosts", e.streamShards),
		"at 100,000 streams: idle cluster CPU ≤ 5% of one core, Append p99 ≤ 5 ms, 0 errors",
		"streams", "creates/s", "idle CPU, 3 nodes summed", "idle CPU, 3 Hosts", "RSS per node", "Append p50 / p99",
		"live delivery p50 / p99", "resume p50 / p99", "lost / duplicated", "errors", "step took")
	ft := r.table(fmt.Sprintf("streams. Where an Append's time goes: the same cluster's floor, measured in the same window (%d shard(s))", e.streamShards), "",
		append([]string{"streams", "Append p50 / p90 / p99 / p99.9", "Append, the Host knew the head: p50 / p99", "Append, the Host did not: p50 / p99"}, floorKinds...)...)
	st := newStreamsState(counts[len(counts)-1])
	for i := range st.streams {
		st.streams[i].host = i % 3
	}
	have := 0
	for _, n := range counts {
		t0 := time.Now()
		row, err := e.streamsStep(c, hosts, floor, opts, st, have, n)
		if err != nil {
			return fmt.Errorf("%d streams: %w", n, err)
		}
		have = n
		r.row(t, append(row.cells(n), fmtS(time.Since(t0).Seconds()))...)
		r.row(ft, row.floorCells(n)...)
		if n == 100000 {
			r.judge("streams", "idle cluster CPU ≤ 5% of one core at 100,000 streams", row.idleNodes <= 5, fmt.Sprintf("%.1f%%", row.idleNodes),
				"the shards' own raft heartbeats and the nodes' housekeeping; more shards cost more")
			r.judge("streams", "Append p99 ≤ 5 ms at 100,000 streams", row.appendP99 <= 5, fmtMsF(row.appendP99),
				fmt.Sprintf("Append from a Host that knew the stream's head p99 %s, from one that did not (a refused publish, a read, a publish) %s; the same publish by nats.go alone on the same cluster in the same window (the floor table): p99 %s through the same node, %s through the shard leader's, %s to an R1 stream; a core NATS request–reply %s",
					fmtMsF(row.byHead[1].p99), fmtMsF(row.byHead[0].p99),
					fmtMsF(row.floor[floorBare].p99), fmtMsF(row.floor[floorLeader].p99), fmtMsF(row.floor[floorR1].p99), fmtMsF(row.floor[floorCore].p99)))
			r.judge("streams", "0 errors at 100,000 streams", row.errors == 0 && row.lost == 0 && row.dup == 0,
				fmt.Sprintf("%d errors, %d lost, %d duplicated", row.errors, row.lost, row.dup), "")
		}
	}
	r.note(t, "each step adds streams to the same cluster; creates/s is the new streams' first appends (%d at a time, spread over the three Hosts) divided by the time they took", streamsCreators)
	r.note(t, "idle CPU: utime + stime of the three natsnode processes (and of this process, which holds the three Hosts' logs and their follows of every stream) over %v, %v after the follows, in %% of one core", e.streamsD(streamsIdle), streamsSettle)
	r.note(t, "Append: %d appends/s for %v from %d goroutines, each to a random stream from the Host after the one following it, taking turns with as many publishes of the floor's (below), so that NATS takes %d publishes/s; live delivery: from the Append call to the following Host's Follow callback (both in this process)", streamsRate/2, e.streamsD(streamsAppendTime), streamsAppenders, streamsRate)
	r.note(ft, "each row's figures come from the Append window of the row above: the %d goroutines take turns, an Append, then one of the four below in rotation (%d/s each), so that each sees the same machine", streamsAppenders, streamsRate/8)
	r.note(ft, "bare js.PublishMsg: what Append publishes (its two headers, Nats-Expected-Last-Subject-Sequence, no retries) to a subject of the same shard that no Host follows, by nats.go alone: through a connection to the appending Host's node (Append less the log's own code), and to the shard leader's node (less the route to the leader)")
	r.note(ft, "the Host knew the head: it had appended to the stream before (it made it, or appended in an earlier step), so the append is one publish; it did not: half the streams were made by the third Host, and the first append to one from this Host is refused (its expected last sequence is wrong), reads the head from the shard leader and publishes again. (A log remembers at most 65,536 heads: past that, some counted as known were forgotten)")
	r.note(ft, "R1: a file stream of one replica, on the node the publish is sent to: no route, no quorum; core NATS request–reply: a request to a responder, both connected to one node: the round trip of two clients through one server, no JetStream")
	r.note(t, "resume: Since from a cursor 1–8 events behind the head (or 0) of a random stream, on a random Host, %d times from 4 goroutines; an answer that is not the exact replay counts as an error", e.n(streamsResumes, 200))
	r.note(t, "lost / duplicated: every followed stream's deliveries must go up by one, and every append be delivered within 10 s of the last; errors: failed appends and wrong replays")
	return nil
}

// streamCounts is the scenario's stream counts (-streams, × scale).
func (e *env) streamCounts() ([]int, error) {
	var out []int
	for s := range strings.SplitSeq(e.streamsList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-streams %q: %q is not a stream count", e.streamsList, s)
		}
		out = append(out, max(100, int(float64(n)*e.scale)))
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func (e *env) streamsD(d time.Duration) time.Duration {
	return max(5*time.Second, time.Duration(float64(d)*e.scale))
}

// buildNATSNode builds e2e/fleet/natsnode into bench/.bin.
func (e *env) buildNATSNode() error {
	cmd := exec.Command("go", "build", "-o", filepath.Join(e.bin, "natsnode"), "./e2e/fleet/natsnode")
	cmd.Dir = e.root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./e2e/fleet/natsnode: %v\n%s", err, out)
	}
	return nil
}

// natsCluster is three natsnode processes.
type natsCluster struct {
	procs [3]*testbed.Proc
	urls  [3]string
}

func (c *natsCluster) stop() {
	for _, p := range c.procs {
		if p != nil {
			_ = p.Stop(10 * time.Second)
		}
	}
}

func (e *env) startNATSCluster(name string) (*natsCluster, error) {
	c := &natsCluster{}
	var routes [3]string
	var clients [3]string
	for i := range 3 {
		var err error
		if clients[i], err = testbed.FreeAddr(); err != nil {
			return nil, err
		}
		if routes[i], err = testbed.FreeAddr(); err != nil {
			return nil, err
		}
		c.urls[i] = "nats://" + clients[i]
	}
	var routeURLs []string
	for _, r := range routes {
		routeURLs = append(routeURLs, "nats://"+r)
	}
	for i := range 3 {
		dir := filepath.Join(e.raw, fmt.Sprintf("%s-nats%d", name, i+1))
		// A scenario run again (the machine stalled) starts from an empty cluster, as the first
		// try did: streams left by it would make the second try's first appends refused and
		// read, and the floor's bare publishes (which expect their subjects empty) all refused.
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
		p, err := e.bed.Start(fmt.Sprintf("%s-nats%d", name, i+1), []string{filepath.Join(e.bin, "natsnode"),
			"-name", fmt.Sprintf("n%d", i+1), "-addr", clients[i], "-cluster", routes[i],
			"-routes", strings.Join(routeURLs, ","), "-dir", dir, "-stock-raft"}, nil)
		if err != nil {
			c.stop()
			return nil, err
		}
		c.procs[i] = p
	}
	for i := range 3 {
		if err := testbed.WaitTCP(context.Background(), clients[i], 30*time.Second); err != nil {
			c.stop()
			return nil, err
		}
	}
	return c, nil
}

// streamsState is what the scenario knows of every stream, shared with the follows.
type streamsState struct {
	streams []benchStream
	lost    atomic.Int64
	dup     atomic.Int64

	mu   sync.Mutex
	live []float64 // ms from Append to the follower's callback
}

type benchStream struct {
	host int           // the Host following it
	last atomic.Uint64 // the last seq delivered

	lmu  sync.Mutex
	sent []sentAppend // appends whose live delivery is awaited

	mu   sync.Mutex // guards head and knows: the appends of one stream are one at a time
	head hostplugin.Cursor
	// knows has bit h set once Host h appended to the stream: its log knows the stream's
	// head (unless it forgot it among more than 65,536), and its next append is one publish.
	// An append from a Host that does not know the head is refused first and reads it.
	knows uint8
}

// sentAppend is an append of seq, called at.
type sentAppend struct {
	seq uint64
	at  time.Time
}

func newStreamsState(n int) *streamsState { return &streamsState{streams: make([]benchStream, n)} }

func streamName(i int) string { return "user." + strconv.Itoa(i) }

// delivered is the follow of stream i.
func (st *streamsState) delivered(i int, ev hostplugin.Event) {
	s := &st.streams[i]
	s.lmu.Lock()
	for j, a := range s.sent {
		if a.seq == ev.Seq {
			ms := float64(time.Since(a.at).Microseconds()) / 1000
			s.sent = slices.Delete(s.sent, j, j+1)
			st.mu.Lock()
			st.live = append(st.live, ms)
			st.mu.Unlock()
			break
		}
	}
	s.lmu.Unlock()
	last := s.last.Swap(ev.Seq)
	switch {
	case last == 0 || ev.Seq == last+1:
	case ev.Seq > last+1:
		st.lost.Add(int64(ev.Seq - last - 1))
	default:
		st.dup.Add(1)
	}
}

// streamsRow is one step's figures.
type streamsRow struct {
	createRate              float64
	idleNodes, idleHosts    float64 // % of one core
	rssMin, rssMax          float64 // MiB
	appendP50, appendP99    float64 // ms
	appendP90, appendP999   float64
	appendN                 int                     // appends measured
	floor                   map[string]floorFigures // by floor kind
	byHead                  [2]floorFigures         // Appends from a Host that did not know the stream's head, and that did
	liveP50, liveP99        float64
	resumeP50, resumeP99    float64
	lost, dup               int64
	errors, createErrs      int
	delivered, appendsTotal int
}

func (w streamsRow) cells(n int) []string {
	return []string{fmtN(float64(n)), fmt.Sprintf("%.0f (%d errors)", w.createRate, w.createErrs),
		fmt.Sprintf("%.1f%%", w.idleNodes), fmt.Sprintf("%.1f%%", w.idleHosts),
		fmt.Sprintf("%.0f–%.0f MiB", w.rssMin, w.rssMax),
		fmtMsF(w.appendP50) + " / " + fmtMsF(w.appendP99), fmtMsF(w.liveP50) + " / " + fmtMsF(w.liveP99),
		fmtMsF(w.resumeP50) + " / " + fmtMsF(w.resumeP99), fmt.Sprintf("%d / %d", w.lost, w.dup),
		fmt.Sprintf("%d (of %d appends; %d delivered live)", w.errors, w.appendsTotal, w.delivered)}
}

func fmtMsF(x float64) string { return fmt.Sprintf("%.2f ms", x) }

// floorFigures are one floor kind's publishes in a step.
type floorFigures struct {
	n, errs  int
	p50, p99 float64 // ms
}

func (w streamsRow) floorCells(n int) []string {
	cells := []string{fmtN(float64(n)), fmt.Sprintf("%s / %s / %s / %s (%d)", fmtMsF(w.appendP50), fmtMsF(w.appendP90), fmtMsF(w.appendP99), fmtMsF(w.appendP999), w.appendN)}
	for _, f := range []floorFigures{w.byHead[1], w.byHead[0]} {
		cells = append(cells, fmt.Sprintf("%s / %s (%d)", fmtMsF(f.p50), fmtMsF(f.p99), f.n))
	}
	for _, kind := range floorKinds {
		f := w.floor[kind]
		c := fmt.Sprintf("%s / %s (%d)", fmtMsF(f.p50), fmtMsF(f.p99), f.n)
		if f.errs > 0 {
			c += fmt.Sprintf(", %d errors", f.errs)
		}
		cells = append(cells, c)
	}
	return cells
}

// streamsStep grows the log from have to n streams and measures.
func (e *env) streamsStep(c *natsCluster, hosts [3]*jetstream.Log, floor *streamsFloor, opts *jetstream.Options, st *streamsState, have, n int) (streamsRow, error) {
	var row streamsRow
	ctx := context.Background()
	fmt.Printf("streams: creating user.%d … user.%d\n", have, n-1)
	next := atomic.Int64{}
	next.Store(int64(have))
	var createErrs atomic.Int64
	t0 := time.Now()
	var wg sync.WaitGroup
	for w := range streamsCreators {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				s := &st.streams[i]
				by := (s.host + 1 + w%2) % 3
				ev, err := hosts[by].Append(ctx, streamName(i), json.RawMessage(`{"n":1}`))
				if err != nil {
					createErrs.Add(1)
					continue
				}
				s.mu.Lock()
				s.head = hostplugin.Cursor{Epoch: ev.Epoch, Seq: ev.Seq}
				s.knows |= 1 << by
				s.mu.Unlock()
			}
		})
	}
	wg.Wait()
	row.createRate = float64(n-have) / time.Since(t0).Seconds()
	row.createErrs = int(createErrs.Load())

	fmt.Printf("streams: following them (%d Follows over three Hosts)\n", n-have)
	for i := have; i < n; i++ {
		s := &st.streams[i]
		s.last.Store(0)
		hosts[s.host].Follow(streamName(i), func(ev hostplugin.Event) { st.delivered(i, ev) })
	}
	time.Sleep(streamsSettle)

	idle := e.streamsD(streamsIdle)
	fmt.Printf("streams: idle for %v\n", idle)
	before, err := c.cpu()
	if err != nil {
		return row, err
	}
	self0 := selfCPU()
	time.Sleep(idle)
	after, err := c.cpu()
	if err != nil {
		return row, err
	}
	row.idleNodes = 100 * (after - before).Seconds() / idle.Seconds()
	row.idleHosts = 100 * (selfCPU() - self0).Seconds() / idle.Seconds()
	row.rssMin, row.rssMax = 1e18, 0
	for _, p := range c.procs {
		rss, err := rssBytes(p.Pid())
		if err != nil {
			return row, err
		}
		row.rssMin, row.rssMax = min(row.rssMin, float64(rss)/(1<<20)), max(row.rssMax, float64(rss)/(1<<20))
	}

	if err := floor.learnLeaders(); err != nil {
		return row, fmt.Errorf("the shards' leaders: %w", err)
	}
	fmt.Printf("streams: appending %d/s, and the floor's publishes %d/s, for %v\n", streamsRate/2, streamsRate/2, e.streamsD(streamsAppendTime))
	var floorMu sync.Mutex
	floorMs := map[string][]float64{}
	floorErrs := map[string]int{}
	var turn atomic.Int64
	st.mu.Lock()
	st.live = st.live[:0]
	st.mu.Unlock()
	lost0, dup0 := st.lost.Load(), st.dup.Load()
	var appendMu sync.Mutex
	var appendMs []float64
	var appendByHead [2][]float64 // [0]: the appending Host did not know the head; [1]: it did
	var appendErrs atomic.Int64
	var appended atomic.Int64
	end := time.Now().Add(e.streamsD(streamsAppendTime))
	for range streamsAppenders {
		wg.Go(func() {
			tick := time.NewTicker(time.Second * streamsAppenders / streamsRate)
			defer tick.Stop()
			for now := range tick.C {
				if now.After(end) {
					return
				}
				i := rand.IntN(n)
				s := &st.streams[i]
				if !s.mu.TryLock() {
					continue // another append of it is in flight: latency figures need one at a time
				}
				if k := turn.Add(1); k%2 == 1 {
					kind := floorKinds[(k/2)%int64(len(floorKinds))]
					node := (s.host + 1) % 3
					t := time.Now()
					var err error
					switch kind {
					case floorBare:
						err = floor.publish(ctx, opts, node, i)
					case floorLeader:
						err = floor.publish(ctx, opts, floor.leader[floor.twin(opts, i).shard], i)
					case floorR1:
						err = floor.publishR1(ctx)
					case floorCore:
						err = floor.request(ctx)
					}
					ms := float64(time.Since(t).Microseconds()) / 1000
					s.mu.Unlock()
					floorMu.Lock()
					if err != nil {
						floorErrs[kind]++
					} else {
						floorMs[kind] = append(floorMs[kind], ms)
					}
					floorMu.Unlock()
					continue
				}
				t := time.Now()
				s.lmu.Lock()
				s.sent = append(s.sent, sentAppend{seq: s.head.Seq + 1, at: t}) // this process is the only writer
				s.lmu.Unlock()
				by := (s.host + 1) % 3
				knew := s.knows>>by&1 == 1
				ev, err := hosts[by].Append(ctx, streamName(i), json.RawMessage(`{"n":2}`))
				ms := float64(time.Since(t).Microseconds()) / 1000
				appended.Add(1)
				if err != nil {
					appendErrs.Add(1)
					s.lmu.Lock()
					s.sent = slices.DeleteFunc(s.sent, func(a sentAppend) bool { return a.seq == s.head.Seq+1 })
					s.lmu.Unlock()
				} else {
					s.head = hostplugin.Cursor{Epoch: ev.Epoch, Seq: ev.Seq}
					s.knows |= 1 << by
					appendMu.Lock()
					appendMs = append(appendMs, ms)
					if knew {
						appendByHead[1] = append(appendByHead[1], ms)
					} else {
						appendByHead[0] = append(appendByHead[0], ms)
					}
					appendMu.Unlock()
				}
				s.mu.Unlock()
			}
		})
	}
	wg.Wait()
	// Every append should be delivered live by now or soon: what is not after 10 s is lost.
	undelivered := func() int {
		n := 0
		for i := range st.streams {
			s := &st.streams[i]
			s.lmu.Lock()
			n += len(s.sent)
			s.lmu.Unlock()
		}
		return n
	}
	waitFor(10*time.Second, func() bool { return undelivered() == 0 })
	missing := undelivered()
	st.mu.Lock()
	live := slices.Clone(st.live)
	st.mu.Unlock()
	row.appendP50, row.appendP99 = pct(appendMs, 50), pct(appendMs, 99)
	row.appendP90, row.appendP999, row.appendN = pct(appendMs, 90), pct(appendMs, 99.9), len(appendMs)
	for k, ms := range appendByHead {
		row.byHead[k] = floorFigures{n: len(ms), p50: pct(ms, 50), p99: pct(ms, 99)}
	}
	row.floor = map[string]floorFigures{}
	for _, kind := range floorKinds {
		ms := floorMs[kind]
		row.floor[kind] = floorFigures{n: len(ms), errs: floorErrs[kind], p50: pct(ms, 50), p99: pct(ms, 99)}
	}
	row.liveP50, row.liveP99 = pct(live, 50), pct(live, 99)
	row.delivered, row.appendsTotal = len(live), int(appended.Load())
	row.errors = int(appendErrs.Load())

	resumes := e.n(streamsResumes, 200)
	fmt.Printf("streams: %d resumes\n", resumes)
	var resumeMu sync.Mutex
	var resumeMs []float64
	var resumeErrs atomic.Int64
	left := atomic.Int64{}
	left.Store(int64(resumes))
	for range 4 {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				i := rand.IntN(n)
				s := &st.streams[i]
				s.mu.Lock()
				head := s.head
				s.mu.Unlock()
				back := min(head.Seq, uint64(1+rand.IntN(8)))
				cur := hostplugin.Cursor{Epoch: head.Epoch, Seq: head.Seq - back}
				t := time.Now()
				events, got, ok, err := hosts[rand.IntN(3)].Since(ctx, streamName(i), cur)
				ms := float64(time.Since(t).Microseconds()) / 1000
				if err != nil || !ok || got != head || uint64(len(events)) != back {
					resumeErrs.Add(1)
					continue
				}
				resumeMu.Lock()
				resumeMs = append(resumeMs, ms)
				resumeMu.Unlock()
			}
		})
	}
	wg.Wait()
	row.resumeP50, row.resumeP99 = pct(resumeMs, 50), pct(resumeMs, 99)
	row.errors += int(resumeErrs.Load())
	row.lost, row.dup = st.lost.Load()-lost0+int64(missing), st.dup.Load()-dup0
	return row, nil
}

// cpu is the CPU time the cluster's processes have used.
func (c *natsCluster) cpu() (time.Duration, error) {
	var sum time.Duration
	for _, p := range c.procs {
		d, err := procCPU(p.Pid())
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}

// procCPU reads a process's utime + stime from /proc.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("bad /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	stt, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("bad /proc stat times")
	}
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(ut+stt) * time.Second / ticks, nil
}

// selfCPU is the CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
