//go:build !js

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/internal/test/faultproxy"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// soak is one run: the Hosts, the proxy, the clients, the pages, and what was seen.
type soak struct {
	o   options
	rng *rand.Rand
	bed *testbed.Bed
	tr  *tracker

	portA, portB int
	hostA, hostB *testbed.Proc
	cfgA, cfgB   string
	proxy        *faultproxy.Proxy
	proxyLog     *os.File
	pxURL        string // http://127.0.0.1:<proxy port>, where clients and pages go
	aURL, bURL   string // the Hosts directly: health and fault panels
	ledger       string // the file both Hosts count the calls' runs in (bin/host -ledger)
	pidA         string // Host A's -pidfile: the PID of the process serving, a successor's too

	clientProcs []*testbed.Proc
	pagesProc   *testbed.Proc

	kinds     map[string]*kindStats
	failures  []string
	epochA    int    // how many times Host A was started
	spans     []span // the faults, for the calls rejected during them
	calls     callTotals
	lastCall  time.Time     // when the clients make their last call
	callEvery time.Duration // how often each client calls

	base, stats []clientStats   // per client process, before the faults and at the end
	base0       []clientStats   // before the primer reconnect
	trend       [][]clientStats // … after each fault, to tell growth from noise
	panicked    []string
}

type kindStats struct {
	injected, recoveries, affected int
	worst                          time.Duration
	worstWho                       string
	overBound, notRecovered        int
	downs                          int // latency only: disconnects it caused (want 0)
}

func newSoak(o options) *soak {
	return &soak{
		o:     o,
		rng:   rand.New(rand.NewPCG(o.seed, 0x50a4)),
		bed:   testbed.New(o.logDir),
		tr:    &tracker{stats: map[int]chan clientStats{}},
		kinds: map[string]*kindStats{},
	}
}

func (s *soak) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.failures = append(s.failures, msg)
	fmt.Fprintln(os.Stderr, "soak: FAIL:", msg)
}

func (s *soak) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "soak %s: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func (s *soak) run(ctx context.Context) int {
	start := time.Now()
	defer func() {
		// Whatever happened, nothing the soak started outlives it.
		s.bed.StopAll(3 * time.Second)
		if s.proxy != nil {
			_ = s.proxy.Close()
			_ = s.proxyLog.Close()
		}
	}()
	s.logf("seed %d, %d clients, %d pages, faults for %s, recovery bound %s", s.o.seed, s.o.clients, s.o.pages, s.o.duration, bound)
	if err := s.setUp(ctx); err != nil {
		s.logf("set-up failed: %v", err)
		return 2
	}
	s.warmUp(ctx)
	// The first reconnect of each client allocates once what it keeps afterwards (measured:
	// ~9 KiB per client, flat over every later fault), so the leak baseline is taken after
	// one primer reconnect; the heap before it is reported too. So does the first burst of
	// calls a client sends when it is back: with calls the primer lasts long enough to make one.
	s.base0 = s.clientStats(ctx)
	s.prime(ctx)
	base := s.clientStats(ctx)
	s.faults(ctx)
	s.finish(ctx, base)
	s.summary(time.Since(start))
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stdout, "SOAK FAILED: interrupted or over its time limit")
	}
	if ctx.Err() != nil {
		s.logf("interrupted or over the time limit: %v", context.Cause(ctx))
		return 1
	}
	if len(s.failures) > 0 {
		return 1
	}
	return 0
}

