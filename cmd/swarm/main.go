//go:build !js

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/internal/configdoc"
	"github.com/lifeline-go/lifeline/internal/swarmline"
	"github.com/lifeline-go/lifeline/internal/wire"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal now ends the process the default way, at once
	}()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "swarm:", err)
		}
		os.Exit(2)
	}
}

// run parses args, runs the clients until ctx ends (or -for elapses) and shuts them down.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("swarm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "the Host's events URL, ws://host/_lifeline/events (required)")
	n := fs.Int("n", 1, "how many independent clients (controller + gateway) to run")
	sub := fs.String("sub", "", "a stream every client subscribes to; deliveries are checked")
	deliveries := fs.Bool("deliveries", false, "print every delivery (with -sub)")
	recovery := fs.String("recovery", "", `timing overrides as JSON, e.g. {"initialDelayMs":100}`)
	origin := fs.String("origin", "", "Origin header of the handshake (default none)")
	seed := fs.Uint64("seed", 0, "seed of the clients' random sources (0: each seeded at random)")
	verbose := fs.Bool("v", false, "log the controllers and gateways on stderr")
	duration := fs.Duration("for", 0, "stop after this long (0: until SIGINT or SIGTERM)")
	stats := fs.Bool("stats", false, `on SIGUSR1, collect garbage and print a "stats" line (goroutines, heapInuse, heapAlloc)`)
	upgradeAfter := fs.Duration("upgrade-after", 0, "a client that fell back to the HTTP carrier tries a WebSocket again first after this long (gateway.Options.UpgradeAfter; 0: its default)")
	httpClients := fs.Int("http", 0, "how many of the clients (the first ones) run on the HTTP carrier's stream instead of a WebSocket, and stay there")
	user := fs.String("user", "", "the clients' user, in the cookie lifeline-user of their handshake (bin/host -signouts reads it); with -users, the prefix of their names")
	users := fs.Int("users", 1, "with -user: how many users the clients are, client i being <user><i mod users>")
	var plan callPlan
	fs.IntVar(&plan.n, "calls", 0, "calls each client makes (0: none); each outcome is printed")
	fs.Float64Var(&plan.keyed, "keyed", 0.5, "the fraction of the calls that carry an idempotency key (with -calls)")
	fs.DurationVar(&plan.every, "call-every", time.Second, "the interval between two calls of a client (with -calls)")
	fs.StringVar(&plan.name, "call-name", "ledger.run", "the Host's handler the calls go to (with -calls)")
	fs.StringVar(&plan.prefix, "call-prefix", "", "the first part of the calls' data and keys, unique per run (default: random)")
	fs.IntVar(&plan.inFlight, "calls-in-flight", 8, "at most this many calls of a client at once, waiting to be sent or for their reply; a later one is made when one ends (with -calls)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *url == "" {
		return errors.New("-url is required")
	}
	if *n < 1 {
		return fmt.Errorf("-n must be at least 1, got %d", *n)
	}
	if *httpClients < 0 || *httpClients > *n {
		return fmt.Errorf("-http must be in 0..%d (-n), got %d", *n, *httpClients)
	}
	if *users < 1 {
		return fmt.Errorf("-users must be at least 1, got %d", *users)
	}
	if err := plan.check(); err != nil {
		return err
	}
	cfg, err := resolveRecovery(*recovery)
	if err != nil {
		return err
	}
	log := slog.New(slog.DiscardHandler)
	if *verbose {
		log = slog.New(slog.NewTextHandler(stderr, nil))
	}
	var header http.Header
	if *origin != "" {
		header = http.Header{"Origin": {*origin}}
	}

	out := swarmline.NewPrinter(stdout)
	clients := make([]*client, *n)
	for i := range clients {
		c := &client{id: i, out: out}
		h := header
		if *user != "" {
			name := *user
			if *users > 1 {
				name += strconv.Itoa(i % *users)
			}
			h = header.Clone()
			if h == nil {
				h = http.Header{}
			}
			h.Set("Cookie", "lifeline-user="+name)
		}
		gopts := &gateway.Options{Logger: log.With("client", i), Handshake: gateway.Handshake{Header: h},
			UpgradeAfter: *upgradeAfter, OnCarrier: c.carried}
		if i < *httpClients {
			gopts.Carrier, gopts.UpgradeAfter = wire.CarrierStream, 24*time.Hour
		}
		gw, err := gateway.New(*url, gopts)
		if err != nil {
			return err
		}
		opts := &controller.Options{Logger: log.With("client", i), OnChange: c.onChange}
		if *seed != 0 {
			opts.Rand = rand.New(rand.NewPCG(*seed, uint64(i))).Float64
		}
		ctl, err := controller.New(gw, cfg, opts)
		if err != nil {
			return err
		}
		c.gw, c.ctl = gw, ctl
		if *sub != "" {
			c.sub = gw.Subscribe(*sub, c.check(*deliveries))
		}
		clients[i] = c
	}
	if *stats {
		warmGoroutines(len(clients) * warmGoroutinesPerClient)
	}
	for _, c := range clients {
		c.ctl.Start()
	}

	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	if *stats {
		usr1 := make(chan os.Signal, 1)
		notifyStats(usr1)
		defer signal.Stop(usr1)
		go printStats(ctx, usr1, out, clients)
	}
	var calls sync.WaitGroup
	if plan.n > 0 {
		makeCalls(ctx, clients, plan, &calls)
	}
	<-ctx.Done()
	out.Quiet()
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			c.ctl.Stop()
			c.gw.Close(nil)
		})
	}
	wg.Wait()
	calls.Wait()
	return out.Err()
}

