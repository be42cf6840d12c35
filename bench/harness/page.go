//go:build !js

package main

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lifeline-go/lifeline/bench/wasmsize"
	"github.com/lifeline-go/lifeline/internal/test/faultproxy"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// buildClient builds the client the Host serves into bench/.bin/assets with scripts/assets.sh
// (the Host runs with -client: what is measured is this tree's client, whatever is embedded),
// and its wasm, decompressed, beside it for the size tables.
func (e *env) buildClient() error {
	dir := e.clientDir()
	cmd := exec.Command(filepath.Join(e.root, "scripts/assets.sh"), dir)
	cmd.Dir = e.root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the client: %v\n%s", err, out)
	}
	return nil
}

// clientWasm writes the raw wasm of the client in dir (its .gz, decompressed) to
// bench/.bin/lifeline.wasm and returns that path.
func (e *env) clientWasm(dir string) (string, error) {
	f, err := os.Open(filepath.Join(dir, "lifeline.wasm.gz"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return "", err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return "", err
	}
	out := filepath.Join(e.bin, "lifeline.wasm")
	return out, os.WriteFile(out, raw, 0o644)
}

// buildNamesTwin builds the served wasm's twin with scripts/wasm.sh, the one build of it.
func (e *env) buildNamesTwin() error {
	cmd := exec.Command("bash", "scripts/wasm.sh", e.namesTwin(), "--names")
	cmd.Dir = e.root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the wasm's names twin (scripts/wasm.sh --names): %v\n%s", err, b)
	}
	return nil
}

// namesTwin is the served wasm built again without -s: the same code with its name section,
// which says which package each function comes from.
func (e *env) namesTwin() string { return filepath.Join(e.bin, "lifeline.names.wasm") }

// compressed returns the raw, gzip -9 and brotli -q11 sizes of a file, as scripts/build.sh
// compresses the wasm.
func (e *env) compressed(path string) (raw, gz, br int64, err error) {
	return wasmsize.Compressed(e.node, path)
}

// pageLoad is one load of a page, as bench/browser/pageload.js reports it: ms from navigation
// start; nil where the page had no such moment.
type pageLoad struct {
	Connected *float64
	Resource  *wasmResource
	Calls     []struct {
		Fn     string
		T0, T1 *float64
		Error  string
	}
	Compiled, Instantiated, GoReady, Ready *float64
	GoReadyFrom                            string
	// Worker is shared mode's tab 1: the worker's own figures, in the page's time.
	Worker *struct {
		Resource                                 *wasmResource
		Started, Compiled, Instantiated, GoReady *float64
	}
}

// wasmResource is a Resource Timing entry of the wasm (or socket.io's client code).
type wasmResource = struct {
	Name                                           string
	Count                                          int // entries of that URL: more than 1 when a preload went unused
	FetchStart, ResponseEnd                        *float64
	TransferSize, EncodedBodySize, DecodedBodySize float64
}

// adoptWorker gives a shared tab 1 the figures its worker saw, where the page itself has none
// (it compiles no wasm): the same columns then read both modes.
func (l *pageLoad) adoptWorker() {
	w := l.Worker
	if w == nil {
		return
	}
	if w.Resource != nil {
		l.Resource = w.Resource // the worker's fetch is the one its compile read
	}
	for _, f := range []struct{ dst, src **float64 }{{&l.Compiled, &w.Compiled}, {&l.Instantiated, &w.Instantiated}, {&l.GoReady, &w.GoReady}} {
		if *f.dst == nil {
			*f.dst = *f.src
		}
	}
	if l.GoReady != nil && l.GoReadyFrom == "" {
		l.GoReadyFrom = "worker"
	}
}

// pageLoads are one visit's loads: Lifeline in shared mode (the default; tab 1 on a first
// visit; on a repeat visit, one that finds the hub up), in-page, the tabs 2–5 of a shared first
// visit, a shared repeat visit that finds no hub (Cold), and socket.io-client.
type pageLoads struct {
	Lifeline, InPage, Tabs, Cold, Sio []pageLoad
}

