//go:build !js

// Command presence measures presence on one server over loopback, in one process (2,000 pages
// joining one stream at once, and steady churn on it: the rows that need no NATS cluster), for
// Lifeline's Host (-kind lifeline) or github.com/centrifugal/centrifuge
// with its in-memory presence and its join/leave pushes on (-kind centrifuge: a page subscribes
// with join_leave, then asks for the channel's presence, and applies the joins and leaves):
//
//   - join: -pages pages, connected first, all subscribe one stream at once asking for its
//     presence; the time until every page shows every member, and the presence frames and
//     bytes each page was sent;
//
//   - churn: then -churn joins a second (a new page each) for -for; for each join, the time
//     until every page shows it (p50, p99, max), and the process's CPU over the churn.
//
//     go run ./bench/cmd/presence -pages 2000 -churn 100 -for 10s
//
// -idle N instead puts N streams of 10 members on one Lifeline Host (with -nats, its presence
// carried by a JetStream fleet link on that NATS, as a fleet's Hosts carry it), every page
// watching, and measures the process's CPU and heap while nothing happens.
//
// -json ends the output with one line, {"result": …}, the figures for a harness
// (bench/harness's presence scenario) to read; a join in which not every page became full
// within -wait is reported there (full false), and the churn still runs.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/centrifugal/centrifuge"
	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/bench/presload"
	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/hostplugin/jetstream"
	"github.com/lifeline-go/lifeline/internal/wire"
)

const stream = "room.bench"

// kind is the server under test (-kind).
var kind string

// natsURL and natsReplicas: -idle's presence fleet (-nats, -nats-replicas).
var (
	natsURL      string
	natsReplicas int
	roster       int // the members a page of the join will have seen by the end: its maps' size
	churnJoins   int // the joins of the churn, whose first sightings a page records
	// churning is set once the churn starts: a page records when it first showed a member
	// (page.seen) only from then on, for the churn's figures; the join's 4,000,000 sightings
	// would cost the pages' time and measure nothing.
	churning atomic.Bool
)

var res presload.Result

// closed counts the pages whose socket ended during the run (a server that drops a slow page).
var closed atomic.Int64

