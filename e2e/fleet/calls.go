//go:build !js

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// The calls step: callers (gateways through nginx, as pages are) make fleet.call calls back
// to back while a Host is SIGKILLed. Each round of a caller is an unkeyed call that the Host
// holds for callHold and a keyed call sent right behind it, so that at the kill every caller
// on the victim has an unkeyed call running and a keyed one sent and waiting on the Host.
// Every Host logs each run of fleet.call with its id, and a SIGKILLed Host's log outlives it,
// so the runs of every call are counted across the fleet.
const (
	callers     = 12
	callHold    = 200 * time.Millisecond
	callTimeout = 20 * time.Second
	// hostCallTimeout is the Hosts' callTimeoutMs in the fleet: how long a keyed call claimed
	// by the killed Host keeps its re-send waiting before it is answered interrupted.
	hostCallTimeout = 3 * time.Second
)

// callOutcomeOK is a fleetCallRec's kind for a call that got its reply.
const callOutcomeOK = "ok"

// fleetCallRec is what a caller knows of one of its calls.
type fleetCallRec struct {
	id        string
	keyed     bool
	firstOn   string    // the Host its caller was on when it was first sent ("" unknown or never sent)
	resolved  time.Time // when Call returned
	kind      string    // callOutcomeOK, or the CallError's kind
	replyHost string    // the Host that ran it, as its reply says
	detail    string    // the error, for a report
}

// caller is one gateway making calls.
type caller struct {
	n   int
	gw  *gateway.Gateway
	ctl *controller.Controller

	mu   sync.Mutex
	host string // the Host of its session, from the host stream; "" while not connected
	recs []*fleetCallRec
}

func (c *caller) on() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.host
}

func (c *caller) setHost(h string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.host = h
}

// callFleet is a set of callers and the calls they made.
type callFleet struct {
	callers []*caller
	stop    chan struct{}
	wg      sync.WaitGroup
}

// startCallers connects the callers through nginx and starts their calls.
func startCallers(url string) (*callFleet, error) {
	cf := &callFleet{stop: make(chan struct{})}
	for n := range callers {
		c := &caller{n: n}
		gw, err := gateway.New(url, &gateway.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return nil, err
		}
		ctl, err := controller.New(gw, controller.DefaultConfig(), &controller.Options{
			Logger: slog.New(slog.DiscardHandler),
			OnChange: func(s controller.Status) {
				if s.State != controller.Connected {
					c.setHost("") // the next session's host stream says where it is
				}
			},
		})
		if err != nil {
			return nil, err
		}
		c.gw, c.ctl = gw, ctl
		gw.Subscribe(hostStream, func(d gateway.Delivery) {
			var b struct{ Host string }
			if d.Reset && json.Unmarshal(d.Baseline, &b) == nil {
				c.setHost(b.Host)
			}
		})
		cf.callers = append(cf.callers, c)
		ctl.Start()
	}
	for _, c := range cf.callers {
		cf.wg.Go(func() { cf.loop(c) })
	}
	return cf, nil
}

// hostStream is cmd/host's stream naming the Host of the session (a reset's baseline).
const hostStream = "host"

// loop makes rounds of calls until stop.
func (cf *callFleet) loop(c *caller) {
	for round := 0; ; round++ {
		select {
		case <-cf.stop:
			return
		default:
		}
		u := &fleetCallRec{id: fmt.Sprintf("c%d-u%d", c.n, round)}
		k := &fleetCallRec{id: fmt.Sprintf("c%d-k%d", c.n, round), keyed: true}
		sent := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			cf.call(c, u, callHold, sent)
		}()
		// The keyed call is made once the unkeyed one is on its way: the Host runs the
		// session's calls in order, so it waits behind the held one.
		select {
		case <-sent:
		case <-done:
		}
		cf.call(c, k, 0, nil)
		<-done
	}
}

