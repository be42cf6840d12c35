//go:build !js

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/lifeline-go/lifeline/internal/swarmline"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// The access scenario (issue "access that ends"): how fast an end of access reaches every
// page of an identity across a fleet, and what tracking credentials that expire costs the
// Host.
//
//   - Three Hosts on a 3-node NATS cluster (bin/host -nats, -signouts: the demo's sign-in,
//     whose POST /_lifeline/signout records the sign-out and calls Host.EndSessions, which
//     the fleet's bus carries to the other Hosts), 10,000 sessions (bin/swarm -user u -users
//     K: a cookie per identity), a third on each Host, about 10 per identity. From the call to
//     each page's unauthorized: one identity at a time (single ends, each at one Host in turn),
//     then 1,000 identities at once (1,000 calls made together, spread over the Hosts).
//   - BenchmarkExpiryTracking (hostplugin/access_bench_test.go): the live heap per session of a
//     Host whose credentials expire less one whose do not, goroutines and timers.

const (
	accessSingles = 10 // identities ended one at a time
)

// accessEnd is one identity's end: when it was asked, and of which Host.
type accessEnd struct {
	at   time.Time
	host int
}

func (e *env) sAccess(r *report) error {
	sessions, batch := e.n(10000, 300), e.n(1000, 30)
	users := batch + accessSingles
	full := e.scale >= 1

	t := r.table(fmt.Sprintf("access. Ending access fleet-wide: %d sessions of %d identities on three Hosts", sessions, users),
		"from the call to the last page of the identity showing unauthorized: p99 under 1 s",
		"ended at once", "pages ended", "from the call to each page's unauthorized: p50", "p99", "max", "the calls took (p50 / max)")
	r.note(t, "three bin/host on a 3-node NATS JetStream cluster (R3), each with a third of the sessions (bin/swarm, native pages: controller and gateway, -users: client i of a process is the identity u<i mod %d>); an end is POST /_lifeline/signout?user=… on one Host (bin/host -signouts: the credential recorded as signed out, then Host.EndSessions, passed to the other Hosts over NATS, jetstream.Bus)", users)
	r.note(t, "a page's time is its `unauthorized` event (the controller's status, after the Host's error frame and close 4401 reached it); the clock is the machine's one, the harness's and the clients' alike")

	if err := e.buildNATSNode(); err != nil {
		return err
	}
	nc, err := e.startNATSCluster("access")
	if err != nil {
		return err
	}
	defer nc.stop()
	urls := nc.urls[0] + "," + nc.urls[1] + "," + nc.urls[2]
	signouts := filepath.Join(e.raw, "access-signouts")
	var hosts [3]*server
	for i := range 3 {
		h, err := e.startServer(kLifeline, fmt.Sprintf("access-h%d", i+1), 0, openHostCfg,
			"-nats", urls, "-nats-replicas", "3", "-id", fmt.Sprintf("h%d", i+1), "-signouts", signouts, "-ticks=false")
		if err != nil {
			return err
		}
		defer h.proc.Stop(10 * time.Second)
		hosts[i] = h
	}
	per := sessions / 3
	var fleets [3]*fleet
	var clientProcs [3]*testbed.Proc
	for i := range 3 {
		n := per
		if i == 2 {
			n = sessions - 2*per
		}
		p, f, err := e.startClients(kLifeline, fmt.Sprintf("access-clients-h%d", i+1), clientURL(kLifeline, hosts[i].addr()), n,
			"-user", "u", "-users", strconv.Itoa(users))
		if err != nil {
			return err
		}
		defer p.Stop(20 * time.Second)
		fleets[i], clientProcs[i] = f, p
	}
	connected := func() int { return fleets[0].connectedNow() + fleets[1].connectedNow() + fleets[2].connectedNow() }
	if !waitFor(180*time.Second, func() bool { return connected() >= sessions }) {
		return fmt.Errorf("only %d of %d sessions connected within 180 s", connected(), sessions)
	}
	time.Sleep(2 * time.Second)

	// The pages of identity u<id>: in process i, clients c with c % users == id.
	pagesOf := func(id int) int {
		n := 0
		for _, f := range fleets {
			for c := id; c < f.n; c += users {
				n++
			}
		}
		return n
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1000}}
	// signOut asks Host host to sign u<id> out; it returns how long the call took, and how
	// long the Host took of it, its record and EndSessions (bin/host's answer says).
	signOut := func(host, id int) (took, end time.Duration, err error) {
		start := time.Now()
		res, err := client.Post(fmt.Sprintf("http://%s/_lifeline/signout?user=u%d&reason=bench", hosts[host].addr(), id), "", nil)
		if err != nil {
			return 0, 0, err
		}
		var ans struct{ Ms float64 }
		_ = json.NewDecoder(res.Body).Decode(&ans)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return 0, 0, fmt.Errorf("sign-out of u%d at h%d: %d", id, host+1, res.StatusCode)
		}
		return time.Since(start), time.Duration(ans.Ms * float64(time.Millisecond)), nil
	}
	// firsts are each client's first unauthorized, per process, read from the events as they
	// come (a scan of what is new each time: the harness must not load the machine it measures).
	var firsts [3]map[int]time.Time
	var seen [3]int
	for i := range firsts {
		firsts[i] = map[int]time.Time{}
	}
	readFirsts := func() {
		for i, f := range fleets {
			f.mu.Lock()
			for _, ev := range f.events[seen[i]:] {
				if ev.Ev == swarmline.Unauthorized && ev.ID >= 0 {
					if _, ok := firsts[i][ev.ID]; !ok {
						firsts[i][ev.ID] = ev.T
					}
				}
			}
			seen[i] = len(f.events)
			f.mu.Unlock()
		}
	}
	// latencies are, for every page of the identities ended, the time from its identity's call
	// to its first unauthorized; missing counts those that never showed it.
	latencies := func(ends map[int]accessEnd) (lat []float64, missing int) {
		readFirsts()
		for i, f := range fleets {
			first := firsts[i]
			for c := 0; c < f.n; c++ {
				end, ok := ends[c%users]
				if !ok {
					continue
				}
				at, seen := first[c]
				if !seen || at.Before(end.at) {
					missing++
					continue
				}
				lat = append(lat, at.Sub(end.at).Seconds())
			}
		}
		return lat, missing
	}
	wantPages := func(ends map[int]accessEnd) int {
		n := 0
		for id := range ends {
			n += pagesOf(id)
		}
		return n
	}
	waitEnded := func(ends map[int]accessEnd, d time.Duration) ([]float64, int) {
		want := wantPages(ends)
		var lat []float64
		var miss int
		testbedPoll(d, 200*time.Millisecond, func() bool {
			lat, miss = latencies(ends)
			return len(lat) >= want
		})
		return lat, miss
	}

	// One identity at a time, at each Host in turn.
	var singleLat []float64
	var singleCalls []float64
	singleMissing := 0
	for j := range accessSingles {
		id := batch + j
		ends := map[int]accessEnd{id: {at: time.Now(), host: j % 3}}
		took, _, err := signOut(j%3, id)
		if err != nil {
			return err
		}
		singleCalls = append(singleCalls, took.Seconds())
		lat, miss := waitEnded(ends, 10*time.Second)
		singleLat = append(singleLat, lat...)
		singleMissing += miss
		time.Sleep(500 * time.Millisecond)
	}
	r.row(t, "1 identity (10 times, one after another)", fmt.Sprintf("%d (%d missing)", len(singleLat), singleMissing),
		fmtMs(pct(singleLat, 50)*1000), fmtMs(pct(singleLat, 99)*1000), fmtMs(maxOf(singleLat)*1000),
		fmt.Sprintf("%s / %s", fmtMs(pct(singleCalls, 50)*1000), fmtMs(maxOf(singleCalls)*1000)))

	// Where the CPU goes meanwhile: the Hosts, the clients, NATS, the harness.
	cpuOf := func() (hostsCPU, clientsCPU, natsCPU, self time.Duration) {
		for i := range 3 {
			d, _ := procCPU(hosts[i].proc.Pid())
			hostsCPU += d
			d, _ = procCPU(clientProcs[i].Pid())
			clientsCPU += d
		}
		natsCPU, _ = nc.cpu()
		return hostsCPU, clientsCPU, natsCPU, selfCPU()
	}
	h0, c0, n0, s0 := cpuOf()
	batchStart := time.Now()

	// 1,000 identities at once: the calls made together, at the three Hosts in turn.
	ends := map[int]accessEnd{}
	var mu sync.Mutex
	var calls, inEnd []float64
	var wg sync.WaitGroup
	var callErr error
	for id := range batch {
		ends[id] = accessEnd{at: time.Now(), host: id % 3}
		wg.Go(func() {
			took, end, err := signOut(id%3, id)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && callErr == nil {
				callErr = err
			}
			calls, inEnd = append(calls, took.Seconds()), append(inEnd, end.Seconds())
		})
	}
	wg.Wait()
	if callErr != nil {
		return callErr
	}
	lat, miss := waitEnded(ends, 30*time.Second)
	span := time.Since(batchStart)
	h1, c1, n1, s1 := cpuOf()
	r.row(t, fmt.Sprintf("%d identities at once", batch), fmt.Sprintf("%d (%d missing)", len(lat), miss),
		fmtMs(pct(lat, 50)*1000), fmtMs(pct(lat, 99)*1000), fmtMs(maxOf(lat)*1000),
		fmt.Sprintf("%s / %s", fmtMs(pct(calls, 50)*1000), fmtMs(maxOf(calls)*1000)))
	r.note(t, "each of the %d calls is its own POST, made together from the harness; a page's time counts from its own identity's call; of a call's time, the Host's sign-out (its record and EndSessions) took %s (p50) / %s (max)",
		batch, fmtMs(pct(inEnd, 50)*1000), fmtMs(maxOf(inEnd)*1000))
	r.note(t, "CPU used while the %d identities were ended (%.1f s, on %d cores): the three Hosts %.1f s, the three client processes %.1f s, NATS %.1f s, the harness %.1f s",
		batch, span.Seconds(), runtime.NumCPU(), (h1 - h0).Seconds(), (c1 - c0).Seconds(), (n1 - n0).Seconds(), (s1 - s0).Seconds())
	r.judgeFull(full, "access", "an identity's pages fleet-wide unauthorized within 1 s (p99), one identity", pct(singleLat, 99) < 1 && singleMissing == 0,
		fmtMs(pct(singleLat, 99)*1000), "find where the end waits: the bus's publish, the other Hosts' delivery, the end's write, or the pages' reading")
	r.judgeFull(full, "access", fmt.Sprintf("p99 under 1 s with %d identities ended at once", batch), pct(lat, 99) < 1 && miss == 0,
		fmtMs(pct(lat, 99)*1000), "find where the end waits under load: each end is a publish on NATS and a goroutine per session ended")

	// What tracking expiries costs.
	t2 := r.table("access. What tracking credentials that expire costs the Host, 10,000 sessions",
		"under 200 bytes per session, no goroutine per session (one timer per Host)",
		"measure", "value", "how")
	m, err := e.expiryTracking()
	if err != nil {
		return err
	}
	r.row(t2, "live heap per session whose credential expires", fmt.Sprintf("%.0f B", m["B/session"]),
		"BenchmarkExpiryTracking: Go heap and stacks after a GC with 10,000 sessions of 1,000 identities whose credentials expire in an hour, less the same sessions never expiring (each Host in a process of its own)")
	r.row(t2, "access state every session carries", fmt.Sprintf("%.0f B", m["B-access-state/session"]),
		"unsafe.Sizeof(sessionAccess): the expiry, its heap slot, the renewal secret, the streams ended, the identity's list")
	r.row(t2, "goroutines per session", fmt.Sprintf("%.2f", m["goroutines/session"]), "those with expiry less those without")
	r.row(t2, "timers", fmt.Sprintf("%.0f per Host", m["timers/Host"]), "one heap of expiries under one time.AfterFunc, set for the earliest")
	perSession := m["B/session"] + m["B-access-state/session"]
	r.judge("access", "expiry tracking under 200 bytes per session, no goroutine per session",
		perSession < 200 && m["goroutines/session"] < 0.5, fmt.Sprintf("%.0f B (%.0f B tracking + %.0f B access state), %.2f goroutines",
			perSession, m["B/session"], m["B-access-state/session"], m["goroutines/session"]),
		"move the renewal secret out of the session (derive it from the session id with a Host key)")
	return nil
}

// benchMetric reads "value unit" pairs from a benchmark's result line.
var benchMetric = regexp.MustCompile(`([0-9.]+) ([A-Za-z/-]+)`)

// expiryTracking runs hostplugin's BenchmarkExpiryTracking once and returns its metrics.
func (e *env) expiryTracking() (map[string]float64, error) {
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", "^BenchmarkExpiryTracking$", "-benchtime", "1x", "./hostplugin/")
	cmd.Dir = e.root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("BenchmarkExpiryTracking: %v\n%s", err, out)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if !bytes.HasPrefix([]byte(line), []byte("BenchmarkExpiryTracking")) {
			continue
		}
		m := map[string]float64{}
		for _, kv := range benchMetric.FindAllStringSubmatch(line, -1) {
			v, _ := strconv.ParseFloat(kv[1], 64)
			m[kv[2]] = v
		}
		return m, nil
	}
	return nil, fmt.Errorf("BenchmarkExpiryTracking printed no result:\n%s", out)
}

// testbedPoll polls cond every step until it holds or d has passed.
func testbedPoll(d, step time.Duration, cond func() bool) bool {
	return testbed.Poll(context.Background(), d, step, cond)
}