var joinWait time.Duration

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func main() {
	pages := flag.Int("pages", 2000, "pages joining at once")
	churn := flag.Int("churn", 100, "joins a second in the churn phase (0: none)")
	dur := flag.Duration("for", 10*time.Second, "how long the churn lasts")
	flag.StringVar(&kind, "kind", "lifeline", "lifeline or centrifuge")
	idle := flag.Int("idle", 0, "lifeline only: instead, this many streams of 10 members each (sessions following 64 streams each), then the idle CPU and heap over -for")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to `file`")
	asJSON := flag.Bool("json", false, "end with one line {\"result\": …} of the figures, for bench/harness")
	flag.DurationVar(&joinWait, "wait", 60*time.Second, "how long the join may take before it is reported incomplete")
	flag.StringVar(&natsURL, "nats", "", "-idle: carry presence over NATS at `urls` (comma-separated), as a fleet's Hosts do")
	flag.IntVar(&natsReplicas, "nats-replicas", 1, "-idle with -nats: replicas of the JetStream log (3 on a 3-node cluster)")
	noPresence := flag.Bool("no-presence", false, "-idle: the control, the same sessions and subscriptions on a Host without presence (and without NATS)")
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
	run := run
	if *idle > 0 {
		run = func(int, int, time.Duration) error { return runIdle(*idle, *dur, !*noPresence) }
	}
	res.Kind = kind
	if err := run(*pages, *churn, *dur); err != nil {
		fmt.Fprintln(os.Stderr, "presence:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
	if *asJSON {
		b, _ := json.Marshal(map[string]presload.Result{"result": res})
		fmt.Println(string(b))
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
	// centrifuge: its presence is by client; users counts each user's clients. A frame is a
	// WebSocket message (centrifuge puts several pushes in one, a line each).
	clients map[string]string
	users   map[string]int
}

func run(n, churn int, dur time.Duration) error {
	var handler http.Handler
	var path string
	switch kind {
	case "lifeline":
		h, err := lifeline(n + churn*int(dur/time.Second) + 1)
		if err != nil {
			return err
		}
		defer h.Close()
		handler, path = h.Handler(http.NotFoundHandler()), wire.DefaultPath
	case "centrifuge":
		var err error
		if handler, err = centrifugeServer(); err != nil {
			return err
		}
		path = "/connection/websocket"
	default:
		return fmt.Errorf("unknown -kind %q", kind)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := "ws://" + ln.Addr().String() + path

	churnJoins = churn * int(dur/time.Second)
	roster = n + churnJoins
	ps := make([]*page, n)
	for i := range n {
		if ps[i], err = dial(url, fmt.Sprintf("user-%05d", i), n); err != nil {
			return err
		}
	}
	fmt.Printf("%d pages connected; all subscribe at once\n", n)
	sub, _ := wire.PageFrame{T: wire.TypeSub, Stream: stream, Presence: true}.Encode()
	if kind == "centrifuge" {
		sub = []byte(`{"id":2,"subscribe":{"channel":"` + stream + `","join_leave":true}}`)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() { _ = p.conn.Write(context.Background(), websocket.MessageText, sub) })
	}
	wg.Wait()
	deadline := time.Now().Add(joinWait)
	complete := true
	for !allFull(ps) {
		if time.Now().After(deadline) {
			complete = false
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	var took []time.Duration
	frames, bytes, maxFrames, fullPages, shown := 0, 0, 0, 0, 0
	for _, p := range ps {
		p.mu.Lock()
		if !p.full.IsZero() {
			took = append(took, p.full.Sub(start))
			fullPages++
		}
		shown += len(p.shows)
		frames += p.frames
		bytes += p.bytes
		maxFrames = max(maxFrames, p.frames)
		p.mu.Unlock()
	}
	slices.Sort(took)
	j := &presload.Join{Pages: n, Full: complete, FullPages: fullPages, MeanShown: float64(shown) / float64(n),
		FramesPerPage: float64(frames) / float64(n), MaxFrames: maxFrames, BytesPerPage: float64(bytes) / float64(n), WaitMs: ms(joinWait),
		Closed: closed.Load()}
	res.Join = j
	if complete {
		j.MaxMs, j.P50Ms, j.P99Ms = ms(took[len(took)-1]), ms(took[len(took)/2]), ms(took[min(len(took)-1, len(took)*99/100)])
		fmt.Printf("%s join: %d pages at once: every page shows all %d members after %v (p50 %v); presence frames per page %.1f (max %d), bytes per page %.0f\n",
			kind, n, n, took[len(took)-1].Round(time.Millisecond), took[len(took)/2].Round(time.Millisecond),
			j.FramesPerPage, maxFrames, j.BytesPerPage)
	} else {
		fmt.Printf("%s join: %d pages at once: after %v %d of %d pages show all %d members; a page shows %.0f on average; presence frames per page so far %.1f (max %d), bytes per page %.0f; %d pages' sockets ended\n",
			kind, n, joinWait, fullPages, n, n, j.MeanShown, j.FramesPerPage, maxFrames, j.BytesPerPage, j.Closed)
	}

	if churn <= 0 {
		return nil
	}
	churning.Store(true)
	cpu0 := cpu()
	t0 := time.Now()
	every := time.Second / time.Duration(churn)
	joins := map[string]time.Time{}
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
		time.Sleep(time.Until(t0.Add(time.Duration(i+1) * every)))
	}
	time.Sleep(2 * time.Second)
	cpuUsed := cpu() - cpu0
	wall := time.Since(t0)
	// A join some page never showed counts as known at the end of the measure: its latency is
	// a lower bound, and missing says how many sightings it lacked.
	var lat []time.Duration
	missing := 0
	end := time.Now()
	for id, at := range joins {
		var last time.Time
		for _, p := range ps {
			p.mu.Lock()
			s, ok := p.seen[id]
			p.mu.Unlock()
			if !ok {
				missing++
				s = end
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
	res.Churn = &presload.Churn{Rate: churn, ForMs: ms(dur), Joins: len(joins), P50Ms: ms(pct(0.5)), P99Ms: ms(pct(0.99)),
		MaxMs: ms(lat[len(lat)-1]), Missing: missing, CPUPct: 100 * cpuUsed.Seconds() / wall.Seconds()}
	fmt.Printf("%s churn: %d joins/s for %v on a stream of %d: join → every one of the %d first pages shows it: p50 %v, p99 %v, max %v (%d sightings missing); process CPU (Host and every page) %.1f%% of a core\n",
		kind, churn, dur, n, n, pct(0.5), pct(0.99), lat[len(lat)-1].Round(time.Millisecond), missing, 100*cpuUsed.Seconds()/wall.Seconds())
	return nil
}

// runIdle: streams × 10 members on one Host, every page watching; then nothing happens for
// dur, and the process's CPU and heap are what presence costs idle (the pages' sockets and
// sessions included, which cost the same without presence). Without presence (the control):
// the same sessions subscribed to the same streams, on a Host without presence or NATS, so
// that presence's own cost is the difference.
func runIdle(streams int, dur time.Duration, presence bool) error {
	const members, perSession = 10, 64
	sessions := streams * members / perSession
	var fleet hostplugin.PresenceFleet
	if natsURL != "" && presence {
		// The stream log stays in memory: the row is presence's, and presence alone goes over NATS.
		log, err := jetstream.Connect(natsURL, &jetstream.Options{Replicas: natsReplicas, Name: "presence-bench"})
		if err != nil {
			return err
		}
		defer log.Close()
		fleet = jetstream.NewPresence(log)
	}
	var h *hostplugin.Host
	var err error
	if presence {
		h, err = lifelineWith(members, fleet)
	} else {
		h, err = lifelineWithout()
	}
	if err != nil {
		return err
	}
	defer h.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h.Handler(http.NotFoundHandler())}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := "ws://" + ln.Addr().String() + wire.DefaultPath
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range sessions {
		p, err := dial(url, fmt.Sprintf("user-%06d", i), 0)
		if err != nil {
			return err
		}
		// Session i follows streams i*64/10 … : each stream gets about 10 members.
		first := i * perSession / members
		for j := range perSession {
			b, _ := wire.PageFrame{T: wire.TypeSub, Stream: fmt.Sprintf("room.%06d", (first+j)%streams), Presence: presence}.Encode()
			if err := p.conn.Write(context.Background(), websocket.MessageText, b); err != nil {
				return err
			}
		}
	}
	time.Sleep(3 * time.Second) // every batch out
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	cpu0, t0 := cpu(), time.Now()
	time.Sleep(dur)
	used := cpu() - cpu0
	t1 := time.Now()
	res.Idle = &presload.Idle{Streams: streams, Members: members, Sessions: sessions, Presence: presence, NATS: natsURL != "" && presence, ForMs: ms(t1.Sub(t0)),
		CPUPct: 100 * used.Seconds() / t1.Sub(t0).Seconds(), HeapMB: float64(after.HeapInuse-before.HeapInuse) / 1e6,
		StartMs: t0.UnixMilli(), EndMs: t1.UnixMilli()}
	fmt.Printf("idle (presence %v): %d streams × %d members (%d sessions × %d streams, every page watching): process CPU over %v idle %.2f%% of a core; heap %.1f MB in use (sessions, sockets and pages included)\n",
		presence, streams, members, sessions, perSession, dur, 100*used.Seconds()/time.Since(t0).Seconds(), float64(after.HeapInuse-before.HeapInuse)/1e6)
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
	proto := wire.Subprotocol
	if kind == "centrifuge" {
		proto = "centrifuge-json"
	}
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		Subprotocols: []string{proto}, HTTPHeader: http.Header{"X-User": {user}}})
	if err != nil {
		return nil, fmt.Errorf("dial as %s: %w", user, err)
	}
	conn.SetReadLimit(16 << 20)
	// The maps are made at the size they will reach: grown entry by entry, 2,000 pages' maps
	// of 2,000 members took a quarter of the process's CPU in rehashing during the join (a
	// profile of 2026-12-04), which is the bench's own bookkeeping, not a page's work.
	p := &page{shows: make(map[string]bool, roster), seen: make(map[string]time.Time, churnJoins), want: want, conn: conn}
	if kind == "centrifuge" {
		p.clients, p.users = make(map[string]string, roster), make(map[string]int, roster)
	}
	if kind == "centrifuge" {
		if err := conn.Write(ctx, websocket.MessageText, []byte(`{"id":1,"connect":{}}`)); err != nil {
			return nil, err
		}
		go p.readCentrifuge()
	} else {
		go p.read()
	}
	return p, nil
}

func (p *page) read() {
	var buf bytes.Buffer
	for {
		b, err := readMessage(p.conn, &buf)
		if err != nil {
			closed.Add(1)
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
			if _, ok := p.seen[m.ID]; !ok && churning.Load() {
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

// readMessage reads the next message into buf, which it reuses: a browser reads a frame
// for its page, and 2,000 pages in one process each allocating every frame they read (as
// Conn.Read does) made the bench's heap grow by a third of a gigabyte in the join, which
// then measured the machine's page faults as much as the servers. Both kinds read this way.
func readMessage(c *websocket.Conn, buf *bytes.Buffer) ([]byte, error) {
	_, r, err := c.Reader(context.Background())
	if err != nil {
		return nil, err
	}
	buf.Reset()
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// centrifugeReply is what a centrifuge page reads: a reply (id) to its subscribe or presence
// request, a push of a join or leave, or a ping ({}).
type centrifugeReply struct {
	ID        uint32          `json:"id"`
	Subscribe json.RawMessage `json:"subscribe"`
	Presence  *struct {
		Presence map[string]centrifugeInfo `json:"presence"`
	} `json:"presence"`
	Push *struct {
		Join  *struct{ Info centrifugeInfo } `json:"join"`
		Leave *struct{ Info centrifugeInfo } `json:"leave"`
	} `json:"push"`
	Error json.RawMessage `json:"error"`
}

type centrifugeInfo struct {
	User   string `json:"user"`
	Client string `json:"client"`
}

// readCentrifuge: once subscribed, the page asks for the presence, and applies it with every
// join and leave pushed (joins pushed before the answer are in it as well: a page counts each
// client once).
func (p *page) readCentrifuge() {
	var buf bytes.Buffer
	for {
		b, err := readMessage(p.conn, &buf)
		if err != nil {
			closed.Add(1)
			return
		}
		now := time.Now()
		counted := false // a message of several lines is one frame
		for line := range bytes.SplitSeq(b, []byte("\n")) {
			if len(line) == 2 && line[0] == '{' && line[1] == '}' {
				_ = p.conn.Write(context.Background(), websocket.MessageText, []byte("{}"))
				continue
			}
			var r centrifugeReply
			if json.Unmarshal(line, &r) != nil {
				continue
			}
			if len(r.Error) > 0 {
				fmt.Fprintf(os.Stderr, "centrifuge: %s\n", line)
				continue
			}
			if r.ID == 2 && r.Subscribe != nil {
				_ = p.conn.Write(context.Background(), websocket.MessageText, []byte(`{"id":3,"presence":{"channel":"`+stream+`"}}`))
				continue
			}
			p.mu.Lock()
			if (r.Presence != nil || r.Push != nil) && !counted {
				counted = true
				p.frames++
			}
			switch {
			case r.Presence != nil:
				p.bytes += len(line)
				for _, in := range r.Presence.Presence {
					p.join(in, now)
				}
			case r.Push != nil && r.Push.Join != nil:
				p.bytes += len(line)
				p.join(r.Push.Join.Info, now)
			case r.Push != nil && r.Push.Leave != nil:
				p.bytes += len(line)
				if _, ok := p.clients[r.Push.Leave.Info.Client]; ok {
					delete(p.clients, r.Push.Leave.Info.Client)
					if p.users[r.Push.Leave.Info.User]--; p.users[r.Push.Leave.Info.User] == 0 {
						delete(p.users, r.Push.Leave.Info.User)
						delete(p.shows, r.Push.Leave.Info.User)
					}
				}
			}
			if p.want > 0 && p.full.IsZero() && len(p.shows) >= p.want {
				p.full = now
			}
			p.mu.Unlock()
		}
	}
}

func (p *page) join(in centrifugeInfo, now time.Time) {
	if _, ok := p.clients[in.Client]; ok {
		return
	}
	p.clients[in.Client] = in.User
	p.users[in.User]++
	p.shows[in.User] = true
	if _, ok := p.seen[in.User]; !ok && churning.Load() {
		p.seen[in.User] = now
	}
}

func lifeline(maxMembers int) (*hostplugin.Host, error) { return lifelineWith(maxMembers, nil) }

// lifelineWith is a Host whose presence goes over fleet (nil: one Host).
func lifelineWith(maxMembers int, fleet hostplugin.PresenceFleet) (*hostplugin.Host, error) {
	return lifelineOptions(&hostplugin.Presence{Streams: func(string) bool { return true }, MaxMembers: maxMembers, Fleet: fleet})
}

func lifelineOptions(presence *hostplugin.Presence) (*hostplugin.Host, error) {
	doc := `{"maxSessions":1000000,"acceptRate":1000000,"acceptBurst":1000000,"perIPRate":1000000,"perIPBurst":1000000,"heartbeatMs":15000}`
	cfg, err := hostplugin.ParseConfig([]byte(doc))
	if err != nil {
		return nil, err
	}
	h, err := hostplugin.New(cfg, &hostplugin.Options{
		Logger:       slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Authorize:    hostplugin.PublicStreams,
		NoClient:     true,
		Authenticate: func(r *http.Request) (string, error) { return r.Header.Get("X-User"), nil },
		Presence:     presence,
	})
	if err != nil {
		return nil, err
	}
	h.SetReady(true)
	return h, nil
}

// lifelineWithout is lifelineWith's Host without presence: the idle control.
func lifelineWithout() (*hostplugin.Host, error) {
	return lifelineOptions(nil)
}

// userKey carries the X-User header into centrifuge's OnConnecting.
type userKey struct{}

// centrifugeServer is a centrifuge node with its in-memory presence manager, every
// subscription emitting presence and joins and leaves, and pushing them to its client.
func centrifugeServer() (http.Handler, error) {
	node, err := centrifuge.New(centrifuge.Config{
		LogLevel:   centrifuge.LogLevelError,
		LogHandler: func(e centrifuge.LogEntry) { fmt.Fprintf(os.Stderr, "centrifuge: %s %v\n", e.Message, e.Fields) },
	})
	if err != nil {
		return nil, err
	}
	node.OnConnecting(func(ctx context.Context, _ centrifuge.ConnectEvent) (centrifuge.ConnectReply, error) {
		user, _ := ctx.Value(userKey{}).(string)
		return centrifuge.ConnectReply{Credentials: &centrifuge.Credentials{UserID: user}}, nil
	})
	node.OnConnect(func(c *centrifuge.Client) {
		c.OnSubscribe(func(_ centrifuge.SubscribeEvent, cb centrifuge.SubscribeCallback) {
			cb(centrifuge.SubscribeReply{Options: centrifuge.SubscribeOptions{EmitPresence: true, EmitJoinLeave: true, PushJoinLeave: true}}, nil)
		})
		c.OnPresence(func(_ centrifuge.PresenceEvent, cb centrifuge.PresenceCallback) {
			cb(centrifuge.PresenceReply{}, nil)
		})
	})
	if err := node.Run(); err != nil {
		return nil, err
	}
	ws := centrifuge.NewWebsocketHandler(node, centrifuge.WebsocketConfig{CheckOrigin: func(*http.Request) bool { return true }})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, r.Header.Get("X-User"))))
	}), nil
}

func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