// call makes one fleet.call and records what came of it; sent (if not nil) is closed when
// it is first written to a socket.
func (cf *callFleet) call(c *caller, r *fleetCallRec, hold time.Duration, sent chan struct{}) {
	c.mu.Lock()
	c.recs = append(c.recs, r)
	c.mu.Unlock()
	data, _ := json.Marshal(map[string]any{"id": r.id, "holdMs": hold.Milliseconds()})
	opts := gateway.CallOptions{Timeout: callTimeout, OnSent: func(gateway.Sent) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if r.firstOn == "" && r.kind == "" {
			r.firstOn = c.host
		}
		if sent != nil {
			close(sent)
			sent = nil
		}
	}}
	if r.keyed {
		opts.Key = "fleet-" + r.id
	}
	reply, err := c.gw.Call(context.Background(), "fleet.call", wire.RawJSON(data), opts)
	c.mu.Lock()
	defer c.mu.Unlock()
	r.resolved = time.Now()
	var ce *gateway.CallError
	switch {
	case err == nil:
		var b struct{ Host, ID string }
		if json.Unmarshal(reply, &b) != nil || b.ID != r.id {
			r.kind, r.detail = "wrong-reply", string(reply)
			return
		}
		r.kind, r.replyHost = callOutcomeOK, b.Host
	case errors.As(err, &ce):
		r.kind, r.detail = ce.Kind, err.Error()
	default:
		r.kind, r.detail = "error", err.Error()
	}
}

// onHost counts the callers whose session is on host.
func (cf *callFleet) onHost(host string) int {
	n := 0
	for _, c := range cf.callers {
		if c.on() == host {
			n++
		}
	}
	return n
}

// ready reports whether every caller is connected and has had a call answered.
func (cf *callFleet) ready() bool {
	for _, c := range cf.callers {
		if c.on() == "" {
			return false
		}
		c.mu.Lock()
		ok := false
		for _, r := range c.recs {
			ok = ok || r.kind == callOutcomeOK
		}
		c.mu.Unlock()
		if !ok {
			return false
		}
	}
	return true
}

// finish stops making calls, waits (bounded) for those made to end, and closes the callers.
func (cf *callFleet) finish(within time.Duration) ([]fleetCallRec, error) {
	close(cf.stop)
	ended := make(chan struct{})
	go func() {
		cf.wg.Wait()
		close(ended)
	}()
	var err error
	select {
	case <-ended:
	case <-time.After(within):
		err = fmt.Errorf("calls still unanswered %v after the last was made", within)
	}
	var recs []fleetCallRec
	for _, c := range cf.callers {
		c.ctl.Stop()
		c.gw.Close(nil)
		c.mu.Lock()
		for _, r := range c.recs {
			recs = append(recs, *r)
		}
		c.mu.Unlock()
	}
	return recs, err
}

// fleetCallRun is a Host's log line for one run of fleet.call (cmd/host's handleFleetCall).
var fleetCallRun = regexp.MustCompile(`msg="host: fleet\.call ran" id=(\S+)`)

