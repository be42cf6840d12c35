package wasmsize

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Groups for the functions that belong to no Go package.
const (
	Assembly  = "(assembly: no package)"      // cmpbody, wasm_pc_f_loop, _rt0_wasm_js, …
	Generated = "(compiler: struct wrappers)" // go:struct {…} method wrappers
	Unnamed   = "(no name section)"
)

// Packages attributes function names to Go import paths.
//
// Go's linker writes each function's symbol name into the name section with every character
// other than letters, digits, '.' and '_' replaced by '_': `github.com/coder/websocket.(*Conn).Read`
// becomes `github.com_coder_websocket.__Conn_.Read`. The package is the part before the first
// '.' that follows the path, which is ambiguous for a path whose first element is a domain;
// given the import paths the binary was built from (`go list -deps`), the longest one that
// prefixes the name decides and the path is shown as Go spells it. Without them, a leading
// element that looks like a domain is kept whole and the mangled path is shown.
type Packages struct {
	mangled []string          // longest first
	real    map[string]string // mangled → import path
}

// NewPackages returns an attributor that knows paths (nil: guess from the names alone).
func NewPackages(paths []string) *Packages {
	p := &Packages{real: map[string]string{}}
	for _, path := range paths {
		m := Mangle(path)
		if _, dup := p.real[m]; !dup {
			p.real[m] = path
			p.mangled = append(p.mangled, m)
		}
	}
	slices.SortFunc(p.mangled, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return p
}

// Mangle spells a symbol the way Go's wasm linker writes it into the name section.
func Mangle(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_':
			return r
		}
		return '_'
	}, s)
}

// domain matches a leading path element that is a host name (github.com, honnef.co,
// go.uber.org). The top-level domains are listed: `runtime.foo_bar` must not read as one.
var domain = regexp.MustCompile(`^(?:[a-z0-9]+\.)+(?:com|org|net|io|co|cc|dev|in|me|app|sh|ai|xyz|info|tech|cloud|page|tools|land|run|ws|tv|fm|ly|eu|de|fr|uk|nl|ru|jp|cn|ch|se|no|fi|pl|cz|at|be|it|es|br|ca|us|au|kr|tw|gg|is|li|lu)_`)

// Of returns the package of one function's name.
func (p *Packages) Of(name string) string {
	switch {
	case name == "":
		return Unnamed
	case strings.HasPrefix(name, "type_.eq.") || strings.HasPrefix(name, "type_.hash."):
		// type:.eq.T / type:.hash.T: the compiler's equality and hash of T count for T's package.
		_, rest, _ := strings.Cut(name[len("type_."):], ".")
		if pkg := p.Of(rest); pkg != Assembly && pkg != Generated {
			return pkg
		}
		return "(compiler: eq/hash of unnamed types)"
	}
	for _, m := range p.mangled {
		if len(name) > len(m) && name[len(m)] == '.' && strings.HasPrefix(name, m) {
			return p.real[m]
		}
	}
	if strings.HasPrefix(name, "go_struct") || strings.HasPrefix(name, "go___struct") {
		return Generated
	}
	start := 0
	if strings.HasPrefix(name, "vendor_") {
		start = len("vendor_")
	}
	if loc := domain.FindStringIndex(name[start:]); loc != nil {
		start += loc[1]
	}
	dot := strings.IndexByte(name[start:], '.')
	if dot < 0 {
		return Assembly
	}
	return name[:start+dot]
}

// PackageSize is the code of one package.
type PackageSize struct {
	Package string
	Bytes   int // function bodies
	Funcs   int
}

// ByPackage sums the function bodies of m per package, largest first.
func ByPackage(m *Module, p *Packages) []PackageSize {
	sizes := map[string]*PackageSize{}
	for _, f := range m.Funcs {
		pkg := p.Of(f.Name)
		s := sizes[pkg]
		if s == nil {
			s = &PackageSize{Package: pkg}
			sizes[pkg] = s
		}
		s.Bytes += f.Size
		s.Funcs++
	}
	return bySize(sizes)
}