func (s *soak) setUp(ctx context.Context) error {
	for _, f := range []string{"bin/host", "bin/swarm", "web/index.html"} {
		if _, err := os.Stat(filepath.Join(s.o.root, f)); err != nil {
			return fmt.Errorf("%s missing: run scripts/build.sh first", f)
		}
	}
	var err error
	if s.portA, err = testbed.FreePort(); err != nil {
		return err
	}
	if s.portB, err = testbed.FreePort(); err != nil {
		return err
	}
	s.aURL = "http://127.0.0.1:" + strconv.Itoa(s.portA)
	s.bURL = "http://127.0.0.1:" + strconv.Itoa(s.portB)
	s.ledger = filepath.Join(s.o.logDir, "ledger.jsonl")
	s.pidA = filepath.Join(s.o.logDir, "host-a.pid")

	// The proxy first: Host B must allow the origin of pages loaded through it. Its latency
	// is the latency fault's: 250 ± 100 ms each way.
	if s.proxyLog, err = os.Create(filepath.Join(s.o.logDir, "proxy.jsonl")); err != nil {
		return err
	}
	s.proxy, err = faultproxy.Listen("127.0.0.1:0", "127.0.0.1:"+strconv.Itoa(s.portA),
		&faultproxy.Options{Latency: 250 * time.Millisecond, Jitter: 100 * time.Millisecond, Log: s.proxyLog})
	if err != nil {
		return err
	}
	s.pxURL = "http://" + s.proxy.Addr()

	s.cfgA = filepath.Join(s.o.logDir, "host-a.json")
	s.cfgB = filepath.Join(s.o.logDir, "host-b.json")
	if err := os.WriteFile(s.cfgA, []byte(soakConfig("")), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(s.cfgB, []byte(soakConfig(s.pxURL)), 0o644); err != nil {
		return err
	}
	if err := s.startHostA(ctx); err != nil {
		return err
	}
	if s.hostB, err = s.startHost(ctx, "host-b", s.portB, s.cfgB, s.bURL); err != nil {
		return err
	}

	wsURL := "ws" + strings.TrimPrefix(s.pxURL, "http") + "/_lifeline/events"
	// The calls span the soak: the last one is made about when the last fault ends.
	every := max(s.o.duration/time.Duration(max(s.o.calls, 1)), time.Millisecond)
	s.callEvery = every
	s.lastCall = time.Now().Add(time.Duration(s.o.calls) * every)
	for p, first := 0, 0; first < s.o.clients; p, first = p+1, first+perProc {
		n := min(perProc, s.o.clients-first)
		base := -1
		for i := range n {
			id := s.tr.addClient(fmt.Sprintf("client %d", first+i), p, i, s.o.calls)
			if i == 0 {
				base = id
			}
		}
		ch := make(chan clientStats, 1)
		s.tr.stats[p] = ch
		argv := []string{filepath.Join(s.o.root, "bin/swarm"), "-url", wsURL, "-n", strconv.Itoa(n),
			"-sub", "ticks", "-deliveries", "-stats", "-recovery", recoveryJS,
			"-upgrade-after", upgradeAfter.String(),
			"-seed", strconv.FormatUint(s.o.seed+uint64(p)+1, 10)}
		if s.o.calls > 0 {
			argv = append(argv, "-calls", strconv.Itoa(s.o.calls), "-keyed", strconv.FormatFloat(keyedShare, 'g', -1, 64),
				"-call-every", every.String(), "-call-name", "ledger.run", "-call-prefix", callPrefix(p), "-calls-in-flight", strconv.Itoa(callsInFlight))
		}
		cp, err := s.bed.Start(fmt.Sprintf("client-%d", p), argv, &testbed.Options{Lines: func(b []byte) { s.tr.clientLine(p, base, b) }})
		if err != nil {
			return err
		}
		s.clientProcs = append(s.clientProcs, cp)
	}
	if s.o.pages > 0 {
		base := -1
		for i := range s.o.pages {
			id := s.tr.add(fmt.Sprintf("page %d", i), true)
			if i == 0 {
				base = id
			}
		}
		script := filepath.Join(s.o.root, "e2e/soak/pages.js")
		// If the soak dies without stopping it, the page driver gets SIGTERM, so that it
		// closes its browser (Chromium runs in a group of its own).
		if s.pagesProc, err = s.bed.Start("pages", []string{"node", script, s.pxURL + "/", strconv.Itoa(s.o.pages)},
			&testbed.Options{DeathSig: syscall.SIGTERM, Lines: func(b []byte) { s.tr.pageLine(base, b) }}); err != nil {
			return err
		}
	}
	return nil
}

// startHostA starts Host A, with a PID file that follows its SIGUSR2 successors, and waits
// until the file names it.
func (s *soak) startHostA(ctx context.Context) error {
	s.epochA++
	p, err := s.startHost(ctx, fmt.Sprintf("host-a%d", s.epochA), s.portA, s.cfgA, s.aURL, "-pidfile", s.pidA)
	s.hostA = p
	if err == nil && !waitFor(ctx, 5*time.Second, func() bool { pid, err := readPID(s.pidA); return err == nil && pid == p.Pid() }) {
		err = fmt.Errorf("%s did not write its PID to %s within 5 s", p.Name(), s.pidA)
	}
	return err
}

// startHost runs bin/host and waits (up to 10 s) until its health answers ready.
func (s *soak) startHost(ctx context.Context, name string, port int, cfg, base string, args ...string) (*testbed.Proc, error) {
	argv := append([]string{filepath.Join(s.o.root, "bin/host"), "-addr", "127.0.0.1:" + strconv.Itoa(port),
		"-config", cfg, "-web", filepath.Join(s.o.root, "web"), "-faults", "-ledger", s.ledger}, args...)
	p, err := s.bed.Start(name, argv, nil)
	if err != nil {
		return nil, err
	}
	ok := waitFor(ctx, 10*time.Second, func() bool {
		h, err := testbed.GetHealth(ctx, base)
		return err == nil && h.Ready || p.Exited()
	})
	if !ok || p.Exited() {
		return p, fmt.Errorf("%s did not become ready (see %s)", name, p.ErrLog())
	}
	return p, nil
}

// waitFor polls cond every 100 ms until it holds or d has passed; it reports whether it held.
func waitFor(ctx context.Context, d time.Duration, cond func() bool) bool {
	return testbed.Poll(ctx, d, 100*time.Millisecond, cond)
}

// setFault posts mode to a Host's fault panel.
func setFault(ctx context.Context, base, mode string) error { return testbed.SetFault(ctx, base, mode) }

// warmUp waits until every member is connected and subscribed, then a little longer.
func (s *soak) warmUp(ctx context.Context) {
	ok := waitFor(ctx, 60*time.Second, func() bool {
		all, up, sub := s.tr.counts()
		return all == up && all == sub
	})
	all, up, sub := s.tr.counts()
	if !ok {
		s.fail("warm-up: %d of %d members connected, %d subscribed after 60 s", up, all, sub)
	}
	s.logf("warm-up: %d members connected and subscribed", up)
	sleep(ctx, 3*time.Second)
}

// prime drops every session once (outage for 300 ms) and waits until all are back. With calls
// the outage lasts until every client has its most calls waiting (callsInFlight), as a longer
// fault's does, so that the first burst of calls sent after a reconnect is behind the baseline.
func (s *soak) prime(ctx context.Context) {
	from := msNow()
	defer func() { s.spans = append(s.spans, span{kind: "primer", from: from, to: msNow()}) }()
	hold := 300 * time.Millisecond
	if s.o.calls > 0 {
		hold = max(hold, time.Duration(callsInFlight+1)*s.callEvery)
	}
	err := setFault(ctx, s.aURL, "outage")
	sleep(ctx, hold)
	if e := setFault(ctx, s.aURL, "up"); err == nil {
		err = e
	}
	if err != nil {
		s.fail("primer: %v", err)
	}
	sleep(ctx, 500*time.Millisecond)
	if !waitFor(ctx, bound+4*time.Second, s.tr.allUp) {
		s.fail("primer: not every member came back")
	}
	sleep(ctx, 3*time.Second)
}

// upgradeAfter is the clients' first wait on the HTTP carrier before they try a WebSocket
// again (gateway.Options.UpgradeAfter), and onHTTPWait the bound on all of them being back on
// one at the end: the probe's wait doubles from upgradeAfter, with jitter, and a fault may end
// just before the run does.
const (
	upgradeAfter = time.Second
	onHTTPWait   = 20 * time.Second
)

// onHTTP is how many clients of every process are on the HTTP carrier.
func onHTTP(st []clientStats) int {
	n := 0
	for _, s := range st {
		n += s.OnHTTP
	}
	return n
}

// clientStats asks every client process for its goroutines and heap.
func (s *soak) clientStats(ctx context.Context) []clientStats {
	out := make([]clientStats, len(s.clientProcs))
	for p, cp := range s.clientProcs {
		ch := s.tr.stats[p]
		select {
		case <-ch:
		default:
		}
		_ = cp.Signal(syscall.SIGUSR1)
		select {
		case st := <-ch:
			out[p] = st
		case <-time.After(10 * time.Second):
			s.fail("client process %d printed no stats line within 10 s", p)
		case <-ctx.Done():
		}
	}
	return out
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// The fault kinds, each injected in turn from a shuffled bag so that every kind comes up
// once before any comes up again.
var kindNames = []string{"refuse", "outage", "stall-open", "stall-ready", "flap", "goaway",
	"half-open", "overload", "latency", "tcp-reset", "kill", "handoff"}

func (s *soak) faults(ctx context.Context) {
	end := time.Now().Add(s.o.duration)
	var bag []string
	for n := 1; ctx.Err() == nil; n++ {
		// Every fault fits in: hold ≤ 6 s, recovery ≤ bound (+ the goaway's second hop).
		if time.Until(end) < 6*time.Second+2*bound {
			break
		}
		if len(bag) == 0 {
			bag = slices.Clone(kindNames)
			s.rng.Shuffle(len(bag), func(i, j int) { bag[i], bag[j] = bag[j], bag[i] })
		}
		kind := bag[0]
		bag = bag[1:]
		if !s.tr.allUp() {
			_, up, _ := s.tr.counts()
			s.logf("before fault %d: only %d members up; waiting", n, up)
			waitFor(ctx, bound, s.tr.allUp)
		}
		from := msNow()
		s.inject(ctx, n, kind)
		s.spans = append(s.spans, span{kind: kind, from: from, to: msNow()})
		sleep(ctx, time.Duration(1000+s.rng.IntN(1500))*time.Millisecond)
		s.trend = append(s.trend, s.clientStats(ctx))
	}
}

func (s *soak) hold(min, max int) time.Duration {
	return time.Duration(min+s.rng.IntN(max-min+1)) * time.Millisecond
}

// inject runs one fault: put it in place, hold it, lift it, and measure the recovery.
func (s *soak) inject(ctx context.Context, n int, kind string) {
	ks := s.kinds[kind]
	if ks == nil {
		ks = &kindStats{}
		s.kinds[kind] = ks
	}
	ks.injected++
	t0 := msNow()
	var t1 float64
	hold := s.hold(2000, 6000)
	var err error
	panelA := func(mode string) {
		if e := setFault(ctx, s.aURL, mode); e != nil && err == nil {
			err = e
		}
	}
	// kick ends every session of Host A, so that a fault which concerns new sockets only
	// (refuse, stalls, overload) meets every client.
	kick := func(mode string) {
		panelA("outage")
		sleep(ctx, 200*time.Millisecond)
		panelA(mode)
	}
	switch kind {
	case "refuse", "stall-open", "stall-ready":
		kick(kind)
		sleep(ctx, hold)
		t1 = msNow()
		panelA("up")
	case "outage":
		panelA("outage")
		sleep(ctx, hold)
		t1 = msNow()
		panelA("up")
	case "overload":
		kick("overload=1500")
		sleep(ctx, hold)
		t1 = msNow()
		panelA("up")
	case "flap":
		panelA("flap=" + strconv.Itoa(300+s.rng.IntN(700)))
		sleep(ctx, hold)
		t1 = msNow()
		panelA("up")
	case "half-open":
		// Every connection, open or new, is frozen while its TCP connection stays open: only
		// the page's heartbeat watchdog (2.5 × heartbeat) can notice. When the link comes
		// back, what it froze is reset (as toxiproxy's timeout toxic, which the soak used
		// before, closed its connections when it was removed): a dial still stalled then
		// fails at once instead of waiting for its deadline, and the Host loses the sessions
		// of the pages that gave up (a page's close frame cannot cross a stalled link, and
		// Chromium keeps the socket until its closing handshake gives up).
		hold = s.hold(3500, 6000)
		s.proxy.SetMode(faultproxy.Stall)
		sleep(ctx, hold)
		s.proxy.SetMode(faultproxy.Reset)
		s.proxy.SetMode(faultproxy.Up)
		t1 = msNow()
	case "latency":
		// 250 ± 100 ms each way (the proxy's latency), on the open connections too.
		s.proxyFault(ctx, faultproxy.Latency, hold)
		t1 = msNow()
	case "tcp-reset":
		// The open connections are reset at once, new ones at their first reply.
		hold = s.hold(1000, 3000)
		s.proxyFault(ctx, faultproxy.Reset, hold)
		t1 = msNow()
	case "kill":
		s.tr.setEpochWindow(true)
		defer func() { go func() { time.Sleep(5 * time.Second); s.tr.setEpochWindow(false) }() }()
		hold = s.hold(1000, 4000)
		pid, e := readPID(s.pidA) // the serving process: the group's leader, or its successor
		err = e
		_ = s.hostA.Signal(syscall.SIGKILL)
		if !waitFor(ctx, 5*time.Second, func() bool { return !alive(pid) }) {
			err = fmt.Errorf("host A (pid %d) did not die of SIGKILL within 5 s", pid)
		}
		sleep(ctx, hold)
		if e := s.startHostA(ctx); e != nil {
			err = e
		}
		t1 = msNow()
	case "handoff":
		// The successor's stream log and dedup store are new (in memory): a new epoch.
		s.tr.setEpochWindow(true)
		defer func() { go func() { time.Sleep(5 * time.Second); s.tr.setEpochWindow(false) }() }()
		hold = 0
		err = s.handoff(ctx)
		t1 = msNow()
	case "goaway":
		s.tr.setEpochWindow(true)
		defer func() { go func() { time.Sleep(5 * time.Second); s.tr.setEpochWindow(false) }() }()
		s.goAway(ctx, n, ks, t0)
		return
	}
	if err != nil {
		s.fail("fault %d %s: %v", n, kind, err)
	}
	s.measure(ctx, n, kind, ks, t0, t1, hold, nil)
}

// handoff replaces Host A's process by a SIGUSR2 successor that inherits its socket, and
// returns once the old process has drained its pages to it and exited.
func (s *soak) handoff(ctx context.Context) error {
	old, err := readPID(s.pidA)
	if err != nil {
		return err
	}
	// To the group, where the serving process is the only one: the previous handoff is over.
	if err := s.hostA.Signal(syscall.SIGUSR2); err != nil {
		return err
	}
	if !waitFor(ctx, 15*time.Second, func() bool { pid, err := readPID(s.pidA); return err == nil && pid != old }) {
		return fmt.Errorf("no successor of host A (pid %d) was ready within 15 s", old)
	}
	// drainTimeoutMs is 3 s: the old process is gone by then, with its pages or without.
	if !waitFor(ctx, 8*time.Second, func() bool { return !alive(old) }) {
		return fmt.Errorf("host A's old process (pid %d) still runs 8 s after its successor was ready", old)
	}
	return nil
}

// proxyFault switches the proxy in front of Host A to m, holds it, and switches it back up.
func (s *soak) proxyFault(ctx context.Context, m faultproxy.Mode, hold time.Duration) {
	s.proxy.SetMode(m)
	sleep(ctx, hold)
	s.proxy.SetMode(faultproxy.Up)
}

// goAway sends every page from Host A to Host B and, once they have lived there longer than
// stableAfterMs (so the redirect chain is cleared), back again.
func (s *soak) goAway(ctx context.Context, n int, ks *kindStats, t0 float64) {
	total := len(s.tr.members)
	wsB := "ws" + strings.TrimPrefix(s.bURL, "http") + "/_lifeline/events"
	wsA := "ws" + strings.TrimPrefix(s.pxURL, "http") + "/_lifeline/events"
	on := func(base string, want int) func() bool {
		return func() bool {
			h, err := testbed.GetHealth(ctx, base)
			return err == nil && h.Sessions == want && s.tr.allUp()
		}
	}
	hop := func(name string, from, to, mode string, t1 float64) {
		if err := setFault(ctx, from, mode); err != nil {
			s.fail("fault %d goaway: %v", n, err)
		}
		ok := waitFor(ctx, bound+4*time.Second, func() bool { return on(to, total)() && on(from, 0)() })
		took := time.Duration((msNow() - t1) * float64(time.Millisecond))
		ha, _ := testbed.GetHealth(ctx, to)
		hb, _ := testbed.GetHealth(ctx, from)
		s.logf("fault %d goaway %s: all %d sessions moved in %s (ok %v; %d at target, %d left)", n, name, total, took.Round(time.Millisecond), ok, ha.Sessions, hb.Sessions)
		if ok {
			ks.recoveries += total // for goaway: sessions moved
		}
		if !ok {
			ks.notRecovered++
			s.fail("fault %d goaway %s: after %s, %d of %d sessions at the target, %d left at the source", n, name, took.Round(time.Millisecond), ha.Sessions, total, hb.Sessions)
		} else if took > bound {
			ks.overBound++
			s.fail("fault %d goaway %s: the move took %s > %s", n, name, took.Round(time.Millisecond), bound)
		}
		if took > ks.worst {
			ks.worst, ks.worstWho = took, "goaway "+name
		}
	}
	hop("A→B", s.aURL, s.bURL, "drain="+wsB, t0)
	sleep(ctx, s.hold(3000, 5000))
	_ = setFault(ctx, s.aURL, "up")
	t1 := msNow()
	hop("B→A", s.bURL, s.aURL, "drain="+wsA, t1)
	_ = setFault(ctx, s.bURL, "up")
	s.measure(ctx, n, "goaway", ks, t0, t1, 0, nil)
}

// measure waits until every member is connected again (at most bound + 4 s after the fault's
// end) and records how long the slowest took.
func (s *soak) measure(ctx context.Context, n int, kind string, ks *kindStats, t0, t1 float64, hold time.Duration, _ func() bool) {
	deadline := time.Duration(float64(time.Millisecond)*(t1-msNow())) + bound + 4*time.Second
	// Every member up, and still up a second later: a session that became ready while the
	// fault was on may still be dropped shortly after it ends (flap drops are not cancelled
	// when the mode changes), and that reconnection belongs to this fault's recovery.
	until := time.Now().Add(deadline)
	for waitFor(ctx, time.Until(until), s.tr.allUp) && time.Until(until) > 0 {
		sleep(ctx, time.Second)
		if s.tr.allUp() || ctx.Err() != nil {
			break
		}
	}
	r := s.tr.recoveryAfter(t0, t1)
	ks.affected += r.affected
	ks.recoveries += r.recovered
	if kind == "latency" {
		ks.downs += r.affected
	}
	if r.worst > ks.worst {
		ks.worst, ks.worstWho = r.worst, r.worstName
	}
	s.logf("fault %d %s (held %s): %d members went down, %d back, worst %s (%s)", n, kind, hold.Round(time.Millisecond), r.affected, r.recovered, r.worst.Round(time.Millisecond), r.worstName)
	if len(r.down) > 0 {
		ks.notRecovered += len(r.down)
		s.fail("fault %d %s: %d members not connected %s after the fault ended: %s", n, kind, len(r.down), deadline.Round(time.Millisecond), strings.Join(first(r.down, 8), ", "))
	}
	if r.worst > bound {
		ks.overBound++
		s.fail("fault %d %s: %s recovered %s after the fault ended, over the bound %s", n, kind, r.worstName, r.worst.Round(time.Millisecond), bound)
	}
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("… (%d more)", len(s)-n))
	}
	return s
}

