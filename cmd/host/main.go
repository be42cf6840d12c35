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
	"github.com/lifeline-go/lifeline/hostplugin/jetstream"
	"github.com/lifeline-go/lifeline/hostplugin/restart"
)

// upMode is the health's fault mode of a Host without fault modes: what the fault panel reads
// for none (internal/fault's Fault{}.String(), which TestUpModeIsThePanels holds it to).
const upMode = "up"

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run is the whole command; it returns the exit status. Logs and errors go to stderr.
func run(args []string, stderr io.Writer) int {
	flags := flag.NewFlagSet("host", flag.ContinueOnError)
	flags.SetOutput(stderr)
	addr := flags.String("addr", "127.0.0.1:8080", "`address` to listen on")
	configPath := flags.String("config", "", "config `file` (JSON); default: the built-in defaults")
	webDir := flags.String("web", "web", "`directory` holding the demo page")
	clientDir := flags.String("client", "", "serve the client from this `directory` (as scripts/assets.sh writes it) instead of the built-in one")
	faults := flags.Bool("faults", false, "serve the fault panel at /_lifeline/faults (loopback clients only)")
	ledgerFile := flags.String("ledger", "", "answer the call ledger.run with its data, counting its runs in `file` (shared by every Host given it) and serving the counts at /_lifeline/ledger (loopback clients only): the chaos soak's")
	certFile := flags.String("cert", "", "TLS certificate `file` (PEM); with -key the Host serves https and pages dial wss")
	keyFile := flags.String("key", "", "TLS private key `file` (PEM)")
	id := flags.String("id", "", "this Host's `name` in a fleet, shown on the page and in /_lifeline/health (default hostname:port)")
	publishTicks := flags.Bool("ticks", true, "publish the demo stream ticks (in a fleet every Host may: one tick per second lands)")
	pidFile := flags.String("pidfile", "", "write the PID of the serving process to `file` (after a SIGUSR2 handoff, the successor's), for a supervisor that follows it (systemd PIDFile=)")
	drainOnStop := flags.Bool("drain-on-stop", false, "on SIGTERM with no successor, drain (goaway back to the same place, up to drainTimeoutMs) instead of closing every session at once with 1012: for a Host behind a load balancer whose other Hosts take its pages")
	metricsAddr := flags.String("metrics", "", "serve Prometheus metrics at http://`address`/metrics (a bare :port is loopback's); default none")
	signoutsFile := flags.String("signouts", "", "the demo's sign-in: a page's cookie "+userCookie+" names its user, and POST "+signoutPath+"?user=NAME (loopback clients only) signs NAME out on every Host sharing `file` and ends NAME's pages fleet-wide (access.go)")
	stopRetryAfter := flags.Duration("stop-retry-after", 0, "on SIGTERM with no successor, the least the pages should wait before dialing again (sent with close 1012 as service-restart retry-after=<ms>); 0: no minimum")
	var fleet fleetFlags
	flags.StringVar(&fleet.natsURL, "nats", "", "keep the stream logs in NATS JetStream at `url` (comma-separated servers), shared by every Host using it")
	flags.StringVar(&fleet.embeddedDir, "nats-embedded", "", "start a NATS server with JetStream storing in `dir` inside this Host and keep the stream logs there")
	flags.StringVar(&fleet.embeddedAt, "nats-addr", "127.0.0.1:4222", "`address` of the embedded NATS server, for the other Hosts' -nats")
	flags.IntVar(&fleet.replicas, "nats-replicas", 1, "replicas of each JetStream shard (3 in a 3-node NATS cluster)")
	flags.IntVar(&fleet.shards, "nats-shards", 1, "JetStream streams (shards) the stream log is spread over; the same on every Host")
	flags.IntVar(&fleet.maxEvents, "nats-max-events", 4096, "events each stream keeps for replay")
	flags.DurationVar(&fleet.maxAge, "nats-max-age", 24*time.Hour, "how long an event is kept for replay (negative: no limit)")
	flags.BoolVar(&fleet.migrate, "nats-migrate", false, "copy the previous JetStream layout (a stream per Lifeline stream) into the shards at start; stop every Host of the previous version first")
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
	if *stopRetryAfter < 0 {
		fmt.Fprintf(stderr, "host: -stop-retry-after must not be negative, got %v\n", *stopRetryAfter)
		return 2
	}
	if err := toolingAvailable(*faults, *clientDir, *ledgerFile); err != nil {
		fmt.Fprintf(stderr, "host: %v\n", err)
		return 2
	}
	// Before anything else: SIGUSR2's default action would end the process, and a
	// supervisor may signal a successor as soon as it has written its PID file.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM)
	if upgradeSignal != nil {
		signal.Notify(sigs, upgradeSignal)
	}
	defer signal.Stop(sigs)

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

	logger := slog.New(slog.NewTextHandler(stderr, nil))
	// The listening socket: the predecessor's (a SIGUSR2 handoff), systemd's (socket
	// activation), or a new one.
	rs, err := restart.New(&restart.Options{
		PIDFile:               *pidFile,
		DrainWithoutSuccessor: *drainOnStop,
		RetryAfter:            *stopRetryAfter,
		Logger:                logger,
	})
	if err != nil {
		fmt.Fprintf(stderr, "host: %v\n", err)
		return 1
	}
	defer rs.Stop()
	ln, err := rs.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "host: %v\n", err)
		return 1
	}
	if *id == "" {
		name, _ := os.Hostname()
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		*id = name + ":" + port
	}
	shared, closeLog, err := openLog(fleet, *id, logger)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "host: %v\n", err)
		return 1
	}
	defer closeLog()
	mx, err := listenMetrics(*metricsAddr)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "host: %v\n", err)
		return 1
	}
	defer mx.Close()
	// The demo's streams (ticks, host, board) are public.
	// Pages say who they are with a cookie, and the streams room.* carry presence
	// (presence.go).
	opts := &hostplugin.Options{Logger: logger, Authorize: hostplugin.PublicStreams,
		Authenticate: demoAuthenticate, Presence: demoPresence(shared)}
	if shared != nil {
		opts.Log = shared
		if log, ok := shared.(*jetstream.Log); ok {
			// The fleet's balancer needs no sticky sessions: a page's POST that reaches
			// another Host is carried to its session's over NATS; an end of access made on
			// one Host ends the pages of every Host.
			opts.Relay = jetstream.NewRelay(log)
			opts.Bus = jetstream.NewBus(log)
		}
	}
	calls, err := openCalls(shared, cfg, logger)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "host: %v\n", err)
		return 1
	}
	if calls != nil {
		defer calls.Close()
		opts.Calls = calls
	}
	var signins *signIns
	if *signoutsFile != "" {
		if signins, err = newSignIns(*signoutsFile); err != nil {
			ln.Close()
			fmt.Fprintf(stderr, "host: -signouts: %v\n", err)
			return 1
		}
		opts.Authenticate = signins.authenticate
	}
	mx.observe(opts)
	h, err := hostplugin.New(cfg, opts)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "host: %v\n", err)
		return 1
	}
	handleFleetCall(h, *id, logger) // the fleet test's call (calls.go)
	installBoard(h, logger)         // the demo's calls (demo.go)
	if *clientDir != "" {
		if err := serveClientFrom(h, *clientDir); err != nil {
			ln.Close()
			fmt.Fprintf(stderr, "host: -client: %v\n", err)
			return 1
		}
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
	faultMode := func() string { return upMode } // without -faults the Host has no fault modes
	pages := func(next http.Handler) http.Handler { return next }
	if *faults {
		if faultMode, pages, err = installFaults(h, mux); err != nil {
			ln.Close()
			fmt.Fprintf(stderr, "host: -faults: %v\n", err)
			return 1
		}
	}
	if *ledgerFile != "" {
		closeLedger, err := installLedger(h, mux, *ledgerFile)
		if err != nil {
			ln.Close()
			fmt.Fprintf(stderr, "host: -ledger: %v\n", err)
			return 1
		}
		defer closeLedger()
	}
	if signins != nil {
		mux.Handle(signoutPath, signins.serveSignOut(h))
	}
	mux.Handle("/_lifeline/health", health(h, faultMode, *id, shared, rs.Replaced()))
	mux.Handle("/_lifeline/live", h.LivenessHandler())
	mux.Handle("/_lifeline/ready", h.ReadinessHandler())
	mx.serve(logger)
	// The demo page is a plain page: the plugin injects its client, as on an embedder's site.
	mux.Handle("/", pages(h.Handler(http.FileServer(http.Dir(*webDir)))))
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
	if err := rs.Ready(); err != nil {
		logger.Error("host: cannot say it is ready", "err", err)
		return 1
	}
	logger.Info("host: serving", "url", scheme+"://"+ln.Addr().String(), "web", *webDir, "config", *configPath,
		"faults", *faults, "id", *id, "pid", os.Getpid(), "successor", rs.HasPredecessor())
	if rs.HasPredecessor() {
		go func() {
			if err := rs.WaitForPredecessor(ctx); err != nil && ctx.Err() == nil {
				logger.Warn("host: the predecessor", "err", err)
				return
			}
			if ctx.Err() == nil {
				logger.Info("host: the predecessor has exited")
			}
		}()
	}

	for {
		select {
		case err := <-serveErr:
			logger.Error("host: server stopped", "err", err)
			return 1
		case <-rs.Replaced():
			return shutdown(rs, h, srv, stopTicks, "a successor is ready", sigs, logger)
		case sig := <-sigs:
			switch {
			case sig == syscall.SIGHUP:
				if *configPath == "" {
					logger.Warn("host: SIGHUP: no -config file to reload")
					continue
				}
				_ = h.Reload(*configPath) // logs either way; a refused file changes nothing
				if calls != nil {
					calls.SetWindow(h.Config().CallDedup())
				}
				continue
			case sig == upgradeSignal:
				if fleet.embeddedDir != "" {
					// The successor would start a second NATS server on the same address
					// and store.
					logger.Error("host: SIGUSR2 refused: a Host with -nats-embedded cannot hand off; restart it with SIGTERM")
					continue
				}
				logger.Info("host: SIGUSR2: starting a successor that inherits the listening socket")
				go func() {
					if err := rs.Upgrade(); err != nil {
						logger.Error("host: handoff failed; this process carries on serving", "err", err)
					}
				}()
				continue
			}
			return shutdown(rs, h, srv, stopTicks, sig.String(), sigs, logger)
		}
	}
}

