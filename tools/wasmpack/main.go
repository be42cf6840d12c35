// Command wasmpack merges the data segments of a WebAssembly module that Go's linker wrote.
//
// Go's linker starts a new active data segment at every run of more than eight zero bytes
// (cmd/link/internal/wasm: a segment's header costs about that much), which gives the page's
// wasm some 60,000 segments. Each header is an opcode, a LEB128 offset and a length: noise
// that brotli cannot predict, 71 KB of the 1.21 MB it sends (bench/RESULTS.md, scenario 6).
// Linear memory starts zeroed, so writing a gap's zeros explicitly changes nothing the
// module sees; it costs raw bytes, which compress to almost nothing. wasmpack fills every
// gap of at most -gap bytes, and leaves every other section as it was, byte for byte.
//
//	go run ./tools/wasmpack -gap 4096 in.wasm out.wasm
//
// Binaryen's wasm-opt was considered: its memory packing splits segments at zero runs (the
// opposite), and -Oz rewrites the code for a 0.3% gain; neither merges.
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
)

func main() {
	gap := flag.Int("gap", 4096, "the longest run of zeros between two segments that is written out to merge them")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: wasmpack [-gap N] in.wasm out.wasm")
		os.Exit(2)
	}
	in, err := os.ReadFile(flag.Arg(0))
	if err == nil {
		var out []byte
		var before, after int
		out, before, after, err = Pack(in, *gap)
		if err == nil {
			err = os.WriteFile(flag.Arg(1), out, 0o644)
			fmt.Fprintf(os.Stderr, "wasmpack: %d data segments merged into %d; %d bytes → %d\n", before, after, len(in), len(out))
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

const (
	sectionData      = 11
	sectionDataCount = 12
)

// Pack returns module with its active data segments merged across gaps of at most gap zero
// bytes, and how many segments there were before and after. Segments must be active, of
// memory 0, at constant offsets and not overlapping, as Go's linker writes them; anything
// else is an error naming it, never a module changed in a way it cannot vouch for.
func Pack(module []byte, gap int) (out []byte, before, after int, err error) {
	if len(module) < 8 || string(module[:4]) != "\x00asm" || string(module[4:8]) != "\x01\x00\x00\x00" {
		return nil, 0, 0, errors.New("wasmpack: not a WebAssembly 1 module")
	}
	out = append(out, module[:8]...)
	var dataCountAt = -1 // where in out the data count section's body starts
	for r := (reader{b: module, i: 8}); r.i < len(module); {
		sec := r.i
		id := r.byte()
		size := r.uint()
		start := r.i
		body := r.take(size)
		if r.err != nil {
			return nil, 0, 0, fmt.Errorf("wasmpack: section %d at byte %d: %w", id, start, r.err)
		}
		switch id {
		case sectionData:
			var nb []byte
			nb, before, after, err = packData(body, gap)
			if err != nil {
				return nil, 0, 0, err
			}
			out = append(out, id)
			out = appendUint(out, uint64(len(nb)))
			out = append(out, nb...)
		case sectionDataCount:
			dataCountAt = len(out)
			out = append(out, module[sec:start+size]...)
		default:
			out = append(out, module[sec:start+size]...) // as it was, padded LEB128 and all
		}
	}
	if dataCountAt >= 0 && before != after {
		return nil, 0, 0, errors.New("wasmpack: the module has a data count section; rewriting it is not supported")
	}
	return out, before, after, nil
}

type segment struct {
	offset int64
	data   []byte
}

func packData(body []byte, gap int) (out []byte, before, after int, err error) {
	r := reader{b: body}
	n := r.uint()
	segs := make([]segment, 0, n)
	for k := 0; k < n && r.err == nil; k++ {
		at := r.i
		if flags := r.uint(); flags != 0 {
			return nil, 0, 0, fmt.Errorf("wasmpack: data segment %d (byte %d of the section) has flags %d; only active segments of memory 0 are packed", k, at, flags)
		}
		if op := r.byte(); op != 0x41 { // i32.const
			return nil, 0, 0, fmt.Errorf("wasmpack: data segment %d has an offset expression starting with opcode %#x, not i32.const", k, op)
		}
		offset := r.int()
		if end := r.byte(); end != 0x0b {
			return nil, 0, 0, fmt.Errorf("wasmpack: data segment %d's offset expression does not end after its i32.const (opcode %#x)", k, end)
		}
		if data := r.take(r.uint()); r.err == nil {
			segs = append(segs, segment{offset, data})
		}
	}
	if r.err == nil && r.i != len(body) {
		r.err = fmt.Errorf("%d bytes after the last segment", len(body)-r.i)
	}
	if r.err != nil {
		return nil, 0, 0, fmt.Errorf("wasmpack: data section: %w", r.err)
	}
	// The linker writes its sections' data in its own order, not by address. Segments that
	// do not overlap write the same memory in any order, so they are merged by address.
	slices.SortStableFunc(segs, func(a, b segment) int { return cmp.Compare(a.offset, b.offset) })
	var merged []segment
	for _, s := range segs {
		if len(merged) > 0 {
			last := &merged[len(merged)-1]
			end := last.offset + int64(len(last.data))
			if s.offset < end {
				return nil, 0, 0, fmt.Errorf("wasmpack: a data segment at offset %d overlaps the one before it (ending at %d): their order would matter", s.offset, end)
			}
			if s.offset-end <= int64(gap) {
				last.data = append(last.data, make([]byte, s.offset-end)...)
				last.data = append(last.data, s.data...)
				continue
			}
		}
		merged = append(merged, segment{s.offset, append([]byte(nil), s.data...)})
	}
	out = appendUint(out, uint64(len(merged)))
	for _, s := range merged {
		out = appendSegment(out, s)
	}
	return out, n, len(merged), nil
}

// appendSegment appends s as an active segment of memory 0 at a constant offset.
func appendSegment(b []byte, s segment) []byte {
	b = append(b, 0, 0x41) // flags 0, i32.const
	b = appendInt(b, s.offset)
	b = append(b, 0x0b) // end
	b = appendUint(b, uint64(len(s.data)))
	return append(b, s.data...)
}

// reader reads LEB128 numbers and bytes, keeping the first error.
type reader struct {
	b   []byte
	i   int
	err error
}

func (r *reader) byte() byte {
	if r.err != nil || r.i >= len(r.b) {
		r.fail()
		return 0
	}
	r.i++
	return r.b[r.i-1]
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = fmt.Errorf("truncated at byte %d", r.i)
	}
}

func (r *reader) uint() int {
	var v uint64
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return int(v)
		}
	}
	r.fail()
	return 0
}

func (r *reader) int() int64 {
	var v int64
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		v |= int64(c&0x7f) << shift
		if c < 0x80 {
			if c&0x40 != 0 {
				v -= 1 << (shift + 7)
			}
			return v
		}
	}
	r.fail()
	return 0
}

func (r *reader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b)-r.i {
		r.fail()
		return nil
	}
	r.i += n
	return r.b[r.i-n : r.i]
}

func appendUint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendInt(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
