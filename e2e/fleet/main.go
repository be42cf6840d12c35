//go:build !js

// Command fleet is the fleet test: a 3-node NATS JetStream cluster (natsnode), three Hosts
// sharing their stream logs in it, nginx in front, 200 bin/swarm clients and 2 Chromium
// pages through nginx. It runs a rolling restart of every Host (SIGTERM: drain, stop, start,
// next), checks that no event of any client is lost or duplicated and that the pages'
// indicators never leave connected; then sends h1's pages to h2 with a GOAWAY whose uri pins
// them through nginx (/h2/) and back (0 disconnects both ways); then kills one Host with
// SIGKILL and checks that every
// client it held recovers onto the survivors within deadline + top cap, resuming by cursor,
// and that the keyed calls which callers (gateways through nginx) make through the kill each
// ran once in the fleet, answered after it by a survivor sharing the dead Host's dedup store
// (unkeyed ones cut by it are interrupted, having run at most once); then SIGKILLs the NATS node leading the ticks stream and checks that every Host delivers
// ticks again within 3 s of the new leader's election (printing each Host's gap), and that
// publishing and replay go on. Between the two kills, a sign-out asked of one Host ends the
// pages of its user on all three Hosts within 1 s, and nothing reaches them after (access.go).
//
//	go run ./e2e/fleet            # the short run (make test), about 1–2 minutes
//	go run ./e2e/fleet -long      # the long run (make soak): more rounds, longer settles
//	go run ./e2e/fleet -presence  # presence across the fleet (presence.go), about 30 s
//
// It needs the demo page (web/index.html; the Host serves its own client) and nginx (installed
// by scripts/setup.sh fleet when missing). Every child runs in a process group of its own
// (internal/test/testbed), stopped when the run ends or is interrupted, and killed by the
// kernel if the run itself is.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lifeline-go/lifeline/internal/swarmline"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

func main() {
	long := flag.Bool("long", false, "the long run: three rolling restarts and longer settles")
	clients := flag.Int("clients", 200, "bin/swarm clients")
	pages := flag.Int("pages", 2, "Chromium pages")
	keep := flag.Bool("keep", false, "keep the run directory")
	presence := flag.Bool("presence", false, "the presence run (presence.go): pages on three Hosts see each other, a Host SIGKILL and a NATS leader kill")
	flag.Parse()
	if *presence {
		f := &fleet{}
		err := f.runPresence()
		f.stopAll()
		if !*keep && err == nil {
			_ = os.RemoveAll(f.dir)
		} else {
			fmt.Fprintln(os.Stderr, "fleet -presence: logs in", f.dir)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "FAIL fleet -presence:", err)
			os.Exit(1)
		}
		fmt.Println("PASS fleet -presence")
		return
	}
	f := &fleet{clientsN: *clients, pagesN: *pages, rounds: 1, settle: 3 * time.Second}
	if *long {
		f.rounds, f.settle = 3, 10*time.Second
	}
	err := f.run()
	f.stopAll()
	if !*keep && err == nil {
		_ = os.RemoveAll(f.dir)
	} else {
		fmt.Fprintln(os.Stderr, "fleet: logs in", f.dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL fleet:", err)
		os.Exit(1)
	}
	fmt.Println("PASS fleet")
}

// proc is one child process, in a process group of its own that is stopped with it
// (internal/test/testbed).
type proc struct{ *testbed.Proc }

type fleet struct {
	clientsN, pagesN, rounds int
	settle                   time.Duration
	dir, bin                 string
	natsAddr, routeAddr      [3]string
	hostAddr                 [3]string
	metricsAddr              [3]string // each Host's -metrics, which Prometheus scrapes (prometheus.go)
	natsURLs                 string
	proxyPort                string
	hostConfig               string // the Hosts' -config

	bed   *testbed.Bed
	nats  [3]*proc
	hosts [3]*proc
	st    *clientState
	pg    *pageState
	prom  *prom
}

