//go:build !js

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lifeline-go/lifeline/internal/testbed"
)

// buildWeb builds the page into bench/.bin/web, apart from web/ (which `make run` owns): the
// demo's HTML and JS, the wasm with the same flags as scripts/build.sh, its .gz and .br, and
// wasm_exec.js from this Go.
func (e *env) buildWeb() error {
	dir := filepath.Join(e.bin, "web")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	src := filepath.Join(e.root, "web")
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, ent := range ents {
		name := ent.Name()
		if ent.IsDir() || strings.Contains(name, ".wasm") || name == "wasm_exec.js" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	wasm := filepath.Join(dir, "lifeline.wasm")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", wasm, "./wasm")
	cmd.Dir, cmd.Env = e.root, append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the wasm: %v\n%s", err, out)
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(goroot)), "lib/wasm/wasm_exec.js"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "wasm_exec.js"), b, 0o644); err != nil {
		return err
	}
	// The same compression as scripts/build.sh: Node's zlib has brotli built in.
	script := `const fs = require("fs"), zlib = require("zlib"); const f = process.argv[1];
const raw = fs.readFileSync(f);
fs.writeFileSync(f + ".br", zlib.brotliCompressSync(raw, { params: {
  [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: raw.length } }));
fs.writeFileSync(f + ".gz", zlib.gzipSync(raw, { level: 9 }));`
	if out, err := exec.Command(e.node, "-e", script, wasm).CombinedOutput(); err != nil {
		return fmt.Errorf("compressing the wasm: %v\n%s", err, out)
	}
	return nil
}

// compressed returns the raw, gzip -9 and brotli -q11 sizes of a file, compressing it with
// Node's zlib when there is no .gz/.br beside it.
func (e *env) compressed(path string) (raw, gz, br int64, err error) {
	script := `const fs = require("fs"), zlib = require("zlib"); const raw = fs.readFileSync(process.argv[1]);
console.log(JSON.stringify([raw.length, zlib.gzipSync(raw, { level: 9 }).length,
  zlib.brotliCompressSync(raw, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }).length]));`
	out, err := exec.Command(e.node, "-e", script, path).Output()
	if err != nil {
		return 0, 0, 0, err
	}
	var s [3]int64
	if err := json.Unmarshal(out, &s); err != nil {
		return 0, 0, 0, err
	}
	return s[0], s[1], s[2], nil
}

// s6Page: the page in Chromium.
func (e *env) s6Page(r *report) error {
	loads := e.n(20, 5)
	t := r.table(fmt.Sprintf("6. The page in Chromium: navigation → connected, median of %d loads", loads), "",
		"page", "client code raw", "gzip -9", "brotli -q11", "nav → connected p50", "min", "max", "loads")
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

	// The driver gets SIGTERM if the harness dies, so that it closes its browser.
	p, err := e.bed.Start("s6-pageload", []string{e.node, filepath.Join(e.root, "bench/browser/pageload.js"),
		"--lifeline", "http://" + host.addr() + "/", "--sio", "http://" + sio.addr() + "/page.html", "--n", fmt.Sprint(loads)},
		&testbed.Options{Dir: filepath.Join(e.root, "bench"), DeathSig: syscall.SIGTERM})
	if err != nil {
		return err
	}
	if err := p.Wait(5 * time.Minute); err != nil {
		_ = p.Stop(5 * time.Second)
		return fmt.Errorf("pageload.js: %w", err)
	}
	out, _ := os.ReadFile(p.OutLog())
	if err := p.Err(); err != nil {
		stderr, _ := os.ReadFile(p.ErrLog())
		return fmt.Errorf("pageload.js: %v: %s", err, lastLines(string(stderr), 5))
	}
	var res struct {
		Lifeline, Sio []float64
		Errors        []string
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return fmt.Errorf("pageload.js printed %q: %w", lastLines(string(out), 3), err)
	}
	wraw, wgz, wbr, err := e.compressed(filepath.Join(e.bin, "web/lifeline.wasm"))
	if err != nil {
		return err
	}
	sraw, sgz, sbr, err := e.compressed(filepath.Join(e.root, "bench/node_modules/socket.io-client/dist/socket.io.min.js"))
	if err != nil {
		return err
	}
	kb := func(n int64) string { return fmt.Sprintf("%.0f KB", float64(n)/1000) }
	r.row(t, "Lifeline (lifeline.wasm; the Host serves its .br)", kb(wraw), kb(wgz), kb(wbr),
		fmtMs(pct(res.Lifeline, 50)), fmtMs(minOf(res.Lifeline)), fmtMs(maxOf(res.Lifeline)), fmt.Sprint(len(res.Lifeline)))
	r.row(t, "socket.io-client (socket.io.min.js, which socket.io compresses on the fly)", kb(sraw), kb(sgz), kb(sbr),
		fmtMs(pct(res.Sio, 50)), fmtMs(minOf(res.Sio)), fmtMs(maxOf(res.Sio)), fmt.Sprint(len(res.Sio)))
	ratio := pct(res.Lifeline, 50) / pct(res.Sio, 50)
	r.note(t, "ratio of medians, Lifeline / socket.io-client: %.1f×", ratio)
	r.note(t, "each load is a fresh browser context (empty cache), the two pages alternate, one unmeasured load of each first; connected is Lifeline's `lifeline:state` event with state connected, and socket.io's `connect`, both stamped with performance.now() in the page")
	if len(res.Errors) > 0 {
		r.note(t, "%d loads failed, first: %s", len(res.Errors), res.Errors[0])
	}
	return nil
}

func minOf(xs []float64) float64 { return -maxOf(neg(xs)) }

func neg(xs []float64) []float64 {
	n := make([]float64, len(xs))
	for i, x := range xs {
		n[i] = -x
	}
	return n
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " / ")
}
