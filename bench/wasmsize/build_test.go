//go:build !js

package wasmsize

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// tinyModule is a program with a package of its own under a domain-style module path, so that
// the test sees the linker's mangling of a real import path.
var tinyModule = map[string]string{
	"go.mod": "module example.com/tiny-wasm\n\ngo 1.22\n",
	"main.go": `package main

import "example.com/tiny-wasm/greet"

func main() { println(greet.Hello("wasm")) }
`,
	"greet/greet.go": `package greet

import "unicode/utf8"

type Greeter struct{ n int }

//go:noinline
func (g *Greeter) Greet(s string) string { g.n += utf8.RuneCountInString(s); return "hello, " + s }

//go:noinline
func Hello(s string) string { var g Greeter; return g.Greet(s) }
`,
}

// buildTiny builds tinyModule for js/wasm with the flags of scripts/build.sh, stripped (-s -w)
// or not.
func buildTiny(t *testing.T, dir string, strip bool) *Module {
	t.Helper()
	out := filepath.Join(dir, "stripped.wasm")
	args := []string{"build", "-trimpath", "-o", out}
	if !strip {
		out = filepath.Join(dir, "names.wasm")
		args = []string{"build", "-trimpath", "-o", out}
	} else {
		args = append(args, "-ldflags=-s -w")
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm", "GOWORK=off", "GOFLAGS=-mod=mod")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestAGoBuiltWasmByPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go program for js/wasm (seconds with a warm build cache, ~20 s cold)")
	}
	dir := t.TempDir()
	for name, text := range tinyModule {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	named := buildTiny(t, dir, false)
	stripped := buildTiny(t, dir, true)

	if !named.HasNames || stripped.HasNames {
		t.Fatalf("HasNames: %v without -s, %v with it; want true, false", named.HasNames, stripped.HasNames)
	}
	if !SameCode(named, stripped) {
		t.Fatal("the builds with and without -s differ in their function bodies; names of one cannot describe the other")
	}
	if got := named.CodeBytes(); got == 0 || got > named.Section("code") {
		t.Errorf("CodeBytes = %d, code section %d", got, named.Section("code"))
	}
	if !stripped.Rename(named) {
		t.Fatal("Rename refused the unstripped twin")
	}

	paths, modules, err := GoList(dir, ".")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(paths, "example.com/tiny-wasm/greet") || !slices.Equal(modules, []string{"example.com/tiny-wasm"}) {
		t.Fatalf("GoList = %q, %q", paths, modules)
	}
	pkgs := ByPackage(stripped, NewPackages(paths))
	sizes := map[string]PackageSize{}
	sum := 0
	for _, p := range pkgs {
		sizes[p.Package] = p
		sum += p.Bytes
	}
	if sum != stripped.CodeBytes() {
		t.Errorf("packages sum to %d bytes, the bodies to %d", sum, stripped.CodeBytes())
	}
	// Hello and (*Greeter).Greet, kept apart by //go:noinline.
	if g := sizes["example.com/tiny-wasm/greet"]; g.Funcs < 2 {
		t.Errorf("example.com/tiny-wasm/greet: %+v, want its 2 functions; packages: %+v", g, pkgs)
	}
	if sizes["main"].Funcs == 0 {
		t.Errorf("no function of package main; packages: %+v", pkgs)
	}
	if pkgs[0].Package != "runtime" {
		t.Errorf("largest package %q, want runtime", pkgs[0].Package)
	}
	if _, ok := sizes[Unnamed]; ok {
		t.Errorf("%d functions without a name", sizes[Unnamed].Funcs)
	}
	// Without the paths the package is still found, under its mangled name.
	if g := ByPackage(named, NewPackages(nil)); !slices.ContainsFunc(g, func(p PackageSize) bool {
		return p.Package == "example.com_tiny_wasm_greet" && p.Funcs >= 2
	}) {
		t.Errorf("no example.com_tiny_wasm_greet when guessing from the names: %+v", g)
	}
	mods := ByModule(pkgs, modules)
	if !slices.ContainsFunc(mods, func(p PackageSize) bool { return p.Package == "example.com/tiny-wasm" }) {
		t.Errorf("ByModule has no example.com/tiny-wasm: %+v", mods)
	}
}

func TestBrotliEachCompressesEachPartOnItsOwn(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node:", err)
	}
	noise := make([]byte, 4096)
	for i := range noise {
		noise[i] = byte(i*7919>>3) ^ byte(i*104729>>5)
	}
	sizes, err := BrotliEach(node, [][]byte{make([]byte, 100_000), noise})
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 2 || sizes[0] > 100 || sizes[1] < 100 {
		t.Fatalf("brotli of 100,000 zeros and of 4 KB of noise: %v, want a few bytes and more than 100", sizes)
	}
}
