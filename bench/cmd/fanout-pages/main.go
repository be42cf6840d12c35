//go:build !js

// Command fanout-pages is the pages of the fan-out workload (package fanload), for Lifeline's
// Host or a Centrifuge server: page i follows its personal channel and its group's, reads
// every delivery, checks that each channel's publications come once each and in order, and
// counts their latency from the publish time they carry. Both kinds are read the same way,
// by testbed.RawSocket, so that the pages cost the same whatever the server. Kind
// lifeline-http is Lifeline's Host over its HTTP carrier (PROTOCOL.md §11): a streaming GET down,
// the subscriptions in a POST up, and a ping POSTed every heartbeat as a page's poster sends
// one. It prints "CONTROL <host:port>" once its panel listens:
//
//	GET /stats          fanload.PagesStats (?take=1: and start the latency histogram again)
//	GET /debug/pprof/…  net/http/pprof: the pages' share of a run's latency is theirs to see too
//
// It ends when its stdin closes.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lifeline-go/lifeline/bench/fanload"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
	"github.com/lifeline-go/lifeline/internal/wire"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fanout-pages:", err)
		os.Exit(1)
	}
}

// shards spread the counters over cache lines: thousands of pages add to them at once.
const shards = 16

type counter struct {
	v atomic.Uint64
	_ [56]byte
}

type pages struct {
	kind      string
	received  [shards]counter
	lost      atomic.Uint64
	dupes     atomic.Uint64
	connected atomic.Int64
	failed    atomic.Int64
	hist      [shards]fanload.Histogram

	client *http.Client // lifeline-http

	mu       sync.Mutex
	firstErr string
}

