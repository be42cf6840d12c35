//go:build !js

package hostplugin_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// discard is the cheapest ResponseWriter, so that the benchmark measures the middleware.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }

// page50KB is a page of about 50 KB with a realistic head.
func page50KB() []byte {
	var b strings.Builder
	b.WriteString("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>Dashboard</title>\n")
	b.WriteString("<link rel=\"stylesheet\" href=\"/app.css\">\n<style>\n")
	for i := range 40 {
		fmt.Fprintf(&b, ".c%d { color: #%06x; margin: %dpx; }\n", i, i*4099, i)
	}
	b.WriteString("</style>\n<script>window.appStart = performance.now(); /* </head> in a string */</script>\n</head>\n<body>\n")
	for b.Len() < 50_000 {
		fmt.Fprintf(&b, "<div class=\"row c%d\"><span>item %d</span><a href=\"/items/%d\">open</a></div>\n", b.Len()%40, b.Len(), b.Len())
	}
	b.WriteString("</body>\n</html>\n")
	return []byte(b.String())
}

func BenchmarkInject(b *testing.B) {
	page := page50KB()
	h, _ := newHost(b, `{}`)
	for _, bc := range []struct {
		name  string
		chunk int
		wrap  func(http.Handler) http.Handler
	}{
		{"passthrough baseline, one write", 0, func(next http.Handler) http.Handler { return next }},
		{"one write", 0, h.Handler},
		{"32KiB writes like http.FileServer", 32 << 10, h.Handler},
		{"512B writes", 512, h.Handler},
	} {
		b.Run(bc.name, func(b *testing.B) {
			upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				w.Header().Set("Content-Length", strconv.Itoa(len(page)))
				writeChunks(w, page, bc.chunk)
			})
			handler := bc.wrap(upstream)
			req, _ := http.NewRequest("GET", "/", nil)
			w := &discard{h: http.Header{}}
			b.SetBytes(int64(len(page)))
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				handler.ServeHTTP(w, req)
			}
		})
	}
}

