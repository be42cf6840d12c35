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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// accessMem is what TestHelperAccessSessionServer reports of its Host.
type accessMem struct {
	HeapAlloc, StackInuse uint64
	Sessions, Goroutines  int
	Heap                  int  // sessions in the expiry heap
	Timer                 bool // the Host's one expiry timer exists
}

// TestHelperAccessSessionServer is not a test: BenchmarkExpiryTracking runs the test binary
// again with LIFELINE_ACCESS_SERVER=plain or expiring to get a Host in a process of its own,
// whose sessions are identities' (the cookie "user"), expiring in an hour or never.
func TestHelperAccessSessionServer(t *testing.T) {
	kind := os.Getenv("LIFELINE_ACCESS_SERVER")
	if kind == "" {
		t.Skip("runs only as BenchmarkExpiryTracking's server process")
	}
	h, err := hostplugin.New(mustConfig(t, `{"maxSessions":100000,"acceptRate":1000000,"acceptBurst":1000000}`),
		&hostplugin.Options{Authorize: hostplugin.PublicStreams, NoClient: true,
			Access: func(r *http.Request) (hostplugin.Access, error) {
				c, err := r.Cookie("user")
				if err != nil {
					return hostplugin.Access{}, hostplugin.ErrUnauthenticated
				}
				acc := hostplugin.Access{Identity: c.Value}
				if kind == "expiring" {
					acc.Until = time.Now().Add(time.Hour)
				}
				return acc, nil
			}})
	if err != nil {
		t.Fatal(err)
	}
	h.SetReady(true)
	mux := http.NewServeMux()
	mux.Handle("/", endpointOnly(h))
	mux.HandleFunc("/mem", func(w http.ResponseWriter, r *http.Request) {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		n, timer := hostplugin.ExpiryTracking(h)
		_ = json.NewEncoder(w).Encode(accessMem{HeapAlloc: ms.HeapAlloc, StackInuse: ms.StackInuse,
			Sessions: h.Sessions(), Goroutines: runtime.NumGoroutine(), Heap: n, Timer: timer})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = http.Serve(ln, mux) }()
	fmt.Printf("ADDR %s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// BenchmarkExpiryTracking opens 10,000 sessions of 1,000 identities to a Host whose
// credentials never expire, then to one whose credentials expire in an hour, each in a
// process of its own, and reports what tracking the expiries costs per session: live heap and
// stacks, goroutines and timers, beside the access state every session carries.
func BenchmarkExpiryTracking(b *testing.B) {
	const sessions, identities = 10_000, 1_000
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < sessions+500 {
		b.Skipf("needs %d file descriptors per process, the limit is %d", sessions+500, lim.Cur)
	}
	for b.Loop() {
		plain := openAccessSessions(b, "plain", sessions, identities)
		expiring := openAccessSessions(b, "expiring", sessions, identities)
		if !expiring.Timer || expiring.Heap != sessions || plain.Heap != 0 || plain.Timer {
			b.Fatalf("expiring %+v, plain %+v: want every session of the first in the heap under one timer, none of the other's", expiring, plain)
		}
		b.ReportMetric((float64(expiring.HeapAlloc+expiring.StackInuse)-float64(plain.HeapAlloc+plain.StackInuse))/sessions, "B/session")
		b.ReportMetric(float64(expiring.Goroutines-plain.Goroutines)/sessions, "goroutines/session")
		b.ReportMetric(1, "timers/Host")
		b.ReportMetric(float64(hostplugin.SessionAccessSize), "B-access-state/session")
	}
}

// openAccessSessions opens n sessions of identities users to a Host server of kind, and
// returns what it reports less what it held before.
func openAccessSessions(b *testing.B, kind string, n, users int) accessMem {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperAccessSessionServer$")
	cmd.Env = append(os.Environ(), "LIFELINE_ACCESS_SERVER="+kind)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	addr := ""
	sc := bufio.NewScanner(stdout)
	for addr == "" && sc.Scan() {
		addr, _ = strings.CutPrefix(sc.Text(), "ADDR ")
	}
	if addr == "" {
		b.Fatal("the session server did not start")
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	mem := func() accessMem {
		resp, err := http.Get("http://" + addr + "/mem")
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var m accessMem
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			b.Fatal(err)
		}
		return m
	}
	before := mem()
	url := "ws://" + addr + wire.DefaultPath
	conns := make([]*websocket.Conn, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range next {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol},
					HTTPHeader: http.Header{"Cookie": {fmt.Sprintf("user=u%d", i%users)}}})
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
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	after := mem()
	for _, c := range conns {
		if c != nil {
			_ = c.CloseNow()
		}
	}
	if after.Sessions != n {
		b.Fatalf("the %s Host holds %d sessions, want %d", kind, after.Sessions, n)
	}
	after.HeapAlloc -= before.HeapAlloc
	after.StackInuse -= before.StackInuse
	after.Goroutines -= before.Goroutines
	return after
}
