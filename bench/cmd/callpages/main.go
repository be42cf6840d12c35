//go:build !js

// Command callpages is the Lifeline caller of the bench's calls scenario (bench/harness,
// scenario 10): N native pages, each a controller and a gateway as bin/swarm's, that connect
// and wait; on SIGUSR2 each makes -calls calls to the Host's "bench.run" handler
// (bench/cmd/callhost) — one every -every whatever the link is doing, or with -seq also
// none before the previous one's outcome — and prints, for each call, what its caller was
// told (bench/callline's "call" line). Once every call has its line it prints one "settled"
// line, and goes on running until SIGINT or SIGTERM. Connection events are bin/swarm's lines
// (internal/swarmline), so the harness tells when every page is connected.
//
// With -keyed each call's idempotency key is its id: a call whose session ends before its
// reply is re-sent (to a Host of the same dedup store). Without, such a call fails as
// interrupted and is never sent again.
//
//	callpages -url ws://127.0.0.1:8080/_lifeline/events -n 20 -calls 80 -every 1s -work 20ms -keyed
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/lifeline-go/lifeline/bench/callline"
	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/internal/swarmline"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// handlerName is the call the pages make (bench/cmd/callhost's handler).
const handlerName = "bench.run"

func main() {
	// Before anything starts: SIGUSR2's default action would end the process.
	start := make(chan os.Signal, 1)
	signal.Notify(start, syscall.SIGUSR2)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal now ends the process the default way, at once
	}()
	if err := run(ctx, os.Args[1:], start, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "callpages:", err)
		}
		os.Exit(2)
	}
}

// plan is what each page does once started.
type plan struct {
	n       int           // pages
	calls   int           // calls per page
	every   time.Duration // between two calls of a page
	seq     bool          // and no call before the previous one's outcome
	work    time.Duration // how long the handler works on each
	timeout time.Duration // each call's (CallOptions.Timeout)
	keyed   bool
}

