//go:build !js

package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lifeline-go/lifeline/internal/swarmline"
	"github.com/lifeline-go/lifeline/internal/test/faultproxy"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// accepts returns the times of the connections p accepted in [from, to).
func accepts(p *faultproxy.Proxy, from, to time.Time) []time.Time {
	var ts []time.Time
	for _, r := range p.Records() {
		if !r.Accepted.Before(from) && r.Accepted.Before(to) {
			ts = append(ts, r.Accepted)
		}
	}
	return ts
}

// latencies turns first-connected times into seconds after t; clients that never connected
// are left out, and counted by the second result.
func latencies(first []time.Time, t time.Time) (lat []float64, missing int) {
	for _, c := range first {
		if c.IsZero() {
			missing++
			continue
		}
		lat = append(lat, c.Sub(t).Seconds())
	}
	return lat, missing
}

func recovered(n, missing int) string { return fmt.Sprintf("%d/%d", n-missing, n) }

// s1Refused: a refused outage. Dials per client during it, and recovery latency after it.
func (e *env) s1Refused(r *report) error {
	n, outage := e.n(50, 4), e.d(60*time.Second, 10*time.Second)
	g, err := e.startGroup("s1", allKinds, n, "")
	if err != nil {
		return err
	}
	defer g.close()
	t := r.table(fmt.Sprintf("1. Refused outage of %v, %d clients", outage, n),
		"at most 12 dials per client (p99) during a 60 s outage; recovery p50 ≤ 4 s, p99 ≤ 10 s",
		"client", "dials/client p50", "p99", "max", "TCP accepts/client", "recovery p50", "p99", "max", "recovered")
	time.Sleep(time.Second)
	t0 := g.set(faultproxy.Refuse)
	time.Sleep(outage)
	t1 := g.set(faultproxy.Up)
	g.waitRecovered(t1, 40*time.Second)
	time.Sleep(500 * time.Millisecond)
	for _, st := range g.stacks {
		dials := ints(st.fleet.countIn(evAttempt, t0, t1))
		tcp := float64(len(accepts(st.proxy, t0, t1))) / float64(n)
		lat, miss := latencies(st.fleet.connectedSince(t1), t1)
		r.row(t, st.kind, fmtN(pct(dials, 50)), fmtN(pct(dials, 99)), fmtN(maxOf(dials)), fmtN(math.Round(tcp*10)/10),
			fmtS(pct(lat, 50)), fmtS(pct(lat, 99)), fmtS(maxOf(lat)), recovered(n, miss))
		if st.kind == kLifeline {
			full := e.scale >= 1
			r.judgeFull(full, "1", "dials p99 ≤ 12 in a 60 s refused outage", pct(dials, 99) <= 12,
				fmt.Sprintf("p99 %s dials in %v", fmtN(pct(dials, 99)), outage),
				"by design the worst of 50 clients makes about 12 dials in 60 s (the simulation table says how often more); holding 12 in every run takes a slightly higher top cap (maxDelayMs) or a narrower jitter")
			r.judgeFull(full, "1", "recovery p50 ≤ 4 s", pct(lat, 50) <= 4 && miss == 0, fmtS(pct(lat, 50)),
				"by design: after 60 s every client waits on the top rung, 5–10 s, and the wait from the Host's return is what is left of it, with a median of 3.75 s for the ideal ladder — over 4 s in a good share of runs (simulation table), before the handshake is added. Holding 4 s in every run takes a top cap of about 9 s (median wait 3.4 s), at the cost of more dials in a long outage")
			r.judgeFull(full, "1", "recovery p99 ≤ 10 s", pct(lat, 99) <= 10 && miss == 0, fmtS(pct(lat, 99)),
				"the top cap bounds the worst wait: maxDelayMs plus the handshake must stay under 10 s")
		}
	}
	r.note(t, "dials are the client's own attempts (its `attempt` events) between the switch to refuse and the switch back; TCP accepts are the proxy's count of connections in the same span, divided by the clients (socket.io's polling transport opens more than one per attempt once connected)")
	r.note(t, "recovery is the time from the proxy going up to the client's next `connected` (Lifeline: a ready frame; socket.io: `connect`; reconnecting-websocket: `open`)")
	return nil
}

