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
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/test/restarttest"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// group is a bin/host started for a restart test, with the successors it starts.
type group struct {
	*restarttest.Group
	t *testing.T
}

var servingPID = regexp.MustCompile(`msg="host: serving" url=(https?://\S+) .* pid=(\d+) successor=(true|false)`)

// startGroup runs bin/host with args, behind the command line wrap (as a supervisor would
// exec it) when given, with extra environment and descriptors (fd 3 on).
func startGroup(t *testing.T, env []string, extra []*os.File, wrap []string, args ...string) *group {
	t.Helper()
	return &group{Group: restarttest.Start(t, append(append(wrap, hostBin), args...), env, extra), t: t}
}

// serving waits for a "host: serving" line (bin/host logs to stderr) from index from on and
// returns the URL, the pid, whether it is a successor, when it came and its index.
func (g *group) serving(from int) (url string, pid int, successor bool, at time.Time, idx int) {
	g.t.Helper()
	m, at, i := g.Err.Expect(g.t, servingPID, from, bound)
	pid, _ = strconv.Atoi(m[2])
	return m[1], pid, m[3] == "true", at, i
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

// startHammer asks base for its health in a tight loop until stop closes, each time on a new
// connection; every health answer counts as one ("ok").
func startHammer(base string, tlsConf *tls.Config, stop <-chan struct{}) *restarttest.Hammer {
	client := &http.Client{Timeout: bound, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: tlsConf}}
	return restarttest.StartHammer(func() (string, error) {
		_, err := hostOf(client, base)
		return "ok", err
	}, stop)
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
	g.Signal(syscall.SIGTERM)
	exitAt, code := g.Exited()
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
	g.Err.Expect(t, regexp.MustCompile(`msg="host: stopped" closed=50 `), 0, bound)
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
	pages := make([]*restarttest.Page, n)
	for i := range pages {
		pages[i] = restarttest.OpenPage(t, wsURL(base), opts)
	}
	stop := make(chan struct{})
	hm := startHammer(base, tlsConf, stop)
	stopped := false
	defer func() {
		if !stopped {
			close(stop)
		}
		hm.Wait()
	}()

	g.Signal(syscall.SIGUSR2)
	newBase, newPID, successor, readyAt, _ := g.serving(idx + 1)
	exitAt, code := g.Exited()
	client := &http.Client{Timeout: bound, Transport: &http.Transport{TLSClientConfig: tlsConf}}
	if _, err := hostOf(client, base); err != nil {
		t.Errorf("after the handoff, health: %v", err)
	}
	close(stop)
	stopped = true
	answers, refused, failed := hm.Wait()

	if newPID == oldPID || !successor || newBase != base {
		t.Fatalf("after SIGUSR2 pid %d (successor %v) serves %s; want a successor of %d serving %s", newPID, successor, newBase, oldPID, base)
	}
	if !restarttest.Alive(newPID) {
		t.Errorf("the successor %d is not running", newPID)
	}
	if code != 0 {
		t.Errorf("the old process exited with %d, want 0", code)
	}
	if b, err := os.ReadFile(pidFile); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(newPID) {
		t.Errorf("-pidfile holds %q (%v) once the old process exited, want the successor's %d", b, err, newPID)
	}
	gone := exitAt.Sub(readyAt)
	t.Logf("handoff with %d pages: the old process exited %v after the successor was ready; %d health answers, %d refused, %d failed during it",
		n, gone.Round(time.Millisecond), answers["ok"], refused, len(failed))
	if refused != 0 || len(failed) != 0 {
		t.Errorf("the port was not open throughout: %d refused, failures %q", refused, failed)
	}
	if gone > 2*time.Second {
		t.Errorf("the old process exited %v after the successor was ready, want within 2 s: its pages had moved (drainTimeoutMs is 60 s)", gone)
	}
	for i, pg := range pages {
		if moves, problems, end := pg.State(); moves != 1 || len(problems) > 0 || end != "" {
			t.Errorf("page %d: %d moves, problems %q, socket ended %q; want one move, still connected", i, moves, problems, end)
		}
	}
	// The successor notices the exit on its own, a moment after it: wait for its word.
	g.Err.Expect(t, predecessorGone, 0, bound)
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
	if !strings.Contains(first.Err.String(), `socket="from systemd (socket activation)"`) {
		t.Errorf("no log of the socket's origin:\n%s", first.Err)
	}
	pg := restarttest.OpenPage(t, wsURL(base), &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})

	sent := time.Now()
	first.Signal(syscall.SIGTERM)
	exitAt, _ := first.Exited()
	t.Logf("systemctl restart: the old process exited %v after SIGTERM", exitAt.Sub(sent).Round(time.Millisecond))
	if _, _, end := pg.State(); !strings.Contains(end, "status 1012") {
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
