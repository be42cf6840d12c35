//go:build !js

package main_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/gateway/wire"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// group is a bin/host started for a restart test, with the successors it starts: they share
// its output (pipes the test reads, so that waiting for this process does not wait for its
// successor, which holds them too) and its process group, killed when the test ends.
type group struct {
	t      *testing.T
	cmd    *exec.Cmd
	out    *testbed.Lines
	done   chan struct{}
	exitAt time.Time
	code   int
}

var servingPID = regexp.MustCompile(`msg="host: serving" url=(https?://\S+) .* pid=(\d+) successor=(true|false)`)

// startGroup runs bin/host with args, behind the command line wrap (as a supervisor would
// exec it) when given, with extra environment and descriptors (fd 3 on).
func startGroup(t *testing.T, env []string, extra []*os.File, wrap []string, args ...string) *group {
	t.Helper()
	argv := append(append(wrap, hostBin), args...)
	g := &group{t: t, out: &testbed.Lines{}, done: make(chan struct{})}
	g.cmd = exec.Command(argv[0], argv[1:]...)
	g.cmd.Env = append(os.Environ(), env...)
	g.cmd.ExtraFiles = extra
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	g.cmd.Stdout, g.cmd.Stderr = w, w
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	go g.out.Read(r)
	go func() {
		_ = g.cmd.Wait()
		g.exitAt = time.Now()
		g.code = g.cmd.ProcessState.ExitCode()
		close(g.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
		<-g.done
		r.Close()
		if t.Failed() {
			t.Logf("bin/host %d and successors:\n%s", g.cmd.Process.Pid, g.out)
		}
	})
	return g
}

// serving waits for a "host: serving" line from index from on and returns the URL, the pid,
// whether it is a successor, when it came and its index.
func (g *group) serving(from int) (url string, pid int, successor bool, at time.Time, idx int) {
	g.t.Helper()
	m, at, i := g.out.Expect(g.t, servingPID, from, bound)
	pid, _ = strconv.Atoi(m[2])
	return m[1], pid, m[3] == "true", at, i
}

func (g *group) signal(sig syscall.Signal) {
	g.t.Helper()
	if err := g.cmd.Process.Signal(sig); err != nil {
		g.t.Fatalf("signal %v: %v", sig, err)
	}
}

// exited waits for the first process (not its successors) to end.
func (g *group) exited() (time.Time, int) {
	g.t.Helper()
	select {
	case <-g.done:
		return g.exitAt, g.code
	case <-time.After(2 * bound):
		g.t.Fatalf("bin/host %d did not exit within %v:\n%s", g.cmd.Process.Pid, 2*bound, g.out)
		return time.Time{}, -1
	}
}

// alive reports whether pid is a running process (not gone, not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// hostOf asks base which Host (its -id) and process serves /_lifeline/health, on a
// connection of its own.
func hostOf(client *http.Client, base string) (string, error) {
	resp, err := client.Get(base + "/_lifeline/health")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("health %d %s", resp.StatusCode, b)
	}
	return string(b), nil
}

// hammer asks for health in a tight loop, each time on a new connection, until stop closes,
// and counts what went wrong: a refused connection is a moment the port was closed.
type hammer struct {
	mu      sync.Mutex
	ok      int
	refused int
	failed  []string
	done    chan struct{}
}

func startHammer(base string, tlsConf *tls.Config, stop <-chan struct{}) *hammer {
	client := &http.Client{Timeout: bound, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: tlsConf}}
	hm := &hammer{done: make(chan struct{})}
	go func() {
		defer close(hm.done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, err := hostOf(client, base)
			hm.mu.Lock()
			switch {
			case errors.Is(err, syscall.ECONNREFUSED):
				hm.refused++
			case err != nil:
				hm.failed = append(hm.failed, err.Error())
			default:
				hm.ok++
			}
			hm.mu.Unlock()
		}
	}()
	return hm
}

// scriptedPage follows a goaway as the gateway does: it dials the same place again and, once
// the new socket's ready frame came, closes the old one (make-before-break).
type scriptedPage struct {
	url  string
	opts *websocket.DialOptions

	mu       sync.Mutex
	moves    int
	problems []string
	end      string // how its socket ended, if it did
}

func openScriptedPage(t *testing.T, url string, opts *websocket.DialOptions) *scriptedPage {
	t.Helper()
	pg := &scriptedPage{url: url, opts: opts}
	conn, err := pg.dial()
	if err != nil {
		t.Fatalf("page dial %s: %v", url, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); pg.run(ctx, conn) }()
	t.Cleanup(func() { cancel(); <-done })
	return pg
}

