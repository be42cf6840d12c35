//go:build linux

package testbed

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Bounds of the waits a stop makes on its own.
const (
	// killWait bounds the wait for a process group to end after SIGKILL.
	killWait = 5 * time.Second
	// drainWait bounds the wait for a process's stdout after it exited: what it left
	// behind (a successor, a browser its driver started) may still hold the pipe.
	drainWait = 2 * time.Second
)

// ErrKilled is wrapped by Stop's error when the process had to be killed.
var ErrKilled = errors.New("testbed: killed")

// Options tune [Bed.Start]. A nil *Options means all defaults.
type Options struct {
	// Lines, when set, is called with each line the process prints on stdout (without its
	// newline; the slice is valid during the call only), one call at a time, as well as
	// the line going to the log. Default: stdout goes to the log only.
	Lines func(line []byte)
	// DeathSig is the signal the kernel sends the process if this program dies without
	// stopping it. Default SIGKILL. A driver of a browser wants SIGTERM, to close it: the
	// browser runs in a group of its own that a SIGKILL of the driver would leave behind.
	DeathSig syscall.Signal
	// Dir is the working directory. Default: this program's.
	Dir string
	// Env is the environment. Default: this program's.
	Env []string
}

// Bed is every process one run started, so that none outlives the run. Its zero value is not
// usable: call [New]. It is safe for concurrent use; the usual call is
//
//	bed := testbed.New(logDir)
//	defer bed.StopAll(3 * time.Second)
//	defer bed.StopOnSignal("soak", 3*time.Second)()
//	host, err := bed.Start("host", []string{"bin/host", "-addr", addr}, nil)
type Bed struct {
	dir string

	mu  sync.Mutex
	all []*Proc
}

// New returns a Bed whose processes log into dir (which must exist).
func New(dir string) *Bed { return &Bed{dir: dir} }

// Dir is the folder of the logs.
func (b *Bed) Dir() string { return b.dir }

// Procs returns every process started so far, running or not, in the order they started.
func (b *Bed) Procs() []*Proc {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*Proc(nil), b.all...)
}

// Proc is one child process and its process group. It is safe for concurrent use.
type Proc struct {
	name           string
	pid            int
	cmd            *exec.Cmd
	outLog, errLog string

	stdin     *os.File // the write end of the child's stdin
	stdinOnce sync.Once

	mu        sync.Mutex // held while signalling, so that no signal follows the group's end
	reaped    bool
	groupGone bool  // reaped, and nobody is left in the group: its id may be reused
	err       error // the exit status, set before exited is closed

	exited chan struct{} // the leader has exited and was reaped
	done   chan struct{} // … and its stdout was read to the end, or drainWait passed
}

// Start starts argv under name, in a process group of its own. Its stdout and stderr go to
// <dir>/<name>.out and <dir>/<name>.err, appended to (a process started again under the same
// name continues its logs). Its stdin is a pipe held until it is stopped or exits: a child
// that watches its stdin ends with this program, however this program ends.
//
// The group may outlive its leader (a Host that hands its socket to a successor it started):
// the Proc stands for the group until nobody is left in it.
func (b *Bed) Start(name string, argv []string, o *Options) (*Proc, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("testbed: starting %s: no command", name)
	}
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.DeathSig == 0 {
		opt.DeathSig = syscall.SIGKILL
	}
	p := &Proc{name: name, outLog: filepath.Join(b.dir, name+".out"), errLog: filepath.Join(b.dir, name+".err"),
		exited: make(chan struct{}), done: make(chan struct{})}
	var childEnds, ours []*os.File // closed after the start; closed on failure
	fail := func(err error) (*Proc, error) {
		for _, f := range append(childEnds, ours...) {
			_ = f.Close()
		}
		return nil, fmt.Errorf("testbed: starting %s: %w", name, err)
	}
	outF, err := openLog(p.outLog)
	if err != nil {
		return fail(err)
	}
	ours = append(ours, outF)
	errF, err := openLog(p.errLog)
	if err != nil {
		return fail(err)
	}
	childEnds = append(childEnds, errF)
	inR, inW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	childEnds, ours = append(childEnds, inR), append(ours, inW)

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = opt.Dir, opt.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outF, errF
	var outR *os.File
	if opt.Lines != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		cmd.Stdout, outR = w, r
		childEnds, ours = append(childEnds, w), append(ours, r)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: opt.DeathSig}
	if err := startOnLockedThread(cmd); err != nil {
		return fail(err)
	}
	for _, f := range childEnds {
		_ = f.Close()
	}
	p.cmd, p.pid, p.stdin = cmd, cmd.Process.Pid, inW
	b.mu.Lock()
	b.all = append(b.all, p)
	b.mu.Unlock()

	drained := make(chan struct{})
	if outR != nil {
		// Until the last writer of the pipe is gone, which may outlive the leader: the
		// pipe is never closed under an inheritor, whose next write would kill it.
		go func() {
			defer close(drained)
			copyLines(outR, outF, opt.Lines)
			_ = outR.Close()
			_ = outF.Close()
		}()
	} else {
		_ = outF.Close()
		close(drained)
	}
	go p.reap(drained)
	return p, nil
}