// BenchmarkReadyLatency opens 1,000 sockets at once and reports how long each waited, from
// its dial to its ready frame, as p50 and p99 over all iterations.
func BenchmarkReadyLatency(b *testing.B) {
	const sockets = 1000
	f := newFixture(b, `{"maxSessions":100000,"acceptRate":1000000,"acceptBurst":1000000}`, true)
	var all []time.Duration
	for b.Loop() {
		lat := make([]time.Duration, sockets)
		conns := make([]*websocket.Conn, sockets)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range sockets {
			wg.Go(func() {
				<-start
				t0 := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				c, _, err := websocket.Dial(ctx, f.WSURL(), &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
				if err != nil {
					b.Errorf("dial: %v", err)
					return
				}
				conns[i] = c
				_, msg, err := c.Read(ctx)
				if err != nil || !strings.Contains(string(msg), `"t":"ready"`) {
					b.Errorf("first frame %s, %v; want ready", msg, err)
					return
				}
				lat[i] = time.Since(t0)
			})
		}
		close(start)
		wg.Wait()
		all = append(all, lat...)
		b.StopTimer()
		for _, c := range conns {
			if c != nil {
				_ = c.CloseNow()
			}
		}
		waitFor(b, "the sessions to end", func() bool { return f.H.Sessions() == 0 })
		b.StartTimer()
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
}

// memReport is what the session server says about its memory.
type memReport struct {
	HeapInuse, StackInuse, RSS uint64
	Sessions, Goroutines       int
}

// TestHelperSessionServer is not a test: BenchmarkIdleSessionMemory runs the test binary again
// with LIFELINE_SESSION_SERVER=1 to get a Host in a process of its own, so the memory it
// measures is the Host's and not the clients'.
func TestHelperSessionServer(t *testing.T) {
	if os.Getenv("LIFELINE_SESSION_SERVER") != "1" {
		t.Skip("runs only as BenchmarkIdleSessionMemory's server process")
	}
	h, err := hostplugin.New(mustConfig(t, `{"maxSessions":100000,"acceptRate":1000000,"acceptBurst":1000000}`),
		&hostplugin.Options{Authorize: hostplugin.PublicStreams})
	if err != nil {
		t.Fatal(err)
	}
	h.SetReady(true)
	mux := http.NewServeMux()
	mux.Handle("/", endpointOnly(h))
	mux.HandleFunc("/mem", func(w http.ResponseWriter, r *http.Request) {
		runtime.GC()
		debug.FreeOSMemory()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		_ = json.NewEncoder(w).Encode(memReport{
			HeapInuse: ms.HeapInuse, StackInuse: ms.StackInuse, RSS: rss(),
			Sessions: h.Sessions(), Goroutines: runtime.NumGoroutine(),
		})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = http.Serve(ln, mux) }()
	fmt.Printf("ADDR %s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin) // the benchmark closes stdin when it is done
}

// rss reads the resident set size from /proc (Linux).
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(fields[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

// BenchmarkIdleSessionMemory opens 10,000 idle sessions to a Host in another process and
// reports what each costs it: Go heap + stacks, and resident memory.
func BenchmarkIdleSessionMemory(b *testing.B) {
	const sessions = 10_000
	// Each side holds one descriptor per session; Go raises the soft limit to the hard one.
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < sessions+500 {
		b.Skipf("needs %d file descriptors per process, the limit is %d", sessions+500, lim.Cur)
	}
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSessionServer$")
		cmd.Env = append(os.Environ(), "LIFELINE_SESSION_SERVER=1")
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		addr := ""
		sc := bufio.NewScanner(stdout)
		for addr == "" && sc.Scan() {
			addr, _ = strings.CutPrefix(sc.Text(), "ADDR ")
		}
		if addr == "" {
			b.Fatal("the session server did not start")
		}
		go func() { _, _ = io.Copy(io.Discard, stdout) }()
		mem := func() memReport {
			resp, err := http.Get("http://" + addr + "/mem")
			if err != nil {
				b.Fatal(err)
			}
			defer resp.Body.Close()
			var m memReport
			if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
				b.Fatal(err)
			}
			return m
		}
		before := mem()

		url := "ws://" + addr + wire.DefaultPath
		conns := make([]*websocket.Conn, sessions)
		next := make(chan int)
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for i := range next {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
					if err == nil {
						_, _, err = c.Read(ctx) // the ready frame
					}
					cancel()
					if err != nil {
						b.Errorf("session %d: %v", i, err)
						continue
					}
					conns[i] = c
				}
			})
		}
		for i := range sessions {
			next <- i
		}
		close(next)
		wg.Wait()
		after := mem()
		if after.Sessions != sessions {
			b.Errorf("the Host holds %d sessions, want %d", after.Sessions, sessions)
		}
		goHeap := float64(after.HeapInuse+after.StackInuse) - float64(before.HeapInuse+before.StackInuse)
		b.ReportMetric(goHeap/sessions/1024, "KiB/session")
		b.ReportMetric((float64(after.StackInuse)-float64(before.StackInuse))/sessions/1024, "stack-KiB/session")
		b.ReportMetric((float64(after.RSS)-float64(before.RSS))/sessions/1024, "RSS-KiB/session")
		b.ReportMetric(float64(after.Goroutines-before.Goroutines)/sessions, "goroutines/session")

		for _, c := range conns {
			if c != nil {
				_ = c.CloseNow()
			}
		}
		_ = stdin.Close()
		_ = cmd.Wait()
	}
}

// fanoutPage is one page of BenchmarkFanout: a raw socket following its own stream, u.<i>,
// and its group's, g.<i/10>, checking that each stream's events come once each and in order.
type fanoutPage struct {
	sock          *testbed.RawSocket
	user, group   uint64 // the last seq of each stream
	lost, dupes   int
	delivered     *atomic.Int64
	personal, grp []byte // the streams' names as the frames carry them
}

// read counts the page's events until the socket ends.
func (p *fanoutPage) read() {
	for {
		_, msg, err := p.sock.Next()
		if err != nil {
			return
		}
		if !bytes.HasPrefix(msg, []byte(`{"t":"event"`)) {
			continue
		}
		stream, seq := eventStreamSeq(msg)
		last := &p.user
		if bytes.Equal(stream, p.grp) {
			last = &p.group
		}
		switch {
		case seq <= *last:
			p.dupes++
		case seq > *last+1:
			p.lost += int(seq - *last - 1)
		}
		*last = max(*last, seq)
		p.delivered.Add(1)
	}
}

// eventStreamSeq reads an event frame's stream and seq without decoding it.
func eventStreamSeq(msg []byte) (stream []byte, seq uint64) {
	_, rest, _ := bytes.Cut(msg, []byte(`"stream":"`))
	stream, rest, _ = bytes.Cut(rest, []byte(`"`))
	_, rest, _ = bytes.Cut(rest, []byte(`"seq":`))
	for _, c := range rest {
		if c < '0' || c > '9' {
			break
		}
		seq = seq*10 + uint64(c-'0')
	}
	return stream, seq
}

// BenchmarkFanout is the fan-out of the bench's fanout workload (bench/fanload): pages each following a personal
// stream and a group stream of 10, and publishes half to each kind, 100-byte payloads. An
// iteration is one publish; every window publishes it waits until the pages hold all they
// were sent, so queues stay short (a rate the Host sustains). It reports allocations per
// delivery (the pages' raw sockets allocate nothing, so they are the Host's, the publishes
// included), wall time and process CPU per delivery (the pages' reading included).
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{2000} {
		b.Run(fmt.Sprintf("pages=%d", n), func(b *testing.B) { benchFanout(b, n, 1000) })
	}
}

