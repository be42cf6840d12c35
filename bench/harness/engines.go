//go:build !js

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lifeline-go/lifeline/internal/test/faultproxy"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// The engines scenario (issue 32): the demo page in Chromium, Firefox and WebKit, each beside
// a socket.io-client 4.8 page in the same engine. bench/browser/engines.js drives the three
// engines through one set of scenarios: first and repeat visits, shared and in-page, the wasm's
// compile and Go's start, the memory a tab adds, and what the engine itself needs for the same
// wasm (its floor).

// engineNames are the engines in the order of the tables, with the name a table gives them.
var engineNames = []struct{ key, name string }{
	{"chromium", "Chromium"}, {"firefox", "Firefox"}, {"webkit", "WebKit"},
}

// engLoad is one load as engines.js reports it: ms from navigation start, nil where the load
// had no such moment (a shared page compiles in its worker, which the page cannot see).
type engLoad struct {
	Connected                           *float64
	Compiled, Instantiated, GoReady     *float64
	Calls                               []struct{ T0, T1 *float64 }
	Resource, Worker, Runner, TabScript *engEntry
	WasmMemory                          *float64
}

// engEntry is a Resource Timing entry.
type engEntry struct {
	FetchStart, ResponseEnd                        *float64
	TransferSize, EncodedBodySize, DecodedBodySize float64
	Count                                          int
}

// engMemory is one tab's memory: what the engine's processes grew by (PSS, kB) when a blank
// tab loaded the page, and what the page itself could read.
type engMemory struct {
	PssKB      float64
	JSHeap     *float64
	WasmMemory *float64
}

// engFloor is the engine's own time for the served wasm, in a page with no Lifeline in it: its
// compile from bytes in memory and its instantiation, and an empty Go program's compile,
// instantiation and run to its exit.
type engFloor struct {
	Bytes, Compile, Instantiate                          float64
	EmptyBytes, EmptyCompile, EmptyInstantiate, EmptyRun float64
	Stream                                               *float64 // compileStreaming from the network, in a profile of its own
}

type engVisit struct{ Shared, InPage, Sio []engLoad }

type engRun struct {
	Version             string
	First, Repeat, Link engVisit
	Memory              struct{ Shared, InPage, Sio []engMemory }
	Floor               []engFloor
	Errors              []string
}

