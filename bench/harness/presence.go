//go:build !js

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lifeline-go/lifeline/bench/presload"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// The presence scenario (issue "who is here"): bench/cmd/presence, Lifeline's Host beside
// centrifuge's in-memory presence (join/leave pushed), each in one process over loopback,
// the pages in the same process as the server:
//
//   - join: 2,000 pages (× scale) subscribe one stream at once; until every page shows every
//     member, and the presence frames and bytes each page was sent;
//   - churn: then 100 new pages a second join it; from each join to every one of the first
//     pages showing it (p50, p99, max), and the process's CPU;
//   - idle (Lifeline): 10,000 streams (× scale) of 10 members each, every page watching, on a
//     3-node NATS cluster (presence's fleet link on it; one Host); the CPU and heap while
//     nothing happens, and NATS's CPU over the same window.

// presenceRun is one run of bench/cmd/presence: what its -json line said.
type presenceRun = presload.Result

// presenceJoinWait is how long a join may take before the command reports it incomplete.
const presenceJoinWait = 60 * time.Second

// runPresence runs bench/.bin/presence with args and returns its result line; it may take
// at most limit.
func (e *env) runPresence(name string, limit time.Duration, args ...string) (*presenceRun, error) {
	var mu sync.Mutex
	var line string
	p, err := e.bed.Start(name, append([]string{filepath.Join(e.bin, "presence"), "-json"}, args...), &testbed.Options{Lines: func(b []byte) {
		if s := string(b); strings.HasPrefix(s, `{"result":`) {
			mu.Lock()
			line = s
			mu.Unlock()
		}
	}})
	if err != nil {
		return nil, err
	}
	if err := p.Wait(limit); err != nil {
		_ = p.Stop(5 * time.Second)
		return nil, fmt.Errorf("%s: %w (see %s)", name, err, p.ErrLog())
	}
	if err := p.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v (see %s)", name, err, p.ErrLog())
	}
	mu.Lock()
	defer mu.Unlock()
	var out struct{ Result presenceRun }
	if line == "" {
		return nil, fmt.Errorf("%s printed no result (see %s)", name, p.OutLog())
	}
	if err := json.Unmarshal([]byte(line), &out); err != nil {
		return nil, fmt.Errorf("%s: its result %q: %v", name, line, err)
	}
	return &out.Result, nil
}

