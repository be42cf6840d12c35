//go:build !js

// Package restarttest is the harness of the restart tests, hostplugin/restart's and
// bin/host's: a Host process and the successors it starts, run as one group; a client that
// asks the port for an answer in a tight loop, each time on a new connection (a refused
// connection is a moment the port was closed); and pages that follow a GOAWAY
// make-before-break, as the gateway does. Tests only.
package restarttest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/test/testbed"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// Bound is the longest the harness waits for something that should happen; a process's exit
// gets twice as long.
const Bound = 10 * time.Second

// Group is a Host process started by a test, with the successors it starts: they share its
// output (pipes the test reads, so that waiting for this process does not wait for a
// successor, which holds them too) and its process group, killed when the test ends.
type Group struct {
	t        *testing.T
	cmd      *exec.Cmd
	Out, Err *testbed.Lines // what the group wrote to stdout and to stderr
	done     chan struct{}
	exitAt   time.Time
	code     int
}

// Start runs argv (argv[0] may be a wrapper that execs the Host, as a supervisor would) with
// env added to the test's environment and extra as its descriptors 3 on. A race-enabled Host
// is told not to sleep a second on exit, which would count as its own.
func Start(t *testing.T, argv, env []string, extra []*os.File) *Group {
	t.Helper()
	g := &Group{t: t, Out: &testbed.Lines{}, Err: &testbed.Lines{}, done: make(chan struct{})}
	g.cmd = exec.Command(argv[0], argv[1:]...)
	race := "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")
	g.cmd.Env = append(append(os.Environ(), race), env...)
	g.cmd.ExtraFiles = extra
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	g.cmd.Stdout, g.cmd.Stderr = outW, errW
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	errW.Close()
	go g.Out.Read(outR)
	go g.Err.Read(errR)
	go func() {
		_ = g.cmd.Wait()
		g.exitAt = time.Now()
		g.code = g.cmd.ProcessState.ExitCode()
		close(g.done)
	}()
	t.Cleanup(func() {
		// The whole group: the process and any successor it started.
		_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
		<-g.done
		outR.Close()
		errR.Close()
		if t.Failed() || os.Getenv("RESTART_TEST_SHOW") != "" {
			t.Logf("%s %d and its successors, stdout:\n%s\nstderr:\n%s", argv[len(argv)-1], g.cmd.Process.Pid, g.Out, g.Err)
		}
	})
	return g
}

// PID is the first process's.
func (g *Group) PID() int { return g.cmd.Process.Pid }

// Signal sends sig to the first process.
func (g *Group) Signal(sig syscall.Signal) {
	g.t.Helper()
	if err := g.cmd.Process.Signal(sig); err != nil {
		g.t.Fatalf("signal %v: %v", sig, err)
	}
}

// Exited waits for the first process (not its successors) to end, and returns when it did
// and its exit status.
func (g *Group) Exited() (time.Time, int) {
	g.t.Helper()
	select {
	case <-g.done:
		return g.exitAt, g.code
	case <-time.After(2 * Bound):
		g.t.Fatalf("process %d did not exit within %v", g.cmd.Process.Pid, 2*Bound)
		return time.Time{}, -1
	}
}

// Alive reports whether pid is a running process (not gone, not a zombie).
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses, which may itself hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// Hammer asks for an answer in a tight loop until its stop closes, and counts the answers by
// what they said and the failures by kind.
type Hammer struct {
	mu      sync.Mutex
	answers map[string]int
	refused int
	failed  []string
	done    chan struct{}
}

// StartHammer calls ask (which should open a connection of its own each time) until stop
// closes.
func StartHammer(ask func() (string, error), stop <-chan struct{}) *Hammer {
	hm := &Hammer{answers: map[string]int{}, done: make(chan struct{})}
	go func() {
		defer close(hm.done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			answer, err := ask()
			hm.mu.Lock()
			switch {
			case errors.Is(err, syscall.ECONNREFUSED):
				hm.refused++
			case err != nil:
				hm.failed = append(hm.failed, err.Error())
			default:
				hm.answers[answer]++
			}
			hm.mu.Unlock()
		}
	}()
	return hm
}

// Wait returns, once the hammer has stopped, how many times each answer came, how many
// connections were refused, and the other failures.
func (hm *Hammer) Wait() (answers map[string]int, refused int, failed []string) {
	<-hm.done
	hm.mu.Lock()
	defer hm.mu.Unlock()
	return hm.answers, hm.refused, hm.failed
}

// Page is a Lifeline page's socket, scripted: on a goaway it dials the same place again and,
// once the new socket's ready frame came, closes the old one (make-before-break), as the
// gateway does.
type Page struct {
	url  string
	opts *websocket.DialOptions

	mu       sync.Mutex
	moves    int      // handovers completed
	problems []string // anything a page would have noticed
	end      string   // how its socket ended, if it did
}

// OpenPage dials url with opts (the lifeline.v1 subprotocol is the caller's to ask for) and
// follows the Host's goaways until the test ends.
func OpenPage(t *testing.T, url string, opts *websocket.DialOptions) *Page {
	t.Helper()
	pg := &Page{url: url, opts: opts}
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

func (pg *Page) dial() (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Bound)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, pg.url, pg.opts)
	if err != nil {
		return nil, err
	}
	_, b, err := conn.Read(ctx)
	if f, derr := wire.DecodeHost(b); err != nil || derr != nil || f.T != wire.TypeReady {
		conn.CloseNow()
		return nil, fmt.Errorf("first frame %s (%v), want ready", b, err)
	}
	return conn, nil
}

func (pg *Page) problem(format string, args ...any) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	pg.problems = append(pg.problems, fmt.Sprintf(format, args...))
}

func (pg *Page) run(ctx context.Context, conn *websocket.Conn) {
	defer func() { conn.CloseNow() }()
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			if ctx.Err() == nil {
				pg.mu.Lock()
				pg.end = fmt.Sprintf("status %d: %v", websocket.CloseStatus(err), err)
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
			continue // the old socket still delivers
		}
		_ = conn.Close(websocket.StatusNormalClosure, "moved")
		conn = next
		pg.mu.Lock()
		pg.moves++
		pg.mu.Unlock()
	}
}

// State is the handovers the page completed, anything it noticed, and how its socket ended
// ("" while it is open).
func (pg *Page) State() (moves int, problems []string, end string) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	return pg.moves, append([]string(nil), pg.problems...), pg.end
}