func (e *env) sEngines(r *report) error {
	web, err := e.enginesWeb()
	if err != nil {
		return err
	}
	host, err := e.startServer(kLifeline, "eng-host", 0, "", "-web", web)
	if err != nil {
		return err
	}
	defer host.proc.Stop(5 * time.Second)
	sio, err := e.startServer(kSIO, "eng-sio", 0, "")
	if err != nil {
		return err
	}
	defer sio.proc.Stop(3 * time.Second)

	// The slow link: scenario 6's 4G, a throttle in front of each server.
	slow := links[1]
	slowAddr := map[string]string{}
	for _, s := range []*server{host, sio} {
		p, err := faultproxy.Listen("127.0.0.1:0", s.addr(), &faultproxy.Options{Latency: slow.latency, Down: slow.down, Up: slow.up})
		if err != nil {
			return err
		}
		defer p.Close()
		p.SetMode(faultproxy.Throttle)
		slowAddr[s.kind] = p.Addr()
	}

	n, linkN, mem, floors := e.n(10, 3), e.n(6, 3), e.n(3, 1), e.n(3, 1)
	load0 := loadAvg()
	args := []string{e.node, filepath.Join(e.root, "bench/browser/engines.js"),
		"--lifeline", "http://" + host.addr() + "/", "--floor", "http://" + host.addr() + "/floor.xhtml",
		"--sio", "http://" + sio.addr() + "/page.html", "--n", strconv.Itoa(n), "--dwell", fmt.Sprint(e.dwell.Milliseconds()),
		"--lifeline-link", "http://" + slowAddr[kLifeline] + "/", "--sio-link", "http://" + slowAddr[kSIO] + "/page.html", "--link-n", strconv.Itoa(linkN),
		"--mem", strconv.Itoa(mem), "--floors", strconv.Itoa(floors)}
	// BENCH_ENGINES_ARGS narrows or widens the run (engines.js's own flags, after the harness's:
	// the last of a flag wins), e.g. "--engines webkit --phases link --pages shared" to compare
	// two builds of one page in one engine.
	extra := strings.Fields(os.Getenv("BENCH_ENGINES_ARGS"))
	args = append(args, extra...)
	p, err := e.bed.Start("engines", args,
		&testbed.Options{Dir: filepath.Join(e.root, "bench"), DeathSig: syscall.SIGTERM})
	if err != nil {
		return err
	}
	// Six loads per iteration and engine, three of them kept open for the dwell, and three
	// seconds-long loads per iteration over the slow link; WebKit starts a browser for each
	// first visit.
	if err := p.Wait(10*time.Minute + time.Duration(n)*3*(3*e.dwell+time.Minute) + time.Duration(linkN)*3*3*time.Minute); err != nil {
		_ = p.Stop(5 * time.Second)
		return fmt.Errorf("engines.js: %w", err)
	}
	out, _ := os.ReadFile(p.OutLog())
	if err := p.Err(); err != nil {
		stderr, _ := os.ReadFile(p.ErrLog())
		return fmt.Errorf("engines.js: %v: %s", err, lastLines(string(stderr), 5))
	}
	var res struct{ Engines map[string]*engRun }
	if err := json.Unmarshal([]byte(lastLines(string(out), 1)), &res); err != nil {
		return fmt.Errorf("engines.js printed %q: %w", lastLines(string(out), 3), err)
	}
	load1 := loadAvg()

	sum := r.table(fmt.Sprintf("engines. The demo page in three engines beside socket.io-client 4.8 in the same engine: navigation → connected, median of %d loads on loopback and %d over %s (÷ socket.io's median in that engine, visit and link)", n, linkN, slow.name), "",
		"engine", "shared first", "in-page first", "socket.io first", "shared repeat", "in-page repeat", "socket.io repeat", "4G: shared first", "in-page first", "socket.io first")
	for _, en := range engineNames {
		run := res.Engines[en.key]
		if run == nil {
			continue
		}
		// A Lifeline cell: its median, and its ratio to socket.io's in the same engine and visit.
		cell := func(ls, sio []engLoad) string {
			if len(ls) == 0 {
				return "–"
			}
			x := pct(engConnected(ls), 50)
			return fmt.Sprintf("%s (%s)", fmtMs(x), ratio(x, pct(engConnected(sio), 50)))
		}
		sioCell := func(ls []engLoad) string { return fmtMs(pct(engConnected(ls), 50)) }
		r.row(sum, en.name+" ("+run.Version+")", cell(run.First.Shared, run.First.Sio), cell(run.First.InPage, run.First.Sio), sioCell(run.First.Sio),
			cell(run.Repeat.Shared, run.Repeat.Sio), cell(run.Repeat.InPage, run.Repeat.Sio), sioCell(run.Repeat.Sio),
			cell(run.Link.Shared, run.Link.Sio), cell(run.Link.InPage, run.Link.Sio), sioCell(run.Link.Sio))
	}
	r.note(sum, "the Lifeline page is the demo page as cmd/host serves it, from a copy of web/ whose index.html begins its head with bench/browser/engines-page.js, the stopwatch: one page, byte for byte, in every engine, its mode (?mode=in-page) and config (?hub=N) read from the query there, because WebKitGTK's WebDriver cannot run a script before the page's own; the socket.io page is bench/peers/sio-server.js's page.html, which stamps its own `connect`")
	r.note(sum, "first visit: each load in a profile of its own (Chromium a new browser context, Firefox a new user context, whose HTTP cache is its own, WebKit a new WebDriver session: a new MiniBrowser with an ephemeral data store); repeat visit: one profile for the run after one unmeasured load of each page (Chromium `launchPersistentContext`, Firefox a browser of its own and its profile, WebKit one session, each page in a new window), each page kept open %v after connected; a shared repeat visit has a config of its own, so it finds no hub running and starts one from the caches; every iteration loads shared, in-page, socket.io first, then the same repeat, so that a change in the machine's load falls on all alike", e.dwell)
	r.note(sum, "4G: internal/test/faultproxy's throttle in front of each server (scenario 6's link: %v one way, %s down and %s up, shared by the page's connections, the SharedWorker's among them), first visits only", slow.latency, fmtBits(slow.down), fmtBits(slow.up))
	if len(extra) > 0 {
		r.note(sum, "engines.js ran with BENCH_ENGINES_ARGS=%q", strings.Join(extra, " "))
	}
	if v := strings.TrimSpace(os.Getenv("BENCH_FIREFOX_PREFS")); v != "" {
		r.note(sum, "Firefox ran with BENCH_FIREFOX_PREFS=%s: its figures are not a user's browser", v)
	}
	r.note(sum, "the machine's load average (1 min) was %s when the browsers started and %s when they were done, on %s: other work shares these cores, so compare the rows of one engine, measured side by side, more than the engines", load0, load1, machine())

	for _, en := range engineNames {
		run := res.Engines[en.key]
		if run == nil {
			r.note(sum, "%s: no figures", en.name)
			continue
		}
		e.engTable(r, en.name, run, n)
	}
	e.engMemFloor(r, res.Engines)
	return nil
}

