package wasmsize

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Standard section ids of the WebAssembly binary format (core spec §5.5.2).
const (
	secCustom = 0
	secType   = 1
	secImport = 2
	secCode   = 10
	secData   = 11
)

var sectionNames = [...]string{"custom", "type", "import", "function", "table", "memory", "global",
	"export", "start", "element", "code", "data", "datacount", "tag"}

// Section is one section of a module, in file order.
type Section struct {
	ID   byte
	Name string // "type", "code", …; a custom section's own name, e.g. "name"
	Size int    // payload bytes, without the id and the size prefix
}

// Func is one function defined in the module (imports have no body).
type Func struct {
	Index uint32 // in the function index space: imported functions come first
	Name  string // from the name section; "" without one
	Size  int    // body bytes, as the code section declares them
}

// Module is what Parse reads: enough to say where the bytes of a module go.
type Module struct {
	Sections      []Section
	ImportedFuncs int
	Funcs         []Func
	DataSegments  int
	DataBytes     int  // the bytes of every data segment, framing left out
	HasNames      bool // a name section gave the functions their names

	payloads [][]byte // of each section, in the parsed buffer
	bodies   [][]byte // of each function, likewise
}

// Parse reads a WebAssembly binary module. It checks the framing of every section and reads
// in full only the import, code, data and name sections.
func Parse(b []byte) (*Module, error) {
	if len(b) < 8 || !bytes.Equal(b[:4], []byte("\x00asm")) {
		return nil, errors.New("wasmsize: not a WebAssembly module (no \\0asm magic)")
	}
	if v := binary.LittleEndian.Uint32(b[4:8]); v != 1 {
		return nil, fmt.Errorf("wasmsize: binary format version %d, want 1", v)
	}
	m := &Module{}
	var names map[uint32]string
	r := reader{b: b, off: 8}
	for r.off < len(b) {
		at := r.off
		id := r.byte()
		size := r.u32()
		payload := r.bytes(int(size))
		if r.err != nil {
			return nil, fmt.Errorf("wasmsize: section at byte %d: %w", at, r.err)
		}
		s := Section{ID: id, Size: len(payload)}
		m.payloads = append(m.payloads, payload)
		if int(id) < len(sectionNames) {
			s.Name = sectionNames[id]
		} else {
			s.Name = fmt.Sprintf("unknown(%d)", id)
		}
		sr := reader{b: payload, base: at}
		var err error
		switch id {
		case secCustom:
			s.Name = sr.name()
			if s.Name == "name" && sr.err == nil {
				names, err = parseNames(&sr)
			}
		case secImport:
			m.ImportedFuncs, err = parseImports(&sr)
		case secCode:
			m.Funcs, m.bodies, err = parseCode(&sr)
		case secData:
			m.DataSegments, m.DataBytes, err = parseData(&sr)
		}
		if err == nil {
			err = sr.err
		}
		if err != nil {
			return nil, fmt.Errorf("wasmsize: %s section at byte %d: %w", s.Name, at, err)
		}
		m.Sections = append(m.Sections, s)
	}
	for i := range m.Funcs {
		m.Funcs[i].Index = uint32(m.ImportedFuncs + i)
		m.Funcs[i].Name = names[m.Funcs[i].Index]
	}
	m.HasNames = len(names) > 0
	return m, nil
}

// Section returns the total payload of the sections called name ("code", "data", "name", …).
func (m *Module) Section(name string) int {
	n := 0
	for _, s := range m.Sections {
		if s.Name == name {
			n += s.Size
		}
	}
	return n
}

// Payload returns the bytes of the sections called name, one after the other.
func (m *Module) Payload(name string) []byte {
	var b []byte
	for i, s := range m.Sections {
		if s.Name == name {
			b = append(b, m.payloads[i]...)
		}
	}
	return b
}

// CodeBytes is the sum of the function bodies.
func (m *Module) CodeBytes() int {
	n := 0
	for _, f := range m.Funcs {
		n += f.Size
	}
	return n
}

// parseImports counts the imported functions: they take the first function indices.
func parseImports(r *reader) (int, error) {
	n := r.u32()
	funcs := 0
	for i := uint32(0); i < n && r.err == nil; i++ {
		r.name() // module
		r.name() // field
		switch kind := r.byte(); kind {
		case 0x00: // func: type index
			r.u32()
			funcs++
		case 0x01: // table: reftype, limits
			r.byte()
			r.limits()
		case 0x02: // memory: limits
			r.limits()
		case 0x03: // global: valtype, mutability
			r.byte()
			r.byte()
		case 0x04: // tag: attribute, type index
			r.byte()
			r.u32()
		default:
			if r.err == nil {
				return 0, fmt.Errorf("import %d has kind %#x", i, kind)
			}
		}
	}
	return funcs, nil
}