func (e *env) sPresence(r *report) error {
	cmd := exec.Command("go", "build", "-o", filepath.Join(e.bin, "presence"), "./bench/cmd/presence")
	cmd.Dir = e.root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./bench/cmd/presence: %v\n%s", err, out)
	}
	n := e.n(2000, 100)
	const rate = 100
	churnFor := e.d(10*time.Second, 3*time.Second)
	full := e.scale >= 1

	runs := map[string]*presenceRun{}
	for _, kind := range []string{"lifeline", "centrifuge"} {
		// Dialling n pages, the join (at most presenceJoinWait), the churn and 2 s to settle.
		limit := 3*time.Minute + presenceJoinWait + churnFor
		run, err := e.runPresence("presence-"+kind, limit, "-kind", kind, "-pages", strconv.Itoa(n),
			"-churn", strconv.Itoa(rate), "-for", churnFor.String(), "-wait", presenceJoinWait.String())
		if err != nil {
			r.fail("presence "+kind, err)
			continue
		}
		if run.Join == nil || run.Churn == nil {
			r.fail("presence "+kind, fmt.Errorf("the result has no join or no churn"))
			continue
		}
		runs[kind] = run
	}

	t := r.table(fmt.Sprintf("presence. %d pages joining one stream at once, then churn of %d joins/s on it, beside centrifuge", n, rate),
		"every page knows within 1 s (p99); better than centrifuge on every row",
		"server", "every page shows everyone: p50 / p99 / last", "presence frames per page (max)", "bytes per page",
		"churn: join → every page shows it, p50 / p99 / max", "sightings missing", "process CPU during the churn")
	r.note(t, "bench/cmd/presence: the server and its %d pages in one process over loopback (coder/websocket clients, identities user-00000 …); a page's time counts from when the subscriptions were all written to when it showed every member; frames and bytes are the presence frames (Lifeline) or the presence reply and join/leave pushes (centrifuge, a WebSocket message being a frame) a page was sent", n)
	r.note(t, "centrifuge v0.40.1 (github.com/centrifugal/centrifuge) with its in-memory presence manager, EmitPresence, EmitJoinLeave and PushJoinLeave on: a page subscribes with join_leave, asks for the channel's presence once subscribed, and applies the joins and leaves pushed; Lifeline's Host is hostplugin with presence on every stream (a page subscribes with presence)")
	r.note(t, "churn: %d joins a second for %v, a new page (a new identity) each; a join some page never showed counts as shown at the end of the measure (2 s after the last join), and its sightings are missing; the CPU is the whole process's, the server's and every page's decoding alike, over the churn and the 2 s after", rate, churnFor)
	for _, kind := range []string{"lifeline", "centrifuge"} {
		run := runs[kind]
		if run == nil {
			r.row(t, kind, "failed", "–", "–", "–", "–", "–")
			continue
		}
		j, c := run.Join, run.Churn
		joined := fmt.Sprintf("%s / %s / %s", fmtMs(j.P50Ms), fmtMs(j.P99Ms), fmtMs(j.MaxMs))
		if !j.Full {
			joined = fmt.Sprintf("not after %.0f s: %d of %d pages full, a page showed %.0f members on average", j.WaitMs/1000, j.FullPages, j.Pages, j.MeanShown)
		}
		if j.Closed > 0 {
			// A page whose socket the server ended leaves: every other page then lacks it.
			joined += fmt.Sprintf("; the server ended %d pages' sockets", j.Closed)
		}
		r.row(t, kind, joined, fmt.Sprintf("%.1f (%d)", j.FramesPerPage, j.MaxFrames), fmtKiB(j.BytesPerPage),
			fmt.Sprintf("%s / %s / %s", fmtMs(c.P50Ms), fmtMs(c.P99Ms), fmtMs(c.MaxMs)),
			fmt.Sprintf("%d of %d", c.Missing, c.Joins*j.Pages), fmt.Sprintf("%.1f%% of a core", c.CPUPct))
		if !j.Full {
			r.note(t, "%s's churn ran on pages that had not caught up with the join", kind)
		}
	}

	if l := runs["lifeline"]; l != nil {
		j, c := l.Join, l.Churn
		r.judgeFull(full, "presence", fmt.Sprintf("%d pages joining at once: every page shows everyone within 1 s (p99)", n),
			j.Full && j.P99Ms < 1000, joinFigure(l), "profile the join (presence -cpuprofile): the pages' decoding and the Host's batches of the first snapshot")
		r.judgeFull(full, "presence", fmt.Sprintf("churn of %d joins/s on a stream of %d: every page knows within 1 s (p99)", rate, n),
			c.Missing == 0 && c.P99Ms < 1000, fmt.Sprintf("p99 %s, %d sightings missing", fmtMs(c.P99Ms), c.Missing),
			"find where a join waits: the batch's delay, the fan-out to 2,000 sessions, or the pages' reading")
		if cf := runs["centrifuge"]; cf != nil {
			cj, cc := cf.Join, cf.Churn
			better := j.Full && (!cj.Full || j.MaxMs < cj.MaxMs) && j.FramesPerPage < cj.FramesPerPage && j.BytesPerPage < cj.BytesPerPage
			r.judge("presence", "the join: better than centrifuge (time until every page is full, frames and bytes per page)", better,
				fmt.Sprintf("%s, %.1f frames, %s against %s, %.1f frames, %s", joinFigure(l), j.FramesPerPage, fmtKiB(j.BytesPerPage),
					joinFigure(cf), cj.FramesPerPage, fmtKiB(cj.BytesPerPage)),
				"see which figure lost, and profile that side")
			better = c.Missing <= cc.Missing && c.P99Ms < cc.P99Ms && c.CPUPct < cc.CPUPct
			r.judge("presence", "the churn: better than centrifuge (p99 from a join to every page, CPU)", better,
				fmt.Sprintf("p99 %s, %.1f%% CPU against %s, %.1f%%", fmtMs(c.P99Ms), c.CPUPct, fmtMs(cc.P99Ms), cc.CPUPct),
				"see which figure lost, and profile that side")
		}
	}
	return e.presenceIdle(r)
}

