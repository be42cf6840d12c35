package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// image is the linear memory the data section of module writes, from offset 0.
func image(t *testing.T, module []byte) (mem []byte, segments int) {
	t.Helper()
	r := reader{b: module, i: 8}
	for r.i < len(module) {
		id := r.byte()
		body := r.take(r.uint())
		if id != sectionData {
			continue
		}
		d := reader{b: body}
		n := d.uint()
		for k := 0; k < n; k++ {
			d.uint()
			d.byte()
			off := int(d.int())
			d.byte()
			data := d.take(d.uint())
			if need := off + len(data); need > len(mem) {
				mem = append(mem, make([]byte, need-len(mem))...)
			}
			copy(mem[off:], data)
		}
		segments = n
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	return bytes.TrimRight(mem, "\x00"), segments
}

// module builds a module with the given sections, each id then body.
func module(sections ...[]byte) []byte {
	b := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range sections {
		b = append(b, s[0])
		b = appendUint(b, uint64(len(s)-1))
		b = append(b, s[1:]...)
	}
	return b
}

func data(segs ...segment) []byte {
	b := []byte{sectionData}
	b = appendUint(b, uint64(len(segs)))
	for _, s := range segs {
		b = appendSegment(b, s)
	}
	return b
}

func TestPackMergesAcrossShortGapsAndKeepsTheMemoryImage(t *testing.T) {
	custom := []byte{0, 3, 'a', 'b', 'c', 9, 9}
	in := module(custom, data(
		segment{100, []byte("ab")},
		segment{102, []byte("cd")},   // adjacent
		segment{110, []byte("ef")},   // a gap of 4
		segment{10000, []byte("gh")}, // a gap past the bound: stays apart
		segment{10003, []byte("ij")},
	))
	out, before, after, err := Pack(in, 8)
	if err != nil {
		t.Fatal(err)
	}
	if before != 5 || after != 2 {
		t.Errorf("segments %d → %d, want 5 → 2", before, after)
	}
	if !bytes.HasPrefix(out[8:], custom[:1]) || !bytes.Contains(out, custom[1:]) {
		t.Errorf("the custom section did not survive: % x", out)
	}
	wantMem, _ := image(t, in)
	gotMem, n := image(t, out)
	if n != 2 || !bytes.Equal(gotMem, wantMem) {
		t.Errorf("memory image differs (%d segments)", n)
	}
}

func TestPackRefusesWhatItCannotVouchFor(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []byte
		want string
	}{
		{"not wasm", []byte("hello, world"), "not a WebAssembly 1 module"},
		{"truncated section", module(data(segment{0, []byte("x")}))[:12], "truncated"},
		{"passive segment", module([]byte{sectionData, 1, 1, 1, 'x'}), "flags 1"},
		{"global offset", module([]byte{sectionData, 1, 0, 0x23, 0, 0x0b, 1, 'x'}), "opcode 0x23"},
		{"overlap", module(data(segment{10, []byte("abcd")}, segment{12, []byte("x")})), "overlaps"},
		{"trailing bytes", module(append(data(segment{0, []byte("x")}), 7)), "after the last segment"},
	} {
		if _, _, _, err := Pack(c.in, 8); err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "wasmpack: ") {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// The page's wasm itself: packed, its memory image is the linker's, and Node runs it.
func TestPackThePagesWasm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the wasm")
	}
	dir := t.TempDir()
	raw := filepath.Join(dir, "lifeline.wasm")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", raw, "../../wasm")
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	in, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	out, before, after, err := Pack(in, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if after >= before/100 {
		t.Errorf("segments %d → %d: the linker's segments were not merged", before, after)
	}
	wantMem, _ := image(t, in)
	gotMem, _ := image(t, out)
	if !bytes.Equal(gotMem, wantMem) {
		t.Fatal("the packed wasm's memory image differs from the linker's")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node to compile the packed wasm with")
	}
	packed := filepath.Join(dir, "packed.wasm")
	if err := os.WriteFile(packed, out, 0o644); err != nil {
		t.Fatal(err)
	}
	// Compiling validates the module: sections, segment bounds and all.
	check := exec.Command(node, "-e", `new WebAssembly.Module(require("fs").readFileSync(process.argv[1]))`, packed)
	if b, err := check.CombinedOutput(); err != nil {
		t.Fatalf("V8 rejects the packed wasm: %v\n%s", err, b)
	}
}
