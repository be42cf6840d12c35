//go:build !lifeline_faults && !js

package main_test

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// The test binary is built without -tags lifeline_faults: so is the command under test.
var buildFlags []string

// A build without the tag has no fault injection, no client directory and no call ledger:
// asking for any fails at once, saying how to get them.
func TestToolingFlagsFailLoudlyWithoutTheTag(t *testing.T) {
	web := webDir(t)
	for _, args := range [][]string{{"-web", web, "-faults"}, {"-web", web, "-client", t.TempDir()}, {"-web", web, "-ledger", t.TempDir() + "/ledger"}} {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, hostBin, args...)
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Fatalf("%v: exit %v, want status 2; stderr:\n%s", args, err, stderr.String())
		}
		flag := args[2]
		if want := "host: " + flag + ": built without fault injection: build with -tags lifeline_faults"; !strings.Contains(stderr.String(), want) {
			t.Errorf("%v: stderr:\n%s\nwant %q", args, stderr.String(), want)
		}
	}
}