// CodeOf returns the function bodies of each package, one after the other, as ByPackage
// attributes them.
func CodeOf(m *Module, p *Packages) map[string][]byte {
	code := map[string][]byte{}
	for i, f := range m.Funcs {
		pkg := p.Of(f.Name)
		code[pkg] = append(code[pkg], m.bodies[i]...)
	}
	return code
}

// ByModule groups package sizes by the module (or, for the standard library, the top-level
// directory) their path starts with: github.com/coder/websocket/internal/wsjs counts for
// github.com/coder/websocket when that module is listed in modules. Package main (its
// symbols carry no import path) and the groups of no package stay as they are.
func ByModule(pkgs []PackageSize, modules []string) []PackageSize {
	mods := slices.Clone(modules)
	slices.SortFunc(mods, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	sizes := map[string]*PackageSize{}
	for _, ps := range pkgs {
		key := ps.Package
		found := false
		for _, m := range mods {
			if key == m || strings.HasPrefix(key, m+"/") {
				key, found = m, true
				break
			}
		}
		if !found && key != "main" && !strings.HasPrefix(key, "(") {
			key = "std: " + strings.Split(key, "/")[0]
			if strings.HasPrefix(ps.Package, "vendor/") {
				key = "std: vendor"
			}
		}
		s := sizes[key]
		if s == nil {
			s = &PackageSize{Package: key}
			sizes[key] = s
		}
		s.Bytes += ps.Bytes
		s.Funcs += ps.Funcs
	}
	return bySize(sizes)
}

// SameCode reports whether two modules have the same function bodies, size for size: then
// the names of one (an unstripped build) describe the code of the other (the same build with
// -ldflags=-s, which only drops the name section).
func SameCode(a, b *Module) bool {
	if a.ImportedFuncs != b.ImportedFuncs || len(a.Funcs) != len(b.Funcs) {
		return false
	}
	for i := range a.Funcs {
		if a.Funcs[i].Size != b.Funcs[i].Size {
			return false
		}
	}
	return true
}

// Rename gives m the function names of twin, when SameCode(m, twin).
func (m *Module) Rename(twin *Module) bool {
	if !SameCode(m, twin) || !twin.HasNames {
		return false
	}
	for i := range m.Funcs {
		m.Funcs[i].Name = twin.Funcs[i].Name
	}
	m.HasNames = true
	return true
}

// Rows are the first n of sizes as table rows (package, bytes, % of code, functions), and a
// last row for the rest when there is more; code is the whole of the code, for the shares.
func Rows(sizes []PackageSize, code, n int) [][]string {
	var rows [][]string
	share := func(b int) string { return fmt.Sprintf("%.1f%%", 100*float64(b)/float64(max(code, 1))) }
	rest := PackageSize{}
	for i, s := range sizes {
		if i >= n {
			rest.Bytes += s.Bytes
			rest.Funcs += s.Funcs
			rest.Package = fmt.Sprintf("%d others", len(sizes)-n)
			continue
		}
		rows = append(rows, []string{s.Package, Thousands(s.Bytes), share(s.Bytes), fmt.Sprint(s.Funcs)})
	}
	if rest.Package != "" {
		rows = append(rows, []string{rest.Package, Thousands(rest.Bytes), share(rest.Bytes), fmt.Sprint(rest.Funcs)})
	}
	return rows
}

// Thousands writes n with commas: 1,234,567.
func Thousands(n int) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// bySize lists sizes largest first, then by package name.
func bySize(sizes map[string]*PackageSize) []PackageSize {
	out := make([]PackageSize, 0, len(sizes))
	for _, s := range sizes {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b PackageSize) int {
		if c := cmp.Compare(b.Bytes, a.Bytes); c != 0 {
			return c
		}
		return cmp.Compare(a.Package, b.Package)
	})
	return out
}