func logf(format string, args ...any) {
	fmt.Printf("%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func freeAddr() string {
	addr, err := testbed.FreeAddr()
	if err != nil {
		panic(err)
	}
	return addr
}

// start runs bin with its output in <dir>/<name>.out and .err (o nil: all defaults).
func (f *fleet) start(name string, o *testbed.Options, bin string, args ...string) (*proc, error) {
	p, err := f.bed.Start(name, append([]string{bin}, args...), o)
	if err != nil {
		return nil, err
	}
	return &proc{p}, nil
}

func (p *proc) signal(sig syscall.Signal) { _ = p.Signal(sig) }

func (p *proc) wait(d time.Duration) error { return p.Wait(d) }

// stopAll stops every process still running, the last started first: clients and pages
// before nginx, nginx before the Hosts, the Hosts before the NATS nodes.
func (f *fleet) stopAll() {
	if f.bed == nil {
		return
	}
	procs := f.bed.Procs()
	for i := len(procs) - 1; i >= 0; i-- {
		_ = procs[i].Stop(15 * time.Second)
	}
}

func waitHTTP(url string, d time.Duration) error {
	return testbed.WaitHTTP(context.Background(), url, d)
}

func waitTCP(addr string, d time.Duration) error {
	return testbed.WaitTCP(context.Background(), addr, d)
}

func (f *fleet) build() error {
	for _, pkg := range []string{"./cmd/host", "./cmd/swarm", "./e2e/fleet/natsnode"} {
		// bin/host with fault injection: the fleet drives its fault panel (-faults).
		cmd := exec.Command("go", "build", "-tags", "lifeline_faults", "-o", f.bin+"/", pkg)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build %s: %w", pkg, err)
		}
	}
	if _, err := os.Stat("web/index.html"); err != nil {
		return errors.New("web/index.html is missing: run from the repository root")
	}
	// nginx, installed when missing: scripts/setup.sh is where Debian packages are installed.
	setup := exec.Command("./scripts/setup.sh", "fleet", "metrics")
	setup.Stdout, setup.Stderr = os.Stderr, os.Stderr
	if err := setup.Run(); err != nil {
		return fmt.Errorf("scripts/setup.sh fleet (nginx): %w", err)
	}
	return nil
}

func (f *fleet) startNATS(i int) error {
	var routes []string
	for j := range 3 {
		routes = append(routes, "nats://"+f.routeAddr[j])
	}
	dir := filepath.Join(f.dir, fmt.Sprintf("nats%d", i+1))
	p, err := f.start(fmt.Sprintf("nats%d", i+1), nil, f.bin+"/natsnode", "-name", fmt.Sprintf("n%d", i+1),
		"-addr", f.natsAddr[i], "-cluster", f.routeAddr[i], "-routes", strings.Join(routes, ","), "-dir", dir)
	if err != nil {
		return err
	}
	f.nats[i] = p
	return nil
}

func (f *fleet) startHost(i int) error {
	// -drain-on-stop: behind nginx the other Hosts take a stopping Host's pages, so its
	// SIGTERM drains to them (make-before-break) instead of closing every page with 1012.
	p, err := f.start(fmt.Sprintf("host%d", i+1), nil, f.bin+"/host", "-id", fmt.Sprintf("h%d", i+1),
		"-addr", f.hostAddr[i], "-web", "web", "-faults", "-drain-on-stop", "-nats", f.natsURLs, "-nats-replicas", "3",
		"-config", f.hostConfig, "-metrics", f.metricsAddr[i], "-signouts", filepath.Join(f.dir, "signouts"))
	if err != nil {
		return err
	}
	f.hosts[i] = p
	return waitHTTP("http://"+f.hostAddr[i]+"/_lifeline/health", 30*time.Second)
}

