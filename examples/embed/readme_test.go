//go:build !js

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lifeline-go/lifeline/hostplugin"
)

// The README's "Embed it in your app" section and docs/embedding.md, the guide it points to,
// are held to the code: the guide's config table lists every field of hostplugin.ConfigFile
// with the default and the rules the code has, and the Go of both is this example's, verbatim.

var update = flag.Bool("update", false, "rewrite the config table of docs/embedding.md from the code (its last column is kept)")

const (
	readmePath = "../../README.md"
	guidePath  = "../../docs/embedding.md" // the config table's page
	tableBegin = "<!-- config-fields: `go test ./examples/embed -run TestREADME -update` writes the first three columns from the code; the last is written by hand -->"
	tableEnd   = "<!-- /config-fields -->"
	tableHead  = "| Field | Default | Rule (as an error states it) | What it does |\n|---|---|---|---|\n"
	codeBegin  = "<!-- embed-code: examples/embed/lifeline.go, verbatim (TestREADMECodeIsTheExamples) -->\n```go\n"
)

// configRow is what the code says of one field of the config file.
type configRow struct {
	path, def, rule string
}

func (r configRow) String(meaning string) string {
	return fmt.Sprintf("| `%s` | `%s` | %s | %s |", r.path, r.def, r.rule, meaning)
}

// configRows lists every field of hostplugin.ConfigFile in order, recovery's as "recovery.x":
// its default as DefaultConfig().File() writes it, and every rule ParseConfig states for it.
func configRows(t *testing.T) []configRow {
	t.Helper()
	b, err := json.Marshal(hostplugin.DefaultConfig().File())
	if err != nil {
		t.Fatal(err)
	}
	var defaults map[string]json.RawMessage
	if err := json.Unmarshal(b, &defaults); err != nil {
		t.Fatal(err)
	}
	var rows []configRow
	var walk func(typ reflect.Type, prefix string, defs map[string]json.RawMessage)
	walk = func(typ reflect.Type, prefix string, defs map[string]json.RawMessage) {
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				t.Fatalf("%s%s has no JSON name: the table cannot name it", prefix, f.Name)
			}
			if f.Type.Kind() == reflect.Struct {
				var sub map[string]json.RawMessage
				if err := json.Unmarshal(defs[name], &sub); err != nil {
					t.Fatalf("the default of %s%s: %v", prefix, name, err)
				}
				walk(f.Type, prefix+name+".", sub)
				continue
			}
			def := string(defs[name])
			if def == "" {
				def = "[]" // an absent list: none
			}
			rows = append(rows, configRow{path: prefix + name, def: def, rule: strings.Join(rulesOf(t, prefix+name, f.Type), "; ")})
		}
	}
	walk(reflect.TypeFor[hostplugin.ConfigFile](), "", defaults)
	return rows
}

// rulesOf returns the rules ParseConfig states for the field at path when it is given values
// that break them: a negative number (every numeric field has a lower bound of 0 or more), a
// string that is no path, origin or address, too many entries, a duplicate, a bad entry.
func rulesOf(t *testing.T, path string, typ reflect.Type) []string {
	t.Helper()
	var badValues []any
	switch {
	case typ.Kind() == reflect.Pointer && typ.Elem().Kind() == reflect.Float64:
		badValues = []any{-1}
	case typ.Kind() == reflect.Pointer && typ.Elem().Kind() == reflect.String:
		badValues = []any{" "}
	case typ.Kind() == reflect.Pointer && typ.Elem().Kind() == reflect.Bool:
		badValues = []any{"yes"}
	case typ.Kind() == reflect.Slice && typ.Elem().Kind() == reflect.String:
		badValues = []any{slices.Repeat([]string{" "}, 257), []string{" ", " "}, []string{" "}}
	default:
		t.Fatalf("%s is a %v: teach rulesOf how to break its rules", path, typ)
	}
	var rules []string
	for _, v := range badValues {
		rules = append(rules, brokenRules(t, path, v)...)
	}
	if path == "recovery.initialDelayMs" {
		// The one rule between two fields.
		rules = append(rules, brokenRules(t, path, 2, "maxDelayMs", 1)...)
	}
	return rules
}

