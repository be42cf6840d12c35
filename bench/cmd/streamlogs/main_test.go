//go:build !js

package main

import (
	"strings"
	"testing"
)

// -out rewrites its own part of the figures file and nothing else.
func TestSpliceReplacesOnlyTheBenchPart(t *testing.T) {
	part := benchBegin + "\nnew table\n" + benchEnd + "\n"
	for _, tt := range []struct {
		name, doc, want, err string
	}{
		{"the part between the markers is replaced, the hand-written rest kept",
			"# Fleet\n\nhand intro\n\n" + benchBegin + "\nold table\n" + benchEnd + "\n\nhand notes\n",
			"# Fleet\n\nhand intro\n\n" + benchBegin + "\nnew table\n" + benchEnd + "\n\nhand notes\n", ""},
		{"without markers nothing is written", "# Fleet\n\nhand text\n", "", "markers"},
		{"markers out of order are no markers", benchEnd + "\nx\n" + benchBegin + "\n", "", "markers"},
	} {
		got, err := splice(tt.doc, part)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: splice = %q, %v; want an error about %s", tt.name, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: splice = %q, %v;\nwant %q", tt.name, got, err, tt.want)
		}
	}
}

func TestThousandsPutsACommaEveryThreeDigits(t *testing.T) {
	for n, want := range map[int]string{7: "7", 2000: "2,000", 123456: "123,456", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %s, want %s", n, got, want)
		}
	}
}