func (f *fleet) run() error {
	var err error
	if f.dir, err = os.MkdirTemp("", "lifeline-fleet-"); err != nil {
		return err
	}
	f.bed = testbed.New(f.dir)
	// An interrupted run stops everything it started; main's stopAll does it otherwise.
	defer f.bed.StopOnSignal("fleet (logs in "+f.dir+")", 15*time.Second)()
	f.bin = filepath.Join(f.dir, "bin")
	logf("building into %s", f.bin)
	if err := f.build(); err != nil {
		return err
	}
	var urls []string
	for i := range 3 {
		f.natsAddr[i], f.routeAddr[i], f.hostAddr[i] = freeAddr(), freeAddr(), freeAddr()
		f.metricsAddr[i] = freeAddr()
		urls = append(urls, "nats://"+f.natsAddr[i])
	}
	f.natsURLs = strings.Join(urls, ",")
	// A keyed call cut mid-run by a SIGKILL is answered interrupted once its re-send has
	// waited the call timeout: a short one keeps the calls step short.
	f.hostConfig = filepath.Join(f.dir, "host.json")
	if err := os.WriteFile(f.hostConfig, fmt.Appendf(nil, `{"callTimeoutMs":%d}`, hostCallTimeout.Milliseconds()), 0o644); err != nil {
		return err
	}
	for i := range 3 {
		if err := f.startNATS(i); err != nil {
			return err
		}
	}
	for i := range 3 {
		if err := waitTCP(f.natsAddr[i], 30*time.Second); err != nil {
			return err
		}
	}
	logf("NATS cluster up: %s", f.natsURLs)
	for i := range 3 {
		if err := f.startHost(i); err != nil {
			return err
		}
	}
	logf("Hosts up: %v", f.hostAddr)
	if err := f.startPrometheus(); err != nil {
		return err
	}
	if err := f.startNginx(); err != nil {
		return err
	}
	base := "http://127.0.0.1:" + f.proxyPort
	logf("nginx up: %s", base)
	time.Sleep(2 * time.Second) // the first tick creates the stream

	f.st = newClientState()
	// A quarter of the clients on the HTTP carrier: nginx sends their POSTs round robin, with
	// no sticky sessions, and each Host relays those of another's sessions to it over NATS.
	if _, err := f.start("clients", &testbed.Options{Lines: f.st.line}, f.bin+"/swarm", "-url", "ws://127.0.0.1:"+f.proxyPort+"/_lifeline/events",
		"-n", fmt.Sprint(f.clientsN), "-http", fmt.Sprint(f.clientsN/4), "-sub", "ticks", "-deliveries"); err != nil {
		return err
	}
	f.pg = newPageState()
	if f.pagesN > 0 {
		// The driver ends when its stdin closes, and gets SIGTERM if the fleet dies without
		// stopping it: either way it closes its browser (Chromium runs in a group of its own).
		if _, err := f.start("pages", &testbed.Options{Lines: f.pg.line, DeathSig: syscall.SIGTERM},
			"node", "e2e/fleet/pages.cjs", base+"/", fmt.Sprint(f.pagesN)); err != nil {
			return err
		}
	}
	if err := f.waitFor("every client connected with ticks flowing", 60*time.Second, func() bool {
		return f.st.allPast(f.clientsN, 0) && (f.pagesN == 0 || f.pg.isReady())
	}); err != nil {
		return err
	}
	if err := f.pg.fatal(); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	f.st.mark() // from here on, any reset is a lost replay
	f.pg.mark()
	logf("%d clients and %d pages connected; hosts of the pages: %v", f.clientsN, f.pagesN, f.pg.hosts())
	if err := f.checkSessions("once every client and page connected"); err != nil {
		return err
	}

	for round := range f.rounds {
		logf("rolling restart %d/%d", round+1, f.rounds)
		for i := range 3 {
			t0 := time.Now()
			f.hosts[i].signal(syscall.SIGTERM)
			if err := f.hosts[i].wait(30 * time.Second); err != nil {
				return err
			}
			if err := f.startHost(i); err != nil {
				return err
			}
			logf("  h%d drained, stopped and started in %v", i+1, time.Since(t0).Round(time.Millisecond))
			time.Sleep(f.settle)
		}
	}
	time.Sleep(2 * time.Second)
	rep := f.st.report()
	logf("rolling restart: %s", rep)
	pr := f.pg.report()
	logf("pages: %s", pr)
	if err := rep.clean(); err != nil {
		return fmt.Errorf("rolling restart: %w", err)
	}
	if rep.disconnects > 0 {
		return fmt.Errorf("rolling restart: %d clients saw a disconnect (max %v visible)", rep.disconnects, rep.maxDown)
	}
	if pr.left > 0 {
		return fmt.Errorf("rolling restart: a page's indicator left connected: %v", pr.states)
	}
	// Every Host restarted, so every page moved at least once, and its "on host" line with it.
	if stuck := f.pg.stuck(f.pagesN); len(stuck) > 0 {
		return fmt.Errorf("rolling restart: pages %v still show the Host they started on: %v", stuck, pr.states)
	}

	// A GOAWAY whose uri names one Host through nginx (/h2/) pins its pages there: h1 sends
	// every session to h2, make-before-break, and nobody notices.
	f.st.mark()
	pin := "ws://127.0.0.1:" + f.proxyPort + "/h2/_lifeline/events"
	before2 := f.sessions(1)
	moving := f.sessions(0)
	logf("GOAWAY pinned to h2 (%s) from h1 (%d sessions)", pin, moving)
	pinned := time.Now()
	if err := f.fault(0, "drain="+pin); err != nil {
		return err
	}
	if err := f.waitFor("h1's sessions to move to h2", 20*time.Second, func() bool {
		return f.sessions(0) == 0 && f.sessions(1) >= before2+moving
	}); err != nil {
		return err
	}
	if err := f.fault(0, "up"); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	rep = f.st.report()
	logf("pinned GOAWAY: %d sessions moved h1 → h2; %s", moving, rep)
	if err := f.checkGoAways(0, pinned, moving); err != nil {
		return err
	}
	if err := rep.clean(); err != nil {
		return fmt.Errorf("pinned GOAWAY: %w", err)
	}
	if rep.disconnects > 0 {
		return fmt.Errorf("pinned GOAWAY: %d clients saw a disconnect (max %v visible)", rep.disconnects, rep.maxDown)
	}
	// And back to nginx's own endpoint, so the kills below meet the fleet spread as before.
	// That hop returns to an endpoint that already redirected these pages: a loop, so the
	// ladder slows it down, still make-before-break.
	if err := f.fault(1, "drain=ws://127.0.0.1:"+f.proxyPort+"/_lifeline/events"); err != nil {
		return err
	}
	if err := f.waitFor("the pinned sessions to spread out again", 30*time.Second, func() bool {
		return f.sessions(1) < before2+moving/2
	}); err != nil {
		return err
	}
	if err := f.fault(1, "up"); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	rep = f.st.report()
	logf("unpinned: h2 back to %d sessions; %s", f.sessions(1), rep)
	if err := rep.clean(); err != nil {
		return fmt.Errorf("unpinning: %w", err)
	}

	// SIGKILL one Host: its clients must come back onto the survivors within deadline + top
	// cap, resuming by their cursor. h2 now also carries the pinned pages: a drop without
	// GOAWAY sends them back to nginx's own endpoint.
	// Callers make keyed and unkeyed calls through it (callsDuringKill): every keyed call
	// runs once in the fleet, re-sent to a survivor that shares the dead Host's dedup store.
	f.st.mark()
	if err := f.refuseOrigins(2, 5); err != nil {
		return err
	}
	victim := 1
	reportsBefore, err := f.reportsAt(time.Time{})
	if err != nil {
		return err
	}
	killed := time.Now()
	const recoverWithin = 15*time.Second + 10*time.Second
	var head uint64
	callersCut, err := f.callsDuringKill(victim, func() error {
		var err error
		if head, err = f.kill(victim); err != nil {
			return err
		}
		return f.waitFor("every client connected with a tick stored after the SIGKILL", recoverWithin+5*time.Second, func() bool {
			return f.st.allPast(f.clientsN, head)
		})
	})
	if err != nil {
		return err
	}
	time.Sleep(3 * time.Second)
	rep = f.st.report()
	logf("SIGKILL: %s", rep)
	if err := rep.clean(); err != nil {
		return fmt.Errorf("after the SIGKILL: %w", err)
	}
	if rep.maxDown > recoverWithin {
		return fmt.Errorf("after the SIGKILL: a client took %v to recover, over %v", rep.maxDown, recoverWithin)
	}
	if err := f.checkRecoveries(reportsBefore, killed, rep.disconnects, callersCut, recoverWithin); err != nil {
		return err
	}
	if err := f.checkSessions("after the SIGKILL"); err != nil {
		return err
	}
	if err := f.startHost(victim); err != nil {
		return err
	}
	if err := f.checkMetricsLint(); err != nil { // the three Hosts up
		return err
	}
	// A sign-out asked of one Host ends the user's pages on all three (access.go).
	if err := f.accessStep(); err != nil {
		return err
	}
	if err := f.checkSessions("after the access step"); err != nil {
		return err
	}

	// Kill the NATS node leading the ticks stream: every Host publishes and delivers ticks
	// again within 3 s of JetStream electing a new leader, and clients sent over by another
	// SIGKILLed Host resume by cursor (replay) through the two nodes left.
	f.st.mark()
	dead, err := f.killTicksLeader()
	if err != nil {
		return fmt.Errorf("with the ticks stream's NATS leader killed: %w", err)
	}
	before := f.st.minSeq()
	time.Sleep(5 * time.Second)
	logf("h3's clients next: their replay goes through the two NATS nodes left")
	if head, err = f.kill(2); err != nil {
		return err
	}
	if err := f.waitFor(fmt.Sprintf("every client connected with a tick stored after the SIGKILL, n%d down", dead+1), recoverWithin+5*time.Second, func() bool {
		return f.st.allPast(f.clientsN, head)
	}); err != nil {
		return err
	}
	time.Sleep(5 * time.Second)
	rep = f.st.report()
	after := f.st.minSeq()
	logf("NATS node down: %s; slowest client's seq %d → %d", rep, before, after)
	if err := rep.clean(); err != nil {
		return fmt.Errorf("with a NATS node down: %w", err)
	}
	if after < before+8 {
		return fmt.Errorf("with a NATS node down: ticks stalled (slowest client at seq %d, was %d)", after, before)
	}
	if err := f.checkNoOverload(); err != nil {
		return err
	}
	return f.checkDeployQueries()
}