// s2Blackhole: accepted and never answered. How long each client holds a stalled attempt,
// what it leaves open, how long it takes to recover.
func (e *env) s2Blackhole(r *report) error {
	n, outage := e.n(50, 4), e.d(60*time.Second, 15*time.Second)
	g, err := e.startGroup("s2", allKinds, n, "")
	if err != nil {
		return err
	}
	defer g.close()
	t := r.table(fmt.Sprintf("2. Blackhole of %v, %d clients", outage, n),
		"each stalled attempt held at most 15 s, 0 stalled sockets left open",
		"client", "stalled attempts/client", "held p50", "held max", "open at outage end", "left open after recovery", "recovery p50", "p99", "recovered")
	time.Sleep(time.Second)
	t0 := g.set(faultproxy.Blackhole)
	time.Sleep(outage)
	openAtEnd := make([]int, len(g.stacks))
	for i, st := range g.stacks {
		openAtEnd[i] = st.proxy.OpenCount(faultproxy.Blackhole)
	}
	t1 := g.set(faultproxy.Up)
	g.waitRecovered(t1, 60*time.Second)
	// Any attempt still pending when the proxy came back has since been given up by a client
	// that reconnected; whatever is still held now is a socket nobody will close.
	time.Sleep(time.Second)
	now := time.Now()
	for i, st := range g.stacks {
		var held []float64
		stalled, stillOpen := 0, 0
		for _, rec := range st.proxy.Records() {
			if rec.Mode != faultproxy.Blackhole {
				continue
			}
			stalled++
			if rec.Ended.IsZero() {
				stillOpen++
				held = append(held, now.Sub(rec.Accepted).Seconds())
				continue
			}
			held = append(held, rec.Ended.Sub(rec.Accepted).Seconds())
		}
		lat, miss := latencies(st.fleet.connectedSince(t1), t1)
		heldMax := fmtS(maxOf(held))
		if stillOpen > 0 {
			heldMax = "never closed"
		}
		r.row(t, st.kind, fmtN(float64(stalled)/float64(n)), fmtS(pct(held, 50)), heldMax,
			fmt.Sprint(openAtEnd[i]), fmt.Sprint(stillOpen), fmtS(pct(lat, 50)), fmtS(pct(lat, 99)), recovered(n, miss))
		if st.kind == kLifeline {
			r.judge("2", "each stalled attempt held ≤ 15 s (+0.5 s for the close to reach the proxy)", stillOpen == 0 && maxOf(held) <= 15.5,
				"max "+heldMax, "the deadline must close the socket, not only cancel the attempt")
			r.judge("2", "0 stalled sockets left open", stillOpen == 0, fmt.Sprint(stillOpen),
				"every cancelled dial must release its socket")
		}
	}
	_ = t0
	r.note(t, "held is measured by the proxy: from its accept to the client closing the socket; a socket still open once every client has reconnected is counted as left open (and its time as never closed)")
	r.note(t, "open at outage end counts the attempts in flight when the proxy came back: those are still within their client's timeout")
	r.note(t, "recovery after a blackhole is bounded by each client's attempt timeout: an attempt stalled when the Host comes back stays stalled until it is given up (Lifeline 15 s deadline, socket.io 20 s, reconnecting-websocket 4 s), then the backoff runs")
	r.note(t, "socket.io-client in Node gives up a stalled attempt after its 20 s timeout but never closes the polling request's socket: every stalled attempt stays open at the proxy for the rest of the run")
	return nil
}

