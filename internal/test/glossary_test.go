package test_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The glossary of ARCHITECTURE.md names, for each concept, the names it has in the code. It is
// kept true as the import rules are: a name in its code column that no longer exists fails
// here, so a rename updates the table; an old name in its last column must not come back.

// packages maps the package names the glossary qualifies a name with to their folders.
var packages = map[string]string{
	"wire":       "internal/wire",
	"gateway":    "gateway",
	"controller": "controller",
	"hostplugin": "hostplugin",
	"jetstream":  "hostplugin/jetstream",
}

// glossaryRow is one concept: its word, the names it has in the code, and the old ones.
type glossaryRow struct {
	word       string
	names, not []string
}

func TestTheGlossaryNamesWhatTheCodeHas(t *testing.T) {
	doc, err := os.ReadFile("../../ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := glossary(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	src, err := sources("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range glossaryProblems(rows, src) {
		t.Error(p)
	}
}

// A made-up glossary, so that the check is known to fail, and to say where.
func TestAGlossaryNameTheCodeLacksIsNamed(t *testing.T) {
	src := map[string]string{
		"hostplugin/host.go":   "package hostplugin\n\ntype Host struct{}\n\nfunc (h *Host) SetReady(ready bool) {}\n",
		"gateway/report.go":    "package gateway\n\ntype recovery struct{}\n",
		"web/lifeline.d.ts":    "  type CallErrorKind =\n",
		"hostplugin/health.go": "package hostplugin\n\nconst p = \"/_lifeline/ready\"\n",
	}
	rows := []glossaryRow{
		{word: "gate", names: []string{"Host.SetReady", "Host.Open", "CallErrorKind", "/_lifeline/ready", "hostplugin.Gone"}},
		{word: "outage", not: []string{"gateway.recovery"}},
	}
	got := glossaryProblems(rows, src)
	want := []string{
		`glossary "gate": Host.Open is not in the code`,
		`glossary "gate": hostplugin.Gone is not in the code`,
		`glossary "outage": gateway.recovery, an old name, is declared again`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// glossary reads the table under "## Glossary".
func glossary(doc string) ([]glossaryRow, error) {
	_, section, ok := strings.Cut(doc, "\n## Glossary\n")
	if !ok {
		return nil, fmt.Errorf("ARCHITECTURE.md has no \"## Glossary\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	tick := regexp.MustCompile("`([^`]+)`")
	var rows []glossaryRow
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| word |") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			return nil, fmt.Errorf("a glossary row has %d cells, want 4 (word, what it is, names, not): %q", len(cells), line)
		}
		r := glossaryRow{word: strings.TrimSpace(cells[0])}
		for _, m := range tick.FindAllStringSubmatch(cells[2], -1) {
			if !strings.HasPrefix(m[1], "*") { // a type of the standard library's, as in (`*slog.Logger`)
				r.names = append(r.names, m[1])
			}
		}
		for _, m := range tick.FindAllStringSubmatch(cells[3], -1) {
			r.not = append(r.not, m[1])
		}
		if len(r.names) == 0 {
			return nil, fmt.Errorf("glossary %q names nothing in the code", r.word)
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("the glossary of ARCHITECTURE.md has no rows")
	}
	return rows, nil
}

// sources reads the tree's Go (tests aside), JS and TypeScript, by path from the root.
func sources(root string) (map[string]string, error) {
	src := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "dist", "test-results", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(path)
		if ext != ".go" && ext != ".js" && ext != ".ts" || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		src[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	return src, err
}

// glossaryProblems checks each name against the sources:
//   - pkg.Name (pkg one of packages): Name is declared in that package's folder;
//   - Type.Member: Type is declared somewhere, and Member is a method of it or a line of its
//     declaration (a field, an interface's method);
//   - a string with / or a lower-case _ (a path, a metric): it is in the sources;
//   - a bare Name: it is declared somewhere (Go, JS or TypeScript).
func glossaryProblems(rows []glossaryRow, src map[string]string) []string {
	var problems []string
	for _, r := range rows {
		for _, name := range r.names {
			if !found(name, src) {
				problems = append(problems, fmt.Sprintf("glossary %q: %s is not in the code", r.word, name))
			}
		}
		for _, name := range r.not {
			if found(name, src) {
				problems = append(problems, fmt.Sprintf("glossary %q: %s, an old name, is declared again", r.word, name))
			}
		}
	}
	return problems
}

func found(name string, src map[string]string) bool {
	if strings.Contains(name, "/") || strings.Contains(name, "_") && strings.ToLower(name) == name {
		for _, text := range src {
			if strings.Contains(text, name) {
				return true
			}
		}
		return false
	}
	qual, member, dotted := strings.Cut(name, ".")
	if !dotted {
		return declaredIn(src, "", name)
	}
	if dir, ok := packages[qual]; ok {
		return declaredIn(src, dir, member)
	}
	method := regexp.MustCompile(`(?m)^func \(\w+ \*?` + qual + `\) ` + member + `\(`)
	typ := regexp.MustCompile(`(?m)^type ` + qual + ` (struct|interface) \{\n((?:.*\n)*?)\}`)
	line := regexp.MustCompile(`(?m)^\s+` + member + `\b`)
	for path, text := range src {
		if !strings.HasSuffix(path, ".go") {
			continue
		}
		if method.MatchString(text) {
			return true
		}
		for _, m := range typ.FindAllStringSubmatch(text, -1) {
			if line.MatchString(m[2]) {
				return true
			}
		}
	}
	return false
}

// declaredIn reports whether name is declared in a file directly in dir ("": anywhere): a
// type, function, method, constant, variable or field in Go; a type, function, class or
// binding in JS or TypeScript.
func declaredIn(src map[string]string, dir, name string) bool {
	decl := regexp.MustCompile(`(?m)^(\s*|type |func (\([^)]*\) )?|const |var |\s*(export )?(type|function|class|const|let|interface) )` + name + `\b`)
	for path, text := range src {
		if dir != "" && filepath.ToSlash(filepath.Dir(path)) != dir {
			continue
		}
		if decl.MatchString(text) {
			return true
		}
	}
	return false
}