// brokenRules parses a config with value at path (and further sibling name, value pairs) and
// returns the rules it broke at path, a rule of an entry as "each …", a value in parentheses cut.
func brokenRules(t *testing.T, path string, value any, siblings ...any) []string {
	t.Helper()
	parent, name, nested := strings.Cut(path, ".")
	obj := map[string]any{}
	if !nested {
		name, parent = parent, ""
	}
	obj[name] = value
	for i := 0; i+1 < len(siblings); i += 2 {
		obj[siblings[i].(string)] = siblings[i+1]
	}
	doc := any(obj)
	if nested {
		doc = map[string]any{parent: obj}
	}
	b, _ := json.Marshal(doc)
	_, err := hostplugin.ParseConfig(b)
	var ce *hostplugin.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("ParseConfig(%s) = %v, want a ConfigError for %s", b, err, path)
	}
	var rules []string
	for _, f := range ce.Fields {
		rule, _, _ := strings.Cut(f.Rule, " (")
		switch {
		case f.Path == path:
			rules = append(rules, rule)
		case strings.HasPrefix(f.Path, path+"["):
			rules = append(rules, "each "+rule)
		}
	}
	if len(rules) == 0 {
		t.Fatalf("ParseConfig(%s) broke no rule of %s: %v", b, path, err)
	}
	return rules
}

var rowRE = regexp.MustCompile("^\\| `([^`]+)` \\| `([^`]*)` \\| (.*?) \\| (.*) \\|$")

func TestREADMEConfigTableIsTheCode(t *testing.T) {
	readme, err := os.ReadFile(guidePath)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := bytes.Cut(readme, []byte(tableBegin+"\n"))
	table, after, ok2 := bytes.Cut(rest, []byte(tableEnd))
	if !ok || !ok2 {
		t.Fatalf("docs/embedding.md lacks the config table between %q and %q", tableBegin, tableEnd)
	}
	type written struct{ def, rule, meaning string }
	have := map[string]written{}
	var order []string
	for line := range strings.Lines(strings.TrimPrefix(string(table), tableHead)) {
		line = strings.TrimSuffix(line, "\n")
		m := rowRE.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("docs/embedding.md: a line of the config table is not a row `| `field` | `default` | rule | meaning |`: %q", line)
			continue
		}
		have[m[1]] = written{m[2], m[3], m[4]}
		order = append(order, m[1])
	}

	want := configRows(t)
	var out strings.Builder
	out.WriteString(tableHead)
	for _, r := range want {
		w, ok := have[r.path]
		meaning := w.meaning
		switch {
		case !ok:
			t.Errorf("docs/embedding.md: the config table has no row for %s; add:\n%s", r.path, r.String("…"))
		case w.def != r.def || w.rule != r.rule:
			t.Errorf("docs/embedding.md: the row of %s says default `%s`, rule %q; the code says default `%s`, rule %q", r.path, w.def, w.rule, r.def, r.rule)
		case strings.TrimSpace(meaning) == "" || meaning == "…":
			t.Errorf("docs/embedding.md: the row of %s does not say what the field does", r.path)
		}
		if meaning == "" {
			meaning = "…"
		}
		out.WriteString(r.String(meaning) + "\n")
	}
	var paths []string
	for _, r := range want {
		paths = append(paths, r.path)
	}
	for _, p := range order {
		if !slices.Contains(paths, p) {
			t.Errorf("docs/embedding.md: the config table has a row for %s, which hostplugin.ConfigFile does not have", p)
		}
	}
	if !slices.Equal(order, paths) && len(order) == len(paths) {
		t.Errorf("docs/embedding.md: the config table's rows are in the order %v; the code's is %v", order, paths)
	}
	if *update {
		next := slices.Concat(before, []byte(tableBegin+"\n"), []byte(out.String()), []byte(tableEnd), after)
		if err := os.WriteFile(guidePath, next, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the config table of %s", guidePath)
	}
}

func TestREADMECodeIsTheExamples(t *testing.T) {
	src, err := os.ReadFile("lifeline.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{readmePath, guidePath} {
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		_, rest, ok := bytes.Cut(doc, []byte(codeBegin))
		code, _, ok2 := bytes.Cut(rest, []byte("```\n"))
		if !ok || !ok2 {
			t.Fatalf("%s lacks the example's code after %q", path, codeBegin)
		}
		if !bytes.Contains(src, code) {
			t.Errorf("%s's Go is not a verbatim excerpt of examples/embed/lifeline.go; it reads:\n%s", path, code)
		}
	}
}
