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
	"strings"
	"syscall"
	"time"

	"github.com/lifeline-go/lifeline/bench/wasmsize"
	"github.com/lifeline-go/lifeline/internal/testbed"
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
	Resource  *struct {
		Name                                           string
		Count                                          int // entries of that URL: more than 1 when a preload went unused
		FetchStart, ResponseEnd                        *float64
		TransferSize, EncodedBodySize, DecodedBodySize float64
	}
	Calls []struct {
		Fn     string
		T0, T1 *float64
		Error  string
	}
	Compiled, Instantiated, GoReady, Ready *float64
	GoReadyFrom                            string
}

// pageLoads are one visit's loads: Lifeline in shared mode (the default; tab 1 on a first
// visit), in-page, the tabs 2–5 of a shared first visit, and socket.io-client.
type pageLoads struct {
	Lifeline, InPage, Tabs, Sio []pageLoad
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

// s6Page: the page in Chromium, first and repeat visits, and where the time goes.
func (e *env) s6Page(r *report) error {
	loads := e.loads
	if loads <= 0 {
		loads = e.n(20, 5)
	}
	t := r.table(fmt.Sprintf("6. The page in Chromium: where the time goes, median of %d loads per row (ms from navigation start)", loads),
		"repeat visit: Lifeline ≤ socket.io-client; first visit: ≤ 1.6× socket.io-client; brotli wasm ≤ 1.2 MB (issue 14); shared mode: tabs 2–5 ≤ 60 ms, tab 1 within 10% of in-page (issue 17)",
		"page", "visit", "fetch start", "bytes arrived", "instantiated", "Go ready", "connected", "connected p90",
		"÷ socket.io", "wasm call → instance", "last byte → instance", "transferred / body", "loads")
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

	// The driver gets SIGTERM if the harness dies, so that it closes its browser. Four loads
	// per iteration, two of them kept open for the dwell, and slow loads on a busy machine: a
	// generous bound, still one that ends a stuck browser.
	p, err := e.bed.Start("s6-pageload", []string{e.node, filepath.Join(e.root, "bench/browser/pageload.js"),
		"--lifeline", "http://" + host.addr() + "/", "--sio", "http://" + sio.addr() + "/page.html",
		"--n", fmt.Sprint(loads), "--dwell", fmt.Sprint(e.dwell.Milliseconds())},
		&testbed.Options{Dir: filepath.Join(e.root, "bench"), DeathSig: syscall.SIGTERM})
	if err != nil {
		return err
	}
	if err := p.Wait(5*time.Minute + time.Duration(loads)*(3*e.dwell+30*time.Second)); err != nil {
		_ = p.Stop(5 * time.Second)
		return fmt.Errorf("pageload.js: %w", err)
	}
	out, _ := os.ReadFile(p.OutLog())
	if err := p.Err(); err != nil {
		stderr, _ := os.ReadFile(p.ErrLog())
		return fmt.Errorf("pageload.js: %v: %s", err, lastLines(string(stderr), 5))
	}
	var res pageRun
	// The last line: the testbed appends to the log, so a scenario run again after a stall
	// finds the first try's result before its own.
	if err := json.Unmarshal([]byte(lastLines(string(out), 1)), &res); err != nil {
		return fmt.Errorf("pageload.js printed %q: %w", lastLines(string(out), 3), err)
	}

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
	r.note(t, "first visit: each load in a fresh browser context (nothing cached); a shared first visit is tab 1, and its tabs 2–5 are opened one after another beside it (the row tabs 2–5 pools them); repeat visit: one persistent profile (`launchPersistentContext`) loading the page again, each page kept open %v after connected, so a shared repeat visit finds the hub its predecessor left (extendedLifetime keeps it up to 5 min after its last tab); every iteration loads shared first (+ tabs 2–5), in-page first, socket.io first, shared repeat, in-page repeat, socket.io repeat, after one unmeasured fresh load of each", e.dwell)
	r.note(t, "shared mode runs the hub in a SharedWorker, where this probe cannot see: its rows have no fetch or compile figures")
	r.note(t, "fetch start and bytes arrived: the client code's Resource Timing entry (fetchStart, responseEnd): the wasm for Lifeline, socket.io.min.js for socket.io; instantiated: the first WebAssembly.instantiateStreaming / instantiate to give an Instance (compileStreaming and compile are stamped too); Go ready: %s; connected: the first `lifeline:state` with state connected, socket.io's `connect`", goReadySource(res.First.InPage))
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
	e.s6CodeCache(r, t, &res)
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

	wasmPath, err := e.clientWasm(e.clientDir())
	if err != nil {
		r.fail("6 sizes", err)
	}
	full := loads >= 20
	for _, m := range []struct {
		name          string
		first, repeat []pageLoad
	}{{"shared (the default)", res.First.Lifeline, res.Repeat.Lifeline}, {"in-page", res.First.InPage, res.Repeat.InPage}} {
		repeatRatio := conn(m.repeat, 50) / conn(res.Repeat.Sio, 50)
		firstRatio := conn(m.first, 50) / conn(res.First.Sio, 50)
		r.judgeFull(full, "6", "repeat visit: Lifeline "+m.name+" connected ≤ socket.io-client (ratio of medians ≤ 1.0)", repeatRatio <= 1.0,
			fmt.Sprintf("%.2f× (%s / %s)", repeatRatio, fmtMs(conn(m.repeat, 50)), fmtMs(conn(res.Repeat.Sio, 50))),
			"a repeat visit that neither compiles nor runs much before main: the levers tried and what each did are in bench/PAGELOAD.md")
		r.judgeFull(full, "6", "first visit: Lifeline "+m.name+" connected ≤ 1.6× socket.io-client", firstRatio <= 1.6,
			fmt.Sprintf("%.2f× (%s / %s)", firstRatio, fmtMs(conn(m.first, 50)), fmtMs(conn(res.First.Sio, 50))),
			"an earlier wasm fetch, less to download and compile, less to run before main (bench/PAGELOAD.md)")
	}
	tabs := conn(res.First.Tabs, 50)
	r.judgeFull(full, "6", "shared mode: tabs 2–5 connected ≤ 60 ms (median)", tabs <= 60, fmtMs(tabs),
		"a tab that joins a running hub: its script, its port, the hub's answer (where the time goes: bench/PAGELOAD.md)")
	tab1, inpage := conn(res.First.Lifeline, 50), conn(res.First.InPage, 50)
	r.judgeFull(full, "6", "shared mode: tab 1 within 10% of the in-page first visit", tab1 <= 1.1*inpage,
		fmt.Sprintf("%s vs %s (%s)", fmtMs(tab1), fmtMs(inpage), ratio(tab1, inpage)),
		"the worker's own script and runner fetched in series before the wasm")
	if wasmPath != "" {
		if err := e.s6Sizes(r, wasmPath, res.First.InPage); err != nil {
			r.fail("6 sizes", err)
		}
	}
	return nil
}

// breakdown is scenario 6's table: Lifeline and socket.io-client, first and repeat visit.
func breakdown(res *pageRun) [][]string {
	sioConn := map[string]float64{
		"first":  pct(values(res.First.Sio, colConnected), 50),
		"repeat": pct(values(res.Repeat.Sio, colConnected), 50),
	}
	sioConn["first, tab 1"], sioConn["first, tabs 2–5"] = sioConn["first"], sioConn["first"]
	row := func(page, visit string, ls []pageLoad, isSio bool) []string {
		cells := []string{page, visit, med(ls, colFetchStart), med(ls, colBytesArrived)}
		div := ratio(pct(values(ls, colConnected), 50), sioConn[visit])
		if isSio {
			cells = append(cells, "n/a", "n/a")
			div = "1"
		} else {
			cells = append(cells, med(ls, colInstantiated), med(ls, colGoReady))
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
		row("Lifeline shared", "repeat", res.Repeat.Lifeline, false),
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
	case n["mark"] == len(ls) && len(ls) > 0:
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
	r.judge("6", "brotli wasm ≤ 1.2 MB", brotliAim <= 1.2e6, fmtBytes(brotliAim)+" as served",
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
