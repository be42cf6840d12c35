//go:build !js

package faultproxy_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/bench/faultproxy"
)

// echoServer is the upstream: it echoes every line back.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func newProxy(t *testing.T, opts *faultproxy.Options) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Listen("127.0.0.1:0", echoServer(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func dial(t *testing.T, p *faultproxy.Proxy) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip writes a line and reads it back within d.
func roundTrip(c net.Conn, d time.Duration) (string, error) {
	_ = c.SetDeadline(time.Now().Add(d))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

// eventually polls cond every 10 ms for at most 3 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 3 s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE)
}

func TestUpForwardsAndLogsEachAccept(t *testing.T) {
	log := &syncWriter{b: new(strings.Builder)}
	p := newProxy(t, &faultproxy.Options{Log: log})
	c := dial(t, p)
	if got, err := roundTrip(c, 2*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("round trip through an up proxy = %q, %v; want the echo", got, err)
	}
	recs := p.Records()
	if len(recs) != 1 || recs[0].Mode != faultproxy.Up || !recs[0].Ended.IsZero() {
		t.Fatalf("records = %+v; want one open connection accepted in up", recs)
	}
	if r := recs[0]; r.FirstReply.IsZero() || r.FirstReply.Before(r.Accepted) {
		t.Fatalf("record = %+v; want the time of the upstream's first reply, after the accept", r)
	}
	if !strings.Contains(log.String(), `"mode":"up"`) {
		t.Fatalf("log = %q; want a JSON line with the mode", log.String())
	}
}

func TestRefuseAcceptsAndResets(t *testing.T) {
	p := newProxy(t, nil)
	p.SetMode(faultproxy.Refuse)
	// The reset may arrive before the dial returns, or on the first read.
	c, err := net.DialTimeout("tcp", p.Addr(), 2*time.Second)
	if err == nil {
		defer c.Close()
		_, err = roundTrip(c, 2*time.Second)
	}
	if !isReset(err) {
		t.Fatalf("dial and round trip through a refusing proxy: err = %v; want a reset", err)
	}
	recs := p.Records()
	if len(recs) != 1 || recs[0].End != faultproxy.EndRefused {
		t.Fatalf("records = %+v; want one connection ended %q", recs, faultproxy.EndRefused)
	}
}

func TestBlackholeHoldsUntilTheClientGivesUp(t *testing.T) {
	p := newProxy(t, nil)
	p.SetMode(faultproxy.Blackhole)
	c := dial(t, p)
	_, err := roundTrip(c, 300*time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("round trip through a blackhole: err = %v; want a timeout (no answer, no close)", err)
	}
	if n := p.OpenCount(faultproxy.Blackhole); n != 1 {
		t.Fatalf("open blackholed connections = %d; want 1", n)
	}
	p.SetMode(faultproxy.Up)
	if n := p.OpenCount(faultproxy.Blackhole); n != 1 {
		t.Fatalf("after going up, open blackholed connections = %d; want 1 (still held)", n)
	}
	_ = c.Close()
	eventually(t, "the held connection to end", func() bool { return p.OpenCount(faultproxy.Blackhole) == 0 })
	r := p.Records()[0]
	if r.End != faultproxy.EndClient || r.Ended.Sub(r.Accepted) < 300*time.Millisecond {
		t.Fatalf("record = %+v; want ended by the client after at least 300 ms", r)
	}
}

func TestFlapCutsEachConnectionAfterItsTime(t *testing.T) {
	p := newProxy(t, &faultproxy.Options{FlapAfter: 100 * time.Millisecond})
	p.SetMode(faultproxy.Flap)
	c := dial(t, p)
	if got, err := roundTrip(c, time.Second); err != nil || got != "ping\n" {
		t.Fatalf("round trip within the flap window = %q, %v; want the echo", got, err)
	}
	eventually(t, "the flap cut", func() bool { return p.OpenCount(faultproxy.Flap) == 0 })
	r := p.Records()[0]
	if life := r.Ended.Sub(r.Accepted); r.End != faultproxy.EndFlapped || life < 100*time.Millisecond || life > time.Second {
		t.Fatalf("record = %+v (lived %v); want flapped after 100 ms", r, life)
	}
}

func TestLeavingUpResetsForwardedConnections(t *testing.T) {
	p := newProxy(t, nil)
	c := dial(t, p)
	if _, err := roundTrip(c, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	p.SetMode(faultproxy.Refuse)
	if _, err := roundTrip(c, 2*time.Second); !isReset(err) {
		t.Fatalf("after switching to refuse, a forwarded connection: err = %v; want a reset", err)
	}
	if r := p.Records()[0]; r.End != faultproxy.EndOutage {
		t.Fatalf("record = %+v; want ended %q", r, faultproxy.EndOutage)
	}
}

func TestControlPanelSwitchesModes(t *testing.T) {
	p := newProxy(t, nil)
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	for _, tc := range []struct {
		name       string
		body       string
		wantStatus int
		wantMode   faultproxy.Mode
	}{
		{"a known mode in the query switches", "?mode=blackhole", http.StatusOK, faultproxy.Blackhole},
		{"an unknown mode is refused and changes nothing", "?mode=sideways", http.StatusBadRequest, faultproxy.Blackhole},
		{"the body works too", "flap", http.StatusOK, faultproxy.Flap},
	} {
		url, body := srv.URL+"/mode", ""
		if strings.HasPrefix(tc.body, "?") {
			url += tc.body
		} else {
			body = tc.body
		}
		resp, err := http.Post(url, "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tc.wantStatus || p.Mode() != tc.wantMode {
			t.Errorf("%s: status %d, mode %v; want %d, %v", tc.name, resp.StatusCode, p.Mode(), tc.wantStatus, tc.wantMode)
		}
	}
}

func TestParseModeNamesTheBadValue(t *testing.T) {
	_, err := faultproxy.ParseMode("down")
	if !errors.Is(err, faultproxy.ErrMode) || !strings.Contains(err.Error(), `"down"`) {
		t.Fatalf("ParseMode(down) = %v; want ErrMode naming the value", err)
	}
}

type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
