//go:build !js

package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lifeline-go/lifeline/bench/callline"
	"github.com/lifeline-go/lifeline/internal/test/faultproxy"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// callVariant is one row of scenario 10: a system, and how its callers make calls.
type callVariant struct {
	label string
	kind  string   // kLifeline or kSIO: which server and caller; -kinds filters on it
	args  []string // the caller's own flags
}

var callVariants = []callVariant{
	{"lifeline, keyed", kLifeline, []string{"-keyed"}},
	{"lifeline, unkeyed", kLifeline, nil},
	{"socket.io-client, emitWithAck, retries 3", kSIO, []string{"--mode", "retries", "--retries", "3"}},
	{"socket.io-client, emit with an ack and a timeout", kSIO, []string{"--mode", "ack"}},
}

// The socket.io variant whose round trip Lifeline's is held against: the plain ack.
const sioAckLabel = "socket.io-client, emit with an ack and a timeout"

// callPlan is what every caller of one phase does once started.
type callPlan struct {
	calls   int           // per caller
	every   time.Duration // between two calls of a caller
	seq     bool          // and none before the previous one's outcome
	work    time.Duration // the handler's, per call
	timeout time.Duration // each call's
}

// args are the plan as kind's caller's flags.
func (p callPlan) args(kind string) []string {
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	if kind == kLifeline {
		a := []string{"-calls", strconv.Itoa(p.calls), "-every", p.every.String(), "-work", p.work.String(), "-timeout", p.timeout.String()}
		if p.seq {
			a = append(a, "-seq")
		}
		return a
	}
	a := []string{"--calls", strconv.Itoa(p.calls), "--every", ms(p.every), "--work", ms(p.work), "--timeout", ms(p.timeout)}
	if p.seq {
		a = append(a, "--seq", "1")
	}
	return a
}

// callTimeout is every caller's timeout of a call: Lifeline's default (the gateway's
// DefaultCallTimeout), given to socket.io-client too, which has none.
const callTimeout = 30 * time.Second

// callWarmup is how many of each caller's first calls on the healthy link are left out of
// the round trip: Node compiles its hot paths during the first ones.
const callWarmup = 5

// callLog collects one variant's lines: the server's runs and the callers' outcomes.
type callLog struct {
	mu      sync.Mutex
	runs    map[string]int           // call id → runs of the handler
	told    map[string]callline.Line // call id → its caller's line
	twice   int                      // call lines for a call that had one already
	settled bool
}

func newCallLog() *callLog {
	return &callLog{runs: map[string]int{}, told: map[string]callline.Line{}}
}

// line takes a line of the server or the callers; lines that are not call lines (the
// callers' connection events, a peer's own output) are not its.
func (l *callLog) line(b []byte) {
	b = bytes.TrimSpace(b)
	if !bytes.HasPrefix(b, []byte("{")) {
		return
	}
	cl, err := callline.Decode(b)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch cl.Event {
	case callline.Run:
		l.runs[cl.Call]++
	case callline.Call:
		if _, dup := l.told[cl.Call]; dup {
			l.twice++
			return
		}
		l.told[cl.Call] = cl
	case callline.Settled:
		l.settled = true
	}
}

func (l *callLog) isSettled() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.settled
}

// callCounts is what happened to one variant's calls, by what the caller was told and how
// many times the handler ran.
type callCounts struct {
	made                   int
	ok                     int // told the reply
	failedRan, failedNot   int // told it failed, and it ran / did not
	unknownRan, unknownNot int // told the outcome is unknown, and it ran / did not
	noneRan, noneNot       int // never told, and it ran / did not
	mixed                  int // told another call's reply
	duplicates             int // ran 2 or more times
	lost                   int // never ran, and told it succeeded or never told
	wrong                  int // told it succeeded and it never ran, or told it failed and it ran
	strays                 int // runs of a call nobody made
	twice                  int // calls told twice (a caller's fault)
	why                    map[string]int
	okMs                   []float64 // round trips of the ok calls past the warm-up
	toldMs                 []float64 // from made to told, of every call told something
}

