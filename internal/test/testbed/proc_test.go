//go:build linux

package testbed_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// The test binary runs itself as a parent process for the tests that need one to die.
const helperEnv = "TESTBED_HELPER"

func init() {
	if os.Getenv(helperEnv) == "parent-thread-exits" {
		// The main goroutine keeps the main thread, which the runtime never ends, so the
		// goroutine that locks a thread and returns gets another one (an init function
		// runs on the main thread).
		runtime.LockOSThread()
	}
}

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "parent":
		helperParent(false)
	case "parent-thread-exits":
		helperParent(true)
	case "parent-on-signal":
		helperOnSignal()
	}
	fmt.Fprintln(os.Stderr, "unknown helper", os.Getenv(helperEnv))
	os.Exit(3)
}

// helperParent starts `sleep 60` and prints its pid, then waits to be killed. With
// threadExits, the sleeper is started from a goroutine locked to its OS thread, which then
// returns, so that the Go runtime ends that thread; the helper prints the pid once the
// thread is gone.
func helperParent(threadExits bool) {
	bed := testbed.New(os.Getenv("TESTBED_DIR"))
	start := func() *testbed.Proc {
		p, err := bed.Start("sleeper", []string{"sleep", "60"}, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		return p
	}
	var p *testbed.Proc
	if threadExits {
		got := make(chan *testbed.Proc)
		tids := make(chan int, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
			tids <- unix.Gettid()
			got <- start()
		}()
		tid := <-tids
		p = <-got
		if tid == os.Getpid() {
			fmt.Fprintln(os.Stderr, "the locked goroutine ran on the main thread, which never ends")
			os.Exit(3)
		}
		if !testbed.Poll(context.Background(), 5*time.Second, 10*time.Millisecond, func() bool {
			_, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", tid))
			return err != nil
		}) {
			fmt.Fprintln(os.Stderr, "the locked thread did not end")
			os.Exit(3)
		}
	} else {
		p = start()
	}
	fmt.Println(p.Pid())
	waitForStdinEOF()
}

// helperOnSignal starts a sleeper whose death signal it ignores, so that only the signal
// handler can stop it, prints its pid and waits for SIGTERM.
func helperOnSignal() {
	bed := testbed.New(os.Getenv("TESTBED_DIR"))
	defer bed.StopOnSignal("helper", 2*time.Second)()
	p, err := bed.Start("sleeper", []string{"sleep", "60"}, &testbed.Options{DeathSig: syscall.SIGWINCH})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	fmt.Println(p.Pid())
	waitForStdinEOF()
}

// waitForStdinEOF blocks until the test closes the helper's stdin, then exits: a helper
// never outlives its test.
func waitForStdinEOF() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// alive reports whether pid runs (a zombie does not: nobody may reap it here).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	state := s[i+2]
	return state != 'Z' && state != 'X'
}

// gone waits, at most 5 s, for pid to stop running.
func gone(t *testing.T, what string, pid int) {
	t.Helper()
	if !testbed.Poll(context.Background(), 5*time.Second, 10*time.Millisecond, func() bool { return !alive(pid) }) {
		t.Fatalf("%s (pid %d) still runs 5 s later", what, pid)
	}
}

// lines collects what a process prints and hands out the first line that matches.
type lines struct {
	mu  sync.Mutex
	got []string
	ch  chan string
}

func newLines() *lines { return &lines{ch: make(chan string, 100)} }

func (l *lines) add(b []byte) {
	l.mu.Lock()
	l.got = append(l.got, string(b))
	l.mu.Unlock()
	l.ch <- string(b)
}

func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.got...)
}

// next waits, at most 5 s, for the next line.
func (l *lines) next(t *testing.T) string {
	t.Helper()
	select {
	case s := <-l.ch:
		return s
	case <-time.After(5 * time.Second):
		t.Fatal("no line within 5 s")
		return ""
	}
}

func pidLine(t *testing.T, s string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatalf("want a pid, got %q", s)
	}
	return pid
}

func TestStopKillsAChildThatIgnoresSIGTERMAfterTheGrace(t *testing.T) {
	bed := testbed.New(t.TempDir())
	out := newLines()
	// trap "" makes the shell and the sleep it becomes ignore SIGTERM.
	p, err := bed.Start("stubborn", []string{"sh", "-c", `trap "" TERM; echo ready; exec sleep 60`}, &testbed.Options{Lines: out.add})
	if err != nil {
		t.Fatal(err)
	}
	if s := out.next(t); s != "ready" {
		t.Fatalf("first line %q, want ready", s)
	}
	const grace = 300 * time.Millisecond
	t0 := time.Now()
	err = p.Stop(grace)
	took := time.Since(t0)
	if !errors.Is(err, testbed.ErrKilled) {
		t.Fatalf("Stop of a process that ignores SIGTERM = %v; want ErrKilled", err)
	}
	if took < grace {
		t.Fatalf("Stop killed after %v; want no SIGKILL before the grace, %v", took, grace)
	}
	if !p.Exited() || alive(p.Pid()) {
		t.Fatalf("after Stop the process runs (exited %v)", p.Exited())
	}
}

func TestStopSignalsTheWholeGroup(t *testing.T) {
	bed := testbed.New(t.TempDir())
	out := newLines()
	// The leader ignores SIGTERM and waits for its child, which does not (it prints its pid
	// once it has stopped ignoring it): the leader ends within the grace only if the SIGTERM
	// reached its child too.
	p, err := bed.Start("parent", []string{"sh", "-c", `trap "" TERM; (trap - TERM; exec sh -c 'echo $$; exec sleep 60') & wait`},
		&testbed.Options{Lines: out.add})
	if err != nil {
		t.Fatal(err)
	}
	grandchild := pidLine(t, out.next(t))
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatalf("Stop = %v; want the group to end on SIGTERM", err)
	}
	gone(t, "the leader's child", grandchild)
}

