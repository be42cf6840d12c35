package test_test

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// The import rules of ARCHITECTURE.md, checked on the package graph the go command prints: one
// `go list -deps` of every package of the module per platform, then a search from the packages a
// rule is about for a package it forbids. `go list -deps` without -test follows the imports of
// non-test files only: test files may import anything.

const root = "github.com/lifeline-go/lifeline"

// A platform is one build of the tree: what the go command is told in the environment and
// with -tags.
type platform struct {
	name string
	env  []string
	tags string
}

var (
	native = platform{name: "native", env: []string{"GOOS=" + runtime.GOOS, "GOARCH=" + runtime.GOARCH}}
	// withFaults is the native build with fault injection built in, as cmd/host's demo is: the
	// tag only adds files, each of which must keep the rules too.
	withFaults = platform{name: "native -tags lifeline_faults", env: native.env, tags: "lifeline_faults"}
	browser    = platform{name: "js/wasm", env: []string{"GOOS=js", "GOARCH=wasm"}}
)

// A pkg is one package of the graph.
type pkg struct {
	path     string
	module   string // "" for the standard library
	standard bool
	listed   bool // matched by the pattern, not only a dependency of what was
	imports  []string
}

// theWasm is the program the page loads.
var theWasm = is(root + "/wasm")

// shipped is what an embedder links or a user runs: every package of the module (the public
// packages, the wasm, the commands of cmd: bin/host, bin/swarm) but the test tooling itself,
// the bench and e2e, which are tests.
func shipped(p pkg) bool {
	return p.module == root && !anyUnder(p, root+"/internal/test", root+"/bench", root+"/e2e")
}

// withoutMetrics is what an embedder who does not use Prometheus links: every package of the
// module but the metrics package itself and what imports it on purpose (bin/host's -metrics,
// the bench and e2e, which scrape it).
func withoutMetrics(p pkg) bool {
	return p.module == root && !anyUnder(p, root+"/hostplugin/metrics", root+"/cmd/host", root+"/bench", root+"/e2e")
}

// anyUnder reports whether p is one of paths or below one of them.
func anyUnder(p pkg, paths ...string) bool {
	return slices.ContainsFunc(paths, func(path string) bool { return under(path)(p) })
}

// is matches one package.
func is(path string) func(pkg) bool { return func(p pkg) bool { return p.path == path } }

// under matches a package and everything below it.
func under(path string) func(pkg) bool {
	return func(p pkg) bool { return p.path == path || strings.HasPrefix(p.path, path+"/") }
}

// outsideStdBut matches every package neither of the standard library nor under one of allowed.
func outsideStdBut(allowed ...string) func(pkg) bool {
	return func(p pkg) bool {
		return !p.standard && !slices.ContainsFunc(allowed, func(a string) bool { return under(a)(p) })
	}
}

// rules: no package that from matches links (imports, directly or not) a package forbidden
// matches, on that platform. A new rule is one line.
var rules = []struct {
	rule      string
	on        platform
	from      func(pkg) bool
	forbidden func(pkg) bool
}{
	{"the wasm links no encoding/json", browser, theWasm, is("encoding/json")},
	{"the wasm links no log/slog", browser, theWasm, is("log/slog")},
	{"the wasm links no validator", browser, theWasm, under("github.com/go-playground/validator")},
	{"the wasm links nothing from outside the standard library", browser, theWasm, outsideStdBut(root)},
	{"the wasm links no net/http (its init alone keeps crypto/tls: ~600 KB of brotli)", browser, theWasm, under("net/http")},
	{"the wasm links nothing under crypto/", browser, theWasm, under("crypto")},
	{"the wasm links no fmt (internal/tinyfmt formats; fmt with the reflect and os it brings was ~45 KB of brotli)", browser, theWasm, is("fmt")},
	{"the wasm links no reflect (strictjson.Object lists a document's fields; reflect and its type data were ~28 KB of brotli)", browser, theWasm, is("reflect")},
	{"the wasm links no net/url (internal/weburl; net/url with net/netip and unique was ~8 KB of brotli more)", browser, theWasm, is("net/url")},
	{"an embedder who does not use Prometheus links none of it", native, withoutMetrics, under("github.com/prometheus")},
	{"an embedder who does not use Prometheus links none of it, with fault injection built in", withFaults, withoutMetrics, under("github.com/prometheus")},
	{"nothing that ships imports test tooling", native, shipped, under(root + "/internal/test")},
	{"nothing that ships imports test tooling, with fault injection built in", withFaults, shipped, under(root + "/internal/test")},
	{"nothing that ships imports test tooling, in the browser", browser, shipped, under(root + "/internal/test")},
}

