//go:build !js

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lifeline-go/lifeline/bench/fanload"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// The processes of the fanout and sessions scenarios: bench/cmd/fanout-server (Lifeline's
// Host or Centrifuge, publishing from its own process) and bench/cmd/fanout-pages, which the
// scenarios build themselves.

// The server kinds of the fan-out scenarios.
const (
	fLifeline     = "lifeline"
	fLifelineHTTP = "lifeline-http" // Lifeline's Host, its pages on the HTTP carrier's stream
	fCentrifuge   = "centrifuge"
)

// centrifugeVersion is the centrifuge module go.mod requires.
const centrifugeVersion = "v0.40.1"

// pagesPerProc bounds the pages of one fanout-pages process: each holds a socket per page,
// within the descriptor limit, and several dial at once.
const pagesPerProc = 9000

// loopbacks are the source addresses the pages dial from, in turn: each gives the pages its
// own range of ephemeral ports to the server.
var loopbacks = "127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5,127.0.0.6,127.0.0.7,127.0.0.8"

// buildFanout builds the two commands into bench/.bin once per run.
func (e *env) buildFanout() error {
	e.fanBuild.Do(func() {
		for _, c := range []string{"fanout-server", "fanout-pages"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(e.bin, c), "./bench/cmd/"+c)
			cmd.Dir = e.root
			if out, err := cmd.CombinedOutput(); err != nil {
				e.fanErr = fmt.Errorf("go build ./bench/cmd/%s: %v\n%s", c, err, out)
				return
			}
		}
	})
	return e.fanErr
}

// fdLimit is this process's limit of open files, which the processes it starts inherit.
func fdLimit() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 1024
	}
	return int(lim.Cur)
}

// fanServer is one fanout-server.
type fanServer struct {
	kind string // the pages' kind (fLifelineHTTP: a Lifeline server)
	addr string
	proc *testbed.Proc
}

// waitLine starts argv as name and returns the process and the rest of the first stdout
// line that starts with prefix, waiting at most 20 s for it.
func (e *env) waitLine(name string, argv []string, prefix string) (*testbed.Proc, string, error) {
	got := make(chan string, 1)
	var once sync.Once
	p, err := e.bed.Start(name, argv, &testbed.Options{Lines: func(line []byte) {
		if v, ok := strings.CutPrefix(string(line), prefix); ok {
			once.Do(func() { got <- v })
		}
	}})
	if err != nil {
		return nil, "", err
	}
	select {
	case v := <-got:
		return p, v, nil
	case <-p.Done():
		return nil, "", fmt.Errorf("%s ended before printing %q (see %s)", name, prefix, p.ErrLog())
	case <-time.After(20 * time.Second):
		_ = p.Stop(time.Second)
		return nil, "", fmt.Errorf("%s printed no %q within 20 s (see %s)", name, prefix, p.ErrLog())
	}
}

// startFanServer starts a server for n pages of kind; extra are more flags.
func (e *env) startFanServer(name, kind string, n int, extra ...string) (*fanServer, error) {
	server := kind
	if kind == fLifelineHTTP {
		server = fLifeline
	}
	argv := append([]string{filepath.Join(e.bin, "fanout-server"), "-kind", server, "-pages", strconv.Itoa(n)}, extra...)
	p, addr, err := e.waitLine(name, argv, "ADDR ")
	if err != nil {
		return nil, err
	}
	return &fanServer{kind: kind, addr: addr, proc: p}, nil
}

func (s *fanServer) url() string {
	switch s.kind {
	case fCentrifuge:
		return "ws://" + s.addr + "/connection/websocket"
	case fLifelineHTTP:
		return "http://" + s.addr + "/_lifeline/events"
	}
	return "ws://" + s.addr + "/_lifeline/events"
}

func (s *fanServer) stats(gc bool) (fanload.ServerStats, error) {
	var st fanload.ServerStats
	q := ""
	if gc {
		q = "?gc=1"
	}
	return st, getJSON("http://"+s.addr+"/stats"+q, &st)
}

func (s *fanServer) setRate(r float64) error {
	resp, err := fanHTTP.Post("http://"+s.addr+"/rate?r="+strconv.FormatFloat(r, 'f', -1, 64), "", nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("rate %g: %s", r, resp.Status)
	}
	return nil
}

// fanHTTP bounds the harness's requests to the servers and pages.
var fanHTTP = &http.Client{Timeout: 10 * time.Second}

func getJSON(url string, v any) error {
	resp, err := fanHTTP.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// fanPages is every fanout-pages process of a run, pages [0, n) between them.
type fanPages struct {
	n     int
	ctl   []string // each process's panel
	procs []*testbed.Proc
}

// startFanPages starts the processes of pages [first, first+n) of kind against srv, at most
// pagesPerProc each, dialing from the loopback addresses in turn, and waits (at most wait)
// until every page is subscribed.
func (e *env) startFanPages(name string, srv *fanServer, first, n int, wait time.Duration) (*fanPages, error) {
	fp := &fanPages{n: n}
	for i := 0; i*pagesPerProc < n; i++ {
		lo, cnt := first+i*pagesPerProc, min(pagesPerProc, n-i*pagesPerProc)
		argv := []string{filepath.Join(e.bin, "fanout-pages"), "-kind", srv.kind, "-url", srv.url(),
			"-first", strconv.Itoa(lo), "-n", strconv.Itoa(cnt), "-laddrs", loopbacks}
		p, ctl, err := e.waitLine(fmt.Sprintf("%s-%d", name, i), argv, "CONTROL ")
		if err != nil {
			fp.stop()
			return nil, err
		}
		fp.procs, fp.ctl = append(fp.procs, p), append(fp.ctl, ctl)
	}
	var last fanload.PagesStats
	ok := testbed.Poll(context.Background(), wait, 250*time.Millisecond, func() bool {
		st, err := fp.stats(false)
		last = st
		return err == nil && (st.Connected >= n || st.Failed > 0)
	})
	switch {
	case last.Failed > 0:
		fp.stop()
		return nil, fmt.Errorf("%d of %d pages failed; the first: %s", last.Failed, n, last.FirstErr)
	case !ok:
		fp.stop()
		return nil, fmt.Errorf("%d of %d pages subscribed within %v", last.Connected, n, wait)
	}
	return fp, nil
}

// stats sums the processes' stats; take starts their latency histograms again.
func (fp *fanPages) stats(take bool) (fanload.PagesStats, error) {
	sum := fanload.PagesStats{Latency: map[int]uint64{}}
	q := ""
	if take {
		q = "?take=1"
	}
	for _, ctl := range fp.ctl {
		var st fanload.PagesStats
		if err := getJSON("http://"+ctl+"/stats"+q, &st); err != nil {
			return sum, err
		}
		sum.Connected += st.Connected
		sum.Failed += st.Failed
		if sum.FirstErr == "" {
			sum.FirstErr = st.FirstErr
		}
		sum.Received += st.Received
		sum.Lost += st.Lost
		sum.Dupes += st.Dupes
		fanload.Counts(sum.Latency).Merge(st.Latency)
	}
	return sum, nil
}

func (fp *fanPages) stop() {
	for _, p := range fp.procs {
		_ = p.Stop(5 * time.Second)
	}
}