// kill SIGKILLs Host i and returns the ticks stream's last seq once the process is gone.
// Every tick past it was stored after the Host died, so a client that delivers one is on a
// live Host: waiting for that in every client is exact, where the clients' own state still
// shows a client connected to the dead Host until it notices (a fresh-clone run read
// "every client connected" 6 ms after the kill). Counting the Host's sessions as the clients
// to be lost is not: the pages and the witnesses are sessions too, and a client moving
// make-before-break holds two for a moment, or one already replaced whose close the Host has
// not read (a run killed h2 counting 82 sessions, of which 79 were clients' and 2 pages').
func (f *fleet) kill(i int) (uint64, error) {
	logf("SIGKILL h%d (sessions per Host: %d %d %d)", i+1, f.sessions(0), f.sessions(1), f.sessions(2))
	f.hosts[i].signal(syscall.SIGKILL)
	if err := f.hosts[i].wait(10 * time.Second); err != nil {
		return 0, err
	}
	info, err := ticksStream(f.natsURLs)
	if err != nil {
		return 0, fmt.Errorf("after the SIGKILL of h%d, reading the ticks stream: %w", i+1, err)
	}
	return info.seq, nil
}

// sessions reads Host i's session count from its health endpoint (-1 when unreadable).
func (f *fleet) sessions(i int) int {
	h, err := testbed.GetHealth(context.Background(), "http://"+f.hostAddr[i])
	if err != nil {
		return -1
	}
	return h.Sessions
}

