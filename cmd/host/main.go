//go:build !js

package main

import (
	"context"
	"crypto/tls"
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
	"syscall"
	"time"

	"github.com/lifeline-go/lifeline/hostplugin"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run is the whole command; it returns the exit status. Logs and errors go to stderr.
func run(args []string, stderr io.Writer) int {
	flags := flag.NewFlagSet("host", flag.ContinueOnError)
	flags.SetOutput(stderr)
	addr := flags.String("addr", "127.0.0.1:8080", "`address` to listen on")
	configPath := flags.String("config", "", "config `file` (JSON); default: the built-in defaults")
	webDir := flags.String("web", "web", "`directory` holding the demo page, the wasm build and wasm_exec.js")
	faults := flags.Bool("faults", false, "serve the fault panel at /_lifeline/faults (loopback clients only)")
	certFile := flags.String("cert", "", "TLS certificate `file` (PEM); with -key the Host serves https and pages dial wss")
	keyFile := flags.String("key", "", "TLS private key `file` (PEM)")
	id := flags.String("id", "", "this Host's `name` in a fleet, shown on the page and in /_lifeline/health (default hostname:port)")
	publishTicks := flags.Bool("ticks", true, "publish the demo stream ticks (in a fleet every Host may: one tick per second lands)")
	var fleet fleetFlags
	flags.StringVar(&fleet.natsURL, "nats", "", "keep the stream logs in NATS JetStream at `url` (comma-separated servers), shared by every Host using it")
	flags.StringVar(&fleet.embeddedDir, "nats-embedded", "", "start a NATS server with JetStream storing in `dir` inside this Host and keep the stream logs there")
	flags.StringVar(&fleet.embeddedAt, "nats-addr", "127.0.0.1:4222", "`address` of the embedded NATS server, for the other Hosts' -nats")
	flags.IntVar(&fleet.replicas, "nats-replicas", 1, "replicas of each JetStream stream (3 in a 3-node NATS cluster)")
	flags.IntVar(&fleet.maxEvents, "nats-max-events", 4096, "events each JetStream stream keeps for replay")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if (*certFile == "") != (*keyFile == "") {
		fmt.Fprintf(stderr, "host: -cert and -key go together (got -cert %q, -key %q)\n", *certFile, *keyFile)
		return 2
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(stderr, "host: unexpected arguments %q\n", flags.Args())
		return 2
	}

	cfg := hostplugin.DefaultConfig()
	if *configPath != "" {
		var err error
		if cfg, err = hostplugin.LoadConfig(*configPath); err != nil {
			fmt.Fprintf(stderr, "host: %v\n", err)
			return 1
		}
	}
	if st, err := os.Stat(*webDir); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "host: -web %s is not a directory\n", *webDir)
		return 1
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "host: %v\n", err)
		return 1
	}
	if *id == "" {
		name, _ := os.Hostname()
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		*id = name + ":" + port
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	shared, closeLog, err := openLog(fleet, *id, logger)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "host: %v\n", err)
		return 1
	}
	defer closeLog()
	opts := &hostplugin.Options{Logger: logger}
	if shared != nil {
		opts.Log = shared
	}
	h, err := hostplugin.New(cfg, opts)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "host: %v\n", err)
		return 1
	}
	setHostBaseline(h, *id)
	scheme := "http"
	if *certFile != "" {
		// The page derives its events URL from its own: served over https, it dials wss.
		cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			ln.Close()
			fmt.Fprintf(stderr, "host: -cert/-key: %v\n", err)
			return 1
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		scheme = "https"
	}

	mux := http.NewServeMux()
	mux.Handle("/_lifeline/health", health(h, *id, shared))
	if *faults {
		mux.Handle("/_lifeline/faults", h.FaultPanel())
	}
	mux.Handle("/", h.Handler(newStatic(*webDir, logger)))
	srv := &http.Server{
		Handler: mux,
		// A client that never finishes its headers must not hold a connection forever.
		// There is no write timeout: sockets and held upgrades (stall-open) are long.
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}

	ctx, stopTicks := context.WithCancel(context.Background())
	defer stopTicks()
	switch {
	case !*publishTicks:
		setTicksBaseline(h)
	case shared != nil:
		go fleetTicks(ctx, h, shared, logger)
	default:
		go ticks(ctx, h, logger)
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	h.SetReady(true)
	logger.Info("host: serving", "url", scheme+"://"+ln.Addr().String(), "web", *webDir, "config", *configPath, "faults", *faults, "id", *id)

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	for {
		select {
		case err := <-serveErr:
			logger.Error("host: server stopped", "err", err)
			return 1
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				if *configPath == "" {
					logger.Warn("host: SIGHUP: no -config file to reload")
					continue
				}
				_ = h.Reload(*configPath) // logs either way; a refused file changes nothing
				continue
			}
			return shutdown(h, srv, stopTicks, sig, sigs, logger)
		}
	}
}

// shutdown drains, then stops. The listener closes first so that pages told to come back are
// not readmitted by this Host on their way out. A second signal exits at once.
func shutdown(h *hostplugin.Host, srv *http.Server, stopTicks func(), sig os.Signal, sigs <-chan os.Signal, logger *slog.Logger) int {
	logger.Info("host: shutting down: draining", "signal", sig.String(), "sessions", h.Sessions())
	ctx, cancel := context.WithTimeout(context.Background(), h.Config().DrainTimeout()+5*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		stopped := make(chan error, 1)
		go func() { stopped <- srv.Shutdown(ctx) }()
		closed := h.Drain(ctx, "")
		_ = h.Close() // releases held upgrades, which Shutdown waits for
		stopTicks()
		if err := <-stopped; err != nil {
			logger.Warn("host: HTTP shutdown", "err", err)
		}
		logger.Info("host: stopped", "closedAfterDrain", closed)
	}()
	select {
	case <-done:
		return 0
	case sig := <-sigs:
		logger.Warn("host: second signal, exiting now", "signal", sig.String())
		return 1
	}
}

// ticks publishes the demo stream once a second. n is the stream's sequence number: this is
// its only writer and a Host's log starts empty, so the baseline of a reset at head is
// exactly {"n": head.Seq}.
func ticks(ctx context.Context, h *hostplugin.Host, logger *slog.Logger) {
	setTicksBaseline(h)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var n uint64
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			n++
			data := fmt.Appendf(nil, `{"n":%d,"at":%d}`, n, now.UnixMilli())
			if _, err := h.Publish(ctx, "ticks", data); err != nil {
				n--
				if !errors.Is(err, hostplugin.ErrClosed) {
					logger.Error("host: publishing a tick", "err", err)
				}
			}
		}
	}
}

// health answers the Host's Stats as JSON, with its id and, in a fleet, the state of the
// shared log; 503 while it is not ready, draining or cut off from the shared log (it could
// only reset pages then), so a load balancer stops sending pages to it.
func health(h *hostplugin.Host, id string, shared sharedLog) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := struct {
			hostplugin.Stats
			Host string                `json:"host"`
			Log  *hostplugin.LogHealth `json:"log,omitempty"`
		}{Stats: h.Stats(), Host: id}
		if shared != nil {
			lh := shared.Health()
			st.Log = &lh
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if !st.Ready || st.Draining || (st.Log != nil && !st.Log.Connected) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(st)
	})
}
