//go:build !js

package hostplugin_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// deps lists what pkg links, built with tags ("" for none), as go list -deps sees it.
func deps(t *testing.T, tags, pkg string) []string {
	t.Helper()
	args := []string{"list", "-deps"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Env = append(os.Environ(), "GOFLAGS=") // no -tags from the environment
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(cmd.Args[1:], " "), err)
	}
	return strings.Fields(string(out))
}

// Fault injection leaves the shipped build: a Host an embedder builds links no part of it,
// and only a build with -tags lifeline_faults (cmd/host's, as scripts/build.sh makes it) does.
func TestFaultInjectionIsLinkedOnlyWithTheTag(t *testing.T) {
	const (
		host    = "github.com/lifeline-go/lifeline/hostplugin"
		cmdHost = "github.com/lifeline-go/lifeline/cmd/host"
		tag     = "lifeline_faults"
	)
	tooling := []string{"github.com/lifeline-go/lifeline/internal/fault", "github.com/lifeline-go/lifeline/internal/hosthook"}
	for _, tt := range []struct {
		tags, pkg string
		want      bool
	}{
		{"", host, false},
		{"", cmdHost, false},
		{tag, host, true},
		{tag, cmdHost, true},
	} {
		got := deps(t, tt.tags, tt.pkg)
		for _, p := range tooling {
			if slices.Contains(got, p) != tt.want {
				t.Errorf("go list -deps -tags %q %s: links %s = %v, want %v", tt.tags, tt.pkg, p, !tt.want, tt.want)
			}
		}
	}
}