func TestImportRules(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH:", err)
	}
	graphs := map[string]map[string]pkg{}
	for _, r := range rules {
		if graphs[r.on.name] == nil {
			graphs[r.on.name] = goList(t, r.on)
		}
	}
	for _, r := range rules {
		graph := graphs[r.on.name]
		if v := violations(graph, r.from, r.forbidden); len(v) > 0 {
			t.Errorf("%s (%s):\n%s", r.rule, r.on.name, strings.Join(v, "\n"))
		}
		if !slices.ContainsFunc(sorted(graph), func(p pkg) bool { return p.listed && r.from(p) }) {
			t.Errorf("%s (%s): no package listed is one the rule is about: the table is stale", r.rule, r.on.name)
		}
	}
}

// TestAViolationNamesTheImportAndItsImporter is the search on a graph made up for it, so that
// the rules above are known to be able to fail, and to say where.
func TestAViolationNamesTheImportAndItsImporter(t *testing.T) {
	graph := map[string]pkg{}
	for _, p := range []pkg{
		{path: "m/app", module: "m", listed: true, imports: []string{"m/deep", "m/lib", "fmt"}},
		{path: "m/deep", module: "m", imports: []string{"m/deeper"}},
		{path: "m/deeper", module: "m", imports: []string{"encoding/json"}},
		{path: "m/lib", module: "m", listed: true, imports: []string{"encoding/json", "C"}},
		{path: "m/tool", module: "m", listed: true, imports: []string{"log/slog"}},
		{path: "encoding/json", standard: true},
		{path: "fmt", standard: true},
		{path: "log/slog", standard: true},
	} {
		graph[p.path] = p
	}
	tests := []struct {
		name      string
		from      func(pkg) bool
		forbidden func(pkg) bool
		want      []string
	}{
		{"one start: the shortest of its chains", is("m/app"), is("encoding/json"),
			[]string{"encoding/json, imported by m/lib: m/app → m/lib → encoding/json"}},
		{"many starts: the shortest chain of any", under("m"), is("encoding/json"),
			[]string{"encoding/json, imported by m/lib: m/lib → encoding/json"}},
		{"every forbidden package, once each", under("m"), outsideStdBut("m/app", "m/lib"),
			[]string{"m/deep, imported by m/app: m/app → m/deep", "m/deeper, imported by m/deep: m/app → m/deep → m/deeper"}},
		{"a package only a start outside the rule links", is("m/app"), is("log/slog"), nil},
	}
	for _, tt := range tests {
		if got := violations(graph, tt.from, tt.forbidden); !slices.Equal(got, tt.want) {
			t.Errorf("%s: violations = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// goList lists every package of the module and everything they import, on one platform.
func goList(t *testing.T, on platform) map[string]pkg {
	t.Helper()
	const format = `{{.ImportPath}}	{{with .Module}}{{.Path}}{{end}}	{{.Standard}}	{{not .DepOnly}}	{{join .Imports " "}}`
	cmd := exec.Command("go", "list", "-deps", "-tags="+on.tags, "-f", format, root+"/...")
	cmd.Env = append(os.Environ(), on.env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps (%s): %v\n%s", on.name, err, stderr.String())
	}
	graph := map[string]pkg{}
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(f) != 5 {
			t.Fatalf("go list -deps (%s): a line of %d fields, want 5: %q", on.name, len(f), line)
		}
		graph[f[0]] = pkg{path: f[0], module: f[1], standard: f[2] == "true", listed: f[3] == "true", imports: strings.Fields(f[4])}
	}
	return graph
}

// violations is one line for each package forbidden matches that a listed package from matches
// links: the package, its importer and the shortest chain from such a listed package to it.
func violations(graph map[string]pkg, from, forbidden func(pkg) bool) []string {
	shortest := map[string][]string{}
	for _, start := range sorted(graph) {
		if !start.listed || !from(start) {
			continue
		}
		// Breadth first, so that each chain is a shortest one from this start.
		via := map[string]string{start.path: ""}
		queue := []string{start.path}
		for len(queue) > 0 {
			p := graph[queue[0]]
			queue = queue[1:]
			for _, imp := range p.imports {
				if _, ok := via[imp]; ok || imp == "C" { // cgo's pseudo-package: an import, no package
					continue
				}
				via[imp] = p.path
				queue = append(queue, imp)
				if c, ok := shortest[imp]; forbidden(graph[imp]) && (!ok || len(chain(via, imp)) < len(c)) {
					shortest[imp] = chain(via, imp)
				}
			}
		}
	}
	var out []string
	for _, imp := range slices.Sorted(maps.Keys(shortest)) {
		c := shortest[imp]
		out = append(out, fmt.Sprintf("%s, imported by %s: %s", imp, c[len(c)-2], strings.Join(c, " → ")))
	}
	return out
}

// chain is the path from the search's start to p.
func chain(via map[string]string, p string) []string {
	var c []string
	for ; p != ""; p = via[p] {
		c = append(c, p)
	}
	slices.Reverse(c)
	return c
}

// sorted is the graph's packages in path order, so that messages are the same at every run.
func sorted(graph map[string]pkg) []pkg {
	var ps []pkg
	for _, p := range graph {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b pkg) int { return strings.Compare(a.path, b.path) })
	return ps
}