func (pg *scriptedPage) dial() (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
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

func (pg *scriptedPage) run(ctx context.Context, conn *websocket.Conn) {
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
		if f, err := wire.DecodeHost(b); err != nil || f.T != wire.TypeGoAway {
			continue
		}
		next, err := pg.dial()
		if err != nil {
			pg.mu.Lock()
			pg.problems = append(pg.problems, "dial after goaway: "+err.Error())
			pg.mu.Unlock()
			continue // the old socket still delivers
		}
		_ = conn.Close(websocket.StatusNormalClosure, "moved")
		conn = next
		pg.mu.Lock()
		pg.moves++
		pg.mu.Unlock()
	}
}

func (pg *scriptedPage) state() (int, []string, string) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	return pg.moves, append([]string(nil), pg.problems...), pg.end
}

func wsURL(base string) string {
	return "ws" + strings.TrimPrefix(base, "http") + wire.DefaultPath
}

// A Host told to stop with nobody to take its pages does not hold them (nor the process) for
// drainTimeoutMs: every page reads the restart message and 1012 at once, and the process
// exits.
func TestSIGTERMClosesEverySessionAtOnceWith1012(t *testing.T) {
	const n = 50
	g := startGroup(t, nil, nil, nil, "-addr", "127.0.0.1:0", "-web", webDir(t), "-stop-retry-after", "250ms",
		"-config", writeConfig(t, `{"drainTimeoutMs":60000}`))
	base, _, _, _, _ := g.serving(0)
	type end struct {
		msgs []string
		err  error
	}
	ends := make(chan end, n)
	ctx, cancel := context.WithTimeout(context.Background(), 2*bound)
	defer cancel()
	for range n {
		c, _, err := websocket.Dial(ctx, wsURL(base), &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		if _, b, err := c.Read(ctx); err != nil || !strings.Contains(string(b), `"t":"ready"`) {
			t.Fatalf("first frame %s (%v)", b, err)
		}
		go func() {
			var e end
			for {
				_, b, err := c.Read(ctx)
				if err != nil {
					e.err = err
					ends <- e
					return
				}
				if f, _ := wire.DecodeHost(b); f.T == wire.TypeError {
					e.msgs = append(e.msgs, f.Message)
				}
			}
		}()
	}
	sent := time.Now()
	g.signal(syscall.SIGTERM)
	exitAt, code := g.exited()
	t.Logf("SIGTERM with %d sessions: the process exited %v later (drainTimeoutMs 60 s)", n, exitAt.Sub(sent).Round(time.Millisecond))
	if code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	want := "service-restart retry-after=250"
	for range n {
		e := <-ends
		var ce websocket.CloseError
		if !errors.As(e.err, &ce) || ce.Code != wire.CloseServiceRestart || ce.Reason != want {
			t.Errorf("a page's socket ended with %v, want 1012 %q", e.err, want)
		}
		if len(e.msgs) != 1 || e.msgs[0] != want {
			t.Errorf("a page read the error frames %q before the close, want [%q]", e.msgs, want)
		}
	}
	// The output is read on its own goroutine (the pipe is shared with any successor, so its
	// end is no sign that it has all been read): the process's last line may still be on its
	// way when the exit is seen.
	g.out.Expect(t, regexp.MustCompile(`msg="host: stopped" closed=50 `), 0, bound)
}

// handoff runs one SIGUSR2 handoff of a bin/host with n scripted pages and a client asking
// for health in a tight loop, and checks what nobody may notice.
func handoff(t *testing.T, n int, tlsConf *tls.Config, args ...string) {
	pidFile := filepath.Join(t.TempDir(), "host.pid")
	g := startGroup(t, nil, nil, nil, append([]string{"-addr", "127.0.0.1:0", "-web", webDir(t), "-pidfile", pidFile,
		"-config", writeConfig(t, `{"drainTimeoutMs":60000}`)}, args...)...)
	base, oldPID, _, _, idx := g.serving(0)
	opts := &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}}
	if tlsConf != nil {
		opts.HTTPClient = &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConf}}
		opts.HTTPHeader = http.Header{"Origin": {base}}
	}
	pages := make([]*scriptedPage, n)
	for i := range pages {
		pages[i] = openScriptedPage(t, wsURL(base), opts)
	}
	stop := make(chan struct{})
	hm := startHammer(base, tlsConf, stop)
	stopped := false
	defer func() {
		if !stopped {
			close(stop)
		}
		<-hm.done
	}()

	g.signal(syscall.SIGUSR2)
	newBase, newPID, successor, readyAt, _ := g.serving(idx + 1)
	exitAt, code := g.exited()
	client := &http.Client{Timeout: bound, Transport: &http.Transport{TLSClientConfig: tlsConf}}
	if _, err := hostOf(client, base); err != nil {
		t.Errorf("after the handoff, health: %v", err)
	}
	close(stop)
	stopped = true
	<-hm.done

	if newPID == oldPID || !successor || newBase != base {
		t.Fatalf("after SIGUSR2 pid %d (successor %v) serves %s; want a successor of %d serving %s", newPID, successor, newBase, oldPID, base)
	}
	if !alive(newPID) {
		t.Errorf("the successor %d is not running", newPID)
	}
	if code != 0 {
		t.Errorf("the old process exited with %d, want 0", code)
	}
	if b, err := os.ReadFile(pidFile); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(newPID) {
		t.Errorf("-pidfile holds %q (%v) once the old process exited, want the successor's %d", b, err, newPID)
	}
	gone := exitAt.Sub(readyAt)
	hm.mu.Lock()
	t.Logf("handoff with %d pages: the old process exited %v after the successor was ready; %d health answers, %d refused, %d failed during it",
		n, gone.Round(time.Millisecond), hm.ok, hm.refused, len(hm.failed))
	if hm.refused != 0 || len(hm.failed) != 0 {
		t.Errorf("the port was not open throughout: %d refused, failures %q", hm.refused, hm.failed)
	}
	hm.mu.Unlock()
	if gone > 2*time.Second {
		t.Errorf("the old process exited %v after the successor was ready, want within 2 s: its pages had moved (drainTimeoutMs is 60 s)", gone)
	}
	for i, pg := range pages {
		if moves, problems, end := pg.state(); moves != 1 || len(problems) > 0 || end != "" {
			t.Errorf("page %d: %d moves, problems %q, socket ended %q; want one move, still connected", i, moves, problems, end)
		}
	}
	// The successor notices the exit on its own, a moment after it: wait for its word.
	g.out.Expect(t, predecessorGone, 0, bound)
}