// parseCode reads the functions and their bodies (slices of r's bytes).
func parseCode(r *reader) ([]Func, [][]byte, error) {
	n := r.u32()
	if r.err != nil {
		return nil, nil, nil
	}
	if int(n) > len(r.b) { // every body takes at least one byte
		return nil, nil, fmt.Errorf("%d bodies in %d bytes", n, len(r.b))
	}
	fs := make([]Func, 0, n)
	bodies := make([][]byte, 0, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		size := r.u32()
		fs = append(fs, Func{Size: int(size)})
		bodies = append(bodies, r.bytes(int(size)))
	}
	if r.err == nil && r.off != len(r.b) {
		return nil, nil, fmt.Errorf("%d bytes after the last body", len(r.b)-r.off)
	}
	return fs, bodies, nil
}

func parseData(r *reader) (segments, total int, err error) {
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		switch flags := r.u32(); flags {
		case 0: // active, memory 0
			if err := r.constExpr(); err != nil {
				return 0, 0, fmt.Errorf("segment %d: %w", i, err)
			}
		case 1: // passive
		case 2: // active, explicit memory
			r.u32()
			if err := r.constExpr(); err != nil {
				return 0, 0, fmt.Errorf("segment %d: %w", i, err)
			}
		default:
			if r.err == nil {
				return 0, 0, fmt.Errorf("segment %d has flags %d", i, flags)
			}
		}
		size := r.u32()
		r.bytes(int(size))
		segments++
		total += int(size)
	}
	return segments, total, nil
}

// parseNames reads the function names subsection of the name custom section; the others
// (module, locals, …) are skipped.
func parseNames(r *reader) (map[uint32]string, error) {
	names := map[uint32]string{}
	for r.off < len(r.b) && r.err == nil {
		id := r.byte()
		sub := reader{b: r.bytes(int(r.u32())), base: r.base}
		if r.err != nil || id != 1 {
			continue
		}
		n := sub.u32()
		for i := uint32(0); i < n && sub.err == nil; i++ {
			idx := sub.u32()
			names[idx] = sub.name()
		}
		if sub.err != nil {
			return nil, fmt.Errorf("function names: %w", sub.err)
		}
	}
	return names, nil
}

// reader decodes the binary format; the first error sticks and every later read is a no-op.
type reader struct {
	b    []byte
	off  int
	base int // where b starts in the file, for errors
	err  error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("at byte %d: %s", r.base+r.off, fmt.Sprintf(format, args...))
	}
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail("unexpected end")
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.fail("%d bytes wanted, %d left", n, len(r.b)-r.off)
		return nil
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s
}

// u32 reads an unsigned LEB128 of at most 5 bytes.
func (r *reader) u32() uint32 {
	var v uint64
	for i := 0; i < 5; i++ {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if v > 0xffffffff {
				r.fail("u32 %d out of range", v)
				return 0
			}
			return uint32(v)
		}
	}
	r.fail("u32 longer than 5 bytes")
	return 0
}

// skipSLEB skips a signed LEB128 of at most max bytes.
func (r *reader) skipSLEB(max int) {
	for i := 0; i < max; i++ {
		if r.byte()&0x80 == 0 {
			return
		}
	}
	r.fail("integer longer than %d bytes", max)
}

func (r *reader) name() string { return string(r.bytes(int(r.u32()))) }

func (r *reader) limits() {
	switch flags := r.byte(); flags {
	case 0x00:
		r.u32()
	case 0x01:
		r.u32()
		r.u32()
	default:
		r.fail("limits flags %#x", flags)
	}
}

// constExpr skips a constant expression (a data segment's offset) up to its end opcode.
func (r *reader) constExpr() error {
	for r.err == nil {
		switch op := r.byte(); op {
		case 0x0b: // end
			return nil
		case 0x41: // i32.const
			r.skipSLEB(5)
		case 0x42: // i64.const
			r.skipSLEB(10)
		case 0x23: // global.get
			r.u32()
		default:
			if r.err == nil {
				return fmt.Errorf("opcode %#x in a constant expression", op)
			}
		}
	}
	return nil
}