// pageTrace is a traced repeat load: V8's code-cache and compile events during it.
type pageTrace struct {
	Load                                 *pageLoad
	Counts                               map[string]int
	ConsumedCacheSize, ProducedCacheSize float64
}

type pageRun struct {
	First, Repeat pageLoads
	Primer        struct{ Lifeline, InPage, Sio *pageLoad }
	Traces        []pageTrace
	Errors        []string
}

// A column of the breakdown: one figure of a load, ok false where the load has none.
type column func(l pageLoad) (float64, bool)

func known(p *float64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return *p, true
}

var (
	colFetchStart = func(l pageLoad) (float64, bool) {
		if l.Resource == nil {
			return 0, false
		}
		return known(l.Resource.FetchStart)
	}
	colBytesArrived = func(l pageLoad) (float64, bool) {
		if l.Resource == nil {
			return 0, false
		}
		return known(l.Resource.ResponseEnd)
	}
	colCompiled     = func(l pageLoad) (float64, bool) { return known(l.Compiled) }
	colInstantiated = func(l pageLoad) (float64, bool) { return known(l.Instantiated) }
	colGoReady      = func(l pageLoad) (float64, bool) { return known(l.GoReady) }
	colReady        = func(l pageLoad) (float64, bool) { return known(l.Ready) }
	colConnected    = func(l pageLoad) (float64, bool) { return known(l.Connected) }
	// From the first WebAssembly call to the instance: compile and instantiate, and as much of
	// the download as they wait for.
	colWasmCall = func(l pageLoad) (float64, bool) {
		inst, ok := known(l.Instantiated)
		if !ok || len(l.Calls) == 0 || l.Calls[0].T0 == nil {
			return 0, false
		}
		return inst - *l.Calls[0].T0, true
	}
	// From the wasm's last byte to the instance: the compile the download did not hide.
	colAfterBytes = func(l pageLoad) (float64, bool) {
		inst, ok1 := known(l.Instantiated)
		end, ok2 := colBytesArrived(l)
		if !ok1 || !ok2 {
			return 0, false
		}
		return inst - end, true
	}
	colTransfer = func(l pageLoad) (float64, bool) {
		if l.Resource == nil {
			return 0, false
		}
		return l.Resource.TransferSize, true
	}
	colEncoded = func(l pageLoad) (float64, bool) {
		if l.Resource == nil {
			return 0, false
		}
		return l.Resource.EncodedBodySize, true
	}
)

// values is one column over loads.
func values(loads []pageLoad, c column) []float64 {
	var xs []float64
	for _, l := range loads {
		if x, ok := c(l); ok {
			xs = append(xs, x)
		}
	}
	return xs
}

// med formats the median of a column, "n/a" where no load has it.
func med(loads []pageLoad, c column) string {
	xs := values(loads, c)
	if len(xs) == 0 {
		return "n/a"
	}
	return fmtMs(pct(xs, 50))
}

