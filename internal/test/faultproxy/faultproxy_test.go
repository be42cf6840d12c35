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

	"github.com/lifeline-go/lifeline/internal/test/faultproxy"
)

// serveEach serves each connection with handle, on a goroutine of its own, and closes it after.
func serveEach(t *testing.T, handle func(net.Conn)) string {
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
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// echoServer is the upstream: it echoes every line back.
func echoServer(t *testing.T) string {
	return serveEach(t, func(c net.Conn) { _, _ = io.Copy(c, c) })
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

// upstream is an echo server that hands the test each connection it accepts, with the time
// each line reached it.
type upstream struct {
	addr  string
	conns chan *upConn
}

type upConn struct {
	net.Conn
	lines chan time.Time // when each line arrived
	eof   chan struct{}  // closed when the proxy closed its side
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	u := &upstream{addr: ln.Addr().String(), conns: make(chan *upConn, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			uc := &upConn{Conn: c, lines: make(chan time.Time, 16), eof: make(chan struct{})}
			u.conns <- uc
			go func() {
				defer close(uc.eof)
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					uc.lines <- time.Now()
					if _, err := io.WriteString(c, line); err != nil {
						return
					}
				}
			}()
		}
	}()
	return u
}

// next waits, at most 3 s, for the upstream's next connection.
func (u *upstream) next(t *testing.T) *upConn {
	t.Helper()
	select {
	case c := <-u.conns:
		return c
	case <-time.After(3 * time.Second):
		t.Fatal("the upstream got no connection within 3 s")
		return nil
	}
}

func proxyTo(t *testing.T, u *upstream, opts *faultproxy.Options) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Listen("127.0.0.1:0", u.addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// silent reports whether c gets nothing, not even a close, for d.
func silent(c net.Conn, d time.Duration) (bool, error) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	var b [1]byte
	_, err := c.Read(b[:])
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout(), err
}

func TestLatencyHoldsEachDirectionAndKeepsOpenConnections(t *testing.T) {
	u := newUpstream(t)
	const lat = 150 * time.Millisecond
	p := proxyTo(t, u, &faultproxy.Options{Latency: lat})
	c := dial(t, p)
	if _, err := roundTrip(c, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	uc := u.next(t)
	<-uc.lines
	p.SetMode(faultproxy.Latency)
	sent := time.Now()
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		t.Fatal(err)
	}
	var arrived time.Time
	select {
	case arrived = <-uc.lines:
	case <-time.After(3 * time.Second):
		t.Fatal("the line never reached the upstream")
	}
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		t.Fatalf("the echo under latency: %v; want it, late (the connection open in up is kept)", err)
	}
	back := time.Now()
	if up, down := arrived.Sub(sent), back.Sub(arrived); up < lat || down < lat {
		t.Fatalf("client → upstream took %v, upstream → client %v; want each at least %v", up, down, lat)
	}
	if r := p.Records()[0]; !r.Ended.IsZero() {
		t.Fatalf("record = %+v; want the connection still open", r)
	}
}

func TestLeavingLatencyReleasesWhatItHolds(t *testing.T) {
	u := newUpstream(t)
	p := proxyTo(t, u, &faultproxy.Options{Latency: time.Minute})
	p.SetMode(faultproxy.Latency)
	c := dial(t, p)
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		t.Fatal(err)
	}
	uc := u.next(t)
	p.SetMode(faultproxy.Up)
	select {
	case <-uc.lines:
	case <-time.After(5 * time.Second):
		t.Fatal("the line held for a minute of latency was not released when the mode went up")
	}
}

func TestJitterSpreadsTheLatencyAroundItsMiddle(t *testing.T) {
	u := newUpstream(t)
	p := proxyTo(t, u, &faultproxy.Options{Latency: 200 * time.Millisecond, Jitter: 100 * time.Millisecond})
	p.SetMode(faultproxy.Latency)
	c := dial(t, p)
	uc := (*upConn)(nil)
	for i := range 3 {
		sent := time.Now()
		if _, err := io.WriteString(c, "ping\n"); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			uc = u.next(t)
		}
		if took := (<-uc.lines).Sub(sent); took < 100*time.Millisecond {
			t.Fatalf("line %d reached the upstream after %v; want at least latency - jitter, 100ms", i, took)
		}
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
}

