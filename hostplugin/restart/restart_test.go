//go:build !js

package restart_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/hostplugin/restart"
	"github.com/lifeline-go/lifeline/internal/test/restarttest"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// A drain that had to wait for its timeout would take a minute: a process that leaves within
// seconds left because its pages did.
const longDrain = `RESTART_TEST_CONFIG={"drainTimeoutMs":60000}`

func readPIDFile(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("PID file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("PID file holds %q", b)
	}
	return pid
}

func TestUpgradeHandsTheSocketToTheSuccessorAndDrainsToIt(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "host.pid")
	p := startHelper(t, []string{"RESTART_TEST_ADDR=127.0.0.1:0", "RESTART_TEST_PIDFILE=" + pidFile, longDrain}, nil)
	oldPID, addr, _, idx := p.ready(0)
	if oldPID != p.PID() {
		t.Fatalf("ready line from pid %d, want %d", oldPID, p.PID())
	}
	if got := readPIDFile(t, pidFile); got != oldPID {
		t.Fatalf("PID file %d, want %d", got, oldPID)
	}
	pages := make([]*restarttest.Page, 10)
	for i := range pages {
		pages[i] = openPage(t, addr)
	}
	stop := make(chan struct{})
	hm := startHammer(addr, stop)
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		hm.Wait()
	}()

	p.Signal(syscall.SIGUSR2)
	newPID, newAddr, readyAt, _ := p.ready(idx + 1)
	exitAt, _ := p.Exited()
	// The successor goes on answering after the old process is gone.
	if pid, err := getPID(addr); err != nil || pid != newPID {
		t.Fatalf("after the handoff %s is answered by %d (%v), want the successor %d", addr, pid, err, newPID)
	}
	close(stop)
	byPID, refused, failed := hm.Wait()

	if newPID == oldPID || newAddr != addr {
		t.Fatalf("successor ready as pid %d on %s; want a new process on %s", newPID, newAddr, addr)
	}
	if !restarttest.Alive(newPID) {
		t.Errorf("the successor %d is not running", newPID)
	}
	if got := readPIDFile(t, pidFile); got != newPID {
		t.Errorf("PID file %d once the old process exited, want the successor's %d", got, newPID)
	}
	old, succ := byPID[strconv.Itoa(oldPID)], byPID[strconv.Itoa(newPID)]
	t.Logf("during the handoff: %d answers from the old process, %d from the successor, %d refused, %d failed",
		old, succ, refused, len(failed))
	if refused != 0 || len(failed) != 0 {
		t.Errorf("the port was not open throughout: %d connections refused, failures %v", refused, failed)
	}
	if old == 0 || succ == 0 {
		t.Errorf("answers by pid %v: want some from each of %d and %d", byPID, oldPID, newPID)
	}
	gone := exitAt.Sub(readyAt)
	t.Logf("the old process exited %v after the successor was ready", gone.Round(time.Millisecond))
	if gone > 2*time.Second {
		t.Errorf("the old process exited %v after the successor was ready, want within 2 s (its pages had moved)", gone)
	}
	// The output is read on its own goroutine from a pipe the successor shares: the old
	// process's last line may still be on its way when its exit is seen.
	p.Out.Expect(t, regexp.MustCompile(`^exit pid=`+strconv.Itoa(oldPID)+` closed=0\b`), 0, bound)
	for i, pg := range pages {
		moves, problems, lastEnd := pg.State()
		if moves != 1 || len(problems) > 0 || lastEnd != "" {
			t.Errorf("page %d: %d moves, problems %q, socket ended %q; want one move and still connected", i, moves, problems, lastEnd)
		}
	}
}

func TestUpgradeThatFailsKeepsTheOldProcessServing(t *testing.T) {
	p := startHelper(t, []string{"RESTART_TEST_ADDR=127.0.0.1:0", "RESTART_TEST_FAIL_SUCCESSOR=1", longDrain}, nil)
	pid, addr, _, _ := p.ready(0)
	pg := openPage(t, addr)
	p.Signal(syscall.SIGUSR2)
	p.Out.Expect(t, regexp.MustCompile(`^upgrade failed pid=`+strconv.Itoa(pid)+`: restart: no successor took over: child pid=\d+ exited`), 0, bound)
	if got, err := getPID(addr); err != nil || got != pid {
		t.Errorf("after a failed upgrade %s is answered by %d (%v), want %d", addr, got, err, pid)
	}
	if moves, problems, lastEnd := pg.State(); moves != 0 || len(problems) > 0 || lastEnd != "" {
		t.Errorf("a failed upgrade reached the page: %d moves, %q, ended %q", moves, problems, lastEnd)
	}
	// It can try again, and a plain stop still works.
	p.Signal(syscall.SIGTERM)
	p.Exited()
}