func fmtBytes(x float64) string {
	switch {
	case math.IsNaN(x):
		return "n/a"
	case x >= 1e6:
		return fmt.Sprintf("%.2f MB", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.1f KB", x/1e3)
	}
	return fmt.Sprintf("%.0f B", x)
}

func ratio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// A link is a network scenario 6 loads the pages over: loopback as it is, or a slow link
// between the browser and each server (internal/test/faultproxy's throttle, in this process).
type link struct {
	key, name string
	latency   time.Duration // one way
	down, up  int64         // bits per second
}

var links = []link{
	{key: "loopback", name: "loopback"},
	{key: "4g", name: "4G (9 Mbit/s down, 1.5 up, 60 ms RTT)", latency: 30 * time.Millisecond, down: 9_000_000, up: 1_500_000},
	{key: "slow4g", name: "slow 4G (1.6 Mbit/s down, 0.75 up, 150 ms RTT)", latency: 75 * time.Millisecond, down: 1_600_000, up: 750_000},
}

func (k link) throttled() bool { return k.down > 0 }

// s6Page: the page in Chromium over each link, first and repeat visits, and where the time
// goes.
func (e *env) s6Page(r *report) error {
	host, err := e.startServer(kLifeline, "s6-host", 0, "")
	if err != nil {
		return err
	}
	defer host.proc.Stop(5 * time.Second)
	sio, err := e.startServer(kSIO, "s6-sio", 0, "")
	if err != nil {
		return err
	}
	defer sio.proc.Stop(3 * time.Second)
	var inPage []pageLoad // for the sizes: a first visit that fetched the wasm itself
	for _, k := range links {
		if len(e.links) > 0 && !slices.Contains(e.links, k.key) {
			continue
		}
		res, err := e.s6Link(r, k, host.addr(), sio.addr())
		if err != nil {
			r.fail("6 "+k.name, err)
			continue
		}
		if inPage == nil {
			inPage = res.First.InPage
		}
	}
	wasmPath, err := e.clientWasm(e.clientDir())
	if err != nil {
		r.fail("6 sizes", err)
		return nil
	}
	if err := e.s6Sizes(r, wasmPath, inPage); err != nil {
		r.fail("6 sizes", err)
	}
	return nil
}

// s6Link loads the pages over k: a table, its notes and the aims of that link.
func (e *env) s6Link(r *report, k link, hostAddr, sioAddr string) (*pageRun, error) {
	loads := e.loads
	if loads <= 0 {
		loads = e.n(20, 5)
		if k.throttled() {
			loads = e.n(10, 5) // each load is seconds long over a slow link
		}
	}
	traced := 3
	if k.throttled() {
		traced = 0 // the code cache is the loopback table's question
		for _, a := range []*string{&hostAddr, &sioAddr} {
			p, err := faultproxy.Listen("127.0.0.1:0", *a, &faultproxy.Options{Latency: k.latency, Down: k.down, Up: k.up})
			if err != nil {
				return nil, err
			}
			defer p.Close()
			p.SetMode(faultproxy.Throttle)
			*a = p.Addr()
		}
	}
	t := r.table(fmt.Sprintf("6. The page in Chromium over %s: where the time goes, median of %d loads per row (ms from navigation start)", k.name, loads),
		e.s6Aims(k),
		"page", "visit", "fetch start", "bytes arrived", "compiled", "instantiated", "Go ready", "connected", "connected p90",
		"÷ socket.io", "wasm call → instance", "last byte → instance", "transferred / body", "loads")

	// The driver gets SIGTERM if the harness dies, so that it closes its browser. Four loads
	// per iteration, two of them kept open for the dwell, and slow loads on a busy machine: a
	// generous bound, still one that ends a stuck browser.
	p, err := e.bed.Start("s6-pageload-"+k.key, []string{e.node, filepath.Join(e.root, "bench/browser/pageload.js"),
		"--lifeline", "http://" + hostAddr + "/", "--sio", "http://" + sioAddr + "/page.html",
		"--n", fmt.Sprint(loads), "--dwell", fmt.Sprint(e.dwell.Milliseconds()), "--traced", fmt.Sprint(traced)},
		&testbed.Options{Dir: filepath.Join(e.root, "bench"), DeathSig: syscall.SIGTERM})
	if err != nil {
		return nil, err
	}
	if err := p.Wait(5*time.Minute + time.Duration(loads)*(3*e.dwell+60*time.Second)); err != nil {
		_ = p.Stop(5 * time.Second)
		return nil, fmt.Errorf("pageload.js: %w", err)
	}
	out, _ := os.ReadFile(p.OutLog())
	if err := p.Err(); err != nil {
		stderr, _ := os.ReadFile(p.ErrLog())
		return nil, fmt.Errorf("pageload.js: %v: %s", err, lastLines(string(stderr), 5))
	}
	var res pageRun
	// The last line: the testbed appends to the log, so a scenario run again after a stall
	// finds the first try's result before its own.
	if err := json.Unmarshal([]byte(lastLines(string(out), 1)), &res); err != nil {
		return nil, fmt.Errorf("pageload.js printed %q: %w", lastLines(string(out), 3), err)
	}
	res.adoptWorkers()

	for _, row := range breakdown(&res) {
		r.row(t, row...)
	}

	conn := func(ls []pageLoad, p float64) float64 { return pct(values(ls, colConnected), p) }
	for _, m := range []struct {
		name          string
		first, repeat []pageLoad
	}{{"shared (the default)", res.First.Lifeline, res.Repeat.Lifeline}, {"in-page", res.First.InPage, res.Repeat.InPage}} {
		r.note(t, "Lifeline %s / socket.io-client, connected: first visit %s (p90 %s), repeat visit %s (p90 %s)", m.name,
			ratio(conn(m.first, 50), conn(res.First.Sio, 50)), ratio(conn(m.first, 90), conn(res.First.Sio, 90)),
			ratio(conn(m.repeat, 50), conn(res.Repeat.Sio, 50)), ratio(conn(m.repeat, 90), conn(res.Repeat.Sio, 90)))
	}
	if k.throttled() {
		r.note(t, "the link: internal/test/faultproxy's throttle in front of each server, %v one way (each direction), %s down and %s up shared by the page's connections, in 4 KB pieces; a new connection's first bytes wait a round trip more (TCP's handshake); the browser's own fetches and the SharedWorker's alike go through it (a TCP proxy sees every process of the browser, which DevTools network emulation does not: bench/PAGELOAD.md)",
			k.latency, fmtBits(k.down), fmtBits(k.up))
	}
	r.note(t, "first visit: each load in a fresh browser context (nothing cached); a shared first visit is tab 1, and its tabs 2–5 are opened one after another beside it (the row tabs 2–5 pools them); repeat visit: one persistent profile (`launchPersistentContext`) loading the page again, each page kept open %v after connected; a shared repeat visit either finds the hub up (those loads come one after the other, after all the rest, each within the hub's 10 s idle close of the one before) or finds none and starts one from the caches, as a visit after the idle close does (each such load with a config of its own, and so a hub of its own); every iteration loads shared first (+ tabs 2–5), in-page first, socket.io first, in-page repeat, socket.io repeat, shared repeat with no hub, after one unmeasured fresh load of each", e.dwell)
	r.note(t, "shared tab 1's fetch, compile, instantiation and Go figures are the worker's own (its Resource Timing entry of the wasm, the runner's `lifeline:compiled` and `lifeline:instantiated` marks, Go's `lifeline:go-ready`), read over the DevTools protocol once the tab is connected and put in the page's time; tabs 2–5 and a repeat visit that finds the hub up load no wasm")
	r.note(t, "fetch start and bytes arrived: the client code's Resource Timing entry (fetchStart, responseEnd): the wasm for Lifeline, socket.io.min.js for socket.io; compiled: the first Module out of compileStreaming / compile (the runner's mark in the worker); instantiated: the first WebAssembly.instantiateStreaming / instantiate to give an Instance; Go ready: %s; connected: the first `lifeline:state` with state connected, socket.io's `connect`", goReadySource(res.First.InPage))
	if xs := values(res.First.InPage, colReady); len(xs) > 0 {
		r.note(t, "`lifeline:ready` (globalThis.lifeline installed), in-page: first visit %s, repeat %s (medians)",
			fmtMs(pct(xs, 50)), med(res.Repeat.InPage, colReady))
	}
	r.note(t, "transferred / body: the Resource Timing transferSize / encodedBodySize (0 transferred: served from the HTTP cache; about 300 B: revalidated, answered 304)")
	for _, p := range []struct {
		name string
		l    *pageLoad
	}{{"Lifeline shared", res.Primer.Lifeline}, {"Lifeline in-page", res.Primer.InPage}, {"socket.io-client", res.Primer.Sio}} {
		if p.l == nil {
			continue
		}
		s := fmt.Sprintf("the persistent profile's own first load of %s (not in the rows): connected %s", p.name, fmtMs(orNaN(colConnected(*p.l))))
		if x, ok := colWasmCall(*p.l); ok {
			s += ", wasm call → instance " + fmtMs(x)
		}
		r.note(t, "%s", s)
	}
	if !k.throttled() {
		e.s6CodeCache(r, t, &res)
	}
	if n := revalidated(res.Repeat.InPage); n > 0 {
		r.note(t, "%d of %d Lifeline in-page repeat loads revalidated the wasm (a 304): Chromium then no longer finds V8's code cache for it (seen with V8 made to cache at once)", n, len(res.Repeat.InPage))
	}
	for _, v := range []struct {
		name string
		ls   []pageLoad
	}{{"in-page first", res.First.InPage}, {"in-page repeat", res.Repeat.InPage}} {
		twice := 0
		for _, l := range v.ls {
			if l.Resource != nil && l.Resource.Count > 1 {
				twice++
			}
		}
		if twice > 0 {
			r.note(t, "in %d of %d %s visits the wasm's URL has more than one Resource Timing entry: it was fetched twice (a preload the page's fetch did not reuse?); the rows read the last one", twice, len(v.ls), v.name)
		}
	}
	if e.client != "" {
		r.note(t, "the client: -client %s", e.client)
	}
	if a := strings.TrimSpace(os.Getenv("BENCH_CHROMIUM_ARGS")); a != "" {
		r.note(t, "Chromium ran with BENCH_CHROMIUM_ARGS=%s: these figures are not a user's browser", a)
	}
	if len(res.Errors) > 0 {
		r.note(t, "%d loads failed, first: %s", len(res.Errors), res.Errors[0])
	}
	e.s6Judge(r, k, &res, loads)
	return &res, nil
}

// s6Aims is the aims line of a link's table.
func (e *env) s6Aims(k link) string {
	switch k.key {
	case "loopback":
		return "repeat visit: Lifeline ≤ socket.io-client; first visit: ≤ 1.6× socket.io-client; brotli wasm ≤ 700 KB (issues 14, 24); shared mode: tabs 2–5 ≤ 60 ms, tab 1 within 10% of in-page (issue 17)"
	case "4g":
		return "Lifeline shared first visit ≤ 3.0× socket.io-client; repeat visit ≤ 1.0× (issue 24)"
	case "slow4g":
		return "Lifeline shared first visit ≤ 5.0× socket.io-client; repeat visit ≤ 1.0× (issue 24)"
	}
	return ""
}

// s6Judge checks a link's aims.
func (e *env) s6Judge(r *report, k link, res *pageRun, loads int) {
	conn := func(ls []pageLoad, p float64) float64 { return pct(values(ls, colConnected), p) }
	full := loads >= 20 || (k.throttled() && loads >= 10)
	where := ""
	if k.throttled() {
		where = k.key + ": "
	}
	judgeRatio := func(aim string, ls, sio []pageLoad, limit float64, take string) {
		x := conn(ls, 50) / conn(sio, 50)
		r.judgeFull(full, "6", where+aim, x <= limit, fmt.Sprintf("%.2f× (%s / %s)", x, fmtMs(conn(ls, 50)), fmtMs(conn(sio, 50))), take)
	}
	repeatTake := "a repeat visit that neither compiles nor runs much before main: the levers tried and what each did are in bench/PAGELOAD.md"
	switch k.key {
	case "loopback":
		for _, m := range []struct {
			name          string
			first, repeat []pageLoad
		}{{"shared (the default)", res.First.Lifeline, res.Repeat.Lifeline}, {"in-page", res.First.InPage, res.Repeat.InPage}} {
			judgeRatio("repeat visit: Lifeline "+m.name+" connected ≤ socket.io-client (ratio of medians ≤ 1.0)", m.repeat, res.Repeat.Sio, 1.0, repeatTake)
			judgeRatio("first visit: Lifeline "+m.name+" connected ≤ 1.6× socket.io-client", m.first, res.First.Sio, 1.6,
				"an earlier wasm fetch, less to download and compile, less to run before main (bench/PAGELOAD.md)")
		}
		tabs := conn(res.First.Tabs, 50)
		r.judgeFull(full, "6", "shared mode: tabs 2–5 connected ≤ 60 ms (median)", tabs <= 60, fmtMs(tabs),
			"a tab that joins a running hub: its script, its port, the hub's answer (where the time goes: bench/PAGELOAD.md)")
		tab1, inpage := conn(res.First.Lifeline, 50), conn(res.First.InPage, 50)
		r.judgeFull(full, "6", "shared mode: tab 1 within 10% of the in-page first visit", tab1 <= 1.1*inpage,
			fmt.Sprintf("%s vs %s (%s)", fmtMs(tab1), fmtMs(inpage), ratio(tab1, inpage)),
			"the worker's own script and runner fetched in series before the wasm")
	case "4g", "slow4g":
		limit := 3.0
		if k.key == "slow4g" {
			limit = 5.0
		}
		judgeRatio(fmt.Sprintf("first visit: Lifeline shared connected ≤ %.1f× socket.io-client", limit), res.First.Lifeline, res.First.Sio, limit,
			"the wasm's bytes moving sooner, and fewer of them: where the time goes on this link is the row's breakdown (bench/PAGELOAD.md)")
		judgeRatio("repeat visit: Lifeline shared connected ≤ socket.io-client", res.Repeat.Lifeline, res.Repeat.Sio, 1.0, repeatTake)
	}
}

// adoptWorkers gives every shared tab 1 its worker's figures (see adoptWorker).
func (res *pageRun) adoptWorkers() {
	for _, ls := range [][]pageLoad{res.First.Lifeline, res.Repeat.Lifeline, res.Repeat.Cold} {
		for i := range ls {
			ls[i].adoptWorker()
		}
	}
}

func fmtBits(bits int64) string {
	return strconv.FormatFloat(float64(bits)/1e6, 'f', -1, 64) + " Mbit/s"
}

// breakdown is scenario 6's table: Lifeline and socket.io-client, first and repeat visit.
func breakdown(res *pageRun) [][]string {
	sioConn := map[string]float64{
		"first":  pct(values(res.First.Sio, colConnected), 50),
		"repeat": pct(values(res.Repeat.Sio, colConnected), 50),
	}
	sioConn["first, tab 1"], sioConn["first, tabs 2–5"] = sioConn["first"], sioConn["first"]
	sioConn["repeat, the hub up"], sioConn["repeat, no hub"] = sioConn["repeat"], sioConn["repeat"]
	row := func(page, visit string, ls []pageLoad, isSio bool) []string {
		cells := []string{page, visit, med(ls, colFetchStart), med(ls, colBytesArrived)}
		div := ratio(pct(values(ls, colConnected), 50), sioConn[visit])
		if isSio {
			cells = append(cells, "n/a", "n/a", "n/a")
			div = "1"
		} else {
			cells = append(cells, med(ls, colCompiled), med(ls, colInstantiated), med(ls, colGoReady))
		}
		cells = append(cells, med(ls, colConnected), fmtMs(pct(values(ls, colConnected), 90)), div)
		if isSio {
			cells = append(cells, "n/a", "n/a")
		} else {
			cells = append(cells, med(ls, colWasmCall), med(ls, colAfterBytes))
		}
		return append(cells, fmtBytes(pct(values(ls, colTransfer), 50))+" / "+fmtBytes(pct(values(ls, colEncoded), 50)), fmt.Sprint(len(ls)))
	}
	return [][]string{
		row("Lifeline shared", "first, tab 1", res.First.Lifeline, false),
		row("Lifeline shared", "first, tabs 2–5", res.First.Tabs, false),
		row("Lifeline shared", "repeat, the hub up", res.Repeat.Lifeline, false),
		row("Lifeline shared", "repeat, no hub", res.Repeat.Cold, false),
		row("Lifeline in-page", "first", res.First.InPage, false),
		row("Lifeline in-page", "repeat", res.Repeat.InPage, false),
		row("socket.io-client", "first", res.First.Sio, true),
		row("socket.io-client", "repeat", res.Repeat.Sio, true),
	}
}

func orNaN(x float64, ok bool) float64 {
	if !ok {
		return math.NaN()
	}
	return x
}

// goReadySource says where the Go ready figures came from.
func goReadySource(ls []pageLoad) string {
	n := map[string]int{}
	for _, l := range ls {
		n[l.GoReadyFrom]++
	}
	switch {
	case n["mark"]+n["worker"] == len(ls) && len(ls) > 0:
		return "the page's `performance.mark('lifeline:go-ready')`"
	case n["mark"] > 0:
		return fmt.Sprintf("the page's `performance.mark('lifeline:go-ready')` in %d loads, else the first `lifeline:state` after the instantiation", n["mark"])
	}
	return "the first `lifeline:state` after the instantiation (the page sets no `performance.mark('lifeline:go-ready')`)"
}

// s6CodeCache says whether the repeat visits compiled from V8's code cache: from the traced
// loads' own events, and from the compile times of the two visits.
func (e *env) s6CodeCache(r *report, t *table, res *pageRun) {
	first, repeat := pct(values(res.First.InPage, colWasmCall), 50), pct(values(res.Repeat.InPage, colWasmCall), 50)
	times := fmt.Sprintf("wasm call → instance, median: first visit %s, repeat %s (%s)", fmtMs(first), fmtMs(repeat), ratio(repeat, first))
	n := len(res.Traces)
	if n == 0 {
		r.note(t, "V8 code cache: no traced load (see the errors); %s", times)
		return
	}
	sum := map[string]int{}
	hits, consumed, produced := 0, 0.0, 0.0
	for _, tr := range res.Traces {
		for k, v := range tr.Counts {
			sum[k] += v
		}
		if tr.Counts["cacheHit"] > 0 {
			hits++
		}
		consumed, produced = max(consumed, tr.ConsumedCacheSize), max(produced, tr.ProducedCacheSize)
	}
	verdict := fmt.Sprintf("%d of %d compiled from the code cache (`v8.wasm.moduleCacheHit`", hits, n)
	if hits == 0 {
		verdict = fmt.Sprintf("**none** of %d compiled from the code cache (no `v8.wasm.moduleCacheHit`)", n)
	} else {
		verdict += fmt.Sprintf(", up to %s consumed)", fmtBytes(consumed))
	}
	if bad := sum["cacheInvalid"] + sum["cacheInvalidDigest"]; bad > 0 {
		verdict += fmt.Sprintf("; %d cache entries rejected as invalid", bad)
	}
	wrote := fmt.Sprintf("V8 offered the module to the cache %d times (`v8.wasm.compiledModule`) and Chromium stored it %d times (`v8.wasm.cachedModule`", sum["offeredToCache"], sum["cachedModule"])
	if produced > 0 {
		wrote += ", up to " + fmtBytes(produced)
	}
	wrote += ")"
	r.note(t, "V8 code cache: of %d more repeat loads of Lifeline, traced (not in the rows), %s; during them %s; per load %s functions were compiled lazily (`wasm.CompileLazy`) and %s top-tier compile jobs ran; %s",
		n, verdict, wrote, perLoad(sum["lazyCompiled"], n), perLoad(sum["topTierJobs"], n), times)
}

// revalidated counts the loads whose client code came from the HTTP cache after a 304: a few
// hundred bytes of headers transferred for a body of its full size.
func revalidated(ls []pageLoad) int {
	n := 0
	for _, l := range ls {
		if l.Resource != nil && l.Resource.TransferSize > 0 && l.Resource.TransferSize < 2000 && l.Resource.EncodedBodySize > l.Resource.TransferSize {
			n++
		}
	}
	return n
}

// perLoad is a count over n loads, per load.
func perLoad(total, n int) string {
	if total%n == 0 {
		return fmt.Sprint(total / n)
	}
	return fmt.Sprintf("%.1f", float64(total)/float64(n))
}

// s6Sizes: what the wasm's bytes are, and its code per package.
func (e *env) s6Sizes(r *report, path string, ls []pageLoad) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	m, err := wasmsize.Parse(b)
	if err != nil {
		return err
	}
	raw, gz, br, err := e.compressed(path)
	if err != nil {
		return err
	}
	rel, _ := filepath.Rel(e.root, path)
	if rel == "" || strings.HasPrefix(rel, "..") {
		rel = path
	}
	sum := sha256.Sum256(b)
	t := r.table(fmt.Sprintf("6b. The wasm (%s, sha256 %x…): what its bytes are", rel, sum[:6]), "", "part", "bytes", "share", "notes")
	kb := func(n int64) string { return wasmsize.Thousands(int(n)) }
	served := pct(values(ls, colEncoded), 50)
	r.row(t, "whole file, raw", kb(raw), "", fmt.Sprintf("gzip -9 %s, brotli -q11 %s (Node's zlib, as scripts/build.sh)", kb(gz), kb(br)))
	if !math.IsNaN(served) {
		r.row(t, "as served on a first visit", kb(int64(served)), fmt.Sprintf("%.1f%%", 100*served/float64(raw)), "the Resource Timing encodedBodySize")
		if int64(served) == raw {
			r.note(t, "the wasm went out uncompressed: the browser accepted neither br nor gzip")
		}
	}
	share := func(n int) string { return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(raw)) }
	code, data, names := m.Section("code"), m.Section("data"), m.Section("name")
	r.row(t, "code section", kb(int64(code)), share(code), fmt.Sprintf("%d function bodies (%s bytes), %d imported functions", len(m.Funcs), wasmsize.Thousands(m.CodeBytes()), m.ImportedFuncs))
	r.row(t, "data section", kb(int64(data)), share(data), fmt.Sprintf("%d segments holding %s bytes: the rest is each segment's offset and length", m.DataSegments, wasmsize.Thousands(m.DataBytes)))
	if names > 0 {
		r.row(t, "name section", kb(int64(names)), share(names), "function names; -ldflags=-s drops it")
	}
	rest := len(b) - code - data - names
	r.row(t, "everything else", kb(int64(rest)), share(rest), "header, type, import, function, table, memory, global, export, element and the other custom sections")
	brotliAim := float64(br)
	if !math.IsNaN(served) && served > 0 {
		brotliAim = served
	}
	r.judge("6", "brotli wasm ≤ 700 KB", brotliAim <= 700e3, fmtBytes(brotliAim)+" as served",
		"less code linked into the wasm: the per-package table under scenario 6 shows where it is")

	how := "its own name section"
	if !m.HasNames {
		twinBytes, err := os.ReadFile(e.namesTwin())
		if err == nil {
			if twin, err := wasmsize.Parse(twinBytes); err == nil && m.Rename(twin) {
				how = "the unstripped twin " + filepath.Base(e.namesTwin()) + " (built from ./wasm without -s; its code is the same, body for body)"
			}
		}
	}
	if !m.HasNames {
		r.note(t, "no sizes per package: %s has no name section and the code of bench/.bin/%s (./wasm built without -s) is not its code; build it without -ldflags=-s (or wasm-opt -g) to see them", rel, filepath.Base(e.namesTwin()))
		return nil
	}
	paths, modules, err := wasmsize.GoList(e.root, "./wasm")
	if err != nil {
		r.note(t, "package paths read from the mangled names alone: %v", err)
	}
	byPkg := wasmsize.ByPackage(m, wasmsize.NewPackages(paths))
	const top = 15
	pt := r.table(fmt.Sprintf("6c. The wasm's code per Go package: the %d largest of %d", top, len(byPkg)), "",
		"package", "bytes", "% of code", "functions")
	for _, row := range wasmsize.Rows(byPkg, m.CodeBytes(), top) {
		r.row(pt, row...)
	}
	var mods []string
	byMod := wasmsize.ByModule(byPkg, modules)
	for _, s := range byMod[:min(12, len(byMod))] {
		mods = append(mods, fmt.Sprintf("%s %.1f%%", s.Package, 100*float64(s.Bytes)/float64(m.CodeBytes())))
	}
	r.note(pt, "by module (the standard library by its top directory): %s", strings.Join(mods, ", "))
	r.note(pt, "function bodies only (the data section cannot be split by package: the linker writes no symbols for it); the names come from %s; `go run ./bench/cmd/wasmsize FILE` prints the whole list", how)
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " / ")
}
