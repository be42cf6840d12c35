//go:build !js

package wasmsize

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// GoList returns the import paths of pattern and every package it depends on, built for
// js/wasm in dir, and the modules other than the standard library they come from.
func GoList(dir, pattern string) (pkgs, modules []string, err error) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}", pattern)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("wasmsize: go list -deps %s: %v: %s", pattern, err, strings.TrimSpace(stderr.String()))
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		pkg, mod, _ := strings.Cut(line, " ")
		pkgs = append(pkgs, pkg)
		if mod != "" && !slices.Contains(modules, mod) {
			modules = append(modules, mod)
		}
	}
	return pkgs, modules, nil
}

// compressScript measures a file compressed as scripts/build.sh compresses the wasm: gzip -9
// and brotli -q11 (with the size hint) from Node's zlib, which has brotli built in.
const compressScript = `const fs = require("fs"), zlib = require("zlib"); const raw = fs.readFileSync(process.argv[1]);
console.log(JSON.stringify([raw.length, zlib.gzipSync(raw, { level: 9 }).length,
  zlib.brotliCompressSync(raw, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11,
    [zlib.constants.BROTLI_PARAM_SIZE_HINT]: raw.length } }).length]));`

// Compressed returns the raw, gzip -9 and brotli -q11 sizes of the file at path, compressed
// by node (a path to Node, or "node" to find it on PATH).
func Compressed(node, path string) (raw, gz, br int64, err error) {
	var stderr bytes.Buffer
	cmd := exec.Command(node, "-e", compressScript, path)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("wasmsize: compressing %s with %s: %v: %s", path, node, err, strings.TrimSpace(stderr.String()))
	}
	var s [3]int64
	if err := json.Unmarshal(out, &s); err != nil {
		return 0, 0, 0, fmt.Errorf("wasmsize: node printed %q: %w", out, err)
	}
	return s[0], s[1], s[2], nil
}

// brotliEachScript compresses every file named on its command line as Compressed does with
// brotli, and prints their sizes as a JSON array.
const brotliEachScript = `const fs = require("fs"), zlib = require("zlib");
console.log(JSON.stringify(process.argv.slice(1).map((f) => { const raw = fs.readFileSync(f);
  return zlib.brotliCompressSync(raw, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11,
    [zlib.constants.BROTLI_PARAM_SIZE_HINT]: raw.length } }).length; })));`

// BrotliEach returns the brotli -q11 size of each of parts compressed on its own, by node. Of
// parts of one module (its sections, its packages' code) they say how well each compresses;
// they add up to more than the module's, which also compresses across the parts.
func BrotliEach(node string, parts [][]byte) ([]int64, error) {
	dir, err := os.MkdirTemp("", "wasmsize-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	args := []string{"-e", brotliEachScript}
	for i, b := range parts {
		f := fmt.Sprintf("%s/%d", dir, i)
		if err := os.WriteFile(f, b, 0o600); err != nil {
			return nil, err
		}
		args = append(args, f)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(node, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("wasmsize: compressing %d parts with %s: %v: %s", len(parts), node, err, strings.TrimSpace(stderr.String()))
	}
	var sizes []int64
	if err := json.Unmarshal(out, &sizes); err != nil || len(sizes) != len(parts) {
		return nil, fmt.Errorf("wasmsize: node printed %q for %d parts: %v", out, len(parts), err)
	}
	return sizes, nil
}