// activated is the socket a test holds as systemd would, and the command line that passes it
// on as fd 3 with LISTEN_PID set to the pid of the process that execs (a shell, then exec,
// keeps the pid, as systemd does between fork and exec).
func activated(t *testing.T) (addr string, fd *os.File, wrap []string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close(); ln.Close() })
	return ln.Addr().String(), f, []string{"/bin/sh", "-c", `LISTEN_PID=$$; export LISTEN_PID; exec "$0" "$@"`}
}

func TestSocketActivationServesSystemdsSocketAndKeepsItThroughARestart(t *testing.T) {
	addr, fd, wrap := activated(t)
	env := []string{"LISTEN_FDS=1", "RESTART_TEST_ADDR=127.0.0.1:0", longDrain}
	first := startHelper(t, env, []*os.File{fd}, wrap...)
	pid, got, _, _ := first.ready(0)
	if got != addr {
		t.Fatalf("the helper serves %s, want systemd's socket %s", got, addr)
	}
	if !strings.Contains(first.Err.String(), `socket="from systemd (socket activation)"`) {
		t.Errorf("no log of the socket's origin:\n%s", first.Err)
	}
	if p, err := getPID(addr); err != nil || p != pid {
		t.Fatalf("%s answered by %d (%v), want %d", addr, p, err, pid)
	}
	pg := openPage(t, addr)

	// systemctl restart: the service stops, then starts again on the same socket, which
	// systemd holds open meanwhile. The stop has no successor: its page is closed with 1012
	// at once, although a drain would wait a minute.
	first.Signal(syscall.SIGTERM)
	first.Exited()
	if _, _, lastEnd := pg.State(); !strings.Contains(lastEnd, "status 1012") {
		t.Errorf("the page's socket ended %q, want 1012", lastEnd)
	}
	first.Out.Expect(t, regexp.MustCompile(`closed=1\b`), 0, bound) // read after the exit: see above
	// A request between the two processes waits in the socket's backlog: never refused.
	answer := make(chan error, 1)
	var answeredBy int
	go func() {
		var err error
		answeredBy, err = getPID(addr)
		answer <- err
	}()
	second := startHelper(t, env, []*os.File{fd}, wrap...)
	pid2, got2, _, _ := second.ready(0)
	if err := <-answer; err != nil || answeredBy != pid2 {
		t.Errorf("a request during the restart got %d (%v), want an answer from the next process %d", answeredBy, err, pid2)
	}
	if got2 != addr {
		t.Errorf("the next process serves %s, want %s", got2, addr)
	}
}

// LISTEN_PID names the process the sockets are for: a process that inherited the variables
// (a child of a socket-activated service, say) must not take its own fd 3 for a socket.
func TestSocketActivationIgnoresDescriptorsMeantForAnotherProcess(t *testing.T) {
	addr, fd, _ := activated(t)
	p := startHelper(t, []string{"LISTEN_FDS=1", "LISTEN_PID=1", "RESTART_TEST_ADDR=127.0.0.1:0", longDrain}, []*os.File{fd})
	_, got, _, _ := p.ready(0)
	if got == addr {
		t.Fatalf("the helper took fd 3 (%s) although LISTEN_PID names another process", addr)
	}
	if !strings.Contains(p.Err.String(), "socket=new") {
		t.Errorf("want a socket of its own:\n%s", p.Err)
	}
}

// inProcess serves a Host through a Restarter in the test's own process. None of these
// Restarters upgrades (that would start the test binary again).
func inProcess(t *testing.T, opts *restart.Options, cfg string) (*restart.Restarter, *hostplugin.Host, *http.Server, string) {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	if opts == nil {
		opts = &restart.Options{}
	}
	opts.Logger = quiet
	r, err := restart.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	c, err := hostplugin.ParseConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	h, err := hostplugin.New(c, &hostplugin.Options{Logger: quiet, Authorize: hostplugin.PublicStreams})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	ln, err := r.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h.Handler(http.NotFoundHandler())}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	h.SetReady(true)
	if err := r.Ready(); err != nil {
		t.Fatal(err)
	}
	return r, h, srv, ln.Addr().String()
}

func dialReady(t *testing.T, addr string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+addr+wire.DefaultPath, &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	if _, b, err := c.Read(ctx); err != nil || !strings.Contains(string(b), `"t":"ready"`) {
		t.Fatalf("first frame %s (%v), want ready", b, err)
	}
	return c
}

