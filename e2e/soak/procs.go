//go:build !js

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one child process in its own process group, so that it and everything it started
// can be killed together. Its stdout is handed to a line handler, its stderr goes to a file.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stderr string // path of the stderr log
	done   chan struct{}
}

// procs is every child the soak started; killAll ends them all, whatever happened.
type procs struct {
	logDir string
	mu     sync.Mutex
	all    []*proc
	seq    int
}

// start runs argv with stdout lines passed to onLine (nil: discarded). stdin is a pipe that
// stays open as long as the soak lives, so a child that watches it (the page driver) ends
// with the soak even if the soak is killed.
//
// If the soak itself dies without cleaning up, the kernel sends the child deathSig: SIGKILL
// for the Go children, SIGTERM for the page driver, so that it closes its browser (Chromium
// runs in a process group of its own that a SIGKILL of the driver would leave behind).
func (ps *procs) start(name string, argv []string, deathSig syscall.Signal, onLine func([]byte)) (*proc, error) {
	ps.mu.Lock()
	ps.seq++
	n := ps.seq
	ps.mu.Unlock()
	errPath := filepath.Join(ps.logDir, fmt.Sprintf("%02d-%s.stderr", n, name))
	errFile, err := os.Create(errPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: deathSig}
	cmd.Stderr = errFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		errFile.Close()
		return nil, err
	}
	if _, err := cmd.StdinPipe(); err != nil {
		errFile.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		errFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, stderr: errPath, done: make(chan struct{})}
	ps.mu.Lock()
	ps.all = append(ps.all, p)
	ps.mu.Unlock()
	go func() {
		defer close(p.done)
		defer errFile.Close()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if onLine != nil {
				onLine(sc.Bytes())
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
	}()
	return p, nil
}

// kill sends sig to the process group and waits for the leader to exit, up to wait.
func (p *proc) kill(sig syscall.Signal, wait time.Duration) bool {
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
		return true
	case <-time.After(wait):
		return false
	}
}

// stop asks politely (SIGTERM), then kills the group.
func (p *proc) stop(grace time.Duration) {
	if !p.kill(syscall.SIGTERM, grace) {
		p.kill(syscall.SIGKILL, 5*time.Second)
	}
	// The leader is gone; anything left in its group goes too.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// killAll stops every child still running, in parallel.
func (ps *procs) killAll(grace time.Duration) {
	ps.mu.Lock()
	all := append([]*proc(nil), ps.all...)
	ps.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range all {
		wg.Go(func() { p.stop(grace) })
	}
	wg.Wait()
}

// panics returns the stderr files that mention a Go panic, with the first such line.
func (ps *procs) panics() []string {
	ps.mu.Lock()
	all := append([]*proc(nil), ps.all...)
	ps.mu.Unlock()
	var out []string
	for _, p := range all {
		b, err := os.ReadFile(p.stderr)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.Contains(line, "panic:") || strings.Contains(line, "fatal error:") || strings.Contains(line, "DATA RACE") {
				out = append(out, fmt.Sprintf("%s: %s", p.stderr, line))
				break
			}
		}
	}
	return out
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// health is the part of /_lifeline/health the soak reads.
type health struct {
	Ready    bool   `json:"ready"`
	Draining bool   `json:"draining"`
	Fault    string `json:"fault"`
	Sessions int    `json:"sessions"`
	Open     int    `json:"open"`
}

var httpClient = &http.Client{Timeout: 2 * time.Second}

func getHealth(ctx context.Context, base string) (health, error) {
	var h health
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/_lifeline/health", nil)
	if err != nil {
		return h, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&h)
	return h, err
}

// setFault posts mode to a Host's fault panel.
func setFault(ctx context.Context, base, mode string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/_lifeline/faults", strings.NewReader(mode))
	if err != nil {
		return err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return fmt.Errorf("fault %q at %s: %w", mode, base, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fault %q at %s: %s: %s", mode, base, resp.Status, strings.TrimSpace(string(b)))
	}
	return nil
}

// waitFor polls cond every 100 ms until it holds or d has passed; it reports whether it held.
func waitFor(ctx context.Context, d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}
