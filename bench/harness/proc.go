//go:build !js

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a child process of the harness, in a process group of its own so that stopping it
// also stops anything it started. Its stdout and stderr go to files under the raw folder;
// onLine, when set, also sees every stdout line.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// procs is every child still running, so that an interrupted harness leaves none behind.
var procs struct {
	sync.Mutex
	m map[*proc]struct{}
}

func startProc(name, rawDir string, onLine func(string), argv ...string) (*proc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = os.Environ()
	outF, err := os.Create(filepath.Join(rawDir, name+".out"))
	if err != nil {
		return nil, err
	}
	errF, err := os.Create(filepath.Join(rawDir, name+".err"))
	if err != nil {
		outF.Close()
		return nil, err
	}
	cmd.Stderr = errF
	var pipe io.ReadCloser
	if onLine != nil {
		if pipe, err = cmd.StdoutPipe(); err != nil {
			return nil, err
		}
	} else {
		cmd.Stdout = outF
	}
	if err := cmd.Start(); err != nil {
		outF.Close()
		errF.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	procs.Lock()
	if procs.m == nil {
		procs.m = make(map[*proc]struct{})
	}
	procs.m[p] = struct{}{}
	procs.Unlock()
	var copied sync.WaitGroup
	if pipe != nil {
		copied.Go(func() {
			sc := bufio.NewScanner(pipe)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			w := bufio.NewWriter(outF)
			for sc.Scan() {
				line := sc.Text()
				w.WriteString(line)
				w.WriteByte('\n')
				onLine(line)
			}
			w.Flush()
		})
	}
	go func() {
		copied.Wait()
		p.err = cmd.Wait()
		outF.Close()
		errF.Close()
		procs.Lock()
		delete(procs.m, p)
		procs.Unlock()
		close(p.done)
	}()
	return p, nil
}

// pid is the process id.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, and SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	if p == nil || p.exited() {
		return
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		<-p.done
	}
}

// stopAll stops every child still running.
func stopAll() {
	procs.Lock()
	var all []*proc
	for p := range procs.m {
		all = append(all, p)
	}
	procs.Unlock()
	var wg sync.WaitGroup
	for _, p := range all {
		wg.Go(func() { p.stop(2 * time.Second) })
	}
	wg.Wait()
}

// rssBytes reads a process's resident set size from /proc.
func rssBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("no VmRSS")
}

// freePort asks the kernel for a free loopback port. Another process could take it before it
// is used; on loopback in a harness that starts its servers one at a time, that does not happen.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitTCP waits until addr accepts a TCP connection, or ctx ends.
func waitTCP(ctx context.Context, addr string) error {
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s never accepted: %w", addr, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitHTTP waits until url answers 200, or ctx ends.
func waitHTTP(ctx context.Context, url string) error {
	client := &http.Client{Timeout: time.Second}
	var last error
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s never answered 200: %w", url, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
