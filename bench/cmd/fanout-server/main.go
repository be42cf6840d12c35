//go:build !js

// Command fanout-server serves the fan-out workload of package fanload (set against Centrifuge's) with
// Lifeline's Host or with github.com/centrifugal/centrifuge, publishing from its own process:
// the bench's fanout and sessions scenarios run it. It prints "ADDR <host:port>" once it
// listens, and serves beside the WebSocket endpoint (Lifeline's /_lifeline/events,
// Centrifuge's /connection/websocket):
//
//	POST /rate?r=R   publish R publications a second from now on, half to each kind of channel (0: stop)
//	GET  /stats      fanload.ServerStats (?gc=1: after a GC that returns what it can to the OS)
//	GET  /debug/pprof/…  net/http/pprof, to see where a run's time goes (the execution trace
//	                     too; -block-rate and -mutex-fraction turn on those profiles)
//
// It ends when its stdin closes.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/centrifugal/centrifuge"

	"github.com/lifeline-go/lifeline/bench/fanload"
	"github.com/lifeline-go/lifeline/hostplugin"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fanout-server:", err)
		os.Exit(1)
	}
}

// A server is one of the two under test.
type server struct {
	handler     http.Handler
	publish     func(channel string, data []byte) error
	connections func() int
}

func run() error {
	kind := flag.String("kind", "lifeline", "lifeline or centrifuge")
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	pages := flag.Int("pages", 2000, "the pages of the workload (channels user.0… and group.0…)")
	history := flag.Int("history", 0, "centrifuge: keep this many publications per channel (0: no history)")
	ring := flag.Int("ring", hostplugin.DefaultRingSize, "lifeline: events per stream in the ring")
	heartbeat := flag.Duration("heartbeat", hostplugin.DefaultHeartbeat, "lifeline: the heartbeat")
	publishers := flag.Int("publishers", 2, "publishing goroutines (each owns a share of the channels)")
	blockRate := flag.Int("block-rate", 0, "runtime.SetBlockProfileRate: profile blocking events of at least this many ns (0: none), for /debug/pprof/block")
	mutexFraction := flag.Int("mutex-fraction", 0, "runtime.SetMutexProfileFraction (0: none), for /debug/pprof/mutex")
	flag.Parse()
	runtime.SetBlockProfileRate(*blockRate)
	runtime.SetMutexProfileFraction(*mutexFraction)

	var srv server
	var err error
	switch *kind {
	case "lifeline":
		srv, err = lifeline(*ring, *heartbeat)
	case "centrifuge":
		srv, err = centrifugeServer(*history)
	default:
		err = fmt.Errorf("unknown -kind %q", *kind)
	}
	if err != nil {
		return err
	}
	pub := &publisher{publish: srv.publish, pages: *pages, changed: make(chan struct{})}
	for g := range *publishers {
		go pub.run(g, *publishers)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /rate", func(w http.ResponseWriter, r *http.Request) {
		rate, err := strconv.ParseFloat(r.URL.Query().Get("r"), 64)
		if err != nil || rate < 0 {
			http.Error(w, "fanout-server: r must be a rate ≥ 0", http.StatusBadRequest)
			return
		}
		pub.setRate(rate)
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("gc") == "1" {
			runtime.GC()
			debug.FreeOSMemory()
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		_ = json.NewEncoder(w).Encode(fanload.ServerStats{
			Kind: *kind, Published: pub.published.Load(), Expected: pub.expected.Load(),
			Rate: pub.rate(), Behind: time.Duration(pub.behind.Load()).Seconds(),
			CPU: cpuSeconds(), RSS: rss(), HeapInuse: ms.HeapInuse, StackInuse: ms.StackInuse,
			Goroutines: runtime.NumGoroutine(), Connections: srv.connections(),
		})
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/", srv.handler)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	fmt.Printf("ADDR %s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

func lifeline(ring int, heartbeat time.Duration) (server, error) {
	doc := fmt.Sprintf(`{"maxSessions":1000000,"acceptRate":1000000,"acceptBurst":1000000,"ringSize":%d,"heartbeatMs":%d}`,
		ring, heartbeat.Milliseconds())
	cfg, err := hostplugin.ParseConfig([]byte(doc))
	if err != nil {
		return server{}, err
	}
	h, err := hostplugin.New(cfg, &hostplugin.Options{
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Authorize: hostplugin.PublicStreams, NoClient: true,
	})
	if err != nil {
		return server{}, err
	}
	h.SetReady(true)
	ctx := context.Background()
	return server{
		handler: h.Handler(http.NotFoundHandler()),
		publish: func(channel string, data []byte) error {
			_, err := h.Publish(ctx, channel, data)
			return err
		},
		connections: h.Sessions,
	}, nil
}

func centrifugeServer(history int) (server, error) {
	node, err := centrifuge.New(centrifuge.Config{
		LogLevel: centrifuge.LogLevelError,
		LogHandler: func(e centrifuge.LogEntry) {
			fmt.Fprintf(os.Stderr, "centrifuge: %s %v\n", e.Message, e.Fields)
		},
	})
	if err != nil {
		return server{}, err
	}
	node.OnConnecting(func(context.Context, centrifuge.ConnectEvent) (centrifuge.ConnectReply, error) {
		return centrifuge.ConnectReply{Credentials: &centrifuge.Credentials{UserID: "bench"}}, nil
	})
	node.OnConnect(func(c *centrifuge.Client) {
		c.OnSubscribe(func(_ centrifuge.SubscribeEvent, cb centrifuge.SubscribeCallback) {
			cb(centrifuge.SubscribeReply{}, nil)
		})
	})
	if err := node.Run(); err != nil {
		return server{}, err
	}
	var opts []centrifuge.PublishOption
	if history > 0 {
		// The ring keeps its events for as long as the Host lives: a TTL longer than any run.
		opts = append(opts, centrifuge.WithHistory(history, 24*time.Hour))
	}
	mux := http.NewServeMux()
	mux.Handle("/connection/websocket", centrifuge.NewWebsocketHandler(node, centrifuge.WebsocketConfig{
		CheckOrigin: func(*http.Request) bool { return true },
	}))
	return server{
		handler: mux,
		publish: func(channel string, data []byte) error {
			_, err := node.Publish(channel, data, opts...)
			return err
		},
		connections: node.Hub().NumClients,
	}, nil
}

// publisher publishes at the rate it is set to, from several goroutines: each owns the
// channels whose number is its own modulo their count, so that a channel's publications
// keep their order.
type publisher struct {
	publish func(channel string, data []byte) error
	pages   int

	rateBits  atomic.Uint64 // float64: publications per second, all goroutines together
	changed   chan struct{} // closed and replaced when the rate changes (mu)
	mu        sync.Mutex
	published atomic.Uint64
	expected  atomic.Uint64
	behind    atomic.Int64 // ns: how far the slowest goroutine is behind its rate
	errs      atomic.Uint64
}

func (p *publisher) setRate(r float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rateBits.Store(math.Float64bits(r))
	close(p.changed)
	p.changed = make(chan struct{})
}

// wait returns once the rate is no longer 0: an idle server's publishers cost nothing.
func (p *publisher) wait() {
	p.mu.Lock()
	ch := p.changed
	idle := p.rate() == 0
	p.mu.Unlock()
	if idle {
		<-ch
	}
}
func (p *publisher) rate() float64 { return math.Float64frombits(p.rateBits.Load()) }

func (p *publisher) run(g, of int) {
	var users, groups []int
	for i := g; i < p.pages; i += of {
		users = append(users, i)
	}
	for j := g; j < fanload.Groups(p.pages); j += of {
		groups = append(groups, j)
	}
	userN, groupN := make([]uint64, len(users)), make([]uint64, len(groups))
	var k int // this goroutine's publications since the rate was set
	var start time.Time
	last := -1.0
	for {
		r := p.rate() / float64(of)
		if r != last {
			last, k, start = r, 0, time.Now()
		}
		if r == 0 || len(users) == 0 {
			p.wait()
			continue
		}
		due := int(r * time.Since(start).Seconds())
		for ; k < due && p.rate()/float64(of) == r; k++ {
			var ch string
			var n uint64
			var members int
			if k%2 == 0 || len(groups) == 0 {
				i := (k / 2) % len(users)
				userN[i]++
				ch, n, members = fanload.Personal(users[i]), userN[i], 1
			} else {
				j := (k / 2) % len(groups)
				groupN[j]++
				ch, n, members = fanload.Group(groups[j]), groupN[j], fanload.Members(p.pages, groups[j])
			}
			if err := p.publish(ch, fanload.Payload(time.Now(), n)); err != nil {
				if p.errs.Add(1) == 1 {
					fmt.Fprintf(os.Stderr, "fanout-server: publish to %s: %v\n", ch, err)
				}
				continue
			}
			p.published.Add(1)
			p.expected.Add(uint64(members))
		}
		if g == 0 {
			p.behind.Store(int64(float64(due-k) / r * float64(time.Second)))
		}
		time.Sleep(time.Millisecond)
	}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}
