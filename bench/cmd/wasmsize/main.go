//go:build !js

package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lifeline-go/lifeline/bench/wasmsize"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("wasmsize", flag.ContinueOnError)
	flags.SetOutput(stderr)
	top := flags.Int("top", 25, "how many packages to list")
	names := flags.String("names", "", "an unstripped build of the same code to read the function names from")
	pkgs := flags.String("pkgs", "./wasm", "go list pattern of the packages the wasm was built from (\"\": none)")
	node := flags.String("node", "node", "Node, for gzip -9 and brotli -q11 (\"\": raw size only)")
	flags.Usage = func() {
		fmt.Fprintln(stderr, "usage: wasmsize [flags] file.wasm")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() != 1 {
		flags.Usage()
		return 2
	}
	path := flags.Arg(0)
	m, err := parseFile(path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if *names != "" {
		twin, err := parseFile(*names)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		if !m.Rename(twin) {
			fmt.Fprintf(stderr, "wasmsize: %s does not have the code of %s (or has no name section): its names do not apply\n", *names, path)
			return 1
		}
	}
	var paths, modules []string
	if *pkgs != "" {
		if paths, modules, err = wasmsize.GoList(".", *pkgs); err != nil {
			fmt.Fprintf(stderr, "%v\n(package paths are read from the mangled names alone)\n", err)
		}
	}

	fi, err := os.Stat(path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: %s bytes raw", path, wasmsize.Thousands(int(fi.Size())))
	if *node != "" {
		if _, gz, br, err := wasmsize.Compressed(*node, path); err != nil {
			fmt.Fprintf(stderr, "%v\n", err)
		} else {
			fmt.Fprintf(stdout, ", %s gzip -9, %s brotli -q11", wasmsize.Thousands(int(gz)), wasmsize.Thousands(int(br)))
		}
	}
	fmt.Fprintf(stdout, "\n\n")

	sections := sectionRows(m, fi.Size())
	cols := []string{"section", "bytes", "% of file"}
	if *node != "" {
		var parts [][]byte
		for _, sec := range m.Sections {
			parts = append(parts, m.Payload(sec.Name))
		}
		if sizes, err := wasmsize.BrotliEach(*node, parts); err != nil {
			fmt.Fprintln(stderr, err)
		} else {
			cols = append(cols, "brotli, alone")
			for i := range sections {
				sections[i] = append(sections[i], wasmsize.Thousands(int(sizes[i])))
			}
		}
	}
	table(stdout, cols, sections)
	if !m.HasNames {
		fmt.Fprintf(stdout, "%s has no name section: build it without -ldflags=-s (or pass such a build with -names) for the sizes per package.\n", path)
		return 0
	}
	known := wasmsize.NewPackages(paths)
	byPkg := wasmsize.ByPackage(m, known)
	code := m.CodeBytes()
	fmt.Fprintf(stdout, "Function bodies per package (%s bytes in %d functions):\n\n", wasmsize.Thousands(code), len(m.Funcs))
	rows := wasmsize.Rows(byPkg, code, *top)
	cols = []string{"package", "bytes", "% of code", "functions"}
	if *node != "" {
		if err := brotliColumn(*node, rows, byPkg, wasmsize.CodeOf(m, known), *top); err != nil {
			fmt.Fprintln(stderr, err)
		} else {
			cols = append(cols, "brotli, alone")
		}
	}
	table(stdout, cols, rows)
	fmt.Fprintf(stdout, "Per module (the standard library by top-level directory):\n\n")
	table(stdout, []string{"module", "bytes", "% of code", "functions"}, wasmsize.Rows(wasmsize.ByModule(byPkg, modules), code, *top))
	return 0
}

// brotliColumn adds to the package rows (wasmsize.Rows of byPkg, the first top and the rest)
// the brotli size of each row's code compressed on its own: how much each package would weigh
// on the wire, roughly (the whole compresses across packages too, so the column sums to more).
func brotliColumn(node string, rows [][]string, byPkg []wasmsize.PackageSize, code map[string][]byte, top int) error {
	parts := make([][]byte, len(rows))
	for i, s := range byPkg {
		parts[min(i, top)] = append(parts[min(i, top)], code[s.Package]...)
	}
	sizes, err := wasmsize.BrotliEach(node, parts)
	if err != nil {
		return err
	}
	for i := range rows {
		rows[i] = append(rows[i], wasmsize.Thousands(int(sizes[i])))
	}
	return nil
}

func parseFile(path string) (*wasmsize.Module, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := wasmsize.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

func sectionRows(m *wasmsize.Module, file int64) [][]string {
	var rows [][]string
	for _, s := range m.Sections {
		name := s.Name
		switch {
		case s.ID == 0:
			name = "custom " + s.Name
		case s.Name == "code":
			name = fmt.Sprintf("code (%d functions, %d imported)", len(m.Funcs), m.ImportedFuncs)
		case s.Name == "data":
			name = fmt.Sprintf("data (%d segments, %s bytes of data)", m.DataSegments, wasmsize.Thousands(m.DataBytes))
		}
		rows = append(rows, []string{name, wasmsize.Thousands(s.Size), fmt.Sprintf("%.1f%%", 100*float64(s.Size)/float64(file))})
	}
	return rows
}

func table(w io.Writer, cols []string, rows [][]string) {
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(cols, " | "), strings.Repeat(" --- |", len(cols)))
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
	fmt.Fprintln(w)
}