// fault sets Host i's fault panel mode.
func (f *fleet) fault(i int, mode string) error {
	if err := testbed.SetFault(context.Background(), "http://"+f.hostAddr[i], mode); err != nil {
		return fmt.Errorf("h%d: %w", i+1, err)
	}
	return nil
}

func (f *fleet) waitFor(what string, d time.Duration, cond func() bool) error {
	if !testbed.Poll(context.Background(), d, 100*time.Millisecond, cond) {
		return fmt.Errorf("timed out after %v waiting for %s (%s)", d, what, f.st.report())
	}
	return nil
}

func (f *fleet) startNginx() error {
	tmpl, err := os.ReadFile("e2e/fleet/nginx.conf.tmpl")
	if err != nil {
		return err
	}
	dir := filepath.Join(f.dir, "nginx")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(freeAddr())
	f.proxyPort = port
	conf := strings.NewReplacer("{{DIR}}", dir, "{{PORT}}", port,
		"{{H1}}", f.hostAddr[0], "{{H2}}", f.hostAddr[1], "{{H3}}", f.hostAddr[2]).Replace(string(tmpl))
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return err
	}
	// nginx's workers die with their master only if it stops them: its death signal is SIGTERM.
	if _, err := f.start("nginx", &testbed.Options{DeathSig: syscall.SIGTERM}, "nginx", "-p", dir, "-c", path, "-e", filepath.Join(dir, "error.log")); err != nil {
		return err
	}
	return waitHTTP("http://127.0.0.1:"+port+"/_lifeline/health", 10*time.Second)
}