func joinFigure(run *presenceRun) string {
	j := run.Join
	if !j.Full {
		return fmt.Sprintf("%d of %d pages full after %.0f s", j.FullPages, j.Pages, j.WaitMs/1000)
	}
	return fmt.Sprintf("p99 %s (last %s)", fmtMs(j.P99Ms), fmtMs(j.MaxMs))
}

// presenceIdle is the idle rows: 10,000 streams × 10 members (× scale), on a 3-node NATS
// cluster if it starts, else on one Host without NATS; and the control, the same sessions on
// the same streams without presence (NATS running, unused), so that presence's own cost is
// the difference: the sessions' heartbeats and NATS's own idle work (routes, Raft) are paid
// without presence too, and on a noisy machine they alone came near the aim.
func (e *env) presenceIdle(r *report) error {
	streams := e.n(10000, 640)
	idle := e.d(20*time.Second, 5*time.Second)
	t := r.table(fmt.Sprintf("presence. Idle: %d streams of 10 members each", streams),
		"idle presence under 2% of a core per 10,000 streams",
		"where", "sessions (64 streams each)", "process CPU (Host and pages), % of a core", "NATS's CPU (3 nodes)", "per 10,000 streams", "heap (Host and pages)", "over")
	r.note(t, "bench/cmd/presence -idle: sessions of 64 streams each, each stream with 10 members, every page watching (presence on), then nothing for %v; the CPU is the whole process's (the Host's presence, but also every session's heartbeat every 15 s and the pages reading it, which cost the same without presence); the heap is after a GC, less before the pages", idle)
	r.note(t, "the control (bench/cmd/presence -idle -no-presence): the same sessions subscribed to the same streams, on a Host without presence and without NATS, over the same window, NATS's three nodes running beside it; presence's own cost is the row with it less the control")
	args := []string{"-idle", strconv.Itoa(streams), "-for", idle.String()}
	var nc *natsCluster
	natsErr := e.buildNATSNode()
	if natsErr == nil {
		nc, natsErr = e.startNATSCluster("presence")
	}
	if natsErr != nil {
		r.note(t, "the 3-node NATS cluster did not start (%v): the row is one Host without NATS", natsErr)
	} else {
		defer nc.stop()
		r.note(t, "on NATS: one Host (the command's process) with presence's fleet link on a 3-node NATS cluster (bench/.bin/natsnode, JetStream log R3; the stream log itself in memory, so the row is presence's); NATS's CPU is the three nodes' over the same window, their own idle work (routes, the log's Raft) included; a fleet of several Hosts on it is not measured here (the fleet tests hold presence across Hosts)")
	}
	control, err := e.presenceIdleRun("presence-idle-control", nc, idle, append(slices.Clone(args), "-no-presence"))
	if err != nil {
		return err
	}
	if nc != nil {
		args = append(args, "-nats", strings.Join(nc.urls[:], ","), "-nats-replicas", "3")
	}
	with, err := e.presenceIdleRun("presence-idle", nc, idle, args)
	if err != nil {
		return err
	}
	per := func(run idleRun) float64 { return (run.CPUPct + run.natsPct) * 10000 / float64(run.Streams) }
	for _, run := range []idleRun{control, with} {
		where := "one Host, no NATS"
		switch {
		case !run.Presence:
			where = "the control: the same sessions, no presence"
		case run.NATS:
			where = "one Host, presence on 3 NATS nodes"
		}
		natsCell := "–"
		if run.natsRead {
			natsCell = fmt.Sprintf("%.2f%%", run.natsPct)
		}
		r.row(t, where, fmtN(float64(run.Sessions)), fmt.Sprintf("%.2f%%", run.CPUPct), natsCell,
			fmt.Sprintf("%.2f%%", per(run)), fmt.Sprintf("%.1f MB", run.HeapMB), fmt.Sprintf("%.0f s", run.ForMs/1000))
	}
	own := per(with) - per(control)
	r.row(t, "presence's own: the row with it less the control", "", fmtDelta(with.CPUPct-control.CPUPct),
		map[bool]string{true: fmtDelta(with.natsPct - control.natsPct), false: "–"}[with.natsRead && control.natsRead],
		fmtDelta(own), fmt.Sprintf("%.1f MB", with.HeapMB-control.HeapMB), "")
	r.judge("presence", "idle presence under 2% of a core per 10,000 streams", own < 2,
		fmt.Sprintf("%s (%.2f%% with presence, %.2f%% for the same sessions without: the process's CPU with its sessions' heartbeats%s)",
			fmtDelta(own), per(with), per(control), map[bool]string{true: ", plus NATS's", false: ""}[with.natsRead]),
		"profile the idle Host (presence -idle -cpuprofile): presence keeps no timer per stream, so look at the heartbeats and the fleet link's beats")
	return nil
}

