//go:build !js

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lifeline-go/lifeline/internal/test/faultproxy"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "faultproxy:", err)
		}
		os.Exit(2)
	}
}

// ready is the first line on stdout: where the proxy and its panel listen.
type ready struct {
	Listen   string `json:"listen"`
	Control  string `json:"control,omitempty"`
	Upstream string `json:"upstream"`
	Mode     string `json:"mode"`
}

// run runs the proxy until ctx ends (or, with -exit-on-eof, stdin does).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("faultproxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:9000", "`address` to listen on (port 0: any free one)")
	upstream := fs.String("upstream", "127.0.0.1:8080", "server `address` to forward to")
	control := fs.String("control", "", "`address` of the HTTP control panel (port 0: any free one); empty: none")
	mode := fs.String("mode", "up", "initial `mode`: up, refuse, blackhole, flap, latency, reset, stall or throttle")
	flapAfter := fs.Duration("flap-after", 200*time.Millisecond, "how long flap lets a connection live")
	latency := fs.Duration("latency", 200*time.Millisecond, "what latency adds to each direction")
	jitter := fs.Duration("jitter", 0, "the latency's spread: each chunk is held latency ± jitter")
	down := fs.Int64("down", 0, "throttle's bandwidth towards the client, in bits per second (0: unlimited)")
	up := fs.Int64("up", 0, "throttle's bandwidth towards the upstream, in bits per second (0: unlimited)")
	logPath := fs.String("log", "", "`file` for the connection log (JSON lines); default stdout, after the ready line")
	exitOnEOF := fs.Bool("exit-on-eof", false, "exit when stdin ends (a test's pipe: the proxy ends with the test)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	m, err := faultproxy.ParseMode(*mode)
	if err != nil {
		return err
	}
	logw := stdout
	if *logPath != "" {
		f, err := os.Create(*logPath)
		if err != nil {
			return err
		}
		defer f.Close()
		logw = f
	}
	// The log's first line must follow the ready line: it is held until that is written.
	gate := &gatedWriter{w: logw, open: make(chan struct{})}
	p, err := faultproxy.Listen(*listen, *upstream, &faultproxy.Options{FlapAfter: *flapAfter, Latency: *latency, Jitter: *jitter, Down: *down, Up: *up, Log: gate})
	if err != nil {
		return err
	}
	defer p.Close()
	p.SetMode(m)
	r := ready{Listen: p.Addr(), Upstream: *upstream, Mode: m.String()}
	if *control != "" {
		ln, err := net.Listen("tcp", *control)
		if err != nil {
			return fmt.Errorf("control panel: %w", err)
		}
		srv := &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		r.Control = ln.Addr().String()
	}
	b, _ := json.Marshal(r)
	if _, err := stdout.Write(append(b, '\n')); err != nil {
		return err
	}
	close(gate.open)
	fmt.Fprintf(stderr, "faultproxy: %s -> %s, mode %s", p.Addr(), *upstream, m)
	if r.Control != "" {
		fmt.Fprintf(stderr, ", control panel on http://%s/mode", r.Control)
	}
	fmt.Fprintln(stderr)

	stdinDone := make(chan struct{})
	go func() {
		defer close(stdinDone)
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			m, err := faultproxy.ParseMode(sc.Text())
			if err != nil {
				fmt.Fprintln(stderr, err)
				continue
			}
			p.SetMode(m)
			fmt.Fprintf(stderr, "faultproxy: mode %s\n", m)
		}
	}()
	var eof <-chan struct{} // nil, which never delivers, unless -exit-on-eof
	if *exitOnEOF {
		eof = stdinDone
	}
	select {
	case <-ctx.Done():
	case <-eof:
	}
	return nil
}

// gatedWriter holds writes until open is closed.
type gatedWriter struct {
	w    io.Writer
	open chan struct{}
}

func (g *gatedWriter) Write(b []byte) (int, error) {
	<-g.open
	return g.w.Write(b)
}
