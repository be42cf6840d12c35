// Command client is Lifeline's native load and demo client: N independent pages' worth of
// controller + gateway against one Host, each with its own random source, printing one JSON
// line per event on stdout (internal/testbed/clientline is the format, and its readers'):
//
//	{"t":1764438000123.456,"id":0,"event":"attempt"}
//
// t is milliseconds since the Unix epoch (fractional), id the client's index, and event one
// of attempt (a generation started), connected, disconnected (left connected) and slow (a
// handshake passed slowAfterMs). With -sub each client follows a stream; its deliveries are
// checked (once each, in order, or a reset) and any violation is printed as event
// "violation"; -deliveries prints every delivery too (event "delivery", with stream, seq,
// reset). Benchmarks and soak tests read these lines.
//
// With -stats, SIGUSR1 makes the process collect garbage and print one line
// {"t":…,"id":-1,"event":"stats","goroutines":…,"heapInuse":…} (soak tests compare them
// before and after a run of faults).
//
// SIGINT or SIGTERM (or -for) stops every controller, closes every gateway and exits 0;
// events of the shutdown itself are not printed. A second signal exits at once.
//
//	client -url ws://127.0.0.1:8080/_lifeline/events -n 100
package main

import (
	"context"
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
	"sync"
	"syscall"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/internal/testbed/clientline"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal now ends the process the default way, at once
	}()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "client:", err)
		}
		os.Exit(2)
	}
}

// run parses args, runs the clients until ctx ends (or -for elapses) and shuts them down.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
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
	stats := fs.Bool("stats", false, `on SIGUSR1, collect garbage and print a "stats" line (goroutines, heapInuse)`)
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
	cfg, err := controller.ResolveRecoveryJSON([]byte(*recovery))
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

	out := &printer{w: stdout}
	clients := make([]*client, *n)
	for i := range clients {
		c := &client{id: i, out: out}
		gw, err := gateway.New(*url, &gateway.Options{Logger: log.With("client", i), Header: header})
		if err != nil {
			return err
		}
		opts := &controller.Options{Endpoint: gw.URL(), Logger: log.With("client", i), OnChange: c.onChange}
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
		go printStats(ctx, usr1, out)
	}
	<-ctx.Done()
	out.quiet()
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			c.ctl.Stop()
			c.gw.Close(nil)
		})
	}
	wg.Wait()
	return out.err()
}

// printStats prints a stats line for each signal until ctx ends. Two collections settle what
// the first one's finalizers and cleared pools free.
func printStats(ctx context.Context, sigs <-chan os.Signal, out *printer) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sigs:
			runtime.GC()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			out.print(clientline.Line{ID: -1, Event: clientline.Stats, Goroutines: runtime.NumGoroutine(), HeapInuse: ms.HeapInuse})
		}
	}
}

// printer writes event lines, one at a time, and stops at shutdown.
type printer struct {
	mu      sync.Mutex
	w       io.Writer
	stopped bool
	werr    error
	buf     []byte
}

// print stamps l with the time and writes it.
func (p *printer) print(l clientline.Line) {
	l.T = clientline.Stamp(time.Now())
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.werr != nil {
		return
	}
	p.buf = l.Append(p.buf[:0])
	_, p.werr = p.w.Write(p.buf)
}

// event prints one of the events that carry nothing but the client's id.
func (p *printer) event(id int, ev string) { p.print(clientline.Line{ID: id, Event: ev}) }

func (p *printer) quiet() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
}

func (p *printer) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.werr
}

// client is one page's worth: a controller, its gateway, and what it last reported.
type client struct {
	id  int
	out *printer
	gw  *gateway.Gateway
	ctl *controller.Controller
	sub *gateway.Subscription

	// Touched only by OnChange, which the controller calls one at a time, in order.
	attempt uint64
	up      bool
	slow    bool

	// Touched only by the subscription's handler, which runs one call at a time.
	next uint64
	seen bool
}

func (c *client) onChange(s controller.Status) {
	if s.Attempt != c.attempt && s.Attempt != 0 {
		c.attempt = s.Attempt
		c.out.event(c.id, clientline.Attempt)
	}
	if s.Slow && !c.slow {
		c.out.event(c.id, clientline.Slow)
	}
	c.slow = s.Slow
	up := s.State == controller.Connected
	switch {
	case up && !c.up:
		c.out.event(c.id, clientline.Connected)
	case !up && c.up:
		c.out.event(c.id, clientline.Disconnected)
	}
	c.up = up
}

// check returns the handler that verifies the stream's promise: a reset first, then events
// with consecutive seqs, each later reset restarting the count.
func (c *client) check(print bool) func(gateway.Delivery) {
	return func(d gateway.Delivery) {
		if print {
			c.out.print(clientline.Line{ID: c.id, Event: clientline.Delivery, Stream: d.Stream, Seq: d.Seq, Reset: d.Reset})
		}
		violation := func(want []byte) {
			c.out.print(clientline.Line{ID: c.id, Event: clientline.Violation, Stream: d.Stream, Seq: d.Seq, Want: want})
		}
		switch {
		case d.Reset:
			c.next, c.seen = d.Seq+1, true
		case !c.seen:
			violation(clientline.WantText("a reset first"))
		case d.Seq != c.next:
			violation(clientline.WantSeq(c.next))
			c.next = d.Seq + 1
		default:
			c.next++
		}
	}
}
