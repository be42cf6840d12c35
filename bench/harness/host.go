//go:build !js

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/test/testbed"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// openHostCfg lets a benchmark's load through: no session cap or accept rate in the way.
const openHostCfg = `{"maxSessions":1000000,"acceptRate":1000000,"acceptBurst":1000000}`

// s7Host: what the Host costs. RSS per idle session, ready latency under a burst of connects,
// and injection.
func (e *env) s7Host(r *report) error {
	sessions, burst := e.n(10000, 500), e.n(1000, 100)
	t := r.table("7. The Host", "", "measure", "value", "how")
	if err := e.s7Memory(r, t, sessions); err != nil {
		r.fail("7 memory", err)
	}
	if err := e.s7Ready(r, t, burst); err != nil {
		r.fail("7 ready latency", err)
	}
	if err := e.s7Inject(r, t); err != nil {
		r.fail("7 injection", err)
	}
	return nil
}

// getHealth reads the health of the Host at addr.
func getHealth(addr string) (testbed.Health, error) {
	return testbed.GetHealth(context.Background(), "http://"+addr)
}

func (e *env) s7Memory(r *report, t *table, n int) error {
	host, err := e.startServer(kLifeline, "s7-mem-host", 0, openHostCfg)
	if err != nil {
		return err
	}
	defer host.proc.Stop(5 * time.Second)
	time.Sleep(time.Second)
	before, err := rssBytes(host.proc.Pid())
	if err != nil {
		return err
	}
	clients, fl, err := e.startClients(kLifeline, "s7-mem-clients", clientURL(kLifeline, host.addr()), n)
	if err != nil {
		return err
	}
	defer clients.Stop(10 * time.Second)
	start := time.Now()
	all := waitFor(180*time.Second, func() bool { return fl.connectedNow() >= n })
	took := time.Since(start)
	time.Sleep(2 * time.Second) // let the connect burst's garbage go
	after, err := rssBytes(host.proc.Pid())
	if err != nil {
		return err
	}
	h, _ := getHealth(host.addr())
	if !all {
		r.note(t, "only %d of %d clients connected within 180 s", fl.connectedNow(), n)
	}
	per := float64(after-before) / float64(max(h.Sessions, 1))
	r.row(t, fmt.Sprintf("Host RSS per idle session (%d sessions)", h.Sessions), fmt.Sprintf("%.1f KiB", per/1024),
		fmt.Sprintf("bin/host RSS %.1f MiB idle → %.1f MiB with %d sessions (bin/swarm -n %d, all connected in %.1f s)",
			float64(before)/(1<<20), float64(after)/(1<<20), h.Sessions, n, took.Seconds()))
	return nil
}

func (e *env) s7Ready(r *report, t *table, n int) error {
	host, err := e.startServer(kLifeline, "s7-ready-host", 0, openHostCfg)
	if err != nil {
		return err
	}
	defer host.proc.Stop(5 * time.Second)
	url := clientURL(kLifeline, host.addr())
	lat := make([]float64, n)
	conns := make([]*websocket.Conn, n)
	errs := make([]error, n)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-gate
			t0 := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
			if err != nil {
				errs[i] = err
				return
			}
			conns[i] = c
			_, msg, err := c.Read(ctx)
			if err != nil || !strings.Contains(string(msg), `"t":"ready"`) {
				errs[i] = fmt.Errorf("first frame %q, %v", msg, err)
				return
			}
			lat[i] = float64(time.Since(t0).Microseconds()) / 1000
		})
	}
	close(gate)
	wg.Wait()
	var ok []float64
	failed := 0
	for i := range n {
		if errs[i] != nil {
			failed++
			continue
		}
		ok = append(ok, lat[i])
	}
	for _, c := range conns {
		if c != nil {
			_ = c.CloseNow()
		}
	}
	how := fmt.Sprintf("%d WebSocket dials from the harness released at once; dial → first frame (ready)", n)
	if failed > 0 {
		how += fmt.Sprintf("; %d failed, first: %v", failed, firstErr(errs))
	}
	r.row(t, fmt.Sprintf("ready latency, %d simultaneous connects, p50 / p99", n),
		fmt.Sprintf("%s / %s", fmtMs(pct(ok, 50)), fmtMs(pct(ok, 99))), how)
	return nil
}

func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// benchLine matches a go test benchmark result line.
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// s7Inject reads the injection figures from the Go benchmarks that scripts/bench.sh ran
// (bench/raw/gobench.txt), running BenchmarkInject alone when that file is missing.
func (e *env) s7Inject(r *report, t *table) error {
	path := filepath.Join(e.root, "bench/raw/gobench.txt")
	data, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(data), "BenchmarkInject") {
		cmd := exec.Command("go", "test", "-run=^$", "-bench=^BenchmarkInject$", "-benchmem", "./hostplugin/")
		cmd.Dir = e.root
		if data, err = cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go test -bench Inject: %v\n%s", err, lastLines(string(data), 5))
		}
		path = "go test -bench=^BenchmarkInject$ ./hostplugin/"
	}
	type res struct{ name, metrics string }
	var found []res
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil || !(strings.HasPrefix(m[1], "BenchmarkInject") || strings.HasPrefix(m[1], "BenchmarkReadyLatency") || strings.HasPrefix(m[1], "BenchmarkIdleSessionMemory")) {
			continue
		}
		found = append(found, res{m[1], strings.Join(strings.Fields(m[2]), " ")})
	}
	if len(found) == 0 {
		return fmt.Errorf("no BenchmarkInject line in %s", path)
	}
	for _, f := range found {
		name := strings.ReplaceAll(strings.TrimPrefix(f.name, "Benchmark"), "_", " ")
		m := metrics(f.metrics)
		var val string
		switch {
		case strings.HasPrefix(f.name, "BenchmarkInject"):
			val = fmt.Sprintf("%.1f µs/op (50 KB page), %.0f B/op, %.0f allocs/op", m["ns/op"]/1000, m["B/op"], m["allocs/op"])
		case strings.HasPrefix(f.name, "BenchmarkReadyLatency"):
			val = fmt.Sprintf("p50 %.0f ms / p99 %.0f ms (1,000 sockets at once, in-process)", m["p50-ms"], m["p99-ms"])
		default:
			val = fmt.Sprintf("%.1f KiB Go heap+stacks, %.1f KiB RSS, %.1f goroutines per session (10,000 sessions, after a forced GC)",
				m["KiB/session"], m["RSS-KiB/session"], m["goroutines/session"])
		}
		r.row(t, name, val, "Go benchmark in hostplugin/ (go test -bench)")
	}
	return nil
}

// metrics reads "value unit" pairs of a benchmark line.
func metrics(s string) map[string]float64 {
	m := make(map[string]float64)
	f := strings.Fields(s)
	for i := 0; i+1 < len(f); i += 2 {
		if v, err := strconv.ParseFloat(f[i], 64); err == nil {
			m[f[i+1]] = v
		}
	}
	return m
}
