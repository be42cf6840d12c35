//go:build !js

package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// maxStall is the longest stall of the harness's process a scenario's figures tolerate.
const maxStall = time.Second

type scenario struct {
	id   string
	name string
	run  func(*env, *report) error
	// own: the scenario builds what it runs (bench/cmd/fanout-*), so a run of such scenarios
	// alone skips the harness's build of bin/host, bin/swarm and the page.
	own bool
}

var scenarios = []scenario{
	{"1", "refused outage", (*env).s1Refused, false},
	{"2", "blackhole", (*env).s2Blackhole, false},
	{"3", "flap", (*env).s3Flap, false},
	{"4", "herd", (*env).s4Herd, false},
	{"5", "planned restart", (*env).s5Restart, false},
	{"6", "the page in Chromium", (*env).s6Page, false},
	{"7", "the Host", (*env).s7Host, false},
	{"8", "a herd of browsers, shared mode", (*env).s8Herd, false},
	{"9", "a page frozen while its link went half-open", (*env).s9Freeze, false},
	{"10", "calls through faults", (*env).s10Calls, false},
	{"11", "the cost of metrics", (*env).s11Metrics, false},
	{"streams", "the fleet's JetStream log with a stream per user", (*env).sStreams, false},
	{"fanout", "the Host's fan-out against Centrifuge's", (*env).sFanout, true},
	{"sessions", "idle sessions on one Host", (*env).sSessions, true},
	{"networks", "behind a proxy that refuses WebSockets (squid), beside socket.io", (*env).sNetworks, false},
	{"carriers", "the Host's fan-out on a WebSocket and on the HTTP carrier", (*env).sCarriers, true},
	{"engines", "the page in Chromium, Firefox and WebKit, beside socket.io", (*env).sEngines, false},
	{"access", "access that ends, fleet-wide; the cost of expiries", (*env).sAccess, false}, // access.go
	{"presence", "who is here: 2,000 pages joining, churn and idle streams, beside centrifuge", (*env).sPresence, true},
}

func main() {
	os.Exit(run())
}

func run() int {
	scaleDefault := 1.0
	if s := os.Getenv("BENCH_SCALE"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v <= 0 || v > 1 {
			fmt.Fprintf(os.Stderr, "harness: BENCH_SCALE must be a number in (0, 1], got %q\n", s)
			return 2
		}
		scaleDefault = v
	}
	scale := flag.Float64("scale", scaleDefault, "scale of durations and client counts, in (0, 1] (env BENCH_SCALE)")
	only := flag.String("only", "", "comma-separated scenario numbers to run (default: all)")
	out := flag.String("out", "", "results file (default: bench/RESULTS.md for a full run, else bench/raw/<run>/RESULTS.md)")
	noBuild := flag.Bool("no-build", false, "use the binaries already in bench/.bin")
	kinds := flag.String("kinds", strings.Join(allKinds, ","), "comma-separated client kinds to run")
	client := flag.String("client", "", "the `directory` of a client (as scripts/assets.sh writes it) for the Host to serve instead of building bench/.bin/assets (to measure one build against another)")
	loads := flag.Int("loads", 0, "scenario 6: loads per visit and page (default 20 × scale, at least 5)")
	linkKeys := flag.String("links", "", "scenario 6: comma-separated links to load the pages over: loopback, 4g, slow4g (default all)")
	dwell := flag.Duration("dwell", 3*time.Second, "scenario 6: how long a repeat visit's page stays open after connected (V8 writes its code cache only after 2 s without new top-tier code)")
	streams := flag.String("streams", streamsCounts, "scenario streams: the stream `counts` the log grows through, comma-separated (× scale; 1000000 if the machine holds it)")
	shards := flag.Int("streams-shards", 1, "scenario streams: the log's shards (jetstream.Options.Shards)")
	fanPages := flag.String("fanout-pages", "", "fanout: comma-separated page counts to run (default 2000,10000,20000 × scale)")
	fanStep := flag.Duration("fanout-step", 0, "fanout: how long each rate runs (default 15 s × scale, at least 2 s)")
	flag.Parse()
	allKinds = nil
	for k := range strings.SplitSeq(*kinds, ",") {
		if !slices.Contains([]string{kLifeline, kSIO, kRWS}, k) {
			fmt.Fprintf(os.Stderr, "harness: unknown kind %q\n", k)
			return 2
		}
		allKinds = append(allKinds, k)
	}

	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		return 1
	}
	node, err := exec.LookPath("node")
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness: node is needed for the peers:", err)
		return 1
	}
	runID := time.Now().Format("20060102-150405")
	e := &env{root: root, bin: filepath.Join(root, "bench/.bin"), raw: filepath.Join(root, "bench/raw", runID), scale: *scale, node: node,
		loads: *loads, dwell: *dwell, streamsList: *streams, streamShards: *shards, fanStep: *fanStep}
	for v := range strings.SplitSeq(*fanPages, ",") {
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "harness: -fanout-pages wants page counts, got %q\n", v)
			return 2
		}
		e.fanPages = append(e.fanPages, n)
	}
	if *linkKeys != "" {
		e.links = strings.Split(*linkKeys, ",")
		for _, k := range e.links {
			if !slices.ContainsFunc(links, func(l link) bool { return l.key == k }) {
				fmt.Fprintf(os.Stderr, "harness: -links: unknown link %q (loopback, 4g, slow4g)\n", k)
				return 2
			}
		}
	}
	if *client != "" {
		if e.client, err = filepath.Abs(*client); err == nil {
			var st os.FileInfo
			if st, err = os.Stat(e.client); err == nil && !st.IsDir() {
				err = fmt.Errorf("not a directory")
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "harness: -client %s: %v\n", *client, err)
			return 2
		}
	}
	if err := os.MkdirAll(e.raw, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		return 1
	}
	e.bed = testbed.New(e.raw)

	var chosen []scenario
	for _, s := range scenarios {
		if *only == "" || slices.Contains(strings.Split(*only, ","), s.id) {
			chosen = append(chosen, s)
		}
	}
	full := len(chosen) == len(scenarios) && *scale == 1 && len(allKinds) == 3 &&
		*client == "" && *loads == 0 && *dwell == 3*time.Second && *streams == streamsCounts && *shards == 1 &&
		*fanPages == "" && *fanStep == 0 && *linkKeys == ""
	if *out == "" {
		*out = filepath.Join(e.raw, "RESULTS.md")
		if full {
			*out = filepath.Join(root, "bench/RESULTS.md")
		}
	}

	defer e.bed.StopOnSignal("harness", 2*time.Second)()
	defer e.bed.StopAll(2 * time.Second)

	started := time.Now()
	fmt.Printf("harness: scale %g, raw logs in %s\n", e.scale, e.raw)
	own := true
	for _, s := range chosen {
		own = own && s.own
	}
	if !*noBuild && !own {
		if err := e.build(); err != nil {
			fmt.Fprintln(os.Stderr, "harness:", err)
			return 1
		}
	}
	rep := newReport()
	stopWatch := make(chan struct{})
	defer close(stopWatch)
	rep.stalls = watchStalls(stopWatch)
	for _, s := range chosen {
		// A scenario during which the machine stalled for more than a second is run again,
		// once: its figures would be the machine's.
		for try := 1; ; try++ {
			t0 := time.Now()
			mark := rep.mark()
			fmt.Printf("\n### scenario %s: %s\n", s.id, s.name)
			if err := s.run(e, rep); err != nil {
				rep.fail(s.id+" "+s.name, err)
			}
			e.bed.StopAll(2 * time.Second) // nothing of one scenario outlives it
			fmt.Printf("### scenario %s took %.0f s\n", s.id, time.Since(t0).Seconds())
			worst := rep.stalls.worst(t0, time.Now())
			if worst <= maxStall || try == 2 {
				if worst > maxStall {
					rep.warn(fmt.Sprintf("scenario %s: the machine stalled for %.1f s during it, in both tries; its figures include the stall", s.id, worst.Seconds()))
				}
				break
			}
			fmt.Printf("### the machine stalled for %.1f s during scenario %s: running it again\n", worst.Seconds(), s.id)
			rep.rollback(mark)
			rep.warn(fmt.Sprintf("scenario %s: the first try was discarded, the machine stalled for %.1f s during it", s.id, worst.Seconds()))
		}
	}
	if err := e.writeResults(*out, rep, started, chosen); err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		return 1
	}
	fmt.Printf("\nharness: %d scenarios in %.0f s; results in %s\n", len(chosen), time.Since(started).Seconds(), *out)
	if len(rep.errors) > 0 {
		return 1
	}
	return 0
}

