//go:build !js

package hostplugin_test

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
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/gateway/wire"
	"github.com/lifeline-go/lifeline/hostplugin"
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
		{"one write", 0, h.Inject},
		{"32KiB writes like http.FileServer", 32 << 10, h.Inject},
		{"512B writes", 512, h.Inject},
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
				c, _, err := websocket.Dial(ctx, f.wsURL(), &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
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
		waitFor(b, "the sessions to end", func() bool { return f.h.Sessions() == 0 })
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
	h, err := hostplugin.New(mustConfig(t, `{"maxSessions":100000,"acceptRate":1000000,"acceptBurst":1000000}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	h.SetReady(true)
	mux := http.NewServeMux()
	mux.Handle(h.Config().Endpoint(), h)
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