// clientState reads bin/swarm's JSON lines: connections and deliveries per client.
type clientState struct {
	mu      sync.Mutex
	up      map[int]bool
	downAt  map[int]time.Time
	last    map[int]uint64
	marked  bool
	lost    int // gaps and resets after mark
	dup     int
	resets  int
	viol    int
	discs   int
	downs   []time.Duration
	example string
}

func newClientState() *clientState {
	return &clientState{up: map[int]bool{}, downAt: map[int]time.Time{}, last: map[int]uint64{}}
}

// line reads one line of the clients' process; one that does not decode is skipped.
func (s *clientState) line(b []byte) {
	l, err := swarmline.Decode(b)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apply(l)
}

func (s *clientState) apply(l swarmline.Line) {
	at := l.At()
	switch l.Event {
	case swarmline.Connected:
		if d, ok := s.downAt[l.ID]; ok && s.marked {
			s.downs = append(s.downs, at.Sub(d))
		}
		delete(s.downAt, l.ID)
		s.up[l.ID] = true
	case swarmline.Disconnected:
		s.up[l.ID] = false
		s.downAt[l.ID] = at
		if s.marked {
			s.discs++
		}
	case swarmline.Violation:
		s.viol++
	case swarmline.Delivery:
		prev, had := s.last[l.ID]
		switch {
		case l.Reset:
			if s.marked {
				s.resets++
				if s.example == "" {
					s.example = fmt.Sprintf("client %d reset at seq %d after %d", l.ID, l.Seq, prev)
				}
			}
		case !had:
		case l.Seq <= prev:
			s.dup++
		case l.Seq > prev+1:
			s.lost += int(l.Seq - prev - 1)
			if s.example == "" {
				s.example = fmt.Sprintf("client %d got seq %d after %d", l.ID, l.Seq, prev)
			}
		}
		s.last[l.ID] = l.Seq
	}
}

func (s *clientState) mark() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.marked = true
	s.lost, s.dup, s.resets, s.viol, s.discs, s.downs, s.example = 0, 0, 0, 0, 0, nil, ""
}