// finish lets the stream run quietly, then checks what must hold at the end.
func (s *soak) finish(ctx context.Context, base []clientStats) {
	if !waitFor(ctx, bound+4*time.Second, s.tr.allUp) {
		all, up, _ := s.tr.counts()
		s.fail("end: %d of %d members connected", up, all)
	}
	sleep(ctx, 4*time.Second)
	if s.o.calls > 0 {
		s.checkCalls(ctx)
	}
	all, up, _ := s.tr.counts()
	ha, errA := testbed.GetHealth(ctx, s.aURL)
	hb, errB := testbed.GetHealth(ctx, s.bURL)
	if errA != nil || errB != nil {
		s.fail("end: health: %v %v", errA, errB)
	}
	s.logf("end: %d of %d members connected; Host A has %d sessions, Host B %d", up, all, ha.Sessions, hb.Sessions)
	if ha.Sessions+hb.Sessions != up || hb.Sessions != 0 {
		s.fail("end: Host sessions A %d + B %d, connected members %d (want A = %d, B = 0)", ha.Sessions, hb.Sessions, up, up)
	}
	// A fault that looks to a client like a path that holds WebSockets back (a stalled ready
	// frame) rightly moves it to the HTTP carrier, whose goroutines and buffers differ; it
	// comes back to a WebSocket by itself (its upgrade probe), and the figures compare like
	// with like once every client has.
	end := s.clientStats(ctx)
	for deadline := time.Now().Add(onHTTPWait); onHTTP(end) > 0; end = s.clientStats(ctx) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.fail("end: %d clients still on the HTTP carrier %s after the last fault, want every one back on a WebSocket", onHTTP(end), onHTTPWait)
			break
		}
		sleep(ctx, 500*time.Millisecond)
	}
	for p := range base {
		b, e := base[p], end[p]
		s.logf("client process %d: goroutines %d → %d, heapAlloc %d → %d, heapInuse %d → %d", p, b.Goroutines, e.Goroutines, b.HeapAlloc, e.HeapAlloc, b.HeapInuse, e.HeapInuse)
		if b.Goroutines == 0 || e.Goroutines == 0 {
			continue
		}
		if float64(e.Goroutines) > 1.1*float64(b.Goroutines) || float64(e.Goroutines) < 0.9*float64(b.Goroutines) {
			s.fail("client process %d: goroutines %d at the end, baseline %d (> 10%% apart)", p, e.Goroutines, b.Goroutines)
		}
		// The live heap: what a leak grows. The spans in use (heapInuse) also hold the room
		// freed in them, which a burst of calls after a reconnect scatters: with calls they
		// wander ±8 % from fault to fault while the live heap keeps within 2 % (measured).
		if float64(e.HeapAlloc) > 1.1*float64(b.HeapAlloc) {
			s.fail("client process %d: heapAlloc %d at the end, baseline %d (> 10%% more)", p, e.HeapAlloc, b.HeapAlloc)
		}
	}
	s.stats = end
	s.base = base

	// Stop the clients and pages before the Hosts, so the logs end cleanly, then look for
	// panics in every stderr.
	for _, cp := range s.clientProcs {
		_ = cp.Stop(10 * time.Second)
	}
	if s.pagesProc != nil {
		_ = s.pagesProc.Stop(10 * time.Second)
	}
	_ = s.hostA.Stop(10 * time.Second)
	_ = s.hostB.Stop(10 * time.Second)
	s.panicked = panics(s.bed)
	for _, p := range s.panicked {
		s.fail("panic: %s", p)
	}
}