func TestResetResetsOpenConnectionsAndNewOnesAtTheirFirstReply(t *testing.T) {
	u := newUpstream(t)
	p := proxyTo(t, u, nil)
	open := dial(t, p)
	if _, err := roundTrip(open, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	u.next(t)
	p.SetMode(faultproxy.Reset)
	if _, err := roundTrip(open, 2*time.Second); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("an open connection after the switch to reset: err = %v; want ECONNRESET", err)
	}
	fresh := dial(t, p)
	_, err := roundTrip(fresh, 2*time.Second)
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("a new connection under reset: err = %v; want ECONNRESET", err)
	}
	select {
	case <-u.next(t).lines:
	default:
		t.Fatal("the new connection's request did not reach the upstream; want it reset at the reply, not at accept")
	}
	recs := p.Records()
	if len(recs) != 2 || recs[0].End != faultproxy.EndReset || recs[1].End != faultproxy.EndReset || recs[1].FirstReply.IsZero() {
		t.Fatalf("records = %+v; want both ended %q, the second after a reply", recs, faultproxy.EndReset)
	}
	p.SetMode(faultproxy.Up)
	if got, err := roundTrip(dial(t, p), 2*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("after going up: %q, %v; want the echo", got, err)
	}
}

func TestStallFreezesOpenConnectionsForGoodAndHoldsNewOnes(t *testing.T) {
	u := newUpstream(t)
	p := proxyTo(t, u, nil)
	open := dial(t, p)
	if _, err := roundTrip(open, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	uOpen := u.next(t)
	<-uOpen.lines
	p.SetMode(faultproxy.Stall)
	if _, err := io.WriteString(open, "ping\n"); err != nil {
		t.Fatal(err)
	}
	if ok, err := silent(open, 300*time.Millisecond); !ok {
		t.Fatalf("an open connection under stall: %v; want no byte and no close", err)
	}
	select {
	case <-uOpen.lines:
		t.Fatal("the upstream got a line sent under stall")
	default:
	}
	fresh := dial(t, p)
	if ok, err := silent(fresh, 300*time.Millisecond); !ok {
		t.Fatalf("a new connection under stall: %v; want it held", err)
	}
	if n := p.OpenCount(faultproxy.Stall); n != 1 {
		t.Fatalf("connections held since the stall = %d; want 1", n)
	}

	// Back up: new connections work, the frozen one stays frozen, even when its upstream
	// leaves, until the client gives up.
	p.SetMode(faultproxy.Up)
	if got, err := roundTrip(dial(t, p), 2*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("a new connection after the stall: %q, %v; want the echo", got, err)
	}
	if _, err := io.WriteString(open, "ping\n"); err != nil {
		t.Fatal(err)
	}
	_ = uOpen.Close()
	if ok, err := silent(open, 300*time.Millisecond); !ok {
		t.Fatalf("the frozen connection after going up, its upstream gone: %v; want still no byte and no close", err)
	}
	_ = open.Close()
	eventually(t, "the frozen connection to end when its client closes", func() bool {
		r := p.Records()[0]
		return !r.Ended.IsZero()
	})
	if r := p.Records()[0]; r.End != faultproxy.EndClient {
		t.Fatalf("record = %+v; want ended by the client", r)
	}
}

func TestAStalledConnectionsUpstreamIsClosedWhenItsClientLeaves(t *testing.T) {
	u := newUpstream(t)
	p := proxyTo(t, u, nil)
	c := dial(t, p)
	if _, err := roundTrip(c, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	uc := u.next(t)
	p.SetMode(faultproxy.Stall)
	_ = c.Close()
	select {
	case <-uc.eof:
	case <-time.After(3 * time.Second):
		t.Fatal("the upstream side of a stalled connection stayed open 3 s after its client left")
	}
}

func TestControlPanelSetsTheLatency(t *testing.T) {
	p := newProxy(t, nil)
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	for _, tc := range []struct {
		name         string
		query        string
		wantStatus   int
		wantMode     faultproxy.Mode
		wantLat, jit time.Duration
	}{
		{"latency and jitter come with the mode", "?mode=latency&latency=250ms&jitter=100ms", http.StatusOK, faultproxy.Latency, 250 * time.Millisecond, 100 * time.Millisecond},
		{"a bad duration is refused and changes nothing", "?mode=up&latency=soon", http.StatusBadRequest, faultproxy.Latency, 250 * time.Millisecond, 100 * time.Millisecond},
		{"a mode alone keeps the latency", "?mode=stall", http.StatusOK, faultproxy.Stall, 250 * time.Millisecond, 100 * time.Millisecond},
	} {
		resp, err := http.Post(srv.URL+"/mode"+tc.query, "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		lat, jit := p.Latency()
		if resp.StatusCode != tc.wantStatus || p.Mode() != tc.wantMode || lat != tc.wantLat || jit != tc.jit {
			t.Errorf("%s: status %d, mode %v, latency %v ± %v; want %d, %v, %v ± %v", tc.name, resp.StatusCode, p.Mode(), lat, jit,
				tc.wantStatus, tc.wantMode, tc.wantLat, tc.jit)
		}
	}
	resp, err := http.Get(srv.URL + "/latency")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if got := strings.TrimSpace(string(b)); got != `{"jitter":"100ms","latency":"250ms"}` {
		t.Errorf("GET /latency = %s", got)
	}
}

func TestResetEndsFrozenAndHeldConnectionsToo(t *testing.T) {
	u := newUpstream(t)
	p := proxyTo(t, u, nil)
	frozen := dial(t, p)
	if _, err := roundTrip(frozen, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	uFrozen := u.next(t)
	p.SetMode(faultproxy.Stall)
	held := dial(t, p)
	if ok, err := silent(held, 100*time.Millisecond); !ok {
		t.Fatalf("a new connection under stall: %v; want it held", err)
	}
	p.SetMode(faultproxy.Up)
	p.SetMode(faultproxy.Refuse)
	if ok, err := silent(frozen, 300*time.Millisecond); !ok {
		t.Fatalf("a frozen connection when the mode goes to refuse: %v; want it left frozen", err)
	}
	p.SetMode(faultproxy.Reset)
	for name, c := range map[string]net.Conn{"the frozen connection": frozen, "the held connection": held} {
		if _, err := roundTrip(c, 2*time.Second); !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("%s after the switch to reset: err = %v; want ECONNRESET", name, err)
		}
	}
	select {
	case <-uFrozen.eof:
	case <-time.After(3 * time.Second):
		t.Fatal("the frozen connection's upstream side stayed open 3 s after the reset")
	}
}

// sourceServer is an upstream that sends n bytes to each connection, then closes it.
func sourceServer(t *testing.T, n int) string {
	return serveEach(t, func(c net.Conn) { _, _ = c.Write(make([]byte, n)) })
}

func TestThrottleSharesTheBandwidthAmongConnections(t *testing.T) {
	const size, bits = 64 << 10, 4_000_000 // 64 KiB each at 4 Mbit/s: 131 ms alone
	p, err := faultproxy.Listen("127.0.0.1:0", sourceServer(t, size), &faultproxy.Options{Latency: 5 * time.Millisecond, Down: bits})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	p.SetMode(faultproxy.Throttle)
	start := time.Now()
	var wg sync.WaitGroup
	got := make([]int64, 2)
	for i := range got {
		c := dial(t, p)
		wg.Go(func() {
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			got[i], _ = io.Copy(io.Discard, c)
		})
	}
	wg.Wait()
	took := time.Since(start)
	if got[0] != size || got[1] != size {
		t.Fatalf("received %v bytes; want %d on each connection", got, size)
	}
	if want := time.Duration(2 * size * 8 * int64(time.Second) / bits); took < want {
		t.Fatalf("two connections of %d bytes took %v; want at least %v, one after the other through %d bit/s", size, took, want, bits)
	}
}

func TestThrottleHoldsANewConnectionsFirstBytesARoundTripMore(t *testing.T) {
	const lat = 100 * time.Millisecond
	p := newProxy(t, &faultproxy.Options{Latency: lat})
	p.SetMode(faultproxy.Throttle)
	c := dial(t, p)
	for i, want := range []time.Duration{4 * lat, 2 * lat} { // handshake + there and back; then there and back
		sent := time.Now()
		if _, err := roundTrip(c, 3*time.Second); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(sent); took < want {
			t.Fatalf("round trip %d took %v; want at least %v", i+1, took, want)
		}
	}
}

func TestControlPanelSetsTheBandwidth(t *testing.T) {
	p := newProxy(t, nil)
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name     string
		query    string
		status   int
		down, up int64
	}{
		{"both directions come with the mode", "?mode=throttle&down=9000000&up=1500000", http.StatusOK, 9_000_000, 1_500_000},
		{"a bad bandwidth is refused and changes nothing", "?mode=throttle&down=fast", http.StatusBadRequest, 9_000_000, 1_500_000},
		{"a mode alone keeps the bandwidth", "?mode=up", http.StatusOK, 9_000_000, 1_500_000},
	} {
		resp, err := http.Post(srv.URL+"/mode"+tc.query, "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if down, up := p.Bandwidth(); resp.StatusCode != tc.status || down != tc.down || up != tc.up {
			t.Errorf("%s: status %d, bandwidth %d down %d up; want %d, %d, %d", tc.name, resp.StatusCode, down, up, tc.status, tc.down, tc.up)
		}
	}
}
