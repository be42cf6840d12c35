//go:build !js

// Command callhost is the Lifeline Host of the bench's calls scenario (bench/harness, scenario
// 10): a Host plugin with the default config (or -config) and one call handler, "bench.run",
// that prints a line on stdout each time it runs (bench/callline's "run" line), works for the
// call's workMs, and replies {"call": <the call's id>}. The harness counts the runs of each
// call from those lines. It serves nothing but the events endpoint, and stops on SIGINT or
// SIGTERM.
//
//	callhost -addr 127.0.0.1:8080 [-config lifeline.json]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/lifeline-go/lifeline/bench/callline"
	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/swarmline"
)

// handlerName is the call the callers make.
const handlerName = "bench.run"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "callhost:", err)
		}
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("callhost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "`address` to listen on")
	configPath := fs.String("config", "", "Lifeline config `file` (JSON); default: the built-in defaults")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg := hostplugin.DefaultConfig()
	if *configPath != "" {
		var err error
		if cfg, err = hostplugin.LoadConfig(*configPath); err != nil {
			return err
		}
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	h, err := hostplugin.New(cfg, &hostplugin.Options{Logger: logger, Authorize: hostplugin.PublicStreams, NoClient: true})
	if err != nil {
		return err
	}
	defer h.Close()
	out := &printer{w: stdout}
	h.HandleCall(handlerName, out.handle)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h.Handler(http.NotFoundHandler()), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	h.SetReady(true)
	logger.Info("callhost: serving", "addr", ln.Addr().String())
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// The harness has counted what it needed: nothing is left to drain.
	_ = srv.Close()
	return out.err()
}

// printer prints the run lines, one at a time.
type printer struct {
	mu   sync.Mutex
	w    io.Writer
	werr error
	buf  []byte
}

// handle is the handler of handlerName: a run line, then the work, then the reply.
func (p *printer) handle(ctx context.Context, c *hostplugin.Call) (json.RawMessage, error) {
	var d callline.DataOf
	if err := json.Unmarshal(c.Data, &d); err != nil || d.Call == "" || d.WorkMs < 0 {
		return nil, fmt.Errorf("callhost: the data is not {\"call\": id, \"workMs\": ms ≥ 0}: %.100s", c.Data)
	}
	p.print(callline.Line{T: swarmline.Stamp(time.Now()), ID: -1, Event: callline.Run, Call: d.Call})
	if d.WorkMs > 0 {
		t := time.NewTimer(time.Duration(d.WorkMs) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	return json.Marshal(callline.DataOf{Call: d.Call})
}

func (p *printer) print(l callline.Line) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.werr != nil {
		return
	}
	p.buf = l.Append(p.buf[:0])
	_, p.werr = p.w.Write(p.buf)
}

func (p *printer) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.werr
}