// allPast reports whether each of the n clients is connected and has delivered an event
// past seq (0: any event).
func (s *clientState) allPast(n int, seq uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range n {
		if !s.up[id] || s.last[id] <= seq {
			return false
		}
	}
	return true
}

func (s *clientState) minSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := uint64(1 << 62)
	for _, v := range s.last {
		m = min(m, v)
	}
	return m
}

type clientReport struct {
	lost, dup, resets, viol, disconnects int
	maxDown, p99Down                     time.Duration
	example                              string
}

func (r clientReport) String() string {
	return fmt.Sprintf("%d lost, %d duplicated, %d resets, %d violations, %d disconnects (visible: max %v, p99 %v)",
		r.lost, r.dup, r.resets, r.viol, r.disconnects, r.maxDown.Round(time.Millisecond), r.p99Down.Round(time.Millisecond))
}

func (r clientReport) clean() error {
	if r.lost+r.dup+r.resets+r.viol > 0 {
		return fmt.Errorf("%s (%s)", r, r.example)
	}
	return nil
}

func (s *clientState) report() clientReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := clientReport{lost: s.lost, dup: s.dup, resets: s.resets, viol: s.viol, disconnects: s.discs, example: s.example}
	downs := append([]time.Duration(nil), s.downs...)
	now := time.Now()
	for _, d := range s.downAt {
		if s.marked {
			downs = append(downs, now.Sub(d)) // still down
		}
	}
	sort.Slice(downs, func(i, j int) bool { return downs[i] < downs[j] })
	if len(downs) > 0 {
		r.maxDown = downs[len(downs)-1]
		r.p99Down = downs[len(downs)*99/100]
	}
	return r
}

// pageState reads pages.cjs's lines.
type pageState struct {
	mu      sync.Mutex
	ready   bool
	marked  bool
	states  []string
	left    int
	host    map[int]string
	visited map[int]map[string]bool // after mark: the Hosts each page was shown on
	fatalTx string
}

func newPageState() *pageState {
	return &pageState{host: map[int]string{}, visited: map[int]map[string]bool{}}
}

// line reads one line of pages.cjs; one that does not decode is skipped.
func (p *pageState) line(b []byte) {
	var l struct {
		Page  int
		State string
		Host  string
		Ready bool
		Fatal string
		Error string
	}
	if json.Unmarshal(b, &l) != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case l.Ready:
		p.ready = true
	case l.Fatal != "":
		p.fatalTx = l.Fatal
	case l.State != "":
		p.host[l.Page] = l.Host
		if p.marked {
			if p.visited[l.Page] == nil {
				p.visited[l.Page] = map[string]bool{}
			}
			p.visited[l.Page][l.Host] = true
			p.states = append(p.states, fmt.Sprintf("page %d: %s on %s", l.Page, l.State, l.Host))
			if l.State != "connected" {
				p.left++
			}
		}
	}
}

func (p *pageState) isReady() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ready || p.fatalTx != ""
}

func (p *pageState) fatal() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fatalTx != "" {
		return errors.New("pages: " + p.fatalTx)
	}
	return nil
}

func (p *pageState) mark() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marked, p.states, p.left = true, nil, 0
	p.visited = map[int]map[string]bool{}
	for page, h := range p.host {
		p.visited[page] = map[string]bool{h: true}
	}
}

// stuck returns the pages that were shown on fewer than two Hosts since mark.
func (p *pageState) stuck(n int) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int
	for page := range n {
		if len(p.visited[page]) < 2 {
			out = append(out, page)
		}
	}
	return out
}

func (p *pageState) hosts() map[int]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[int]string{}
	for k, v := range p.host {
		out[k] = v
	}
	return out
}

type pageReport struct {
	left   int
	states []string
}

func (r pageReport) String() string {
	return fmt.Sprintf("%d states other than connected; changes: %v", r.left, r.states)
}

func (p *pageState) report() pageReport {
	p.mu.Lock()
	defer p.mu.Unlock()
	return pageReport{left: p.left, states: append([]string(nil), p.states...)}
}