func engConnected(ls []engLoad) []float64 {
	var xs []float64
	for _, l := range ls {
		if l.Connected != nil {
			xs = append(xs, *l.Connected)
		}
	}
	return xs
}

// engCol is one figure of a load, ok false where the load has none.
type engCol func(l engLoad) (float64, bool)

var (
	engFetchStart = func(l engLoad) (float64, bool) {
		if l.Resource == nil {
			return 0, false
		}
		return known(l.Resource.FetchStart)
	}
	engBytes = func(l engLoad) (float64, bool) {
		if l.Resource == nil {
			return 0, false
		}
		return known(l.Resource.ResponseEnd)
	}
	engCompiled     = func(l engLoad) (float64, bool) { return known(l.Compiled) }
	engInstantiated = func(l engLoad) (float64, bool) { return known(l.Instantiated) }
	engGoReady      = func(l engLoad) (float64, bool) { return known(l.GoReady) }
	// The first WebAssembly call to the instance: compile and instantiate, and as much of the
	// download as they wait for.
	engCall = func(l engLoad) (float64, bool) {
		inst, ok := known(l.Instantiated)
		if !ok || len(l.Calls) == 0 || l.Calls[0].T0 == nil {
			return 0, false
		}
		return inst - *l.Calls[0].T0, true
	}
	// The wasm's last byte to the instance: the compile the download did not hide.
	engAfterBytes = func(l engLoad) (float64, bool) {
		inst, ok1 := known(l.Instantiated)
		end, ok2 := engBytes(l)
		if !ok1 || !ok2 {
			return 0, false
		}
		return inst - end, true
	}
	// The instance to Go's first status: the Go program's start, to its main's first word.
	engStart = func(l engLoad) (float64, bool) {
		inst, ok1 := known(l.Instantiated)
		goReady, ok2 := known(l.GoReady)
		if !ok1 || !ok2 {
			return 0, false
		}
		return goReady - inst, true
	}
	engWorkerScript = func(l engLoad) (float64, bool) {
		if l.Worker == nil {
			return 0, false
		}
		return known(l.Worker.FetchStart)
	}
	engTransfer = func(l engLoad) (float64, bool) {
		if l.Resource == nil {
			return 0, false
		}
		return l.Resource.TransferSize, true
	}
	engEncoded = func(l engLoad) (float64, bool) {
		if l.Resource == nil {
			return 0, false
		}
		return l.Resource.EncodedBodySize, true
	}
)

func engValues(ls []engLoad, c engCol) []float64 {
	var xs []float64
	for _, l := range ls {
		if x, ok := c(l); ok {
			xs = append(xs, x)
		}
	}
	return xs
}