// countCalls classifies the calls seq 0..calls-1 of callers 0..n-1 (callline.ID).
func countCalls(n, calls, warmup int, told map[string]callline.Line, runs map[string]int) callCounts {
	c := callCounts{why: map[string]int{}}
	made := map[string]bool{}
	for caller := range n {
		for seq := range calls {
			id := callline.ID(caller, seq)
			made[id] = true
			c.made++
			r := runs[id]
			if r >= 2 {
				c.duplicates++
			}
			l, ok := told[id]
			if !ok {
				l.Told = callline.None
			}
			if l.Why != "" {
				c.why[l.Why]++
			}
			if l.Told != callline.None {
				c.toldMs = append(c.toldMs, l.Ms)
			}
			switch l.Told {
			case callline.Ok:
				c.ok++
				if r == 0 {
					c.lost++
					c.wrong++
				} else if seq >= warmup {
					c.okMs = append(c.okMs, l.Ms)
				}
			case callline.Mixed:
				c.mixed++
				c.wrong++
				if r == 0 {
					c.lost++
				}
			case callline.Failed:
				if r > 0 {
					c.failedRan++
					c.wrong++
				} else {
					c.failedNot++
				}
			case callline.Unknown:
				if r > 0 {
					c.unknownRan++
				} else {
					c.unknownNot++
				}
			default: // None, or a word no caller prints: nothing the caller can act on
				if r > 0 {
					c.noneRan++
				} else {
					c.noneNot++
					c.lost++
				}
			}
		}
	}
	for id, r := range runs {
		if !made[id] {
			c.strays += r
		}
	}
	return c
}

