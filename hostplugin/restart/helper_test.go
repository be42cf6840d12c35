//go:build !js

package restart_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/hostplugin/restart"
	"github.com/lifeline-go/lifeline/internal/test/restarttest"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// bound is the longest any test waits for something that should happen.
const bound = restarttest.Bound

// The test binary doubles as a small Host built on restart (helperHost), so that a test can
// run it as a process and its successor is the same binary again (tableflip starts
// os.Args[0] with the same arguments and environment).
const helperEnv = "RESTART_TEST_HOST"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helperHost())
	}
	os.Exit(m.Run())
}

// helperHost serves a Host and /pid on RESTART_TEST_ADDR. SIGUSR2 upgrades it, SIGTERM stops
// it. It prints "ready pid=<pid> addr=<addr>" once ready and "exit pid=<pid> closed=<n>" as it
// leaves; restart's logs go to stderr. RESTART_TEST_FAIL_SUCCESSOR=1 makes a successor fail
// before it is ready; RESTART_TEST_DRAIN=1 sets DrainWithoutSuccessor.
func helperHost() int {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	r, err := restart.New(&restart.Options{
		PIDFile:               os.Getenv("RESTART_TEST_PIDFILE"),
		DrainWithoutSuccessor: os.Getenv("RESTART_TEST_DRAIN") == "1",
		UpgradeTimeout:        bound,
		Logger:                logger,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	defer r.Stop()
	if r.HasPredecessor() && os.Getenv("RESTART_TEST_FAIL_SUCCESSOR") == "1" {
		fmt.Fprintln(os.Stderr, "helper: a successor failing on purpose")
		return 3
	}
	// Signals first: a SIGUSR2 or SIGTERM sent as soon as "ready" is printed must find them.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGUSR2, syscall.SIGTERM)
	ln, err := r.Listen("tcp", os.Getenv("RESTART_TEST_ADDR"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	cfg, err := hostplugin.ParseConfig([]byte(os.Getenv("RESTART_TEST_CONFIG")))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	h, err := hostplugin.New(cfg, &hostplugin.Options{Logger: logger, Authorize: hostplugin.PublicStreams})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/pid", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, os.Getpid()) })
	mux.Handle("/", h.Handler(http.NotFoundHandler()))
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	h.SetReady(true)
	if err := r.Ready(); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	fmt.Printf("ready pid=%d addr=%s\n", os.Getpid(), ln.Addr())
	for {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGUSR2 {
				go func() {
					if err := r.Upgrade(); err != nil {
						fmt.Printf("upgrade failed pid=%d: %v\n", os.Getpid(), err)
					}
				}()
				continue
			}
		case <-r.Replaced():
		}
		break
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*bound)
	defer cancel()
	closed, err := r.Shutdown(ctx, srv, h)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
	}
	fmt.Printf("exit pid=%d closed=%d\n", os.Getpid(), closed)
	return 0
}

// helper is the helper Host started by a test, with the successors it starts.
type helper struct {
	*restarttest.Group
	t *testing.T
}

var readyLine = regexp.MustCompile(`^ready pid=(\d+) addr=(\S+)$`)

// startHelper runs the helper Host with env added to the test's environment. wrap, when not
// nil, is a command line put in front of the test binary (as a supervisor would exec it).
func startHelper(t *testing.T, env []string, extra []*os.File, wrap ...string) *helper {
	t.Helper()
	argv := append(wrap, os.Args[0], "-test.run=^$")
	return &helper{Group: restarttest.Start(t, argv, append([]string{helperEnv + "=1"}, env...), extra), t: t}
}

// ready waits for a ready line (the process's, or a successor's) from line from on and
// returns its pid, address, when it came and its index.
func (p *helper) ready(from int) (pid int, addr string, at time.Time, idx int) {
	p.t.Helper()
	m, at, i := p.Out.Expect(p.t, readyLine, from, bound)
	pid, _ = strconv.Atoi(m[1])
	return pid, m[2], at, i
}

// getPID asks addr which process serves it, on a connection of its own.
func getPID(addr string) (int, error) {
	c := &http.Client{Timeout: bound, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/pid")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(b))
}

// startHammer asks addr for its pid in a tight loop until stop is closed: the answers are
// pids.
func startHammer(addr string, stop <-chan struct{}) *restarttest.Hammer {
	return restarttest.StartHammer(func() (string, error) {
		pid, err := getPID(addr)
		return strconv.Itoa(pid), err
	}, stop)
}

// openPage opens a scripted page on addr's events endpoint.
func openPage(t *testing.T, addr string) *restarttest.Page {
	t.Helper()
	return restarttest.OpenPage(t, "ws://"+addr+wire.DefaultPath, &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
}
