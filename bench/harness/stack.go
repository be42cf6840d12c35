//go:build !js

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lifeline-go/lifeline/internal/test/faultproxy"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// The client kinds, in the order their rows are printed.
const (
	kLifeline = "lifeline"
	kSIO      = "socket.io-client"
	kRWS      = "reconnecting-websocket"
)

var allKinds = []string{kLifeline, kSIO, kRWS}

// env is what every scenario shares: where things are and how big to make them.
type env struct {
	root  string // the repository
	bin   string // bench/.bin: host, client, web/
	raw   string // bench/raw/<run>
	scale float64
	node  string
	bed   *testbed.Bed // every process of the run, logging into raw

	// The fanout and sessions scenarios: their commands, built once (buildFanout).
	fanBuild sync.Once
	fanErr   error
	fanPages []int         // -fanout-pages; nil: 2000, 10000 and 20000 × scale
	fanStep  time.Duration // -fanout-step; 0: 15 s × scale

	// Scenario 6 only.
	client string        // the client the Host serves (-client); "" means bench/.bin/assets, built here
	loads  int           // loads per row; 0 means 20 × scale (at least 5)
	dwell  time.Duration // how long a repeat visit's page stays open after connected
	links  []string      // the links to load over (-links); none means every one

	// Scenario streams only.
	streamsList  string // -streams: the stream counts
	streamShards int    // -streams-shards
}

// clientDir is the directory of the client the Host serves (hostplugin's -client).
func (e *env) clientDir() string {
	if e.client != "" {
		return e.client
	}
	return filepath.Join(e.bin, "assets") // the client the Host serves, as scripts/assets.sh lays it out
}

// n scales a client count, keeping at least lo.
func (e *env) n(full int, lo int) int { return max(lo, int(float64(full)*e.scale+0.5)) }

// d scales a duration, keeping at least lo.
func (e *env) d(full, lo time.Duration) time.Duration {
	return max(lo, time.Duration(float64(full)*e.scale))
}

// server is one server process of some kind, on a port of its own.
type server struct {
	kind string
	port int
	proc *testbed.Proc
	cfg  string // the Host's config file (lifeline)
}

func (s *server) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// startServer starts a server of kind on port (0: a free one). hostCfg is the Host's JSON
// config and extra more flags of bin/host (lifeline only; "" means "{}").
func (e *env) startServer(kind, name string, port int, hostCfg string, extra ...string) (*server, error) {
	if port == 0 {
		var err error
		if port, err = testbed.FreePort(); err != nil {
			return nil, err
		}
	}
	s := &server{kind: kind, port: port}
	var argv []string
	switch kind {
	case kLifeline:
		if hostCfg == "" {
			hostCfg = "{}"
		}
		s.cfg = filepath.Join(e.raw, name+".json")
		if err := os.WriteFile(s.cfg, []byte(hostCfg), 0o644); err != nil {
			return nil, err
		}
		argv = []string{filepath.Join(e.bin, "host"), "-addr", s.addr(), "-config", s.cfg,
			"-web", filepath.Join(e.root, "web"), "-client", e.clientDir(), "-faults"}
		argv = append(argv, extra...)
	case kSIO:
		argv = []string{e.node, filepath.Join(e.root, "bench/peers/sio-server.js"), "--port", strconv.Itoa(port)}
	case kRWS:
		argv = []string{e.node, filepath.Join(e.root, "bench/peers/ws-server.js"), "--port", strconv.Itoa(port)}
	default:
		return nil, fmt.Errorf("unknown kind %q", kind)
	}
	p, err := e.bed.Start(name, argv, nil)
	if err != nil {
		return nil, err
	}
	s.proc = p
	if kind == kLifeline {
		err = testbed.WaitHTTP(context.Background(), "http://"+s.addr()+"/_lifeline/health", 20*time.Second)
	} else {
		err = testbed.WaitTCP(context.Background(), s.addr(), 20*time.Second)
	}
	if err != nil {
		_ = p.Stop(time.Second)
		return nil, fmt.Errorf("%s: %w (see %s)", name, err, p.ErrLog())
	}
	return s, nil
}

// clientURL is the URL a client of kind is given to reach a server at addr.
func clientURL(kind, addr string) string {
	switch kind {
	case kLifeline:
		return "ws://" + addr + "/_lifeline/events"
	case kSIO:
		return "http://" + addr
	default:
		return "ws://" + addr + "/"
	}
}

