package wasmsize

import (
	"bytes"
	"strings"
	"testing"
)

// A small encoder of the binary format, to write the modules the tests parse.

func leb(v uint32) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func str[T string | []byte](s T) []byte { return append(leb(uint32(len(s))), s...) }

func vec(items ...[]byte) []byte {
	b := leb(uint32(len(items)))
	for _, it := range items {
		b = append(b, it...)
	}
	return b
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func section(id byte, payload []byte) []byte {
	return cat([]byte{id}, leb(uint32(len(payload))), payload)
}

func module(sections ...[]byte) []byte {
	return cat([]byte("\x00asm\x01\x00\x00\x00"), cat(sections...))
}

// body is a function body of exactly n bytes: no locals, n-2 nops, end.
func body(n int) []byte {
	return cat([]byte{0x00}, bytes.Repeat([]byte{0x01}, n-2), []byte{0x0b})
}

// sample is a module with one imported function and a memory import, three functions of
// 10, 200 and 3 body bytes, two data segments (active and passive) and a name section that
// names the import and two of the three functions.
func sample() []byte {
	return module(
		section(secCustom, cat(str("go:buildid"), []byte("xyz"))),
		section(secType, vec([]byte{0x60, 0x00, 0x00})),
		section(secImport, vec(
			cat(str("gojs"), str("runtime.wasmExit"), []byte{0x00}, leb(0)),
			cat(str("env"), str("mem"), []byte{0x02, 0x01}, leb(1), leb(2)),
		)),
		section(3, vec(leb(0), leb(0), leb(0))),
		section(secCode, vec(cat(leb(10), body(10)), cat(leb(200), body(200)), cat(leb(3), body(3)))),
		section(secData, vec(
			cat(leb(0), []byte{0x41}, leb(4096), []byte{0x0b}, str("hello")),
			cat(leb(1), str("passive data")),
		)),
		section(secCustom, cat(str("name"),
			[]byte{0}, str(str("mod")), // module name subsection, skipped
			[]byte{1}, str(vec(
				cat(leb(0), str("runtime.wasmExit")),
				cat(leb(1), str("github.com_x_y.__T_.M")),
				cat(leb(2), str("main.main")),
			)),
		)),
	)
}

func TestParseReadsEveryFunctionAndSegment(t *testing.T) {
	m, err := Parse(sample())
	if err != nil {
		t.Fatal(err)
	}
	if m.ImportedFuncs != 1 {
		t.Errorf("ImportedFuncs = %d, want 1 (the memory import is not a function)", m.ImportedFuncs)
	}
	want := []Func{{1, "github.com_x_y.__T_.M", 10}, {2, "main.main", 200}, {3, "", 3}}
	if len(m.Funcs) != len(want) {
		t.Fatalf("Funcs = %+v, want %+v", m.Funcs, want)
	}
	for i := range want {
		if m.Funcs[i] != want[i] {
			t.Errorf("Funcs[%d] = %+v, want %+v", i, m.Funcs[i], want[i])
		}
	}
	if !m.HasNames {
		t.Error("HasNames = false, want true")
	}
	if m.CodeBytes() != 213 {
		t.Errorf("CodeBytes = %d, want 213", m.CodeBytes())
	}
	// Three bodies and their one-byte sizes (200 takes two), after the count.
	if got := m.Section("code"); got != 1+213+1+2+1 {
		t.Errorf(`Section("code") = %d, want %d`, got, 1+213+1+2+1)
	}
	if m.DataSegments != 2 || m.DataBytes != len("hello")+len("passive data") {
		t.Errorf("data = %d segments, %d bytes; want 2, %d", m.DataSegments, m.DataBytes, len("hello")+len("passive data"))
	}
	var names []string
	for _, s := range m.Sections {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "go:buildid,type,import,function,code,data,name" {
		t.Errorf("sections %s", got)
	}
}

func TestParseRejectsMalformedModules(t *testing.T) {
	good := sample()
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "no \\0asm magic"},
		{"not wasm", []byte("\x7fELF\x02\x01\x01\x00"), "no \\0asm magic"},
		{"version 2", []byte("\x00asm\x02\x00\x00\x00"), "version 2"},
		{"truncated", good[:len(good)-3], "bytes wanted"},
		{"section longer than the file", module([]byte{secType, 0x7f}), "127 bytes wanted"},
		{"endless LEB", module([]byte{secType, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}), "longer than 5 bytes"},
		{"bytes after the last body", module(section(secCode, cat(vec(cat(leb(2), body(2))), []byte{0}))), "1 bytes after the last body"},
		{"more bodies than bytes", module(section(secCode, leb(1000))), "1000 bodies"},
		{"unknown import kind", module(section(secImport, vec(cat(str("a"), str("b"), []byte{0x09})))), "kind 0x9"},
		{"unknown data flags", module(section(secData, vec(cat(leb(7), str("x"))))), "flags 7"},
		{"unknown opcode in an offset", module(section(secData, vec(cat(leb(0), []byte{0x6a, 0x0b}, str("x"))))), "opcode 0x6a"},
		{"function name past its subsection", module(section(secCustom, cat(str("name"), []byte{1}, str(vec(cat(leb(0), leb(9))))))), "function names"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse = %+v, want an error", m)
			}
			if !strings.HasPrefix(err.Error(), "wasmsize: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want one with the package prefix and %q", err, tt.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add(sample())
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil {
			return
		}
		if m.CodeBytes() > len(b) || m.DataBytes > len(b) {
			t.Fatalf("%d code bytes and %d data bytes in a %d-byte file", m.CodeBytes(), m.DataBytes, len(b))
		}
		for i, fn := range m.Funcs {
			if int(fn.Index) != m.ImportedFuncs+i {
				t.Fatalf("function %d has index %d with %d imports", i, fn.Index, m.ImportedFuncs)
			}
		}
	})
}