func engMed(ls []engLoad, c engCol) string {
	xs := engValues(ls, c)
	if len(xs) == 0 {
		return "–"
	}
	return fmtMs(pct(xs, 50))
}

// engTable is one engine's table: each page and visit, its connected and where its time went.
func (e *env) engTable(r *report, name string, run *engRun, n int) {
	t := r.table(fmt.Sprintf("engines. %s (%s): each page and visit, %d loads per row (ms from navigation start; medians but where a column says)", name, run.Version, n), "",
		"page", "visit", "connected p50", "p90", "max", "÷ socket.io p50", "wasm's last byte", "compiled", "instantiated", "Go ready", "wasm call → instance", "last byte → instance", "instance → Go ready", "transferred / body", "loads")
	for _, v := range []struct {
		visit string
		vis   engVisit
	}{{"first", run.First}, {"repeat", run.Repeat}, {"first, 4G", run.Link}} {
		if len(v.vis.Shared)+len(v.vis.InPage)+len(v.vis.Sio) == 0 {
			continue
		}
		s50 := pct(engConnected(v.vis.Sio), 50)
		for _, row := range []struct {
			page string
			ls   []engLoad
		}{{"Lifeline shared", v.vis.Shared}, {"Lifeline in-page", v.vis.InPage}, {"socket.io-client", v.vis.Sio}} {
			xs := engConnected(row.ls)
			sizes := "–"
			if tr := engValues(row.ls, engTransfer); len(tr) > 0 {
				sizes = fmtBytes(pct(tr, 50)) + " / " + fmtBytes(pct(engValues(row.ls, engEncoded), 50))
			}
			cells := []string{row.page, v.visit, fmtMs(pct(xs, 50)), fmtMs(pct(xs, 90)), fmtMs(maxOf(xs)), ratio(pct(xs, 50), s50)}
			if row.page == "socket.io-client" {
				cells[5] = "1"
			}
			cells = append(cells, engMed(row.ls, engBytes), engMed(row.ls, engCompiled), engMed(row.ls, engInstantiated), engMed(row.ls, engGoReady),
				engMed(row.ls, engCall), engMed(row.ls, engAfterBytes), engMed(row.ls, engStart), sizes, strconv.Itoa(len(xs)))
			r.row(t, cells...)
		}
	}
	r.note(t, "wasm's last byte: the Resource Timing responseEnd of the wasm the page fetched (socket.io: of socket.io.min.js); a shared page's only fetch of the wasm is the boot's early one (web/boot.js's warm), on a first visit; compiled: the first Module out of compileStreaming; instantiated: the first Instance; Go ready: the page's `lifeline:go-ready` mark, set by Go's main; a shared page compiles and starts Go in its SharedWorker, which the page's timeline does not show (scenario 6 reads Chromium's worker over the DevTools protocol; no such door in the other two)")
	if ws := engValues(run.First.Shared, engWorkerScript); len(ws) > 0 {
		r.note(t, "%s shows the SharedWorker's script fetch in the page's Resource Timing: on a shared first visit it starts at %s (median; %d loads)", name, fmtMs(pct(ws, 50)), len(ws))
	}
	if len(run.Errors) > 0 {
		r.note(t, "%d loads failed, first: %s", len(run.Errors), run.Errors[0])
	}
}