// shutdown ends the Host the way its situation asks (restart.Restarter.Shutdown): drained to
// a successor that took over the socket; with none, every session closed at once with 1012
// (or drained, with -drain-on-stop). A second signal exits at once.
func shutdown(rs *restart.Restarter, h *hostplugin.Host, srv *http.Server, stopTicks func(), why string, sigs <-chan os.Signal, logger *slog.Logger) int {
	logger.Info("host: shutting down", "why", why, "sessions", h.Sessions())
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), h.Config().DrainTimeout()+5*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		closed, err := rs.Shutdown(ctx, srv, h)
		stopTicks()
		if err != nil {
			logger.Warn("host: shutdown", "err", err)
		}
		logger.Info("host: stopped", "closed", closed, "took", time.Since(start).Round(time.Millisecond))
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

// health answers the Host's Stats as JSON, with its fault mode (faultMode: "up" without -faults), its id
// and, in a fleet, the state of the shared log; 503 while it is not ready, draining or cut off from the shared log (it could
// only reset pages then), so a load balancer stops sending pages to it. Draining to a
// successor is no reason: the successor serves this same socket, so the address is healthy
// (a request this process accepted just before the handoff is answered here).
func health(h *hostplugin.Host, faultMode func() string, id string, shared sharedLog, replaced <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := struct {
			hostplugin.Stats
			Fault string            `json:"fault"` // as the fault panel reads it
			Host  string            `json:"host"`
			Log   *jetstream.Health `json:"log,omitempty"`
		}{Stats: h.Stats(), Fault: faultMode(), Host: id}
		if shared != nil {
			lh := shared.Health()
			st.Log = &lh
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		handedOff := false
		select {
		case <-replaced:
			handedOff = true
		default:
		}
		if !st.Ready || (st.Draining && !handedOff) || (st.Log != nil && !st.Log.Connected) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(st)
	})
}