func openLog(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// copyLines copies r to log, handing each line to lines too.
func copyLines(r io.Reader, log io.Writer, lines func([]byte)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var buf []byte
	for sc.Scan() {
		buf = append(append(buf[:0], sc.Bytes()...), '\n')
		_, _ = log.Write(buf)
		lines(buf[:len(buf)-1])
	}
	// A line over 1 MiB ends the scan: the rest goes to the log only.
	_, _ = io.Copy(log, r)
}

// reap waits for the leader to exit and notes whether its group outlived it.
func (p *Proc) reap(drained <-chan struct{}) {
	err := p.cmd.Wait()
	p.mu.Lock()
	p.err, p.reaped = err, true
	// A group with nobody left in it cannot be joined again; one with members keeps its
	// id, which the kernel does not reuse while they live.
	p.groupGone = !groupLives(p.pid)
	p.mu.Unlock()
	p.closeStdin()
	close(p.exited)
	t := time.NewTimer(drainWait)
	defer t.Stop()
	select {
	case <-drained:
	case <-t.C:
	}
	close(p.done)
}

var spawner struct {
	once sync.Once
	reqs chan func()
}

// startOnLockedThread starts cmd from one OS thread that lives as long as the program: the
// kernel sends Pdeathsig when the thread that forked the child ends, not its process
// (go.dev/issue/27505), and the Go runtime ends a thread whenever a goroutine locked to it
// returns.
func startOnLockedThread(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives until the program ends
			for f := range spawner.reqs {
				f()
			}
		}()
	})
	errc := make(chan error, 1)
	spawner.reqs <- func() { errc <- cmd.Start() }
	return <-errc
}

// Name is the name the process was started under.
func (p *Proc) Name() string { return p.name }

// Pid is the process id of the group's leader, which is also the group's id.
func (p *Proc) Pid() int { return p.pid }

// OutLog is the path of the process's stdout log.
func (p *Proc) OutLog() string { return p.outLog }

// ErrLog is the path of the process's stderr log.
func (p *Proc) ErrLog() string { return p.errLog }

// Done is closed once the process has exited and its stdout has been read to the end (or, if
// something it left behind still holds its stdout, 2 s later: what that prints is still
// logged and handed to Lines).
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process (the group's leader) has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Err is the process's exit status once Done is closed: nil for exit status 0.
func (p *Proc) Err() error {
	select {
	case <-p.exited:
		return p.err
	default:
		return nil
	}
}

// Signal sends sig to the process's group. It fails with os.ErrProcessDone once the group
// has ended: its leader exited and nobody is left in it.
func (p *Proc) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.groupGone {
		return os.ErrProcessDone
	}
	err := syscall.Kill(-p.pid, sig)
	if errors.Is(err, syscall.ESRCH) && p.reaped {
		p.groupGone = true
		return os.ErrProcessDone
	}
	if err != nil {
		return fmt.Errorf("testbed: %v to %s (group %d): %w", sig, p.name, p.pid, err)
	}
	return nil
}

// ended reports whether the group has ended, finding out if need be.
func (p *Proc) ended() bool {
	if !p.Exited() {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.groupGone && !groupLives(p.pid) {
		p.groupGone = true
	}
	return p.groupGone
}

// groupLives reports whether process group pgid has a member that is not a zombie. A zombie
// is still in its group until its parent reaps it, and an orphan's new parent (init) may
// take its time.
func groupLives(pgid int) bool {
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	want := strconv.Itoa(pgid)
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …, where comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if f := strings.Fields(string(b[i+1:])); len(f) >= 3 && f[2] == want && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}

// awaitEnd waits at most d for the group to end.
func (p *Proc) awaitEnd(d time.Duration) bool {
	deadline := time.Now().Add(d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		return false
	}
	return Poll(context.Background(), time.Until(deadline), 10*time.Millisecond, p.ended)
}

// Wait waits at most d for the process to end (Done).
func (p *Proc) Wait(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
		return fmt.Errorf("testbed: %s (pid %d) still running after %v", p.name, p.pid, d)
	}
}

// Stop ends the process's group: its stdin is closed and SIGTERM sent; if the group has not
// ended after grace (its leader exited, nobody left in it), SIGKILL. It returns once the
// process is Done: nil if the group ended within grace (or had ended already), an error
// wrapping ErrKilled if it had to be killed, another error if it outlived SIGKILL by 5 s.
func (p *Proc) Stop(grace time.Duration) error {
	if !p.ended() {
		p.closeStdin()
		_ = p.Signal(syscall.SIGTERM)
		if !p.awaitEnd(grace) {
			_ = p.Signal(syscall.SIGKILL)
			if !p.awaitEnd(killWait) {
				return fmt.Errorf("testbed: %s (group %d) still running %v after SIGKILL", p.name, p.pid, killWait)
			}
			<-p.done
			return fmt.Errorf("%w: %s (group %d) was still running %v after SIGTERM", ErrKilled, p.name, p.pid, grace)
		}
	}
	<-p.done
	return nil
}

func (p *Proc) closeStdin() {
	p.stdinOnce.Do(func() { _ = p.stdin.Close() })
}

// StopAll stops every group still running, all at once, each with grace.
func (b *Bed) StopAll(grace time.Duration) {
	var wg sync.WaitGroup
	for _, p := range b.Procs() {
		if !p.ended() {
			wg.Go(func() { _ = p.Stop(grace) })
		}
	}
	wg.Wait()
}

// StopOnSignal makes SIGINT or SIGTERM stop every process of b (StopAll with grace) and end
// the program with status 130; a second signal during the stop ends the program at once (the
// kernel's death signal then takes the children). name prefixes the line said on stderr.
// The returned function undoes it.
func (b *Bed) StopOnSignal(name string, grace time.Duration) (release func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	quit := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			signal.Stop(sigs)
			fmt.Fprintf(os.Stderr, "%s: %v: stopping every child process\n", name, sig)
			b.StopAll(grace)
			os.Exit(130)
		case <-quit:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(quit)
		})
	}
}