// countRuns counts the runs of each fleet.call id in the Hosts' logs.
func countRuns(logs []string) (map[string]int, error) {
	runs := map[string]int{}
	for _, path := range logs {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if m := fleetCallRun.FindStringSubmatch(sc.Text()); m != nil {
				runs[m[1]]++
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return runs, nil
}

// callReport is the calls step's tally.
type callReport struct {
	made, keyed, ok, interrupted int
	cutKeyedOK                   int // keyed, first sent to the victim, answered after the kill with its reply
	cutKeyedInterrupted          int
	cutUnkeyedInterrupted        int
	cutUnkeyedOK                 int
	servedFromStore              int // of cutKeyedOK: the victim's reply, given by a survivor
	failures                     []string
}

func (r callReport) String() string {
	return fmt.Sprintf("%d calls (%d keyed): %d answered, %d interrupted; cut by the kill: keyed %d answered (%d with the dead Host's stored reply), %d interrupted; unkeyed %d interrupted, %d answered; %d failures",
		r.made, r.keyed, r.ok, r.interrupted, r.cutKeyedOK, r.servedFromStore, r.cutKeyedInterrupted, r.cutUnkeyedInterrupted, r.cutUnkeyedOK, len(r.failures))
}

// checkCalls holds every call to its promise through the SIGKILL of victim at killed, given
// the runs the Hosts logged: a call answered ran exactly once; an interrupted one (keyed:
// its run was cut on the victim; unkeyed: its session was, and a survivor fenced it) ran at
// most once, a not-run one (unkeyed, fenced before it started) never, and only a call first
// sent to the victim is either; nothing else (timeout, busy) and no run of a call
// nobody made. At least one keyed call and one unkeyed call must have been cut by the kill,
// or the step tested nothing.
func checkCalls(recs []fleetCallRec, runs map[string]int, victim string, killed time.Time) callReport {
	var rep callReport
	fail := func(format string, args ...any) {
		if len(rep.failures) < 10 {
			rep.failures = append(rep.failures, fmt.Sprintf(format, args...))
		}
	}
	made := map[string]bool{}
	for _, r := range recs {
		made[r.id] = true
		rep.made++
		if r.keyed {
			rep.keyed++
		}
		n := runs[r.id]
		cut := r.firstOn == victim && r.resolved.After(killed)
		switch r.kind {
		case callOutcomeOK:
			rep.ok++
			if n != 1 {
				fail("call %s answered by %s ran %d times, want 1", r.id, r.replyHost, n)
			}
		case gateway.CallInterrupted, gateway.CallNotRun:
			rep.interrupted++
			if n > 1 || r.kind == gateway.CallNotRun && n > 0 {
				fail("call %s %s ran %d times", r.id, r.kind, n)
			}
			if r.firstOn != victim && r.firstOn != "" {
				fail("call %s first sent to %s, which lived, was %s: %s", r.id, r.firstOn, r.kind, r.detail)
			}
		default:
			fail("call %s (keyed %v, first sent to %q) ended %s: %s", r.id, r.keyed, r.firstOn, r.kind, r.detail)
		}
		switch {
		case !cut:
		case r.keyed && r.kind == callOutcomeOK:
			rep.cutKeyedOK++
			if r.replyHost == victim {
				rep.servedFromStore++
			}
		case r.keyed && r.kind == gateway.CallInterrupted:
			rep.cutKeyedInterrupted++
		case r.kind == gateway.CallInterrupted || r.kind == gateway.CallNotRun:
			rep.cutUnkeyedInterrupted++
		case r.kind == callOutcomeOK:
			rep.cutUnkeyedOK++
		}
	}
	var stray []string
	for id := range runs {
		if !made[id] {
			stray = append(stray, id)
		}
	}
	sort.Strings(stray)
	if len(stray) > 0 {
		fail("runs of calls nobody made: %s", strings.Join(stray, " "))
	}
	if rep.cutKeyedOK == 0 {
		fail("no keyed call sent to %s before the kill was answered after it: the SIGKILL cut none", victim)
	}
	if rep.cutUnkeyedInterrupted == 0 {
		fail("no unkeyed call sent to %s was interrupted by the kill", victim)
	}
	return rep
}

// callsDuringKill runs the calls step around kill (the SIGKILL of Host victim and the wait
// for the fleet to recover): the callers start first, with calls answered and at least two
// callers on the victim; once kill returns, they stop and every call is held to its promise.
// It returns how many callers were on the victim when it was killed: they were cut as the
// clients were, and report so.
func (f *fleet) callsDuringKill(victim int, kill func() error) (onVictim int, err error) {
	name := fmt.Sprintf("h%d", victim+1)
	cf, err := startCallers("ws://127.0.0.1:" + f.proxyPort + "/_lifeline/events")
	if err != nil {
		return 0, err
	}
	if !testbed.Poll(context.Background(), 15*time.Second, 50*time.Millisecond, func() bool { return cf.ready() && cf.onHost(name) >= 2 }) {
		_, _ = cf.finish(time.Second)
		return 0, fmt.Errorf("calls: %d callers, %d on %s, not all answered within 15 s", callers, cf.onHost(name), name)
	}
	onVictim = cf.onHost(name)
	logf("calls: %d callers answered, %d of them on %s", callers, onVictim, name)
	killed := time.Now()
	kerr := kill()
	recs, err := cf.finish(callTimeout)
	if kerr != nil {
		return onVictim, kerr
	}
	if err != nil {
		return onVictim, fmt.Errorf("calls: %w", err)
	}
	var logs []string
	for i := range 3 {
		logs = append(logs, filepath.Join(f.dir, fmt.Sprintf("host%d.err", i+1)))
	}
	runs, err := countRuns(logs)
	if err != nil {
		return onVictim, fmt.Errorf("calls: counting runs: %w", err)
	}
	rep := checkCalls(recs, runs, name, killed)
	logf("calls through the SIGKILL of %s: %s", name, rep)
	if len(rep.failures) > 0 {
		return onVictim, fmt.Errorf("calls through the SIGKILL of %s: %s", name, strings.Join(rep.failures, "; "))
	}
	return onVictim, nil
}