func benchFanout(b *testing.B, n, window int) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < uint64(2*n+500) {
		b.Skipf("needs %d file descriptors, the limit is %d", 2*n+500, lim.Cur)
	}
	f := newFixture(b, `{"maxSessions":100000,"acceptRate":1000000,"acceptBurst":1000000}`, true)
	var delivered atomic.Int64
	pages := make([]*fanoutPage, n)
	groups := (n + 9) / 10
	members := make([]int, groups)
	var wg sync.WaitGroup
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		sock, err := testbed.DialRaw(ctx, f.WSURL(), "", wire.Subprotocol, 16<<10)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		p := &fanoutPage{sock: sock, delivered: &delivered,
			personal: []byte(fmt.Sprintf("u.%d", i)), grp: []byte(fmt.Sprintf("g.%d", i/10))}
		members[i/10]++
		pages[i] = p
		for _, s := range [][]byte{p.personal, p.grp} {
			if err := sock.WriteText([]byte(`{"t":"sub","stream":"` + string(s) + `"}`)); err != nil {
				b.Fatal(err)
			}
		}
		for range 3 { // ready, and a reset per stream
			if _, _, err := sock.Next(); err != nil {
				b.Fatal(err)
			}
		}
		wg.Go(p.read)
	}
	b.Cleanup(func() {
		for _, p := range pages {
			_ = p.sock.Close()
		}
		wg.Wait()
	})
	data := json.RawMessage(`{"ts":1767225600000000000,"pad":"` + strings.Repeat("x", 100-40) + `"}`)
	users := make([]string, n)
	for i := range users {
		users[i] = fmt.Sprintf("u.%d", i)
	}
	groupNames := make([]string, groups)
	for i := range groupNames {
		groupNames[i] = fmt.Sprintf("g.%d", i)
	}
	ctx := context.Background()
	var want int64
	wait := func() {
		deadline := time.Now().Add(30 * time.Second)
		for delivered.Load() < want {
			if time.Now().After(deadline) {
				b.Fatalf("the pages hold %d deliveries after 30 s, want %d", delivered.Load(), want)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	var ms0, ms1 runtime.MemStats
	var ru0, ru1 syscall.Rusage
	runtime.ReadMemStats(&ms0)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	i := 0
	for b.Loop() {
		k := i / 2
		stream := users[k%n]
		if i%2 == 1 {
			stream = groupNames[k%groups]
			want += int64(members[k%groups])
		} else {
			want++
		}
		if _, err := f.H.Publish(ctx, stream, data); err != nil {
			b.Fatal(err)
		}
		i++
		if i%window == 0 {
			wait()
		}
	}
	wait()
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	lost, dupes := 0, 0
	for _, p := range pages {
		lost, dupes = lost+p.lost, dupes+p.dupes
	}
	if lost > 0 || dupes > 0 {
		b.Errorf("%d events lost and %d duplicated", lost, dupes)
	}
	d := float64(want)
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/d, "allocs/delivery")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/d, "B/delivery")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/d, "ns/delivery")
	b.ReportMetric(float64(cpu.Nanoseconds())/d, "cpu-ns/delivery")
	b.ReportMetric(d/float64(i), "deliveries/op")
}
