//go:build !js

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lifeline-go/lifeline/internal/test/faultproxy"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// The networks scenario: behind Debian's squid with its stock configuration, which refuses
// CONNECT to any port but 443 and so every ws:// a browser tunnels through it, the demo page
// (shared and in-page) against socket.io-client with its default transports, first and repeat
// visits, on loopback and on the throttled 4G link (between the proxy and the servers: the
// proxy sits in the office, the Host across the internet).

// netLoad is one load as bench/browser/networks.js prints it.
type netLoad struct {
	Connected float64 `json:"connected"`
	Carrier   string  `json:"carrier"`
	Wasm      float64 `json:"wasm"` // in-page: when the wasm was instantiated (Go starts)
}

type netRun struct {
	First, Repeat struct {
		Shared, InPage, Sio []netLoad
	}
	Errors []string
}

func (e *env) sNetworks(r *report) error {
	host, err := e.startServer(kLifeline, "net-host", 0, "")
	if err != nil {
		return err
	}
	defer host.proc.Stop(5 * time.Second)
	sio, err := e.startServer(kSIO, "net-sio", 0, "")
	if err != nil {
		return err
	}
	defer sio.proc.Stop(3 * time.Second)
	squid, err := e.startSquid()
	if err != nil {
		return err
	}
	defer squid.Stop(3 * time.Second)
	for _, k := range links[:2] { // loopback and 4G
		if len(e.links) > 0 && !contains(e.links, k.key) {
			continue
		}
		if err := e.netLink(r, k, host.addr(), sio.addr(), squid.addr); err != nil {
			r.fail("networks "+k.name, err)
		}
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// netLink loads the pages through squid over k.
func (e *env) netLink(r *report, k link, hostAddr, sioAddr, proxy string) error {
	if k.throttled() {
		for _, a := range []*string{&hostAddr, &sioAddr} {
			p, err := faultproxy.Listen("127.0.0.1:0", *a, &faultproxy.Options{Latency: k.latency, Down: k.down, Up: k.up})
			if err != nil {
				return err
			}
			defer p.Close()
			p.SetMode(faultproxy.Throttle)
			*a = p.Addr()
		}
	}
	n := e.n(10, 3)
	p, err := e.bed.Start("networks-"+k.key, []string{e.node, filepath.Join(e.root, "bench/browser/networks.js"),
		"--lifeline", "http://" + hostAddr + "/", "--sio", "http://" + sioAddr + "/page.html",
		"--proxy", "http://" + proxy, "--n", strconv.Itoa(n)},
		&testbed.Options{Dir: filepath.Join(e.root, "bench"), DeathSig: syscall.SIGTERM})
	if err != nil {
		return err
	}
	if err := p.Wait(10*time.Minute + time.Duration(n)*time.Minute); err != nil {
		_ = p.Stop(5 * time.Second)
		return fmt.Errorf("networks.js: %w", err)
	}
	out, _ := os.ReadFile(p.OutLog())
	if err := p.Err(); err != nil {
		stderr, _ := os.ReadFile(p.ErrLog())
		return fmt.Errorf("networks.js: %v: %s", err, lastLines(string(stderr), 5))
	}
	var res netRun
	if err := json.Unmarshal([]byte(lastLines(string(out), 1)), &res); err != nil {
		return fmt.Errorf("networks.js printed %q: %w", lastLines(string(out), 3), err)
	}
	t := r.table(fmt.Sprintf("networks. Behind Debian's stock squid (no CONNECT but to 443: no WebSocket gets through) over %s: navigation → connected, %d loads per row", k.name, n),
		"connected within 1.5× socket.io-client's time (default transports), first and repeat visits",
		"page", "visit", "connected p50", "p90", "max", "÷ socket.io p50", "wasm up p50", "then connected p50", "carriers", "loads")
	conn := func(ls []netLoad) []float64 {
		xs := make([]float64, len(ls))
		for i, l := range ls {
			xs[i] = l.Connected
		}
		return xs
	}
	carriers := func(ls []netLoad) string {
		seen := map[string]int{}
		for _, l := range ls {
			seen[l.Carrier]++
		}
		var parts []string
		for c, m := range seen {
			parts = append(parts, fmt.Sprintf("%s %d", c, m))
		}
		return strings.Join(parts, ", ")
	}
	for _, v := range []struct {
		visit      string
		shared, in []netLoad
		sioLoads   []netLoad
	}{{visit: "first", shared: res.First.Shared, in: res.First.InPage, sioLoads: res.First.Sio},
		{visit: "repeat", shared: res.Repeat.Shared, in: res.Repeat.InPage, sioLoads: res.Repeat.Sio}} {
		s50 := pct(conn(v.sioLoads), 50)
		for _, row := range []struct {
			name  string
			loads []netLoad
		}{{"Lifeline shared", v.shared}, {"Lifeline in-page", v.in}, {"socket.io-client", v.sioLoads}} {
			xs := conn(row.loads)
			// In-page, the time splits at the wasm's instantiation: before it, the page and the
			// client's bytes and compile (the floor of any page of this wasm); after it, Go's
			// start and the carrier's choosing and opening.
			up, after := "–", "–"
			var ws, as []float64
			for _, l := range row.loads {
				if l.Wasm > 0 {
					ws, as = append(ws, l.Wasm), append(as, l.Connected-l.Wasm)
				}
			}
			if len(ws) > 0 {
				up, after = fmtMs(pct(ws, 50)), fmtMs(pct(as, 50))
			}
			r.row(t, row.name, v.visit, fmtMs(pct(xs, 50)), fmtMs(pct(xs, 90)), fmtMs(maxOf(xs)), ratio(pct(xs, 50), s50), up, after, carriers(row.loads), strconv.Itoa(len(xs)))
		}
		for _, row := range []struct {
			name  string
			loads []netLoad
		}{{"shared", v.shared}, {"in-page", v.in}} {
			x := pct(conn(row.loads), 50)
			r.judge("networks", fmt.Sprintf("behind squid over %s, %s visit, Lifeline %s connected within 1.5× socket.io", k.key, v.visit, row.name),
				len(row.loads) > 0 && x <= 1.5*s50, fmt.Sprintf("%s against %s (%s)", fmtMs(x), fmtMs(s50), ratio(x, s50)),
				"the page tries a WebSocket first (nothing slower on an open network), is refused by the proxy at once, asks the Host with a plain GET, and opens the HTTP stream: the extra round trips are the query and a second WebSocket the browser makes to confirm the refusal; a repeat visit starts on HTTP")
		}
	}
	r.note(t, "the proxy: Debian 12's squid with /etc/squid/squid.conf as Debian ships it but for its port and files; the browser: Chromium with the proxy set on its contexts and `<-loopback>` in the bypass list (removing loopback's implicit bypass), so loopback goes through it")
	r.note(t, "first visit: a fresh browser context per load; repeat visit: one persistent profile per page after one unmeasured load (its caches, and Lifeline's memory of the network: the repeat visit starts on the HTTP carrier); each shared repeat visit has a config of its own, so it starts a hub of its own instead of finding the last one's")
	if k.throttled() {
		r.note(t, "the link: bench/faultproxy's throttle between the proxy and each server, %v one way, %s down and %s up", k.latency, fmtBits(k.down), fmtBits(k.up))
	}
	if len(res.Errors) > 0 {
		r.note(t, "%d loads failed, first: %s", len(res.Errors), res.Errors[0])
	}
	return nil
}

// squidProc is a squid the harness started.
type squidProc struct {
	addr string
	proc *testbed.Proc
	dir  string
}

func (s *squidProc) Stop(d time.Duration) {
	_ = s.proc.Stop(d)
	_ = os.RemoveAll(s.dir)
}

// startSquid runs squid with the stock config, but for its port and files (squid drops to the
// user proxy: its directory is open to it).
func (e *env) startSquid() (*squidProc, error) {
	stock, err := os.ReadFile("/etc/squid/squid.conf")
	if err != nil {
		return nil, fmt.Errorf("squid: %w (scripts/setup.sh networks installs it)", err)
	}
	port, err := testbed.FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lifeline-bench-squid-")
	if err != nil {
		return nil, err
	}
	_ = os.Chmod(dir, 0o777)
	conf := strings.Replace(string(stock), "\nhttp_port 3128\n", fmt.Sprintf("\nhttp_port 127.0.0.1:%d\n", port), 1)
	if conf == string(stock) {
		return nil, fmt.Errorf("squid: the stock config does not listen on http_port 3128 as expected")
	}
	conf += fmt.Sprintf("pid_filename %s/squid.pid\naccess_log stdio:%s/access.log\ncache_log %s/cache.log\ncoredump_dir %s\n", dir, dir, dir, dir)
	if err := os.WriteFile(filepath.Join(dir, "squid.conf"), []byte(conf), 0o644); err != nil {
		return nil, err
	}
	p, err := e.bed.Start("squid", []string{"/usr/sbin/squid", "-N", "-f", filepath.Join(dir, "squid.conf")}, nil)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := testbed.WaitTCP(context.Background(), addr, 20*time.Second); err != nil {
		_ = p.Stop(time.Second)
		return nil, fmt.Errorf("squid: %w (see %s)", err, p.ErrLog())
	}
	return &squidProc{addr: addr, proc: p, dir: dir}, nil
}