// fmtDelta is a difference of two CPU figures in % of a core, signed; one that rounds to
// nothing is 0.00% (not -0.00%: within the machine's noise either way).
func fmtDelta(pct float64) string {
	if math.Abs(pct) < 0.005 {
		return "0.00%"
	}
	return fmt.Sprintf("%+.2f%%", pct)
}

// idleRun is one -idle run's figures, with NATS's CPU over its window (natsRead: read).
type idleRun struct {
	presload.Idle
	natsPct  float64
	natsRead bool
}

// presenceIdleRun runs bench/cmd/presence -idle with args, sampling NATS's CPU (nc, if any)
// every 200 ms while it runs, then reading it over the command's idle window.
func (e *env) presenceIdleRun(name string, nc *natsCluster, idle time.Duration, args []string) (idleRun, error) {
	type sample struct {
		at  time.Time
		cpu time.Duration
	}
	var samples []sample
	var smu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if nc != nil {
		wg.Go(func() {
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				if d, err := nc.cpu(); err == nil {
					smu.Lock()
					samples = append(samples, sample{time.Now(), d})
					smu.Unlock()
				}
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		})
	}
	run, err := e.runPresence(name, 4*time.Minute+idle, args...)
	close(stop)
	wg.Wait()
	if nc != nil {
		// The command may end within a tick of its window's end: one more sample closes it.
		if d, err := nc.cpu(); err == nil {
			samples = append(samples, sample{time.Now(), d})
		}
	}
	if err != nil {
		return idleRun{}, err
	}
	if run.Idle == nil {
		return idleRun{}, fmt.Errorf("%s: the result has no idle", name)
	}
	out := idleRun{Idle: *run.Idle}
	if nc != nil {
		from, to := time.UnixMilli(out.StartMs), time.UnixMilli(out.EndMs)
		var a, b *sample
		for i := range samples {
			s := &samples[i]
			if !s.at.After(from) {
				a = s // the last sample at or before the window opened
			}
			if b == nil && !s.at.Before(to) {
				b = s // the first at or after it closed
			}
		}
		if a != nil && b != nil && b.at.After(a.at) {
			out.natsPct, out.natsRead = 100*(b.cpu-a.cpu).Seconds()/b.at.Sub(a.at).Seconds(), true
		}
	}
	return out, nil
}
