package test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestTheTabHubMessagesAreTheProtocolsList holds the messages between a tab and its hub to
// docs/PROTOCOL.md §14, their one list: the Go constants of the tab's messages, the hub's own
// messages, and web/lifeline.js, which sends the first and reads the second, both ways. A name
// added on one side only, or renamed in one place, fails here.
func TestTheTabHubMessagesAreTheProtocolsList(t *testing.T) {
	root := filepath.Join("..", "..")
	read := func(path string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	protocol := read("docs/PROTOCOL.md")
	listed := func(marker string) []string {
		_, rest, ok := strings.Cut(protocol, "<!-- "+marker+":")
		table, _, ok2 := strings.Cut(rest, "<!-- /"+marker+" -->")
		if !ok || !ok2 {
			t.Fatalf("docs/PROTOCOL.md lacks the %s table between its markers", marker)
		}
		return names(regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\|"), table)
	}
	toHub, toTab := listed("tab-to-hub"), listed("hub-to-tab")
	if len(toHub) == 0 || len(toTab) == 0 {
		t.Fatalf("docs/PROTOCOL.md §14 lists %d messages to the hub and %d to the tab: its table rows are `| `name` | … |`", len(toHub), len(toTab))
	}

	same := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v; docs/PROTOCOL.md §14 lists %v", what, got, want)
		}
	}
	same("the hub's Msg constants (wasm/internal/hub/conn.go)",
		names(regexp.MustCompile(`(?m)^\s+Msg[A-Z]\w*\s+Msg = "([a-z-]+)"`), read("wasm/internal/hub/conn.go")), toHub)
	js := read("web/lifeline.js")
	same("the messages web/lifeline.js sends", names(regexp.MustCompile(`\bt: '([a-z-]+)'`), js), toHub)
	same("the messages web/lifeline.js reads", names(regexp.MustCompile(`(?m)^\s+case '([a-z-]+)':`), js), toTab)
	hubSends := names(regexp.MustCompile(`"t":\s*"([a-z-]+)"`), read("wasm/port.go")+read("wasm/scope.go"))
	hubSends = append(hubSends, names(regexp.MustCompile(`\bt: '([a-z-]+)'`), read("web/worker.js"))...)
	slices.Sort(hubSends)
	same("the messages the hub sends (wasm/port.go, wasm/scope.go, web/worker.js)", slices.Compact(hubSends), toTab)
}

// names are the first groups of re's matches in s, sorted, each once.
func names(re *regexp.Regexp, s string) []string {
	var out []string
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return slices.Compact(out)
}