func TestAGroupOutlivesItsLeaderUntilStopped(t *testing.T) {
	bed := testbed.New(t.TempDir())
	out := newLines()
	// The leader starts a child and exits, as a Host that hands its socket to a successor.
	p, err := bed.Start("leaver", []string{"sh", "-c", `sleep 60 >/dev/null & echo $!`}, &testbed.Options{Lines: out.add})
	if err != nil {
		t.Fatal(err)
	}
	child := pidLine(t, out.next(t))
	if err := p.Wait(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !alive(child) {
		t.Fatal("the child died with its leader; want it to live until the group is stopped")
	}
	if err := p.Signal(0); err != nil {
		t.Fatalf("Signal(0) to a group whose leader exited but whose child lives = %v; want nil", err)
	}
	if err := p.Stop(2 * time.Second); err != nil {
		t.Fatalf("Stop of a group whose leader exited = %v; want its child ended by SIGTERM", err)
	}
	gone(t, "the child an exited leader left in its group, after Stop", child)
	if err := p.Signal(0); !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("Signal(0) to the stopped group = %v; want os.ErrProcessDone", err)
	}
}

// startHelper runs this test binary as a helper parent and returns it and the pid it prints.
func startHelper(t *testing.T, mode string) (*testbed.Proc, int) {
	t.Helper()
	dir := t.TempDir()
	bed := testbed.New(dir)
	t.Cleanup(func() { bed.StopAll(time.Second) })
	out := newLines()
	p, err := bed.Start("helper", []string{os.Args[0], "-test.run=^$"}, &testbed.Options{
		Lines: out.add, Env: append(os.Environ(), helperEnv+"="+mode, "TESTBED_DIR="+dir),
	})
	if err != nil {
		t.Fatal(err)
	}
	pid := pidLine(t, out.next(t))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return p, pid
}

func TestAParentKilledWithSIGKILLTakesItsChildrenWithIt(t *testing.T) {
	parent, child := startHelper(t, "parent")
	if !alive(child) {
		t.Fatal("the child is not running")
	}
	// The parent's leader only: the child is in a group of its own, out of reach of a group
	// signal; only its death signal can end it.
	if err := syscall.Kill(parent.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	gone(t, "the child of a parent killed with SIGKILL", child)
}

func TestAChildOutlivesTheThreadThatAskedForIt(t *testing.T) {
	_, child := startHelper(t, "parent-thread-exits")
	// The thread that called Start has ended; had it forked the child, the kernel would
	// have sent the death signal then.
	if !testbed.Poll(context.Background(), time.Second, 10*time.Millisecond, func() bool { return !alive(child) }) {
		return
	}
	t.Fatal("the child died when the thread that called Start ended")
}

func TestASignalStopsEveryChildAndExits130(t *testing.T) {
	parent, child := startHelper(t, "parent-on-signal")
	if err := parent.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := parent.Wait(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if err := parent.Err(); !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("the helper ended with %v; want exit status 130", err)
	}
	gone(t, "the child the signal handler stops", child)
}

func TestOutputGoesToLinesAndLogsAndARestartAppends(t *testing.T) {
	dir := t.TempDir()
	bed := testbed.New(dir)
	out := newLines()
	for range 2 {
		p, err := bed.Start("talker", []string{"sh", "-c", `echo one; echo oops >&2; echo two`}, &testbed.Options{Lines: out.add})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		if p.Err() != nil {
			t.Fatalf("exit status %v; want 0", p.Err())
		}
	}
	if got, want := strings.Join(out.all(), ","), "one,two,one,two"; got != want {
		t.Errorf("lines handed over: %s; want %s", got, want)
	}
	procs := bed.Procs()
	if len(procs) != 2 || procs[0].OutLog() != procs[1].OutLog() {
		t.Fatalf("Procs = %v; want both runs, with one log", procs)
	}
	for _, c := range []struct{ path, want string }{
		{procs[0].OutLog(), "one\ntwo\none\ntwo\n"},
		{procs[0].ErrLog(), "oops\noops\n"},
	} {
		b, err := os.ReadFile(c.path)
		if err != nil || !bytes.Equal(b, []byte(c.want)) {
			t.Errorf("%s = %q, %v; want %q", c.path, b, err, c.want)
		}
	}
}

func TestStopAllStopsEveryRunningProcess(t *testing.T) {
	bed := testbed.New(t.TempDir())
	var ps []*testbed.Proc
	for i := range 3 {
		p, err := bed.Start(fmt.Sprint("sleeper-", i), []string{"sleep", "60"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	bed.StopAll(2 * time.Second)
	for _, p := range ps {
		if !p.Exited() {
			t.Errorf("%s still runs after StopAll", p.Name())
		}
		if err := p.Signal(syscall.SIGTERM); !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("Signal to %s after it ended = %v; want os.ErrProcessDone", p.Name(), err)
		}
	}
}

func TestStartNamesWhatFailed(t *testing.T) {
	bed := testbed.New(t.TempDir())
	_, err := bed.Start("ghost", []string{"/nonexistent/ghost"}, nil)
	if err == nil || !strings.Contains(err.Error(), "testbed: starting ghost") {
		t.Fatalf("Start of a missing binary = %v; want an error naming it", err)
	}
}
