//go:build !js

// Command presence measures Lifeline's presence on one Host over loopback, in one process
// (issue 34's first two rows, Lifeline's side only: the comparison with centrifuge is not
// written yet):
//
//   - join: -pages pages, connected first, all subscribe one stream at once asking for its
//     presence; the time until every page shows every member, and the presence frames and
//     bytes each page was sent;
//
//   - churn: then -churn joins a second (a new page each) for -for; for each join, the time
//     until every page shows it (p50, p99, max), and the process's CPU over the churn.
//
//     go run ./bench/cmd/presence -pages 2000 -churn 100 -for 10s
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/gateway/wire"
	"github.com/lifeline-go/lifeline/hostplugin"
)

const stream = "room.bench"

func main() {
	pages := flag.Int("pages", 2000, "pages joining at once")
	churn := flag.Int("churn", 100, "joins a second in the churn phase (0: none)")
	dur := flag.Duration("for", 10*time.Second, "how long the churn lasts")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to `file`")
	flag.Parse()
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "presence:", err)
			os.Exit(1)
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if err := run(*pages, *churn, *dur); err != nil {
		fmt.Fprintln(os.Stderr, "presence:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// page is one page: what it shows, what it was sent, and when it first showed each identity.
type page struct {
	mu     sync.Mutex
	shows  map[string]bool
	frames int
	bytes  int
	full   time.Time // when it first showed want members
	want   int
	seen   map[string]time.Time
	conn   *websocket.Conn
}

func run(n, churn int, dur time.Duration) error {
	doc := `{"maxSessions":1000000,"acceptRate":1000000,"acceptBurst":1000000,"perIPRate":1000000,"perIPBurst":1000000,"heartbeatMs":15000}`
	cfg, err := hostplugin.ParseConfig([]byte(doc))
	if err != nil {
		return err
	}
	h, err := hostplugin.New(cfg, &hostplugin.Options{
		Logger:       slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Authorize:    hostplugin.PublicStreams,
		NoClient:     true,
		Authenticate: func(r *http.Request) (string, error) { return r.Header.Get("X-User"), nil },
		Presence: &hostplugin.Presence{
			Streams:    func(string) bool { return true },
			MaxMembers: n + churn*int(dur/time.Second) + 1,
		},
	})
	if err != nil {
		return err
	}
	defer h.Close()
	h.SetReady(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h.Handler(http.NotFoundHandler())}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := "ws://" + ln.Addr().String() + wire.DefaultPath

	ps := make([]*page, n)
	for i := range n {
		if ps[i], err = dial(url, fmt.Sprintf("user-%05d", i), n); err != nil {
			return err
		}
	}
	fmt.Printf("%d pages connected; all subscribe at once\n", n)
	sub, _ := wire.PageFrame{T: wire.TypeSub, Stream: stream, Presence: true}.Encode()
	start := time.Now()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() { _ = p.conn.Write(context.Background(), websocket.MessageText, sub) })
	}
	wg.Wait()
	deadline := time.Now().Add(60 * time.Second)
	for !allFull(ps) {
		if time.Now().After(deadline) {
			return fmt.Errorf("not every page showed all %d members within 60 s", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	var took []time.Duration
	frames, bytes, maxFrames := 0, 0, 0
	for _, p := range ps {
		p.mu.Lock()
		took = append(took, p.full.Sub(start))
		frames += p.frames
		bytes += p.bytes
		maxFrames = max(maxFrames, p.frames)
		p.mu.Unlock()
	}
	slices.Sort(took)
	fmt.Printf("join: %d pages at once: every page shows all %d members after %v (p50 %v); presence frames per page %.1f (max %d), bytes per page %.0f\n",
		n, n, took[len(took)-1].Round(time.Millisecond), took[len(took)/2].Round(time.Millisecond),
		float64(frames)/float64(n), maxFrames, float64(bytes)/float64(n))

	if churn <= 0 {
		return nil
	}
	cpu0 := cpu()
	t0 := time.Now()
	every := time.Second / time.Duration(churn)
	joins := map[string]time.Time{}
	var all []*page
	all = append(all, ps...)
	for i := 0; time.Since(t0) < dur; i++ {
		id := fmt.Sprintf("churn-%05d", i)
		p, err := dial(url, id, 0)
		if err != nil {
			return err
		}
		joins[id] = time.Now()
		if err := p.conn.Write(context.Background(), websocket.MessageText, sub); err != nil {
			return err
		}
		all = append(all, p)
		time.Sleep(time.Until(t0.Add(time.Duration(i+1) * every)))
	}
	time.Sleep(2 * time.Second)
	cpuUsed := cpu() - cpu0
	wall := time.Since(t0)
	var lat []time.Duration
	missing := 0
	for id, at := range joins {
		var last time.Time
		for _, p := range ps {
			p.mu.Lock()
			s, ok := p.seen[id]
			p.mu.Unlock()
			if !ok {
				missing++
				continue
			}
			if s.After(last) {
				last = s
			}
		}
		lat = append(lat, last.Sub(at))
	}
	slices.Sort(lat)
	pct := func(q float64) time.Duration {
		return lat[min(len(lat)-1, int(q*float64(len(lat))))].Round(time.Millisecond)
	}
	fmt.Printf("churn: %d joins/s for %v on a stream of %d: join → every one of the %d first pages shows it: p50 %v, p99 %v, max %v (%d sightings missing); process CPU (Host and every page) %.1f%% of a core\n",
		churn, dur, n, n, pct(0.5), pct(0.99), lat[len(lat)-1].Round(time.Millisecond), missing, 100*cpuUsed.Seconds()/wall.Seconds())
	return nil
}

func allFull(ps []*page) bool {
	for _, p := range ps {
		p.mu.Lock()
		full := !p.full.IsZero()
		p.mu.Unlock()
		if !full {
			return false
		}
	}
	return true
}

func dial(url, user string, want int) (*page, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		Subprotocols: []string{wire.Subprotocol}, HTTPHeader: http.Header{"X-User": {user}}})
	if err != nil {
		return nil, fmt.Errorf("dial as %s: %w", user, err)
	}
	conn.SetReadLimit(1 << 20)
	p := &page{shows: map[string]bool{}, seen: map[string]time.Time{}, want: want, conn: conn}
	go p.read()
	return p, nil
}

func (p *page) read() {
	for {
		_, b, err := p.conn.Read(context.Background())
		if err != nil {
			return
		}
		f, err := wire.DecodeHost(b)
		if err != nil || f.T != wire.TypePresence {
			continue
		}
		now := time.Now()
		p.mu.Lock()
		p.frames++
		p.bytes += len(b)
		for _, m := range f.Members {
			p.shows[m.ID] = true
			if _, ok := p.seen[m.ID]; !ok {
				p.seen[m.ID] = now
			}
		}
		for _, id := range f.Left {
			delete(p.shows, id)
		}
		if p.want > 0 && p.full.IsZero() && !f.More && len(p.shows) >= p.want {
			p.full = now
		}
		p.mu.Unlock()
	}
}

func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
