//go:build !js

// Command streamlogs measures the Host's stream logs, the in-memory ring against JetStream:
// the publish-to-deliver latency to WebSocket subscribers at a steady rate, and how many
// events per second a Host appends. With -out it rewrites its part of that figures file
// (bench/FLEET.md, beside the fleet runs' tables, which are copied there by hand).
//
//	go run ./bench/cmd/streamlogs                      # print the table
//	go run ./bench/cmd/streamlogs -out bench/FLEET.md  # … and rewrite its part of bench/FLEET.md
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/hostplugin/jetstream"
	"github.com/lifeline-go/lifeline/internal/wire"
)

const (
	benchSubscribers = 50
	benchEvents      = 2000
	benchRate        = 500 // events/s while measuring latency
	benchBurst       = 3 * time.Second
	benchPublishers  = 4
)

// The markers around the part of bench/FLEET.md that -out rewrites; the rest of the file is
// written by hand and kept.
const (
	benchBegin = "<!-- begin: written by go run ./bench/cmd/streamlogs -out bench/FLEET.md; do not edit by hand -->"
	benchEnd   = "<!-- end: written by go run ./bench/cmd/streamlogs -out bench/FLEET.md -->"
)

func main() {
	out := flag.String("out", "", "the figures `file` whose part to rewrite (bench/FLEET.md); none: print only")
	flag.Parse()
	if err := benchTo(*out); err != nil {
		fmt.Fprintln(os.Stderr, "streamlogs:", err)
		os.Exit(1)
	}
}

// benchTo runs the benchmark, prints its table and, with a path, rewrites that file's part
// between the markers (or creates the file with that part alone).
func benchTo(path string) error {
	var table bytes.Buffer
	started := time.Now()
	if err := runBench(io.MultiWriter(os.Stdout, &table)); err != nil {
		return err
	}
	if path == "" {
		return nil
	}
	part := benchPart(table.String(), started)
	old, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return os.WriteFile(path, []byte(part), 0o644)
	}
	if err != nil {
		return err
	}
	next, err := splice(string(old), part)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.WriteFile(path, []byte(next), 0o644); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "streamlogs: wrote its part of", path)
	return nil
}

// splice replaces what lies between the markers in doc (markers included) by part.
func splice(doc, part string) (string, error) {
	i, j := strings.Index(doc, benchBegin), strings.Index(doc, benchEnd)
	if i < 0 || j < i {
		return "", fmt.Errorf("no %q … %q markers: nothing written, so that no hand-written line is lost", benchBegin, benchEnd)
	}
	return doc[:i] + strings.TrimSuffix(part, "\n") + doc[j+len(benchEnd):], nil
}

// benchPart is the table with what it measured and where, between the markers.
func benchPart(table string, started time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", benchBegin)
	fmt.Fprintf(&b, "Publish-to-deliver latency: one publisher at %d events/s, %s events, %d WebSocket\n", benchRate, thousands(benchEvents), benchSubscribers)
	fmt.Fprintf(&b, "subscribers in the same process (loopback). In-memory: one Host publishes and delivers. JetStream:\n")
	fmt.Fprintf(&b, "Host A publishes, Host B (its own NATS connection) follows the stream and delivers; one embedded\n")
	fmt.Fprintf(&b, "NATS server, file storage, R1. events/s: %d concurrent publishers for %v, no subscribers.\n", benchPublishers, benchBurst)
	fmt.Fprintf(&b, "Run %s UTC, Lifeline %s, %s, %d cores.\n\n", started.UTC().Format("2006-01-02 15:04"), gitDescribe(), runtime.Version(), runtime.NumCPU())
	b.WriteString(table)
	fmt.Fprintf(&b, "%s\n", benchEnd)
	return b.String()
}

func gitDescribe() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

