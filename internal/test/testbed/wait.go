//go:build !js

package testbed

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// FreePort asks the kernel for a loopback port that is free now and that this process has not
// handed out before. A run picks all its ports before it starts the processes that bind them,
// and the kernel gives a port closed a moment ago to the next pick as readily as any other (a
// fleet run once got one port for a NATS route and a Host), so the picks are remembered; a
// repeat is held open while the kernel is asked again, so that it cannot come back at once.
// Another process could still take a port before it is used: on loopback, where a run starts
// its servers itself, nothing else is picking.
func FreePort() (int, error) {
	var held []net.Listener
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	for range 64 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("testbed: a free port: %w", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		picked.Lock()
		again := picked.ports[port]
		picked.ports[port] = true
		picked.Unlock()
		if !again {
			ln.Close()
			return port, nil
		}
		held = append(held, ln)
	}
	return 0, fmt.Errorf("testbed: a free port: the kernel offered %d ports in a row that were handed out before", len(held))
}

// picked is every port FreePort has handed out in this process.
var picked = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// FreeAddr is FreePort as "127.0.0.1:port".
func FreeAddr() (string, error) {
	port, err := FreePort()
	return fmt.Sprintf("127.0.0.1:%d", port), err
}

// Poll calls cond every interval until it holds, for at most within; it reports whether cond
// held. A done ctx ends it early.
func Poll(ctx context.Context, within, every time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		select {
		case <-ctx.Done():
		case <-time.After(every):
		}
	}
}

// pollEvery is how often WaitTCP and WaitHTTP try again.
const pollEvery = 50 * time.Millisecond

// WaitTCP waits at most within for addr to accept a TCP connection.
func WaitTCP(ctx context.Context, addr string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var d net.Dialer
	var last lastErr
	ok := Poll(ctx, within, pollEvery, func() bool {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			last.set(ctx, err)
			return false
		}
		c.Close()
		return true
	})
	if !ok {
		return fmt.Errorf("testbed: %s accepted no connection within %v: %v", addr, within, last.get(ctx))
	}
	return nil
}

// WaitHTTP waits at most within for a GET of url to answer 200.
func WaitHTTP(ctx context.Context, url string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var last lastErr
	ok := Poll(ctx, within, pollEvery, func() bool {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			last.set(ctx, err)
			return false
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			last.set(ctx, err)
			return false
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			last.set(ctx, fmt.Errorf("status %s", resp.Status))
			return false
		}
		return true
	})
	if !ok {
		return fmt.Errorf("testbed: %s did not answer 200 within %v: %v", url, within, last.get(ctx))
	}
	return nil
}

// lastErr is the last failure of a wait that was not the wait's own end.
type lastErr struct{ err error }

func (l *lastErr) set(ctx context.Context, err error) {
	// A try cut short by the wait's deadline says nothing about the server: keep the one
	// before it.
	if dl, ok := ctx.Deadline(); ctx.Err() == nil && (!ok || time.Now().Before(dl)) {
		l.err = err
	}
}

func (l *lastErr) get(ctx context.Context) error {
	if l.err == nil {
		return ctx.Err()
	}
	return l.err
}