func run(ctx context.Context, args []string, start <-chan os.Signal, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("callpages", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "the Host's events URL, ws://host/_lifeline/events (required)")
	var pl plan
	fs.IntVar(&pl.n, "n", 1, "how many pages (controller + gateway)")
	fs.IntVar(&pl.calls, "calls", 10, "calls each page makes once started")
	fs.DurationVar(&pl.every, "every", time.Second, "a page's calls are made this far apart (the pages' schedules spread over it)")
	fs.BoolVar(&pl.seq, "seq", false, "and each call no sooner than the previous one's outcome")
	fs.DurationVar(&pl.work, "work", 0, "how long the handler works on each call (the call's workMs)")
	fs.DurationVar(&pl.timeout, "timeout", gateway.DefaultCallTimeout, "each call's timeout")
	fs.BoolVar(&pl.keyed, "keyed", false, "give each call an idempotency key (its id)")
	verbose := fs.Bool("v", false, "log the controllers and gateways on stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	case *url == "":
		return errors.New("-url is required")
	case pl.n < 1:
		return fmt.Errorf("-n must be at least 1, got %d", pl.n)
	case pl.calls < 1:
		return fmt.Errorf("-calls must be at least 1, got %d", pl.calls)
	case pl.every <= 0:
		return fmt.Errorf("-every must be positive, got %v", pl.every)
	case pl.work < 0:
		return fmt.Errorf("-work must not be negative, got %v", pl.work)
	case pl.timeout <= 0:
		return fmt.Errorf("-timeout must be positive, got %v", pl.timeout)
	}
	log := slog.New(slog.DiscardHandler)
	if *verbose {
		log = slog.New(slog.NewTextHandler(stderr, nil))
	}

	out := swarmline.NewPrinter(stdout)
	pages := make([]*page, pl.n)
	for i := range pages {
		p := &page{id: i, out: out}
		gw, err := gateway.New(*url, &gateway.Options{Logger: log.With("page", i)})
		if err != nil {
			return err
		}
		ctl, err := controller.New(gw, controller.DefaultConfig(), &controller.Options{Logger: log.With("page", i), OnChange: p.onChange})
		if err != nil {
			return err
		}
		p.gw, p.ctl = gw, ctl
		pages[i] = p
	}
	for _, p := range pages {
		p.ctl.Start()
	}
	defer func() {
		out.Quiet()
		var wg sync.WaitGroup
		for _, p := range pages {
			wg.Go(func() {
				p.ctl.Stop()
				p.gw.Close(nil)
			})
		}
		wg.Wait()
	}()

	select {
	case <-ctx.Done():
		return out.Err()
	case <-start:
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	for _, p := range pages {
		wg.Go(func() { p.makeCalls(ctx, t0, pl) })
	}
	wg.Wait()
	out.Write(func(b []byte) []byte {
		return callline.Line{T: swarmline.Stamp(time.Now()), ID: -1, Event: callline.Settled, Made: pl.n * pl.calls}.Append(b)
	})
	<-ctx.Done()
	return out.Err()
}

// page is one page's worth: a controller, its gateway, and what it last reported.
type page struct {
	id  int
	out *swarmline.Printer
	gw  *gateway.Gateway
	ctl *controller.Controller

	// Touched only by OnChange, which the controller calls one at a time, in order.
	attempt uint64
	up      bool
}

func (p *page) onChange(s controller.Status) {
	if s.Attempt != p.attempt && s.Attempt != 0 {
		p.attempt = s.Attempt
		p.out.Event(p.id, swarmline.Attempt)
	}
	up := s.State == controller.Connected
	switch {
	case up && !p.up:
		p.out.Event(p.id, swarmline.Connected)
	case !up && p.up:
		p.out.Event(p.id, swarmline.Disconnected)
	}
	p.up = up
}

// makeCalls makes the page's calls from t0 on, one every pl.every (with pl.seq, none before
// the previous one's outcome), and returns once each has its line. The pages' schedules are
// spread over one interval, so that their calls do not all go at one instant.
func (p *page) makeCalls(ctx context.Context, t0 time.Time, pl plan) {
	var wg sync.WaitGroup
	defer wg.Wait()
	offset := pl.every * time.Duration(p.id) / time.Duration(pl.n)
	for seq := range pl.calls {
		t := time.NewTimer(time.Until(t0.Add(offset + time.Duration(seq)*pl.every)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if pl.seq {
			p.call(ctx, seq, pl)
			continue
		}
		wg.Go(func() { p.call(ctx, seq, pl) })
	}
}

// call makes one call and prints what its caller was told.
func (p *page) call(ctx context.Context, seq int, pl plan) {
	id := callline.ID(p.id, seq)
	data, _ := json.Marshal(callline.DataOf{Call: id, WorkMs: int(pl.work / time.Millisecond)})
	opts := gateway.CallOptions{Timeout: pl.timeout}
	if pl.keyed {
		opts.Key = id
	}
	t := time.Now()
	reply, err := p.gw.Call(ctx, handlerName, data, opts)
	ms := float64(time.Since(t).Microseconds()) / 1000
	told, why := verdict(id, reply, err)
	p.out.Write(func(b []byte) []byte {
		return callline.Line{T: swarmline.Stamp(time.Now()), ID: p.id, Event: callline.Call, Call: id, Told: told, Why: why, Ms: ms}.Append(b)
	})
}

// verdict is what the gateway told the caller of call id, in callline's words: a failure is
// unknown only when the CallError says the call was sent and has no outcome (interrupted,
// timeout, closed); any other says it did not run (not sent, or refused by the Host before
// its handler) or that the handler failed, which this one never does.
func verdict(id string, reply wire.RawJSON, err error) (told, why string) {
	if err == nil {
		var d callline.DataOf
		if json.Unmarshal(reply, &d) != nil || d.Call != id {
			return callline.Mixed, fmt.Sprintf("the reply %.100s", reply)
		}
		return callline.Ok, ""
	}
	var ce *gateway.CallError
	if !errors.As(err, &ce) {
		return callline.Failed, err.Error()
	}
	why = ce.Kind + " (not sent)"
	if ce.Sent {
		why = ce.Kind + " (sent)"
	}
	switch ce.Kind {
	case gateway.CallInterrupted, gateway.CallTimeout, gateway.CallClosed:
		if ce.Sent {
			return callline.Unknown, why
		}
	}
	return callline.Failed, why
}