// s3Flap: every connection is cut 200 ms after its accept. A client starts from a fresh
// ladder when the flapping begins, so the first seconds show its climb; the rate it keeps up
// is read after a warm-up.
func (e *env) s3Flap(r *report) error {
	n, dur := e.n(50, 4), e.d(90*time.Second, 30*time.Second)
	warm := min(20*time.Second, dur/3)
	g, err := e.startGroup("s3", allKinds, n, "")
	if err != nil {
		return err
	}
	defer g.close()
	t := r.table(fmt.Sprintf("3. Flap for %v (each connection cut 200 ms after accept), %d clients", dur, n),
		"8 or fewer dials per minute",
		"client", "dials/min, whole flap", fmt.Sprintf("dials/min after %v: mean", warm), "p50", "p99",
		"TCP accepts/min per client", "connects/min")
	time.Sleep(time.Second)
	t0 := g.set(faultproxy.Flap)
	time.Sleep(dur)
	t1 := g.set(faultproxy.Up)
	tw := t0.Add(warm)
	perMin := func(xs []int, from, to time.Time) []float64 {
		f := ints(xs)
		for i := range f {
			f[i] /= to.Sub(from).Minutes()
		}
		return f
	}
	r1 := func(x float64) string { return fmtN(math.Round(x*10) / 10) }
	for _, st := range g.stacks {
		whole := perMin(st.fleet.countIn(evAttempt, t0, t1), t0, t1)
		steady := perMin(st.fleet.countIn(evAttempt, tw, t1), tw, t1)
		conns := perMin(st.fleet.countIn(evConnected, tw, t1), tw, t1)
		tcp := float64(len(accepts(st.proxy, tw, t1))) / float64(n) / t1.Sub(tw).Minutes()
		r.row(t, st.kind, r1(mean(whole)), r1(mean(steady)), r1(pct(steady, 50)), r1(pct(steady, 99)), r1(tcp), r1(mean(conns)))
		if st.kind == kLifeline {
			r.judgeFull(e.scale >= 1, "3", "≤ 8 dials per minute under flap", mean(steady) <= 8,
				fmt.Sprintf("%.1f/min (mean over the clients after the warm-up; p99 %.1f; whole flap %.1f)", mean(steady), pct(steady, 99), mean(whole)),
				"flap damping must hold the ladder at its top cap: a generation shorter than stableAfterMs must not reset it; at a 10 s cap with 50–100% jitter the mean is 8/min")
		}
	}
	r.note(t, "a dial is an `attempt` event; the rate after the warm-up is what a client keeps up while the Host flaps, the whole-flap rate includes each client's climb up its ladder from a fresh start")
	return nil
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// herdRun is one herd: a refused outage, then everyone back at once.
type herdRun struct {
	label   string
	outage  time.Duration
	kinds   []string
	hostCfg string
}

// s4Herd: 200 clients, all cut at once, all back at once.
func (e *env) s4Herd(r *report) error {
	n := e.n(200, 8)
	t := r.table(fmt.Sprintf("4. Herd: %d clients, refused outage, then all back at once", n),
		"10 s outage: peak ≤ 12 accepted per 100 ms, 99% within 9 s; 60 s outage: peak ≤ 8, 99% within 9.5 s; accept-rate limit 5 per 100 ms: never above it, 99% no more than 1 s later",
		"client", "outage", "Host limit", "peak TCP accepts/100 ms: sliding / binned", "peak sessions admitted/100 ms (Host side)", "peak connects/100 ms (client side)", "99% connected", "all connected", "recovered")
	short, long := e.d(10*time.Second, 3*time.Second), e.d(60*time.Second, 15*time.Second)
	runs := []herdRun{
		{"10 s", short, allKinds, ""},
		{"60 s", long, allKinds, ""},
		{"10 s", short, []string{kLifeline}, `{"acceptRate":50,"acceptBurst":1}`},
		{"10 s", short, []string{kLifeline}, `{"acceptRate":50,"acceptBurst":5}`},
	}
	var t99Free float64 = math.NaN()
	for i, run := range runs {
		g, err := e.startGroup(fmt.Sprintf("s4-%d", i), run.kinds, n, run.hostCfg)
		if err != nil {
			r.fail("4 "+run.label, err)
			continue
		}
		time.Sleep(time.Second)
		g.set(faultproxy.Refuse)
		time.Sleep(run.outage)
		t1 := g.set(faultproxy.Up)
		g.waitRecovered(t1, 40*time.Second)
		time.Sleep(500 * time.Millisecond)
		limit := "none"
		if run.hostCfg != "" {
			limit = strings.Trim(strings.ReplaceAll(run.hostCfg, `"`, ""), "{}")
		}
		for _, st := range g.stacks {
			tcp := accepts(st.proxy, t1, time.Now())
			first := st.fleet.connectedSince(t1)
			var conn []time.Time
			for _, c := range first {
				if !c.IsZero() {
					conn = append(conn, c)
				}
			}
			lat, miss := latencies(first, t1)
			slices.Sort(lat)
			t99 := math.NaN()
			if k := int(math.Ceil(0.99*float64(n))) - 1; k < len(lat) {
				t99 = lat[k]
			}
			peakTCP, peakConn := peakIn(tcp, 100*time.Millisecond), peakIn(conn, 100*time.Millisecond)
			admitted := "–"
			peakAdmit := -1
			if st.kind == kLifeline {
				peakAdmit = peakIn(admissions(st.proxy, t1), 100*time.Millisecond)
				admitted = fmt.Sprint(peakAdmit)
			}
			peakBin := peakBinned(tcp, t1, 100*time.Millisecond)
			firstSpan := 3 * time.Second
			if run.outage > short {
				firstSpan = 7 * time.Second
			}
			avgFirst := float64(len(accepts(st.proxy, t1, t1.Add(firstSpan)))) / float64(firstSpan/(100*time.Millisecond))
			r.row(t, st.kind, fmt.Sprint(run.outage), limit, fmt.Sprintf("%d / %d", peakTCP, peakBin), admitted, fmt.Sprint(peakConn),
				fmtS(t99), fmtS(maxOf(lat)), recovered(n, miss))
			if st.kind != kLifeline {
				continue
			}
			full := e.scale >= 1
			switch {
			case i == 0:
				t99Free = t99
				r.judgeFull(full, "4", "10 s outage: peak ≤ 12 accepted per 100 ms", peakTCP <= 12,
					fmt.Sprintf("%d in the worst sliding 100 ms, %d in the worst 100 ms bin from recovery; %.1f per 100 ms on average over the first %v", peakTCP, peakBin, avgFirst, firstSpan),
					"after a 10 s outage every client waits on the 4–8 s rung, and all were cut at the same instant, so their retries land within about 3 s of the Host's return, at the average density given above; the worst window is that average plus chance. Lowering it takes spreading those retries over a longer span — a wider jitter (1 spreads a rung over 0–cap) — or admission at the Host, which today costs the refused pages a ladder step (see the accept-rate aim)")
				r.judgeFull(full, "4", "10 s outage: 99% within 9 s", t99 <= 9 && miss == 0, fmtS(t99),
					"the last clients are those whose try on the 4–8 s rung failed just before the Host came back: they then wait the top rung, 5–10 s, so the 99th of 200 lands near 9 s by construction and either side of it from run to run. Holding 9 s reliably takes a top cap (maxDelayMs) of about 9 s, at the cost of more dials in long outages")
			case i == 1:
				r.judgeFull(full, "4", "60 s outage: peak ≤ 8 accepted per 100 ms", peakTCP <= 8,
					fmt.Sprintf("%d in the worst sliding 100 ms, %d in the worst 100 ms bin from recovery; %.1f per 100 ms on average over the first %v", peakTCP, peakBin, avgFirst, firstSpan),
					"at the top cap the clients' retries are independent and spread over 5–10 s, at the average density given above; the worst 100 ms window of such random arrivals reaches 8–9. Holding 8 in every window takes admission at the Host (its accept rate as a token bucket of 8 per 100 ms, burst 1) — which only works once a refused page comes back at its retry-after instead of stepping its ladder (see the accept-rate aim) — or a longer spread (a wider jitter or a higher cap, which lengthens recovery)")
				r.judgeFull(full, "4", "60 s outage: 99% within 9.5 s", t99 <= 9.5 && miss == 0, fmtS(t99),
					"a top cap below 9.5 s, or a Host that says when it is back")
			case run.hostCfg == `{"acceptRate":50,"acceptBurst":1}`:
				r.judge("4", "accept-rate 5/100 ms: never more admitted in any 100 ms", peakAdmit <= 5,
					fmt.Sprintf("%d admitted in the worst 100 ms at the Host's side (%d connected in the worst 100 ms at the clients')", peakAdmit, peakConn),
					"a token bucket of 50/s with burst 1 spaces its slots 20 ms apart, but a held upgrade is released by a timer that can fire late, so two admissions can come closer than 20 ms and a sliding 100 ms window can hold 6: holding 5 in every window takes spacing each admission from the previous actual one, not from the bucket's schedule")
				r.judgeFull(full, "4", "accept-rate 5/100 ms: 99% no more than 1 s later than without", t99-t99Free <= 1 && miss == 0,
					fmt.Sprintf("%s vs %s", fmtS(t99), fmtS(t99Free)),
					"a page refused with 1013 waits max(retry-after, its next ladder delay) and the refusal counts as one more failure of the outage, so it comes back a top rung (5–10 s) later although its slot was near. The Host holds an upgrade up to 2 s for its slot instead of refusing it (hostplugin, holdMax), so a page still refused is one whose slot was further away than that. It would take the page honouring an admission refusal as what it is — come back at the retry-after, without a ladder step — or a longer hold")
			}
		}
		g.close()
	}
	r.note(t, "sessions admitted are seen at the proxy in front of the Host: the moment the Host answered an upgrade (its first byte back) of a connection that then lasted over 500 ms (a 1013 refusal ends within milliseconds); the Host holds an upgrade for its accept-rate slot and answers it at admission")
	r.note(t, "peak TCP accepts counts what the proxy accepted in the worst 100 ms after it came back: in any sliding window [t, t+100 ms), and in the worst of the 100 ms bins counted from the moment it came back; peak connects counts sessions established (Lifeline: ready frames, i.e. what the Host admitted) in the worst 100 ms")
	r.note(t, "the Host's limit is its JSON config: acceptRate per second and acceptBurst; 5 per 100 ms is acceptRate 50, and a token bucket admits burst + rate × window in a window, so only burst 1 can keep every 100 ms window at 5, and then only if each admission comes exactly on its slot")
	return nil
}

// admissions returns when the upstream first answered each connection accepted from t1 on that
// then lasted over 500 ms: for Lifeline's Host, when it admitted a session.
func admissions(p *faultproxy.Proxy, t1 time.Time) []time.Time {
	var ts []time.Time
	for _, r := range p.Records() {
		if r.Accepted.Before(t1) || r.FirstReply.IsZero() {
			continue
		}
		if r.Ended.IsZero() || r.Ended.Sub(r.FirstReply) > 500*time.Millisecond {
			ts = append(ts, r.FirstReply)
		}
	}
	return ts
}

// peakBinned is the largest count of times in one bin of width w, bins counted from t0.
func peakBinned(ts []time.Time, t0 time.Time, w time.Duration) int {
	bins := make(map[int64]int)
	best := 0
	for _, t := range ts {
		b := int64(t.Sub(t0) / w)
		bins[b]++
		best = max(best, bins[b])
	}
	return best
}

// s5Restart: a planned restart. Lifeline's Host drains to a second Host; the peers' servers,
// and Lifeline's too for comparison, are stopped and started again on the same port.
func (e *env) s5Restart(r *report) error {
	n := e.n(50, 4)
	t := r.table(fmt.Sprintf("5. Planned restart, %d clients", n),
		"Lifeline handing off to its successor (SIGUSR2) or draining to a second Host: 0 ms not connected, 0 events lost or duplicated; after a handoff the old process gone within 2 s of the successor's ready",
		"client", "restart", "server down", "not connected p50", "p99", "max", "clients that noticed", "recovered")
	if err := e.s5Handoff(r, t, n); err != nil {
		r.fail("5 handoff", err)
	}
	for _, shared := range []bool{true, false} {
		if err := e.s5Drain(r, t, n, shared); err != nil {
			r.fail(fmt.Sprintf("5 drain (shared log %v)", shared), err)
		}
	}
	g, err := e.startGroup("s5p", allKinds, n, "")
	if err != nil {
		return err
	}
	defer g.close()
	time.Sleep(time.Second)
	g.note("restart every server")
	stopAt := make([]time.Time, len(g.stacks))
	downFor := make([]time.Duration, len(g.stacks))
	errs := make([]error, len(g.stacks))
	var wg sync.WaitGroup
	for i, st := range g.stacks {
		wg.Go(func() {
			stopAt[i] = time.Now()
			_ = st.srv.proc.Stop(10 * time.Second)
			ns, err := e.startServer(st.kind, "s5p-"+short(st.kind)+"-server-restarted", st.srv.port, "")
			if err != nil {
				errs[i] = err
				return
			}
			downFor[i] = time.Since(stopAt[i])
			st.srv = ns
		})
	}
	wg.Wait()
	g.waitRecovered(slices.MaxFunc(stopAt, time.Time.Compare), 40*time.Second)
	time.Sleep(500 * time.Millisecond)
	end := time.Now()
	for i, st := range g.stacks {
		if errs[i] != nil {
			r.fail("5 restart "+st.kind, errs[i])
			continue
		}
		down := secs(st.fleet.downTime(stopAt[i], end))
		noticed := 0
		for _, d := range down {
			if d > 0 {
				noticed++
			}
		}
		_, miss := latencies(st.fleet.connectedSince(stopAt[i]), stopAt[i])
		r.row(t, st.kind, "plain: stop, start again on the same port", fmtS(downFor[i].Seconds()),
			fmtS(pct(down, 50)), fmtS(pct(down, 99)), fmtS(maxOf(down)), fmt.Sprintf("%d/%d", noticed, n), recovered(n, miss))
	}
	r.note(t, "Lifeline's plain restart is cmd/host's SIGTERM with no successor: it stops accepting, closes every session at once with 1012 (after an error frame service-restart, which a browser page can read) and exits; the pages then dial the port until the new process accepts")
	r.note(t, "server down is from the stop signal to the new process accepting; not connected is each client's time between its `disconnected` and its next `connected` from the stop on")
	return nil
}

// s5Handoff: one bin/host, its clients following ticks, then SIGUSR2: the successor inherits
// the listening socket, says it is ready (its PID in -pidfile), and the old process drains
// every session to it (an empty-uri goaway, followed make-before-break) and exits. Each
// process has its own in-memory log, so each client is reset once onto the successor's.
func (e *env) s5Handoff(r *report, t *table, n int) error {
	pidFile := filepath.Join(e.raw, "s5-handoff-host.pid")
	host, err := e.startServer(kLifeline, "s5-handoff-host", 0, "", "-pidfile", pidFile)
	if err != nil {
		return err
	}
	defer host.proc.Stop(5 * time.Second)
	clients, fl, err := e.startClients(kLifeline, "s5-handoff-clients", clientURL(kLifeline, host.addr()), n, "-sub", "ticks", "-deliveries")
	if err != nil {
		return err
	}
	defer clients.Stop(5 * time.Second)
	if !waitFor(60*time.Second, func() bool { return fl.connectedNow() >= n }) {
		return fmt.Errorf("only %d/%d clients connected", fl.connectedNow(), n)
	}
	time.Sleep(2500 * time.Millisecond) // a few ticks on the first process
	oldPID := host.proc.Pid()
	tS := time.Now()
	if err := syscall.Kill(oldPID, syscall.SIGUSR2); err != nil {
		return fmt.Errorf("SIGUSR2 to %d: %w", oldPID, err)
	}
	// The successor writes its PID once ready, before it tells the old process to go.
	var newPID int
	var tReady time.Time
	if !waitForEvery(2*time.Millisecond, 30*time.Second, func() bool {
		b, err := os.ReadFile(pidFile)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if err == nil && pid > 0 && pid != oldPID {
			newPID, tReady = pid, time.Now()
			return true
		}
		return false
	}) {
		return fmt.Errorf("no successor of %d became ready within 30 s (see s5-handoff-host.err)", oldPID)
	}
	// The successor is not the harness's child: it is stopped here (and with the old
	// process's group, which it is still in, by host.proc.Stop).
	defer stopPID(newPID, 5*time.Second)
	if !waitForEvery(2*time.Millisecond, 30*time.Second, host.proc.Exited) {
		return fmt.Errorf("the old process %d did not exit within 30 s of SIGUSR2", oldPID)
	}
	gone := time.Since(tReady)
	time.Sleep(3 * time.Second) // ticks on the successor
	end := time.Now()
	down := secs(fl.downTime(tS, end))
	noticed := 0
	for _, d := range down {
		if d > 0 {
			noticed++
		}
	}
	h, _ := getHealth(host.addr())
	how := fmt.Sprintf("handoff: SIGUSR2, the successor inherits the socket (separate in-memory logs: one reset per client); old process gone %.2f s after the successor's ready", gone.Seconds())
	r.row(t, kLifeline, how, "0 (the port never closed)", fmtS(pct(down, 50)), fmtS(pct(down, 99)), fmtS(maxOf(down)),
		fmt.Sprintf("%d/%d", noticed, n), fmt.Sprintf("%d/%d on the successor", h.Sessions, n))
	r.judge("5", "handoff: 0 ms not connected", noticed == 0, fmt.Sprintf("max %s, %d/%d clients noticed", fmtS(maxOf(down)), noticed, n),
		"the old process must drain only once the successor serves the inherited socket, and only after it stopped accepting")
	lost, dup, resets := e.streamIntegrity(r, t, fl, "handoff, separate in-memory logs", tS)
	r.judge("5", "handoff: 0 events lost or duplicated, one explicit reset per client", lost == 0 && dup == 0 && resets == n,
		fmt.Sprintf("%d lost, %d duplicated, %d resets after SIGUSR2 over %d clients", lost, dup, resets, n),
		"each client must resume once onto the successor's new log, with a reset, and lose nothing")
	r.judge("5", "handoff: the old process gone within 2 s of the successor's ready", gone <= 2*time.Second, fmt.Sprintf("%.2f s", gone.Seconds()),
		"once its pages have moved the old process has nothing left to wait for")
	return nil
}

// waitForEvery is waitFor polling every step: the moments it reports are figures.
func waitForEvery(step, d time.Duration, cond func() bool) bool {
	return testbed.Poll(context.Background(), d, step, cond)
}

// stopPID stops a process the harness did not start (a handoff's successor): SIGTERM, then
// SIGKILL after grace.
func stopPID(pid int, grace time.Duration) {
	if syscall.Kill(pid, syscall.SIGTERM) != nil {
		return
	}
	if !waitForEvery(10*time.Millisecond, grace, func() bool { return !running(pid) }) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// running reports whether pid exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// s5Drain: two Hosts, each behind a proxy; the clients are on the first, whose fault panel
// then drains every session to the second; then the first is stopped. With shared, both keep
// their stream logs in one NATS JetStream (embedded in the second Host, which outlives the
// first), so the pages can resume by cursor; without, each has its own in-memory ring.
func (e *env) s5Drain(r *report, t *table, n int, shared bool) error {
	portA, err := testbed.FreePort()
	if err != nil {
		return err
	}
	portB, err := testbed.FreePort()
	if err != nil {
		return err
	}
	base := "s5-drain-rings"
	var argsA, argsB []string
	if shared {
		base = "s5-drain-shared"
		natsPort, err := testbed.FreePort()
		if err != nil {
			return err
		}
		natsDir := filepath.Join(e.raw, base+"-nats")
		argsB = []string{"-id", "B", "-nats-embedded", natsDir, "-nats-addr", fmt.Sprintf("127.0.0.1:%d", natsPort)}
		argsA = []string{"-id", "A", "-nats", fmt.Sprintf("nats://127.0.0.1:%d", natsPort)}
	}
	var stA, stB stack
	if err := stA.addProxy(e, base+"-hostA", fmt.Sprintf("127.0.0.1:%d", portA)); err != nil {
		return err
	}
	defer stA.close()
	if err := stB.addProxy(e, base+"-hostB", fmt.Sprintf("127.0.0.1:%d", portB)); err != nil {
		return err
	}
	defer stB.close()
	// The second Host first: with a shared log, it holds the NATS server the first one uses.
	// The clients' origin (if they send one) is the first Host's: the second must allow it.
	if stB.srv, err = e.startServer(kLifeline, base+"-hostB", portB, `{"allowedOrigins":["127.0.0.1:*"]}`, argsB...); err != nil {
		return err
	}
	if stA.srv, err = e.startServer(kLifeline, base+"-hostA", portA, "", argsA...); err != nil {
		return err
	}
	if stA.clients, stA.fleet, err = e.startClients(kLifeline, base+"-clients", clientURL(kLifeline, stA.proxy.Addr()), n,
		"-sub", "ticks", "-deliveries"); err != nil {
		return err
	}
	fl := stA.fleet
	if !waitFor(60*time.Second, func() bool { return fl.connectedNow() >= n }) {
		return fmt.Errorf("only %d/%d clients connected to the first Host", fl.connectedNow(), n)
	}
	time.Sleep(2500 * time.Millisecond) // a few ticks on the first Host
	tD := time.Now()
	target := clientURL(kLifeline, stB.proxy.Addr())
	if err := testbed.SetFault(context.Background(), "http://"+stA.srv.addr(), "drain="+target); err != nil {
		return err
	}
	moved := waitFor(30*time.Second, func() bool {
		h, err := getHealth(stB.srv.addr())
		return err == nil && h.Sessions >= n && stA.proxy.OpenCount(faultproxy.Up) == 0
	})
	tMoved := time.Since(tD)
	hB, _ := getHealth(stB.srv.addr())
	_ = stA.srv.proc.Stop(15 * time.Second)
	time.Sleep(3 * time.Second) // ticks on the second Host, after the first is gone
	end := time.Now()
	down := secs(fl.downTime(tD, end))
	noticed := 0
	for _, d := range down {
		if d > 0 {
			noticed++
		}
	}
	logs := "separate in-memory logs"
	if shared {
		logs = "one log in NATS JetStream"
	}
	how := fmt.Sprintf("drain to a second Host, %s (all moved in %.2f s)", logs, tMoved.Seconds())
	if !moved {
		how = fmt.Sprintf("drain to a second Host, %s (only %d/%d moved in 30 s)", logs, hB.Sessions, n)
	}
	r.row(t, kLifeline, how, "0 (the second Host is up)", fmtS(pct(down, 50)), fmtS(pct(down, 99)), fmtS(maxOf(down)),
		fmt.Sprintf("%d/%d", noticed, n), fmt.Sprintf("%d/%d on the second Host", hB.Sessions, n))
	r.judge("5", "drain to a second Host ("+logs+"): 0 ms not connected", noticed == 0 && moved, fmt.Sprintf("max %s, %d/%d clients noticed", fmtS(maxOf(down)), noticed, n),
		"make-before-break must keep the draining session until the target's ready frame")
	lost, dup, _ := e.streamIntegrity(r, t, fl, logs, tD)
	r.judge("5", "drain ("+logs+"): 0 events lost or duplicated", lost == 0 && dup == 0, fmt.Sprintf("%d lost, %d duplicated", lost, dup),
		"every event must reach the page once, in order, across the handover: resumed by cursor from a shared log, or replaced by an explicit reset")
	return nil
}

// streamIntegrity reads the ticks deliveries the clients printed (bin/swarm -sub ticks
// -deliveries), whose own check prints a violation for every event out of order: a gap (lost
// events) or a seq already delivered (a duplicate). It also returns the resets after drain.
func (e *env) streamIntegrity(r *report, t *table, fl *fleet, logs string, drain time.Time) (lost, dup, resetsAfter int) {
	var events, resets, violations int
	for _, ev := range fl.snapshot() {
		switch ev.Ev {
		case "delivery":
			if ev.Reset {
				resets++
				if ev.T.After(drain) {
					resetsAfter++
				}
			} else {
				events++
			}
		case "violation":
			violations++
			want, ok := swarmline.Line{Want: ev.Want}.WantSeq()
			if !ok {
				dup++ // an event before any reset: nothing to place it after
				continue
			}
			if ev.Seq > want {
				lost += int(ev.Seq - want)
			} else {
				dup++
			}
		}
	}
	r.note(t, "ticks across the move, %s (bin/swarm -sub ticks, one tick a second): %d events delivered, %d lost, %d duplicated (%d violations of once-each-in-order); %d resets before it (the pages' first baselines), %d after it over %d clients — a reset after the move means the page re-baselined on the Host it moved to (its log is another, with another epoch) instead of resuming by cursor",
		logs, events, lost, dup, violations, resets-resetsAfter, resetsAfter, fl.n)
	return lost, dup, resetsAfter
}