// engMemFloor is the table of each engine's tab memory, and that of its floor.
func (e *env) engMemFloor(r *report, runs map[string]*engRun) {
	t := r.table("engines. Memory of a tab (medians, and min–max)", "",
		"engine", "Lifeline shared", "Lifeline in-page", "socket.io", "Go's linear memory, in-page", "JS heap (performance.memory): shared / in-page / socket.io", "samples per page")
	for _, en := range engineNames {
		run := runs[en.key]
		if run == nil {
			continue
		}
		pss := func(ms []engMemory) string {
			var xs []float64
			for _, m := range ms {
				xs = append(xs, m.PssKB*1024)
			}
			if len(xs) == 0 {
				return "–"
			}
			return fmt.Sprintf("%s (%s–%s)", fmtMiB(pct(xs, 50)), fmtMiB(slicesMin(xs)), fmtMiB(maxOf(xs)))
		}
		med := func(ms []engMemory, f func(engMemory) *float64) string {
			var xs []float64
			for _, m := range ms {
				if v := f(m); v != nil {
					xs = append(xs, *v)
				}
			}
			if len(xs) == 0 {
				return "–"
			}
			return fmtMiB(pct(xs, 50))
		}
		heap := func(m engMemory) *float64 { return m.JSHeap }
		r.row(t, en.name, pss(run.Memory.Shared), pss(run.Memory.InPage), pss(run.Memory.Sio),
			med(run.Memory.InPage, func(m engMemory) *float64 { return m.WasmMemory }),
			med(run.Memory.Shared, heap)+" / "+med(run.Memory.InPage, heap)+" / "+med(run.Memory.Sio, heap),
			strconv.Itoa(len(run.Memory.InPage)))
	}
	r.note(t, "what every process of the engine (browser, content, network, GPU, workers; Xvfb not counted) grew by, in proportional set size (PSS, /proc/PID/smaps_rollup: a page shared by k processes counts 1/k in each), from a blank tab of a fresh profile to the same tab with the page connected and 2 s quiet, each reading taken once two readings 500 ms apart agree within 1 MB (at most 10 s); shared mode's SharedWorker is in it; Firefox runs every site in one content process under puppeteer (it sets fission.webContentIsolationStrategy 0), so there a page grows a process that was there before, whose garbage from earlier profiles may be collected in between: a negative sample is that, and the socket.io page's few MB are within the noise")
	r.note(t, "Go's linear memory: the wasm instance's memory.buffer.byteLength, the same program in every engine; JS heap: `performance.memory.usedJSHeapSize`, Chromium only, which rounds it (the wasm's memory is not in it)")

	ft := r.table("engines. Each engine's own floor for this wasm, and Lifeline's in-page first visit above it (medians, ms)", "",
		"engine", "compile of the wasm's bytes", "streaming compile from the network", "instantiate", "an empty Go wasm: compile / instantiate / run",
		"in-page first visit: wasm fetch starts", "its last byte", "floor", "Lifeline in-page connected", "above the floor", "socket.io connected", "samples")
	for _, en := range engineNames {
		run := runs[en.key]
		if run == nil || len(run.Floor) == 0 {
			continue
		}
		fl := func(f func(engFloor) float64) float64 { return pct(floorOf(run.Floor, f), 50) }
		compile := fl(func(x engFloor) float64 { return x.Compile })
		inst := fl(func(x engFloor) float64 { return x.Instantiate })
		goStart := fl(func(x engFloor) float64 { return x.EmptyRun })
		var streams []float64
		for _, x := range run.Floor {
			if x.Stream != nil {
				streams = append(streams, *x.Stream)
			}
		}
		inPage := pct(engConnected(run.First.InPage), 50)
		start, bytes := pct(engValues(run.First.InPage, engFetchStart), 50), pct(engValues(run.First.InPage, engBytes), 50)
		floor := math.Max(bytes, start+compile) + inst + goStart
		r.row(ft, en.name, fmt.Sprintf("%s (%s)", fmtMs(compile), fmtBytes(run.Floor[0].Bytes)), fmtMs(pct(streams, 50)), fmtMs(inst),
			fmt.Sprintf("%s / %s / %s (%s)", fmtMs(fl(func(x engFloor) float64 { return x.EmptyCompile })), fmtMs(fl(func(x engFloor) float64 { return x.EmptyInstantiate })),
				fmtMs(goStart), fmtBytes(run.Floor[0].EmptyBytes)),
			fmtMs(start), fmtMs(bytes), fmtMs(floor), fmtMs(inPage), fmtMs(inPage-floor), fmtMs(pct(engConnected(run.First.Sio), 50)), strconv.Itoa(len(run.Floor)))
	}
	r.note(ft, "each in a fresh profile, in a page of the Host's origin with no Lifeline in it (floor.xhtml: not text/html, so the Host injects nothing) and Go's own wasm_exec.js: `WebAssembly.compile` of the served wasm's bytes, fetched first (the engine's compile of the same bytes, without the network), and its instantiation with Go's imports (not run); in another fresh profile, `compileStreaming(fetch(wasm))` from the call to the Module (the network and the streaming compile, no page around it); an empty Go program (`func main() {}`, this Go, GOWASM=satconv,signext, -s -w) compiled, instantiated and run to its exit: what any Go wasm costs in that engine before its own code runs")
	r.note(ft, "the floor of an in-page first visit: the later of the wasm's last byte and its fetch's start plus the engine's compile of its bytes (a streaming compile ends no sooner than either), then the instantiation and an empty Go's start, all from the in-page first visits above; what Lifeline spends above it is Go's package initialisation and main, the socket's opening, and whatever of the compile the download did not hide; the socket.io page is the floor of a page with a socket")
}