// startClients starts one process of n clients of kind, pointed at url.
func (e *env) startClients(kind, name, url string, n int, extra ...string) (*testbed.Proc, *fleet, error) {
	var argv []string
	switch kind {
	case kLifeline:
		argv = append([]string{filepath.Join(e.bin, "swarm"), "-url", url, "-n", strconv.Itoa(n)}, extra...)
	case kSIO:
		argv = []string{e.node, filepath.Join(e.root, "bench/peers/sio-clients.js"), "--url", url, "--n", strconv.Itoa(n)}
	case kRWS:
		argv = []string{e.node, filepath.Join(e.root, "bench/peers/rws-clients.js"), "--url", url, "--n", strconv.Itoa(n)}
	}
	f := newFleet(n)
	p, err := e.bed.Start(name, argv, &testbed.Options{Lines: f.line})
	return p, f, err
}

// stack is one kind's server, its fault proxy and its clients.
type stack struct {
	kind    string
	srv     *server
	proxy   *faultproxy.Proxy
	proxyF  *os.File
	clients *testbed.Proc
	fleet   *fleet
	n       int
}

// startStack starts server, proxy and n clients of kind for scenario sc, and waits (at most
// 30 s) until every client is connected.
func (e *env) startStack(sc, kind string, n int, hostCfg string) (*stack, error) {
	st := &stack{kind: kind, n: n}
	base := sc + "-" + short(kind)
	var err error
	if st.srv, err = e.startServer(kind, base+"-server", 0, hostCfg); err != nil {
		return nil, err
	}
	if err := st.addProxy(e, base, st.srv.addr()); err != nil {
		st.close()
		return nil, err
	}
	if st.clients, st.fleet, err = e.startClients(kind, base+"-clients", clientURL(kind, st.proxy.Addr()), n); err != nil {
		st.close()
		return nil, err
	}
	return st, nil
}

func (st *stack) addProxy(e *env, base, upstream string) error {
	f, err := os.Create(filepath.Join(e.raw, base+"-proxy.jsonl"))
	if err != nil {
		return err
	}
	p, err := faultproxy.Listen("127.0.0.1:0", upstream, &faultproxy.Options{Log: f})
	if err != nil {
		f.Close()
		return err
	}
	st.proxy, st.proxyF = p, f
	return nil
}

// close stops clients, proxy and server, in that order.
func (st *stack) close() {
	if st.clients != nil {
		_ = st.clients.Stop(3 * time.Second)
	}
	if st.proxy != nil {
		st.proxy.Close()
		st.proxyF.Close()
	}
	if st.srv != nil {
		_ = st.srv.proc.Stop(3 * time.Second)
	}
}

// short is a kind's name in file names.
func short(kind string) string {
	switch kind {
	case kSIO:
		return "sio"
	case kRWS:
		return "rws"
	}
	return kind
}

// group is the stacks of one scenario, switched together.
type group struct {
	stacks []*stack
	sched  *os.File
}

// startGroup starts a stack of every kind in kinds, concurrently, and waits until all their
// clients are connected.
func (e *env) startGroup(sc string, kinds []string, n int, hostCfg string) (*group, error) {
	g := &group{}
	var err error
	if g.sched, err = os.Create(filepath.Join(e.raw, sc+"-schedule.txt")); err != nil {
		return nil, err
	}
	for _, k := range kinds {
		st, err := e.startStack(sc, k, n, hostCfg)
		if err != nil {
			g.close()
			return nil, err
		}
		g.stacks = append(g.stacks, st)
	}
	ok := waitFor(60*time.Second, func() bool {
		for _, st := range g.stacks {
			if st.fleet.connectedNow() < st.n {
				return false
			}
		}
		return true
	})
	if !ok {
		var msg []string
		for _, st := range g.stacks {
			msg = append(msg, fmt.Sprintf("%s %d/%d", st.kind, st.fleet.connectedNow(), st.n))
		}
		g.close()
		return nil, fmt.Errorf("%s: clients did not all connect within 60 s: %s", sc, strings.Join(msg, ", "))
	}
	g.note("all connected")
	return g, nil
}

// set switches every proxy of the group to m at once and returns when it did.
func (g *group) set(m faultproxy.Mode) time.Time {
	t := time.Now()
	for _, st := range g.stacks {
		st.proxy.SetMode(m)
	}
	g.note("mode " + m.String())
	return t
}

func (g *group) note(s string) {
	fmt.Fprintf(g.sched, "%s %s\n", time.Now().Format("15:04:05.000"), s)
}

// waitRecovered waits (at most d) until every client of every stack has connected at or
// after t.
func (g *group) waitRecovered(t time.Time, d time.Duration) bool {
	return waitFor(d, func() bool {
		for _, st := range g.stacks {
			for _, c := range st.fleet.connectedSince(t) {
				if c.IsZero() {
					return false
				}
			}
		}
		return true
	})
}

func (g *group) close() {
	for _, st := range g.stacks {
		st.close()
	}
	if g.sched != nil {
		g.sched.Close()
	}
}