func TestShutdownWithNoSuccessorClosesEverySessionAtOnceWith1012(t *testing.T) {
	r, h, srv, addr := inProcess(t, &restart.Options{RetryAfter: 300 * time.Millisecond}, `{"drainTimeoutMs":60000}`)
	c := dialReady(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	// The page reads as a page does, while the Host stops.
	type frame struct {
		b   []byte
		err error
	}
	frames := make(chan frame, 4)
	go func() {
		for {
			_, b, err := c.Read(ctx)
			frames <- frame{b, err}
			if err != nil {
				return
			}
		}
	}()
	closed, err := r.Shutdown(ctx, srv, h)
	if err != nil || closed != 1 {
		t.Errorf("Shutdown = %d, %v; want 1 session closed", closed, err)
	}
	f := <-frames
	if f.err != nil || !strings.Contains(string(f.b), `"message":"service-restart retry-after=300"`) {
		t.Fatalf("the page read %s (%v), want the restart message with the minimum wait", f.b, f.err)
	}
	f = <-frames
	var ce websocket.CloseError
	if !errors.As(f.err, &ce) || ce.Code != wire.CloseServiceRestart || ce.Reason != "service-restart retry-after=300" {
		t.Errorf("the page's socket ended with %s %v, want 1012 service-restart retry-after=300", f.b, f.err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Errorf("%s still accepts after Shutdown", addr)
	}
}

// A page told to come back must not be readmitted by the process on its way out: Shutdown
// sends no GOAWAY before the listener is closed. Here nobody else holds the socket, so the
// page's dial right after its goaway must be refused.
func TestShutdownStopsAcceptingBeforeItSendsTheGoAway(t *testing.T) {
	r, h, srv, addr := inProcess(t, &restart.Options{DrainWithoutSuccessor: true}, `{"drainTimeoutMs":60000}`)
	c := dialReady(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	res := make(chan int, 1)
	go func() {
		n, _ := r.Shutdown(ctx, srv, h)
		res <- n
	}()
	_, b, err := c.Read(ctx)
	if err != nil || !strings.Contains(string(b), `"t":"goaway"`) {
		t.Fatalf("the page read %s (%v), want a goaway (DrainWithoutSuccessor)", b, err)
	}
	if conn, err := net.Dial("tcp", addr); err == nil {
		conn.Close()
		t.Fatalf("%s accepted a connection after the goaway was sent", addr)
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial after the goaway: %v, want connection refused", err)
	}
	// The page leaves, as it would once its dial elsewhere is ready: the drain ends at once.
	_ = c.Close(websocket.StatusNormalClosure, "moved")
	select {
	case n := <-res:
		if n != 0 {
			t.Errorf("Shutdown closed %d sessions, want 0: the page left", n)
		}
	case <-time.After(bound):
		t.Fatal("Shutdown still draining after the page left")
	}
}

// A browser opens spare connections to an origin ahead of need (Firefox's speculative
// connections): one that has sent nothing must not keep the process alive after its pages
// moved. http.Server's Shutdown alone waits up to 5 s for such a connection (Go issue 22682);
// here Shutdown must be done within 3 s, and the spare closed by the Host. A connection that
// sent the start of a request is a request: the server's Shutdown waits for it as before.
func TestShutdownClosesAConnectionThatSentNothing(t *testing.T) {
	r, h, srv, addr := inProcess(t, &restart.Options{DrainWithoutSuccessor: true}, `{"drainTimeoutMs":60000}`)
	spare, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer spare.Close()
	// The spare is accepted before Shutdown begins: a request on a fresh connection makes
	// sure the server's accept loop has come round past it.
	resp, err := http.Get("http://" + addr + "/_lifeline/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := r.Shutdown(ctx, srv, h); err != nil {
		t.Fatalf("Shutdown with a spare connection open: %v, want done within 3 s", err)
	}
	_ = spare.SetReadDeadline(time.Now().Add(bound))
	if n, err := spare.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the spare connection read %d bytes, %v; want EOF: the Host closed it", n, err)
	}
}

// The connections the Restarter's listener hands the server write a batch in one writev,
// as the TCP connections they wrap do: hostplugin asks for WriteBuffers (its socket.go
// vectors), and without it copies every batch.
func TestAnAcceptedConnectionWritesVectors(t *testing.T) {
	r, err := restart.New(&restart.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	ln, err := r.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			defer c.Close()
			_, _ = io.Copy(io.Discard, c)
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	vw, ok := c.(interface {
		WriteBuffers(*net.Buffers) (int64, error)
	})
	if !ok {
		t.Fatalf("an accepted connection (%T) has no WriteBuffers", c)
	}
	b := net.Buffers{[]byte("one "), []byte("two")}
	if n, err := vw.WriteBuffers(&b); err != nil || n != 7 {
		t.Fatalf("WriteBuffers = %d, %v; want 7 bytes", n, err)
	}
}

func TestASecondRestarterInAProcessServesButCannotUpgrade(t *testing.T) {
	first, err := restart.New(&restart.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Stop()
	second, err := restart.New(&restart.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Stop()
	if err := second.Upgrade(); !errors.Is(err, restart.ErrNoUpgrader) {
		t.Errorf("Upgrade on the second Restarter: %v, want ErrNoUpgrader", err)
	}
	ln, err := second.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("the second Restarter cannot listen: %v", err)
	}
	ln.Close()
}