// whyText lists the failures by the library's words, most frequent first.
func (c callCounts) whyText() string {
	if len(c.why) == 0 {
		return "none"
	}
	keys := slices.Collect(maps.Keys(c.why))
	slices.SortFunc(keys, func(a, b string) int {
		if c.why[a] != c.why[b] {
			return c.why[b] - c.why[a]
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%q × %d", k, c.why[k]))
	}
	return strings.Join(parts, ", ")
}

// callStack is one variant's server, its fault proxy and its callers.
type callStack struct {
	stack
	v   callVariant
	log *callLog
}

// startCallStack starts variant v's server, proxy and n callers for phase sc.
func (e *env) startCallStack(sc string, v callVariant, n int, pl callPlan) (*callStack, error) {
	cs := &callStack{stack: stack{kind: v.kind, n: n}, v: v, log: newCallLog()}
	base := sc + "-" + strings.NewReplacer(", ", "-", " ", "-").Replace(strings.ReplaceAll(v.label, "socket.io-client", "sio"))
	port, err := testbed.FreePort()
	if err != nil {
		return nil, err
	}
	srv := &server{kind: v.kind, port: port}
	var argv []string
	if v.kind == kLifeline {
		argv = []string{filepath.Join(e.bin, "callhost"), "-addr", srv.addr()}
	} else {
		argv = []string{e.node, filepath.Join(e.root, "bench/peers/sio-server.js"), "--port", strconv.Itoa(port)}
	}
	if srv.proc, err = e.bed.Start(base+"-server", argv, &testbed.Options{Lines: cs.log.line}); err != nil {
		return nil, err
	}
	cs.srv = srv
	if err := testbed.WaitTCP(context.Background(), srv.addr(), 20*time.Second); err != nil {
		cs.close()
		return nil, fmt.Errorf("%s: %w (see %s)", base+"-server", err, srv.proc.ErrLog())
	}
	if err := cs.addProxy(e, base, srv.addr()); err != nil {
		cs.close()
		return nil, err
	}
	url := clientURL(v.kind, cs.proxy.Addr())
	if v.kind == kLifeline {
		argv = []string{filepath.Join(e.bin, "callpages"), "-url", url, "-n", strconv.Itoa(n)}
	} else {
		argv = []string{e.node, filepath.Join(e.root, "bench/peers/sio-callers.js"), "--url", url, "--n", strconv.Itoa(n)}
	}
	argv = append(append(argv, pl.args(v.kind)...), v.args...)
	cs.fleet = newFleet(n)
	lines := func(b []byte) {
		cs.fleet.line(b)
		cs.log.line(b)
	}
	if cs.clients, err = e.bed.Start(base+"-callers", argv, &testbed.Options{Lines: lines}); err != nil {
		cs.close()
		return nil, err
	}
	return cs, nil
}

// callPhase is one schedule of scenario 10.
type callPhase struct {
	name  string          // as the table says it
	short string          // in file names
	mode  faultproxy.Mode // the fault; Up: a healthy link
	fault time.Duration
	plan  callPlan
}

// The spans around a fault: calls start pre before it and go on post after it, long enough
// for every caller to be back (Lifeline's top rung is 10 s) and send what waited.
const (
	callPre  = 2 * time.Second
	callPost = 15 * time.Second
	// callQuiet is how long the servers are watched after the last caller settled, for runs
	// of calls whose callers were told already (a call told a timeout or interrupted while
	// it still waited on its way or on the server).
	callQuiet = 3 * time.Second
)

// runCallPhase runs one phase with every variant side by side and returns their stacks,
// closed, with their logs complete.
func (e *env) runCallPhase(ph callPhase, variants []callVariant, n int) ([]*callStack, error) {
	g := &group{}
	var err error
	if g.sched, err = os.Create(filepath.Join(e.raw, "s10-"+ph.short+"-schedule.txt")); err != nil {
		return nil, err
	}
	defer g.close()
	var stacks []*callStack
	for _, v := range variants {
		cs, err := e.startCallStack("s10-"+ph.short, v, n, ph.plan)
		if err != nil {
			return nil, err
		}
		stacks = append(stacks, cs)
		g.stacks = append(g.stacks, &cs.stack)
	}
	if !waitFor(60*time.Second, func() bool {
		for _, cs := range stacks {
			if cs.fleet.connectedNow() < n {
				return false
			}
		}
		return true
	}) {
		var msg []string
		for _, cs := range stacks {
			msg = append(msg, fmt.Sprintf("%s %d/%d", cs.v.label, cs.fleet.connectedNow(), n))
		}
		return nil, fmt.Errorf("10 %s: callers did not all connect within 60 s: %s", ph.name, strings.Join(msg, ", "))
	}
	g.note("all connected")
	// socket.io-client connects over HTTP long-polling and then upgrades to a WebSocket: the
	// calls start once it has.
	time.Sleep(2 * time.Second)
	for _, cs := range stacks {
		if err := cs.clients.Signal(syscall.SIGUSR2); err != nil {
			return nil, err
		}
	}
	g.note("calls start")
	window := time.Duration(ph.plan.calls) * ph.plan.every
	if ph.mode != faultproxy.Up {
		time.Sleep(callPre)
		g.set(ph.mode)
		time.Sleep(ph.fault)
		g.set(faultproxy.Up)
		window -= callPre + ph.fault
	}
	// Every call has an outcome by its timeout (socket.io's retries queue: or is printed
	// "none" 10 s later); the margin is the machine's.
	if !waitFor(window+ph.plan.timeout+25*time.Second, func() bool {
		for _, cs := range stacks {
			if !cs.log.isSettled() {
				return false
			}
		}
		return true
	}) {
		var msg []string
		for _, cs := range stacks {
			if !cs.log.isSettled() {
				msg = append(msg, cs.v.label)
			}
		}
		g.note("not settled: " + strings.Join(msg, ", "))
	}
	g.note("settled")
	time.Sleep(callQuiet)
	for _, cs := range stacks {
		cs.close() // its logs are read to the end once its processes are gone
	}
	g.stacks = nil
	return stacks, nil
}

// s10Calls: calls side by side with socket.io-client's acknowledgements, on a healthy link
// (the round trip) and through a flap and a refused outage (what ran, and what each caller
// was told).
func (e *env) s10Calls(r *report) error {
	var variants []callVariant
	for _, v := range callVariants {
		if slices.Contains(allKinds, v.kind) {
			variants = append(variants, v)
		}
	}
	if len(variants) == 0 {
		return fmt.Errorf("no kind of scenario 10 (lifeline, socket.io-client) among -kinds")
	}
	n := e.n(20, 4)
	every, work := time.Second, 50*time.Millisecond
	// On the healthy link each caller's calls are paced, one after another: a stall of the
	// machine then delays the one call each caller has in flight, not a run of them.
	healthy := callPhase{name: "healthy", short: "healthy", mode: faultproxy.Up,
		plan: callPlan{calls: e.n(400, 100), every: 25 * time.Millisecond, seq: true, timeout: callTimeout}}
	faults := []callPhase{
		{name: "flap", short: "flap", mode: faultproxy.Flap, fault: e.d(60*time.Second, 15*time.Second)},
		{name: "refused outage", short: "outage", mode: faultproxy.Refuse, fault: e.d(30*time.Second, 10*time.Second)},
	}
	for i := range faults {
		span := callPre + faults[i].fault + callPost
		faults[i].plan = callPlan{calls: int(span / every), every: every, work: work, timeout: callTimeout}
	}

	if err := e.s10Healthy(r, healthy, variants, n); err != nil {
		r.fail("10 healthy", err)
	}
	t := r.table(fmt.Sprintf("10b. Calls through faults: %d callers per row, one call a second each, the handler works %v", n, work),
		"Lifeline keyed: 0 duplicates, 0 lost; Lifeline unkeyed: 0 duplicates, 0 unreported losses",
		"caller", "schedule", "calls", "told ok", "told failed: ran / not", "told unknown: ran / not", "never told: ran / not",
		"duplicates (ran 2+)", "lost", "told wrong", "told within p50 / p99")
	for _, ph := range faults {
		stacks, err := e.runCallPhase(ph, variants, n)
		if err != nil {
			r.fail("10 "+ph.name, err)
			continue
		}
		sched := fmt.Sprintf("%s %v", ph.name, ph.fault)
		wrongLifeline, madeLifeline := 0, 0
		for _, cs := range stacks {
			c := countCalls(n, ph.plan.calls, 0, cs.log.told, cs.log.runs)
			c.twice = cs.log.twice
			if !cs.log.isSettled() {
				r.note(t, "%s, %s: the callers never printed settled (see %s): a call without a line counts as never told", cs.v.label, ph.name, cs.clients.OutLog())
			}
			pair := func(a, b int) string { return fmt.Sprintf("%d / %d", a, b) }
			r.row(t, cs.v.label, sched, fmt.Sprint(c.made), fmt.Sprint(c.ok), pair(c.failedRan, c.failedNot),
				pair(c.unknownRan, c.unknownNot), pair(c.noneRan, c.noneNot), fmt.Sprint(c.duplicates), fmt.Sprint(c.lost), fmt.Sprint(c.wrong),
				fmt.Sprintf("%s / %s", fmtS(pct(c.toldMs, 50)/1000), fmtS(pct(c.toldMs, 99)/1000)))
			r.note(t, "%s, %s: failures by the library's words: %s", cs.v.label, ph.name, c.whyText())
			if c.mixed > 0 || c.strays > 0 || c.twice > 0 {
				r.note(t, "%s, %s: %d calls told another call's reply, %d runs of calls nobody made, %d calls told twice", cs.v.label, ph.name, c.mixed, c.strays, c.twice)
			}
			measured := fmt.Sprintf("%d duplicates, %d lost of %d calls", c.duplicates, c.lost, c.made)
			switch cs.v.label {
			case "lifeline, keyed":
				wrongLifeline, madeLifeline = wrongLifeline+c.wrong, madeLifeline+c.made
				r.judge("10", "Lifeline keyed, "+ph.name+": 0 duplicates, 0 lost", c.duplicates == 0 && c.lost == 0, measured,
					"a keyed call must be re-sent only to its dedup store, which runs it once and answers a re-send with the first outcome; and every call must end in an outcome by its timeout")
			case "lifeline, unkeyed":
				wrongLifeline, madeLifeline = wrongLifeline+c.wrong, madeLifeline+c.made
				r.judge("10", "Lifeline unkeyed, "+ph.name+": 0 duplicates, 0 unreported losses", c.duplicates == 0 && c.lost == 0, measured,
					"an unkeyed call must never be sent twice, and one sent without a reply must be rejected as interrupted")
			}
		}
		if slices.Contains(allKinds, kLifeline) {
			r.judge("10", "Lifeline, "+ph.name+": 0 callers told the wrong thing", wrongLifeline == 0, fmt.Sprintf("%d of %d calls, keyed and unkeyed", wrongLifeline, madeLifeline),
				"a failure must say whether the call was sent: not sent means it never runs")
		}
	}
	r.note(t, "each caller makes one call a second, from %v before the fault to %v after it, whatever its link is doing; each call has a timeout of %v (Lifeline's default; socket.io: `socket.timeout(ms)` for emit, the socket option `ackTimeout` for emitWithAck, whose `retries` queue sends one event at a time and waits, unbounded, while disconnected)", callPre, callPost, callTimeout)
	r.note(t, "ran is counted at the server, per call id (bench/cmd/callhost; sio-server.js's `bench.run`), until %v after the last caller had every outcome; told is what the caller's library said (bench/callline): ok (the reply), failed, unknown (Lifeline's interrupted or timeout of a call it says it sent), never told", callQuiet)
	r.note(t, "lost: never ran, and the caller was told it succeeded or never told; told wrong: told ok and it never ran, or told failed and it ran; a socket.io-client error (\"operation has timed out\", \"socket has been disconnected\") says nothing of whether the event went out, so it counts as failed, and wrong when the event ran")
	return nil
}

// s10Healthy measures the round trip on a healthy link: each caller's calls one after
// another, the handler replying at once.
func (e *env) s10Healthy(r *report, ph callPhase, variants []callVariant, n int) error {
	t := r.table(fmt.Sprintf("10a. Calls on a healthy link: %d callers × %d calls each, one after another at most every %v, the handler replies at once", n, ph.plan.calls, ph.plan.every),
		"round trip p99 ≤ 1.2× socket.io-client's (emit with an ack)",
		"caller", "round trip p50", "p99", "max", "calls measured", "not ok")
	stacks, err := e.runCallPhase(ph, variants, n)
	if err != nil {
		return err
	}
	p99 := map[string]float64{}
	for _, cs := range stacks {
		c := countCalls(n, ph.plan.calls, callWarmup, cs.log.told, cs.log.runs)
		p99[cs.v.label] = pct(c.okMs, 99)
		r.row(t, cs.v.label, fmtMs2(pct(c.okMs, 50)), fmtMs2(p99[cs.v.label]), fmtMs2(maxOf(c.okMs)), fmt.Sprint(len(c.okMs)), fmt.Sprint(c.made-c.ok))
	}
	sio, haveSIO := p99[sioAckLabel]
	for _, cs := range stacks {
		if cs.v.kind != kLifeline || !haveSIO {
			continue
		}
		ratio := p99[cs.v.label] / sio
		r.judgeFull(e.scale >= 1, "10", cs.v.label+": healthy round trip p99 ≤ 1.2× socket.io's ack", ratio <= 1.2,
			fmt.Sprintf("p99 %s vs %s: %.2f×", fmtMs2(p99[cs.v.label]), fmtMs2(sio), ratio),
			"the call's path through the gateway's writer and the Host's per-session run goroutine (and, keyed, the dedup store) must cost no more than socket.io's event dispatch")
	}
	r.note(t, "round trip: from the call made to its reply in the caller (Lifeline: gateway.Call; socket.io: the ack), through the fault proxy in up, leaving out each caller's first %d calls (warm-up); all rows run at once on the same cores", callWarmup)
	return nil
}

// fmtMs2 formats milliseconds with two decimals: loopback round trips are under one.
func fmtMs2(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%.2f ms", x)
}