func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("run the harness inside the repository (go run ./bench/harness)")
	}
	return filepath.Dir(mod), nil
}

// build builds bin/host, bin/swarm and the calls scenario's callhost and callpages into
// bench/.bin, the page into bench/.bin/web (unless -web names other assets) with an
// unstripped twin of its wasm, and installs the pinned npm packages of bench/ when they are
// missing or stale.
func (e *env) build() error {
	fmt.Println("harness: building bench/.bin/host, swarm, callhost, callpages and the page's client (bench/.bin/assets)")
	for _, b := range [][2]string{{"host", "./cmd/host"}, {"swarm", "./cmd/swarm"}, {"callhost", "./bench/cmd/callhost"}, {"callpages", "./bench/cmd/callpages"}} {
		if b[0] != "host" && !slices.Contains(allKinds, kLifeline) {
			continue
		}
		// With fault injection: the scenarios drive bin/host's fault panel (-faults) and serve
		// the client they built (-client).
		cmd := exec.Command("go", "build", "-tags", "lifeline_faults", "-o", filepath.Join(e.bin, b[0]), b[1])
		cmd.Dir = e.root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", b[1], err, out)
		}
	}
	if e.client == "" {
		if err := e.buildClient(); err != nil {
			return err
		}
	}
	if err := e.buildNamesTwin(); err != nil {
		return err
	}
	benchDir := filepath.Join(e.root, "bench")
	lock, errL := os.Stat(filepath.Join(benchDir, "package-lock.json"))
	inst, errI := os.Stat(filepath.Join(benchDir, "node_modules/.package-lock.json"))
	if errI != nil || (errL == nil && lock.ModTime().After(inst.ModTime())) {
		fmt.Println("harness: npm ci in bench/")
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = benchDir
		cmd.Env = append(os.Environ(), "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("npm ci in bench/: %v\n%s", err, out)
		}
	}
	return nil
}

// machine describes where the figures come from.
func machine() string {
	var parts []string
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				parts = append(parts, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":")))
				break
			}
		}
	}
	parts = append(parts, fmt.Sprintf("%d cores", runtime.NumCPU()))
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				parts = append(parts, fmt.Sprintf("%.0f GiB RAM", kb/(1<<20)))
			}
		}
	}
	if out, err := exec.Command("uname", "-sr").Output(); err == nil {
		parts = append(parts, strings.TrimSpace(string(out)))
	}
	return strings.Join(parts, ", ")
}

func cmdOut(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

// pkgVersion reads an installed npm package's version.
func (e *env) pkgVersion(name string) string {
	b, err := os.ReadFile(filepath.Join(e.root, "bench/node_modules", name, "package.json"))
	if err != nil {
		return "?"
	}
	var p struct{ Version string }
	if err := jsonUnmarshal(b, &p); err != nil {
		return "?"
	}
	return p.Version
}
