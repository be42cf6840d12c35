package test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestThePromiseTableNamesWhatExists keeps ARCHITECTURE.md's promise → code → test table
// true: every Go test, fuzz target and benchmark it names is defined in the repository, and
// every file it names exists (an e2e spec's, under e2e/). A test renamed
// or removed, or a file moved, fails here until the table follows.
func TestThePromiseTableNamesWhatExists(t *testing.T) {
	root := filepath.Join("..", "..")
	arch, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(arch), "## Where each promise lives")
	if !ok {
		t.Fatal(`ARCHITECTURE.md lacks "## Where each promise lives"`)
	}
	if i := strings.Index(table, "\n## "); i >= 0 {
		table = table[:i]
	}
	var goSrc strings.Builder
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git" || d.Name() == "raw" || d.Name() == ".bin") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			goSrc.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	src := goSrc.String()
	funcs := 0
	for _, m := range regexp.MustCompile("`((?:Test|Fuzz|Benchmark)[A-Z]\\w*)`").FindAllStringSubmatch(table, -1) {
		funcs++
		if !strings.Contains(src, "\nfunc "+m[1]+"(") {
			t.Errorf("ARCHITECTURE.md's promise table names %s, which no _test.go declares", m[1])
		}
	}
	files := 0
	for _, m := range regexp.MustCompile("`((?:[\\w.-]+/)+[\\w.-]+\\.(?:go|js|ts|md|sh|json|yml))`").FindAllStringSubmatch(table, -1) {
		files++
		_, err := os.Stat(filepath.Join(root, m[1]))
		if err != nil && (strings.HasPrefix(m[1], "scenarios/") || strings.HasPrefix(m[1], "tests/")) {
			_, err = os.Stat(filepath.Join(root, "e2e", m[1])) // the e2e suite's, as its rows name them
		}
		if err != nil {
			t.Errorf("ARCHITECTURE.md's promise table names the file %s: %v", m[1], err)
		}
	}
	if funcs < 100 || files < 50 {
		t.Fatalf("read %d tests and %d files from the promise table: its format changed, and this test with it", funcs, files)
	}
}