// callPlan is what -calls asks of every client.
type callPlan struct {
	n        int
	keyed    float64
	every    time.Duration
	name     string
	prefix   string
	inFlight int
}

func (p *callPlan) check() error {
	switch {
	case p.n < 0:
		return fmt.Errorf("-calls must not be negative, got %d", p.n)
	case !(p.keyed >= 0 && p.keyed <= 1):
		return fmt.Errorf("-keyed must be in 0..1, got %v", p.keyed)
	case p.every <= 0:
		return fmt.Errorf("-call-every must be positive, got %v", p.every)
	case p.inFlight < 1:
		return fmt.Errorf("-calls-in-flight must be at least 1, got %d", p.inFlight)
	}
	if err := wire.CheckCallName(p.name); err != nil {
		return fmt.Errorf("-call-name: %v", err)
	}
	if p.prefix == "" {
		// Unique across runs too: a Host keeps a keyed call's outcome for callDedupMs, and
		// would answer a later run's call of the same key without running it.
		p.prefix = strconv.FormatUint(rand.Uint64(), 36)
	}
	// The longest key, "<prefix>/<page>/<call>", must be one the protocol carries.
	if err := wire.CheckCallKey(p.id(1<<31, 1<<31)); err != nil {
		return fmt.Errorf("-call-prefix %q: %v", wire.Truncate(p.prefix), err)
	}
	return nil
}

// id is the data (as text) and, when keyed, the key of call k of client i.
func (p *callPlan) id(i, k int) string {
	return p.prefix + "/" + strconv.Itoa(i) + "/" + strconv.Itoa(k)
}

// keyedAt reports whether call k is keyed: the keyed calls are spread evenly, so that of any
// run of calls the fraction p.keyed is (at 0.5, every other one, from call 1).
func (p *callPlan) keyedAt(k int) bool {
	return int(float64(k+1)*p.keyed) > int(float64(k)*p.keyed)
}

// makeCalls starts the calls, on wg: call k of client i is due at k×every + i×every/n from
// now, so that the n clients' calls are spread evenly, and is made then by one of the client's
// p.inFlight callers, or as soon as one is free. The callers live until ctx ends, calls or
// not, so that a soak counting goroutines (and the heap, which keeps what a goroutine was
// allocated) sees the same before and after the calls. A call, once made, ends with its
// gateway (closed at the shutdown), not with ctx: a call cut by the shutdown is no outcome to
// print.
func makeCalls(ctx context.Context, clients []*client, p callPlan, wg *sync.WaitGroup) {
	callCtx := context.WithoutCancel(ctx)
	due := make([]chan int, len(clients))
	for i, c := range clients {
		due[i] = make(chan int, p.n) // the pacer never waits for a caller
		for range p.inFlight {
			wg.Go(func() {
				for {
					select {
					case <-ctx.Done():
						return
					case k := <-due[i]:
						if ctx.Err() != nil {
							return
						}
						c.call(callCtx, &p, k)
					}
				}
			})
		}
	}
	wg.Go(func() {
		start := time.Now()
		t := time.NewTimer(0)
		defer t.Stop()
		n := time.Duration(len(clients))
		for k := range p.n {
			for i := range clients {
				t.Reset(time.Until(start.Add(time.Duration(k)*p.every + time.Duration(i)*p.every/n)))
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				due[i] <- k
			}
		}
	})
}