func run() error {
	kind := flag.String("kind", "lifeline", "lifeline, lifeline-http or centrifuge")
	url := flag.String("url", "", "the server's WebSocket endpoint (ws://…; for lifeline-http the events URL, http://…)")
	n := flag.Int("n", 100, "pages in this process")
	first := flag.Int("first", 0, "the number of this process's first page")
	laddrs := flag.String("laddrs", "", "comma-separated local IP addresses the pages dial from, in turn (more than one gives more ports)")
	dialers := flag.Int("dialers", 32, "pages connecting at once")
	flag.Parse()
	if *kind != "lifeline" && *kind != "lifeline-http" && *kind != "centrifuge" {
		return fmt.Errorf("unknown -kind %q", *kind)
	}
	var locals []string
	if *laddrs != "" {
		locals = strings.Split(*laddrs, ",")
	}
	p := &pages{kind: *kind}
	if *kind == "lifeline-http" {
		p.client = httpClient(locals)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(p.stats(r.URL.Query().Get("take") == "1"))
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = http.Serve(ln, mux) }()
	fmt.Printf("CONTROL %s\n", ln.Addr())

	next := make(chan int)
	for range *dialers {
		go func() {
			for i := range next {
				laddr := ""
				if len(locals) > 0 {
					laddr = locals[i%len(locals)]
				}
				if p.kind == "lifeline-http" {
					st, err := p.connectHTTP(*url, i)
					if err != nil {
						p.fail(fmt.Errorf("page %d: %w", i, err))
						continue
					}
					p.connected.Add(1)
					go p.readHTTP(st, i)
					continue
				}
				sock, err := p.connect(*url, laddr, i)
				if err != nil {
					p.fail(fmt.Errorf("page %d: %w", i, err))
					continue
				}
				p.connected.Add(1)
				go p.read(sock, i)
			}
		}()
	}
	go func() {
		for i := *first; i < *first+*n; i++ {
			next <- i
		}
		close(next)
	}()
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

func (p *pages) fail(err error) {
	p.failed.Add(1)
	p.mu.Lock()
	if p.firstErr == "" {
		p.firstErr = err.Error()
	}
	p.mu.Unlock()
}

func (p *pages) stats(take bool) fanload.PagesStats {
	s := fanload.PagesStats{Connected: int(p.connected.Load()), Failed: int(p.failed.Load()),
		Lost: p.lost.Load(), Dupes: p.dupes.Load(), Latency: map[int]uint64{}}
	for i := range p.received {
		s.Received += p.received[i].v.Load()
	}
	if take {
		for i := range p.hist {
			fanload.Counts(s.Latency).Merge(p.hist[i].Take())
		}
	}
	p.mu.Lock()
	s.FirstErr = p.firstErr
	p.mu.Unlock()
	return s
}

// connect opens page i's socket and subscribes it to both its channels: it returns once the
// server confirmed both (Lifeline: a reset each, for a fresh subscription; Centrifuge: the
// replies to connect and to both subscribes).
func (p *pages) connect(url, laddr string, i int) (*testbed.RawSocket, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	user, group := fanload.Personal(i), fanload.Group(i/fanload.GroupSize)
	if p.kind == "lifeline" {
		sock, err := testbed.DialRaw(ctx, url, laddr, wire.Subprotocol, 4096)
		if err != nil {
			return nil, err
		}
		for _, ch := range []string{user, group} {
			if err := sock.WriteText([]byte(`{"t":"sub","stream":"` + ch + `"}`)); err != nil {
				return nil, err
			}
		}
		for want := 3; want > 0; { // ready, then a reset per stream
			_, msg, err := sock.Next()
			if err != nil {
				return nil, err
			}
			if bytes.HasPrefix(msg, []byte(`{"t":"ready"`)) || bytes.HasPrefix(msg, []byte(`{"t":"reset"`)) {
				want--
			}
		}
		return sock, nil
	}
	sock, err := testbed.DialRaw(ctx, url, laddr, "centrifuge-json", 4096)
	if err != nil {
		return nil, err
	}
	cmds := `{"id":1,"connect":{}}` + "\n" + `{"id":2,"subscribe":{"channel":"` + user + `"}}` + "\n" +
		`{"id":3,"subscribe":{"channel":"` + group + `"}}`
	if err := sock.WriteText([]byte(cmds)); err != nil {
		return nil, err
	}
	for want := 3; want > 0; {
		_, msg, err := sock.Next()
		if err != nil {
			return nil, err
		}
		for line := range bytes.SplitSeq(msg, []byte("\n")) {
			if bytes.Contains(line, []byte(`"error"`)) {
				return nil, fmt.Errorf("centrifuge refused: %s", line)
			}
			if bytes.HasPrefix(line, []byte(`{"id":`)) {
				want--
			}
		}
	}
	return sock, nil
}

// read counts page i's deliveries until its socket ends.
func (p *pages) read(sock *testbed.RawSocket, i int) {
	deliver := p.deliverer(i)
	for {
		_, msg, err := sock.Next()
		if err != nil {
			p.fail(fmt.Errorf("page %d: the socket ended: %w", i, err))
			return
		}
		if p.kind == "lifeline" {
			p.lifelineFrame(i, msg, deliver)
			continue
		}
		for line := range bytes.SplitSeq(msg, []byte("\n")) {
			switch {
			case len(line) == 2 && line[0] == '{' && line[1] == '}':
				// Centrifuge's ping: a pong is due.
				if err := sock.WriteText([]byte("{}")); err != nil {
					p.fail(fmt.Errorf("page %d: pong: %w", i, err))
					return
				}
			case bytes.HasPrefix(line, []byte(`{"push"`)):
				deliver(line)
			}
		}
	}
}

// lifelineFrame counts one frame of Lifeline's Host.
func (p *pages) lifelineFrame(i int, msg []byte, deliver func([]byte)) {
	if bytes.HasPrefix(msg, []byte(`{"t":"event"`)) {
		deliver(msg)
	} else if bytes.HasPrefix(msg, []byte(`{"t":"reset"`)) {
		p.fail(fmt.Errorf("page %d was reset: %s", i, msg))
	}
}

// deliverer is page i's count of deliveries: once each and in order per channel, and their
// latency from the publish time they carry.
func (p *pages) deliverer(i int) func(line []byte) {
	user := []byte(fanload.Personal(i))
	var lastUser, lastGroup uint64
	shard := i % shards
	key := "stream"
	if p.kind == "centrifuge" {
		key = "channel"
	}
	return func(line []byte) {
		d, ok := fanload.Parse(line, key)
		if !ok {
			return
		}
		last := &lastGroup
		if bytes.Equal(d.Channel, user) {
			last = &lastUser
		}
		switch {
		case d.N <= *last:
			p.dupes.Add(1)
		case d.N > *last+1:
			p.lost.Add(d.N - *last - 1)
		}
		*last = max(*last, d.N)
		p.received[shard].v.Add(1)
		p.hist[shard].Add(time.Duration(time.Now().UnixNano() - d.TS))
	}
}
