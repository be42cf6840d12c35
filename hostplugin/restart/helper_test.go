//go:build !js

package restart_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/gateway/wire"
	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/hostplugin/restart"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// bound is the longest any test waits for something that should happen.
const bound = 10 * time.Second

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

// proc is a helper Host started by a test, with its successors: they share its stdout (a
// pipe the test reads, so that Wait returns when this process ends, whoever else still holds
// the pipe) and its process group (killed at the end of the test).
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr *testbed.Lines
	stdout *testbed.Lines
	done   chan struct{}
	exited time.Time
}

var readyLine = regexp.MustCompile(`^ready pid=(\d+) addr=(\S+)$`)

// startHelper runs the helper Host with env added to the test's environment. wrap, when not
// nil, is a command line put in front of the test binary (as a supervisor would exec it).
func startHelper(t *testing.T, env []string, extra []*os.File, wrap ...string) *proc {
	t.Helper()
	argv := append(wrap, os.Args[0], "-test.run=^$")
	p := &proc{t: t, stdout: &testbed.Lines{}, stderr: &testbed.Lines{}, done: make(chan struct{})}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	// A race-enabled binary sleeps a second on exit (GORACE atexit_sleep_ms), which would
	// count as the helper's own.
	race := "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")
	p.cmd.Env = append(append(os.Environ(), helperEnv+"=1", race), env...)
	p.cmd.ExtraFiles = extra
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = outW, errW
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	errW.Close()
	go p.stdout.Read(outR)
	go p.stderr.Read(errR)
	go func() {
		_ = p.cmd.Wait()
		p.exited = time.Now()
		close(p.done)
	}()
	t.Cleanup(func() {
		// The whole group: the process and any successor it started.
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		outR.Close()
		errR.Close()
		if t.Failed() || os.Getenv("RESTART_TEST_SHOW") != "" {
			t.Logf("helper %d stdout:\n%s\nstderr:\n%s", p.cmd.Process.Pid, p.stdout, p.stderr)
		}
	})
	return p
}

// ready waits for a ready line (the process's, or a successor's) from line from on and
// returns its pid, address, when it came and its index.
func (p *proc) ready(from int) (pid int, addr string, at time.Time, idx int) {
	p.t.Helper()
	m, at, i := p.stdout.Expect(p.t, readyLine, from, bound)
	pid, _ = strconv.Atoi(m[1])
	return pid, m[2], at, i
}

func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %v: %v", sig, err)
	}
}

// waitExit waits for the process (not its successors) to end and returns when it did.
func (p *proc) waitExit() time.Time {
	p.t.Helper()
	select {
	case <-p.done:
		return p.exited
	case <-time.After(2 * bound):
		p.t.Fatalf("helper %d did not exit within %v", p.cmd.Process.Pid, 2*bound)
		return time.Time{}
	}
}

// alive reports whether pid is a running process (not gone, not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses, which may itself hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
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

// hammer asks addr for its pid in a tight loop until stop is closed, and counts the answers
// by pid and the failures by kind: a refused connection is a moment the port was closed.
type hammer struct {
	mu      sync.Mutex
	byPID   map[int]int
	refused int
	failed  []error
	done    chan struct{}
}

func startHammer(addr string, stop <-chan struct{}) *hammer {
	hm := &hammer{byPID: map[int]int{}, done: make(chan struct{})}
	go func() {
		defer close(hm.done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			pid, err := getPID(addr)
			hm.mu.Lock()
			switch {
			case errors.Is(err, syscall.ECONNREFUSED):
				hm.refused++
			case err != nil:
				hm.failed = append(hm.failed, err)
			default:
				hm.byPID[pid]++
			}
			hm.mu.Unlock()
		}
	}()
	return hm
}

// page is a Lifeline page's socket, scripted: on a goaway it dials the same place again and,
// once the new socket's ready frame came, closes the old one (make-before-break), as the
// gateway does.
type page struct {
	url string

	mu       sync.Mutex
	moves    int      // handovers completed
	problems []string // anything a page would have noticed
	lastEnd  string   // how the last socket ended
}

func openPage(t *testing.T, url string) *page {
	t.Helper()
	pg := &page{url: url}
	conn, err := pg.dial()
	if err != nil {
		t.Fatalf("page dial %s: %v", url, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		pg.run(ctx, conn)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return pg
}

func (pg *page) dial() (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, pg.url, &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
	if err != nil {
		return nil, err
	}
	_, b, err := conn.Read(ctx)
	if err != nil {
		conn.CloseNow()
		return nil, fmt.Errorf("reading ready: %w", err)
	}
	if f, err := wire.DecodeHost(b); err != nil || f.T != wire.TypeReady {
		conn.CloseNow()
		return nil, fmt.Errorf("first frame %s, want ready", b)
	}
	return conn, nil
}

func (pg *page) problem(format string, args ...any) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	pg.problems = append(pg.problems, fmt.Sprintf(format, args...))
}

func (pg *page) run(ctx context.Context, conn *websocket.Conn) {
	defer func() { conn.CloseNow() }()
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			if ctx.Err() == nil {
				pg.mu.Lock()
				pg.lastEnd = fmt.Sprintf("status %d: %v", websocket.CloseStatus(err), err)
				pg.mu.Unlock()
			}
			return
		}
		f, err := wire.DecodeHost(b)
		if err != nil {
			pg.problem("bad frame %s: %v", b, err)
			continue
		}
		if f.T != wire.TypeGoAway {
			continue
		}
		next, err := pg.dial()
		if err != nil {
			pg.problem("dial after goaway: %v", err)
			continue // keep the old one: it still delivers
		}
		_ = conn.Close(websocket.StatusNormalClosure, "moved")
		conn = next
		pg.mu.Lock()
		pg.moves++
		pg.mu.Unlock()
	}
}

func (pg *page) state() (moves int, problems []string, lastEnd string) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	return pg.moves, append([]string(nil), pg.problems...), pg.lastEnd
}