// thousands writes n with a comma every three digits.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// runBench measures, for one Host with the in-memory ring and for two Hosts sharing an
// embedded JetStream (publishing on one, subscribers on the other), the publish-to-deliver
// latency at benchRate with benchSubscribers sockets, and how many events per second a Host
// appends with benchPublishers concurrent publishers.
func runBench(out io.Writer) error {
	dir, err := os.MkdirTemp("", "lifeline-streamlogs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		return err
	}
	ns.Start()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(10 * time.Second) {
		return fmt.Errorf("nats not ready")
	}
	url := fmt.Sprintf("nats://%s", ns.Addr().(*net.TCPAddr).String())

	fmt.Fprintf(out, "| log | subscribers | latency p50 | p99 | max | events/s appended per Host |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, backend := range []string{"in-memory ring (one Host)", "JetStream (publish on Host A, deliver from Host B)"} {
		var pubLog, subLog hostplugin.StreamLog
		if strings.HasPrefix(backend, "JetStream") {
			a, err := jetstream.Connect(url, nil)
			if err != nil {
				return err
			}
			defer a.Close()
			b, err := jetstream.Connect(url, nil)
			if err != nil {
				return err
			}
			defer b.Close()
			pubLog, subLog = a, b
		}
		lat, rate, err := benchOne(pubLog, subLog)
		if err != nil {
			return fmt.Errorf("%s: %w", backend, err)
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		q := func(p float64) string {
			return fmt.Sprintf("%.2f ms", float64(lat[int(float64(len(lat)-1)*p)].Microseconds())/1000)
		}
		fmt.Fprintf(out, "| %s | %d | %s | %s | %s | %s |\n", backend, benchSubscribers, q(0.5), q(0.99), q(1), thousands(int(rate)))
	}
	return nil
}

func newBenchHost(log hostplugin.StreamLog) (*hostplugin.Host, *httptest.Server, error) {
	opts := &hostplugin.Options{Logger: slog.New(slog.DiscardHandler), Log: log, Authorize: hostplugin.PublicStreams}
	h, err := hostplugin.New(hostplugin.DefaultConfig(), opts)
	if err != nil {
		return nil, nil, err
	}
	h.SetReady(true)
	return h, httptest.NewServer(h.Handler(http.NotFoundHandler())), nil
}

func benchOne(pubLog, subLog hostplugin.StreamLog) ([]time.Duration, float64, error) {
	pub, pubSrv, err := newBenchHost(pubLog)
	if err != nil {
		return nil, 0, err
	}
	defer pubSrv.Close()
	defer pub.Close()
	sub, subSrv := pub, pubSrv
	if subLog != nil {
		if sub, subSrv, err = newBenchHost(subLog); err != nil {
			return nil, 0, err
		}
		defer subSrv.Close()
		defer sub.Close()
	}
	ctx := context.Background()
	stream := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	if _, err := pub.Publish(ctx, stream, json.RawMessage(`{"ns":0}`)); err != nil {
		return nil, 0, err
	}

	var mu sync.Mutex
	var lat []time.Duration
	var got atomic.Int64
	var wg sync.WaitGroup
	wsURL := "ws" + strings.TrimPrefix(subSrv.URL, "http") + wire.DefaultPath
	conns := make([]*websocket.Conn, benchSubscribers)
	for i := range conns {
		c, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
		if err != nil {
			return nil, 0, err
		}
		c.SetReadLimit(1 << 20)
		conns[i] = c
		defer c.CloseNow()
		if err := c.Write(ctx, websocket.MessageText, fmt.Appendf(nil, `{"t":"sub","stream":%q}`, stream)); err != nil {
			return nil, 0, err
		}
		ready := make(chan struct{})
		wg.Go(func() {
			subscribed := false
			for {
				_, b, err := c.Read(context.Background())
				if err != nil {
					return
				}
				f, err := wire.DecodeHost(b)
				if err != nil {
					continue
				}
				if f.T == wire.TypeReset && !subscribed {
					subscribed = true
					close(ready)
					continue
				}
				if f.T != wire.TypeEvent {
					continue
				}
				var d struct{ NS int64 }
				if json.Unmarshal(f.Data, &d) == nil && d.NS > 0 {
					l := time.Since(time.Unix(0, d.NS))
					mu.Lock()
					lat = append(lat, l)
					mu.Unlock()
					got.Add(1)
				}
			}
		})
		select {
		case <-ready:
		case <-time.After(10 * time.Second):
			return nil, 0, fmt.Errorf("subscriber %d got no reset", i)
		}
	}

	// Latency at a steady rate.
	tick := time.NewTicker(time.Second / benchRate)
	for range benchEvents {
		<-tick.C
		if _, err := pub.Publish(ctx, stream, fmt.Appendf(nil, `{"ns":%d}`, time.Now().UnixNano())); err != nil {
			tick.Stop()
			return nil, 0, err
		}
	}
	tick.Stop()
	want := int64(benchEvents * benchSubscribers)
	deadline := time.Now().Add(10 * time.Second)
	for got.Load() < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := got.Load(); g < want {
		return nil, 0, fmt.Errorf("delivered %d of %d events", g, want)
	}
	for _, c := range conns {
		_ = c.CloseNow()
	}
	wg.Wait()
	mu.Lock()
	out := append([]time.Duration(nil), lat...)
	mu.Unlock()

	// Appends per second, no subscribers.
	var n atomic.Int64
	end := time.Now().Add(benchBurst)
	var pw sync.WaitGroup
	for range benchPublishers {
		pw.Go(func() {
			for time.Now().Before(end) {
				if _, err := pub.Publish(ctx, stream+"-rate", json.RawMessage(`{"x":1}`)); err == nil {
					n.Add(1)
				}
			}
		})
	}
	pw.Wait()
	return out, float64(n.Load()) / benchBurst.Seconds(), nil
}