// checkCalls waits for every call's outcome (each is bounded by the gateway's 30 s call
// timeout), then holds them to the ledger's runs (calls.go).
func (s *soak) checkCalls(ctx context.Context) {
	if !waitFor(ctx, time.Until(s.lastCall)+gateway.DefaultCallTimeout+bound, func() bool { return s.tr.callsPending() == 0 }) {
		s.logf("end: %d calls still without an outcome", s.tr.callsPending())
	}
	counts, err := getLedger(ctx, s.aURL)
	if err != nil {
		s.fail("calls: %v", err)
		return
	}
	s.calls = s.tr.checkCalls(counts, s.spans)
	for _, f := range s.calls.failures {
		s.fail("calls: %s", f)
	}
	if n := s.calls.nFailures - len(s.calls.failures); n > 0 {
		s.fail("calls: … and %d more", n)
	}
}

// summary prints the tables on stdout.
func (s *soak) summary(took time.Duration) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(os.Stdout, "\n== Lifeline chaos soak: %d clients, %d pages, faults for %s, seed %d, wall %s; recovery bound %s\n\n",
		s.o.clients, s.o.pages, s.o.duration, s.o.seed, took.Round(time.Second), bound)
	fmt.Fprintln(os.Stdout, "(members: clients and pages; for goaway, recoveries counts sessions moved, A→B and B→A)")
	fmt.Fprintln(w, "fault\tinjected\tmembers down\trecoveries\tworst recovery\tover bound\tnot recovered\t")
	var inj int
	for _, k := range kindNames {
		ks := s.kinds[k]
		if ks == nil {
			fmt.Fprintf(w, "%s\t0\t\t\t\t\t\t\n", k)
			continue
		}
		inj += ks.injected
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\t%d\t%d\t\n", k, ks.injected, ks.affected, ks.recoveries, ks.worst.Round(time.Millisecond), ks.overBound, ks.notRecovered)
	}
	fmt.Fprintf(w, "total\t%d\t\t\t\t\t\t\n", inj)
	_ = w.Flush()

	t := s.tr.finalCheck()
	fmt.Fprintln(os.Stdout)
	w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "stream ticks\tdelivered\tlost\tduplicated\tresets (epoch change)\tunexpected resets\tbehind at the end\t")
	fmt.Fprintf(w, "all members\t%d\t%d\t%d\t%d\t%d\t%d\t\n", t.delivered, t.lost, t.dups, t.resets-t.unexpResets, t.unexpResets, len(t.lagging))
	_ = w.Flush()
	if t.lost > 0 || t.dups > 0 || t.unexpResets > 0 || len(t.lagging) > 0 {
		s.fail("stream: %d lost, %d duplicated, %d unexpected resets, %d members behind the head (seq %d): %s",
			t.lost, t.dups, t.unexpResets, len(t.lagging), t.headSeq, strings.Join(first(t.lagging, 5), "; "))
	}
	s.tr.mu.Lock()
	issues, nIssues := slices.Clone(s.tr.issues), s.tr.nIssues
	s.tr.mu.Unlock()
	if nIssues > 0 {
		s.fail("%d protocol issues seen (first ones below)", nIssues)
		for _, is := range issues {
			fmt.Fprintln(os.Stdout, "  issue:", is)
		}
	}
	fmt.Fprintln(os.Stdout)
	for p := range s.base {
		if p < len(s.stats) {
			var trend []string
			for _, st := range s.trend {
				if p < len(st) {
					trend = append(trend, fmt.Sprintf("%d/%.2f/%.2f", st[p].Goroutines, float64(st[p].HeapAlloc)/(1<<20), float64(st[p].HeapInuse)/(1<<20)))
				}
			}
			if p < len(s.base0) {
				fmt.Fprintf(os.Stdout, "client process %d: before the primer reconnect: goroutines %d, heapAlloc %.2f MiB, heapInuse %.2f MiB\n", p, s.base0[p].Goroutines, float64(s.base0[p].HeapAlloc)/(1<<20), float64(s.base0[p].HeapInuse)/(1<<20))
			}
			fmt.Fprintf(os.Stdout, "client process %d: goroutines %d → %d, heapAlloc %.2f → %.2f MiB, heapInuse %.2f → %.2f MiB (after each fault, goroutines/heapAlloc/heapInuse MiB: %s)\n", p,
				s.base[p].Goroutines, s.stats[p].Goroutines, float64(s.base[p].HeapAlloc)/(1<<20), float64(s.stats[p].HeapAlloc)/(1<<20),
				float64(s.base[p].HeapInuse)/(1<<20), float64(s.stats[p].HeapInuse)/(1<<20), strings.Join(trend, " "))
		}
	}
	if s.o.calls > 0 {
		c := s.calls
		fmt.Fprintln(os.Stdout)
		w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		callsTable(w, c)
		_ = w.Flush()
		fmt.Fprintf(os.Stdout, "calls rejected, by the fault in progress: %s\n", rejectionsText(c))
		fmt.Fprintf(os.Stdout, "keyed calls whose outcome a kill of Host A left unknown: %d interrupted by the page (the dedup store's epoch changed), %d by the store (its run cut), %d timed out; the dedup epochs seen: %d; runs of calls nobody made: %d\n",
			c.keyedKilled[0], c.keyedKilled[1], c.keyedKilled[2], c.epochs, c.strays)
	}
	fmt.Fprintf(os.Stdout, "panics: %d\n", len(s.panicked))
	if len(s.failures) == 0 {
		fmt.Fprintln(os.Stdout, "\nSOAK PASSED")
		return
	}
	fmt.Fprintf(os.Stdout, "\nSOAK FAILED: %d failures\n", len(s.failures))
	for _, f := range first(s.failures, 30) {
		fmt.Fprintln(os.Stdout, "  -", f)
	}
}