// call makes the client's call k and prints its outcome.
func (c *client) call(ctx context.Context, p *callPlan, k int) {
	id := p.id(c.id, k)
	l := swarmline.Line{ID: c.id, Event: swarmline.Call, Call: k, Keyed: p.keyedAt(k), Made: swarmline.Stamp(time.Now())}
	var epoch atomic.Value // string: set on the gateway's writer goroutine, read here
	opts := gateway.CallOptions{OnSent: func(on gateway.Sent) { epoch.Store(on.Epoch) }}
	if l.Keyed {
		opts.Key = id
	}
	data, _ := json.Marshal(id) // a string always marshals
	reply, err := c.gw.Call(ctx, p.name, data, opts)
	l.Epoch, _ = epoch.Load().(string)
	var ce *gateway.CallError
	switch {
	case err == nil:
		l.Reply = json.RawMessage(reply)
	case errors.As(err, &ce):
		l.Kind, l.Sent, l.Code, l.Message = ce.Kind, ce.Sent, ce.Code, ce.Message
	default:
		// Gateway.Call fails with a *CallError only; a line must say something all the same.
		l.Kind, l.Message = "error", err.Error()
	}
	c.out.Print(l)
}

// warmGoroutinesPerClient is how many goroutines per client -stats runs at once at the start:
// above the peak measured (about 8 per client, with 4 callers each, through a handoff).
const warmGoroutinesPerClient = 16

// warmGoroutines runs n goroutines at once, which all end before it returns.
func warmGoroutines(n int) {
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range n {
		wg.Go(func() { <-release })
	}
	close(release)
	wg.Wait()
}

// printStats prints a stats line for each signal until ctx ends. Two collections settle what
// the first one's finalizers and cleared pools free.
func printStats(ctx context.Context, sigs <-chan os.Signal, out *swarmline.Printer, clients []*client) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sigs:
			runtime.GC()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			onHTTP := 0
			for _, c := range clients {
				if c.onHTTP.Load() {
					onHTTP++
				}
			}
			out.Print(swarmline.Line{ID: -1, Event: swarmline.Stats, Goroutines: runtime.NumGoroutine(), HeapInuse: ms.HeapInuse, HeapAlloc: ms.HeapAlloc, OnHTTP: onHTTP})
		}
	}
}

// carried is the gateway's OnCarrier: what carries the client's session now.
func (c *client) carried(k gateway.Carrier) { c.onHTTP.Store(k.Kind != wire.CarrierWebSocket) }

// client is one page's worth: a controller, its gateway, and what it last reported.
type client struct {
	id  int
	out *swarmline.Printer
	gw  *gateway.Gateway
	ctl *controller.Controller
	sub *gateway.Subscription

	onHTTP atomic.Bool // the session is on the HTTP carrier (OnCarrier)

	// Touched only by OnChange, which the controller calls one at a time, in order.
	attempt uint64
	up      bool
	slow    bool
	refused bool // unauthorized

	// Touched only by the subscription's handler, which runs one call at a time.
	next uint64
	seen bool
}

func (c *client) onChange(s controller.Status) {
	if s.Attempt != c.attempt && s.Attempt != 0 {
		c.attempt = s.Attempt
		c.out.Event(c.id, swarmline.Attempt)
	}
	if s.Slow && !c.slow {
		c.out.Event(c.id, swarmline.Slow)
	}
	c.slow = s.Slow
	up := s.State == controller.Connected
	switch {
	case up && !c.up:
		c.out.Event(c.id, swarmline.Connected)
	case !up && c.up:
		c.out.Event(c.id, swarmline.Disconnected)
	}
	c.up = up
	refused := s.State == controller.Unauthorized
	if refused && !c.refused {
		c.out.Event(c.id, swarmline.Unauthorized)
	}
	c.refused = refused
}

// check returns the handler that verifies the stream's promise: a reset first, then events
// with consecutive seqs, each later reset restarting the count.
func (c *client) check(print bool) func(gateway.Delivery) {
	return func(d gateway.Delivery) {
		if print {
			c.out.Print(swarmline.Line{ID: c.id, Event: swarmline.Delivery, Stream: d.Stream, Seq: d.Seq, Reset: d.Reset})
		}
		violation := func(want []byte) {
			c.out.Print(swarmline.Line{ID: c.id, Event: swarmline.Violation, Stream: d.Stream, Seq: d.Seq, Want: want})
		}
		switch {
		case d.Reset:
			c.next, c.seen = d.Seq+1, true
		case !c.seen:
			violation(swarmline.WantText("a reset first"))
		case d.Seq != c.next:
			violation(swarmline.WantSeq(c.next))
			c.next = d.Seq + 1
		default:
			c.next++
		}
	}
}

// resolveRecovery reads the -recovery flag (empty: every default) the way the Host reads its
// config file: strictly, every broken field named with the value as written.
func resolveRecovery(flag string) (controller.Config, error) {
	doc := configdoc.New("swarm")
	var rec controller.Recovery
	if flag != "" {
		doc.Decode([]byte(flag), &rec, "", "recovery")
	}
	cfg, err := controller.Resolve(rec)
	doc.Check(err)
	return cfg, doc.Err()
}
