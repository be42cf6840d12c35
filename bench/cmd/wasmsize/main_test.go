//go:build !js

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunExitCodesAndOutput(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.wasm")
	if err := os.WriteFile(empty, []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	notWasm := filepath.Join(dir, "x.wasm")
	if err := os.WriteFile(notWasm, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		args        []string
		code        int
		out, errOut string
	}{
		{"no file", nil, 2, "", "usage: wasmsize"},
		{"a module without names", []string{"-node", "", "-pkgs", "", empty}, 0, "has no name section", ""},
		{"not a module", []string{"-node", "", "-pkgs", "", notWasm}, 1, "", "wasmsize: not a WebAssembly module"},
		{"a twin with other code", []string{"-node", "", "-pkgs", "", "-names", empty, empty}, 1, "", "does not have the code of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(tt.args, &out, &errOut); code != tt.code {
				t.Errorf("exit %d, want %d; stderr %q", code, tt.code, errOut.String())
			}
			if !strings.Contains(out.String(), tt.out) || !strings.Contains(errOut.String(), tt.errOut) {
				t.Errorf("stdout %q, stderr %q; want %q and %q in them", out.String(), errOut.String(), tt.out, tt.errOut)
			}
		})
	}
}
