//go:build !js

// Command soak is Lifeline's chaos soak: bin/swarm processes (many clients each) and
// Chromium pages against bin/host, through an in-process fault proxy
// (internal/test/faultproxy: its latency, reset and stall modes), under randomized faults for a while (SIGKILLs and SIGUSR2
// handoffs of the Host among them); it asserts that every client recovers after every fault
// within deadline + top cap + 1 s, that the "ticks" stream reaches every client once each in
// order or through an explicit reset, that every call a client made (SOAK_CALLS each, every
// other one keyed) has the one outcome its Promise may have, against the handler runs the
// Hosts counted (bin/host -ledger; calls.go has the rules), that the Host's session count
// matches the connected clients at the end, that the clients' goroutines and heap return to
// their baseline, and that nothing panicked.
//
//	go run ./e2e/soak                          # 10 minutes, 200 clients × 500 calls, 3 pages
//	SOAK_DURATION=60s SOAK_CLIENTS=50 SOAK_CALLS=100 SOAK_PAGES=1 go run ./e2e/soak   # the smoke version
//
// It needs bin/host and bin/swarm built (scripts/build.sh) and, for pages, e2e/'s npm
// packages and /usr/bin/chromium (scripts/setup-e2e.sh). Everything listens on loopback; every
// child runs in its own process group (internal/test/testbed) and is stopped on exit, failure and
// interruption included, and killed by the kernel if the soak itself is. Exit status 0
// when every assertion held, 1 otherwise, 2 when the soak could not run.
//
// The timing is shortened so that more faults fit in (see soakConfig): deadline 3 s, top cap
// 2 s, so the recovery bound is 6 s; heartbeat 1 s (half-open links are noticed after 2.5 s).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// The soak's timing: shorter than the defaults so that dozens of faults fit in ten minutes.
const (
	deadlineMs  = 3000
	maxDelayMs  = 2000
	heartbeatMs = 1000
	recoveryJS  = `{"slowAfterMs":1000,"deadlineMs":3000,"initialDelayMs":200,"maxDelayMs":2000,"factor":2,"jitter":0.5,"stableAfterMs":2000}`
	bound       = (deadlineMs+maxDelayMs)*time.Millisecond + time.Second
	perProc     = 50 // clients per bin/swarm process
)

// soakConfig is the Host config. The accept rate is raised above the default (200/s, burst
// 100) so that admission control's own 1013 retry-after does not stretch recoveries beyond the
// bound being checked: the soak asserts the page's recovery, not the herd queue.
func soakConfig(allowedOrigin string) string {
	origins := ""
	if allowedOrigin != "" {
		origins = `,"allowedOrigins":[` + strconv.Quote(allowedOrigin) + `]`
	}
	return `{"recovery":` + recoveryJS + `,"heartbeatMs":` + strconv.Itoa(heartbeatMs) +
		`,"acceptRate":5000,"acceptBurst":2000,"drainTimeoutMs":3000` + origins + "}\n"
}

type options struct {
	duration time.Duration
	clients  int
	calls    int // per client
	pages    int
	seed     uint64
	root     string
	logDir   string
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func main() {
	os.Exit(run())
}

func run() int {
	var o options
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	dur, err := time.ParseDuration(envOr("SOAK_DURATION", "10m"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak: SOAK_DURATION:", err)
		return 2
	}
	clients, _ := strconv.Atoi(envOr("SOAK_CLIENTS", "200"))
	pages, _ := strconv.Atoi(envOr("SOAK_PAGES", "3"))
	calls, _ := strconv.Atoi(envOr("SOAK_CALLS", "500"))
	seed, _ := strconv.ParseUint(envOr("SOAK_SEED", "0"), 10, 64)
	fs.DurationVar(&o.duration, "duration", dur, "how long faults are injected (env SOAK_DURATION)")
	fs.IntVar(&o.clients, "clients", clients, "native clients (env SOAK_CLIENTS)")
	fs.IntVar(&o.pages, "pages", pages, "Chromium pages (env SOAK_PAGES)")
	fs.IntVar(&o.calls, "calls", calls, "calls each native client makes, every other one keyed (env SOAK_CALLS)")
	fs.Uint64Var(&o.seed, "seed", seed, "seed of the fault schedule; 0: random (env SOAK_SEED)")
	fs.StringVar(&o.root, "root", ".", "the repository root (bin/, web/, e2e/)")
	fs.StringVar(&o.logDir, "logs", os.Getenv("SOAK_LOGS"), "directory for the children's stderr (default: a new temporary one)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if o.clients < 1 || o.pages < 0 || o.calls < 0 || o.duration <= 0 {
		fmt.Fprintln(os.Stderr, "soak: need clients ≥ 1, pages ≥ 0, calls ≥ 0, duration > 0")
		return 2
	}
	if o.seed == 0 {
		o.seed = rand.Uint64()
	}
	if o.logDir == "" {
		if o.logDir, err = os.MkdirTemp("", "lifeline-soak-"); err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			return 2
		}
	} else if err := os.MkdirAll(o.logDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	if o.root, err = filepath.Abs(o.root); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A hard limit on the whole run: set-up, warm-up and the final checks take ~20 s, and with
	// calls the primer holds up to 6 s and the last calls' outcomes come a few seconds after
	// the faults end.
	ctx, cancel := context.WithTimeoutCause(ctx, o.duration+45*time.Second, errors.New("soak: over its time limit (duration + 45 s)"))
	defer cancel()
	s := newSoak(o)
	code := s.run(ctx)
	fmt.Fprintf(os.Stderr, "soak: children's stderr in %s\n", o.logDir)
	return code
}