func floorOf(fs []engFloor, f func(engFloor) float64) []float64 {
	xs := make([]float64, len(fs))
	for i, x := range fs {
		xs[i] = f(x)
	}
	return xs
}

func slicesMin(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	m := xs[0]
	for _, x := range xs[1:] {
		m = math.Min(m, x)
	}
	return m
}

func fmtMiB(b float64) string {
	if math.IsNaN(b) {
		return "–"
	}
	return fmt.Sprintf("%.1f MiB", b/(1<<20))
}

// loadAvg is the machine's 1-minute load average, as /proc/loadavg says it.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// enginesWeb writes the web/ the engines scenario's Host serves, in bench/raw/<run>/engines-web:
// web/ as it is, but for index.html, whose head begins with the stopwatch
// (bench/browser/engines-page.js), and the floor's page, Go's wasm_exec.js and an empty Go
// program's wasm.
func (e *env) enginesWeb() (string, error) {
	dir := filepath.Join(e.raw, "engines-web")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src := filepath.Join(e.root, "web")
	ents, err := os.ReadDir(src)
	if err != nil {
		return "", err
	}
	for _, f := range ents {
		if !f.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, f.Name()))
		if err != nil {
			return "", err
		}
		if f.Name() == "index.html" {
			if b, err = withStopwatch(b, filepath.Join(e.root, "bench/browser/engines-page.js")); err != nil {
				return "", err
			}
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name()), b, 0o644); err != nil {
			return "", err
		}
	}
	const floorPage = `<?xml version="1.0" encoding="utf-8"?>
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>the engine's floor</title><script src="floor-wasm_exec.js"></script></head><body><p>floor</p></body></html>
`
	if err := os.WriteFile(filepath.Join(dir, "floor.xhtml"), []byte(floorPage), 0o644); err != nil {
		return "", err
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOROOT: %w", err)
	}
	wasmExec, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(goroot)), "lib/wasm/wasm_exec.js"))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "floor-wasm_exec.js"), wasmExec, 0o644); err != nil {
		return "", err
	}
	// The empty program is built outside any module: a file named on the command line.
	tmp, err := os.MkdirTemp("", "lifeline-empty-wasm-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", filepath.Join(dir, "floor-empty.wasm"), "main.go")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm", "GOWASM=satconv,signext", "GOFLAGS=", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the empty Go wasm: %v\n%s", err, out)
	}
	return dir, nil
}

// withStopwatch puts the script at path first in the page's head, right after its charset.
func withStopwatch(page []byte, path string) ([]byte, error) {
	js, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	const at = `<meta charset="utf-8">`
	s := string(page)
	i := strings.Index(s, at)
	if i < 0 {
		return nil, fmt.Errorf("web/index.html has no %s to put the stopwatch after", at)
	}
	i += len(at)
	return []byte(s[:i] + "\n  <script>\n" + string(js) + "  </script>" + s[i:]), nil
}