var predecessorGone = regexp.MustCompile(`host: the predecessor has exited`)

func TestSIGUSR2HandsTheSocketToASuccessorWithoutAnyoneNoticing(t *testing.T) {
	handoff(t, 50, nil)
}

func TestSIGUSR2HandoffKeepsServingTLS(t *testing.T) {
	certFile, keyFile := selfSigned(t)
	handoff(t, 5, &tls.Config{InsecureSkipVerify: true}, "-cert", certFile, "-key", keyFile)
}

// A socket-activated bin/host (LISTEN_FDS, fd 3) serves systemd's socket, and systemctl
// restart (stop, start again on the same socket) refuses nobody: the socket stays open in
// systemd, here the test.
func TestSocketActivatedHostKeepsThePortOpenThroughARestart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fd, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	addr := ln.Addr().String()
	// systemd sets LISTEN_PID between fork and exec; a shell that execs keeps its pid.
	wrap := []string{"/bin/sh", "-c", `LISTEN_PID=$$; export LISTEN_PID; exec "$0" "$@"`}
	env := []string{"LISTEN_FDS=1"}
	web := webDir(t)
	cfg := writeConfig(t, `{"drainTimeoutMs":60000}`)
	// -addr is what the unit's command line says; the socket is systemd's whatever it says.
	args := []string{"-addr", "127.0.0.1:0", "-web", web, "-config", cfg}

	first := startGroup(t, env, []*os.File{fd}, wrap, args...)
	base, _, _, _, _ := first.serving(0)
	if base != "http://"+addr {
		t.Fatalf("bin/host serves %s, want systemd's socket %s", base, addr)
	}
	if !strings.Contains(first.out.String(), `socket="from systemd (socket activation)"`) {
		t.Errorf("no log of the socket's origin:\n%s", first.out)
	}
	pg := openScriptedPage(t, wsURL(base), &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})

	sent := time.Now()
	first.signal(syscall.SIGTERM)
	exitAt, _ := first.exited()
	t.Logf("systemctl restart: the old process exited %v after SIGTERM", exitAt.Sub(sent).Round(time.Millisecond))
	if _, _, end := pg.state(); !strings.Contains(end, "status 1012") {
		t.Errorf("the page's socket ended %q, want 1012 (no successor; a drain would wait a minute)", end)
	}
	// Between the two processes a request waits in the socket's backlog.
	answer := make(chan error, 1)
	go func() {
		_, err := hostOf(&http.Client{Timeout: bound}, base)
		answer <- err
	}()
	second := startGroup(t, env, []*os.File{fd}, wrap, args...)
	base2, _, _, _, _ := second.serving(0)
	if err := <-answer; err != nil {
		t.Errorf("a request during the restart: %v, want an answer from the next process", err)
	}
	if base2 != base {
		t.Errorf("the next process serves %s, want %s", base2, base)
	}
}
