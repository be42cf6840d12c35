package wasmsize

import (
	"testing"
)

func TestPackagesOf(t *testing.T) {
	known := NewPackages([]string{"runtime", "internal/runtime/maps", "honnef.co/go/js/dom/v2",
		"github.com/lifeline-go/lifeline/gateway", "github.com/go-json-experiment/json/jsontext",
		"vendor/golang.org/x/net/dns/dnsmessage", "go/ast", "net", "net/http"})
	guess := NewPackages(nil)
	tests := []struct{ name, known, guessed string }{
		{"runtime.mallocgc", "runtime", "runtime"},
		{"runtime.sched_getaffinity", "runtime", "runtime"},
		{"internal_runtime_maps.__Map_.getWithKey", "internal/runtime/maps", "internal_runtime_maps"},
		{"honnef.co_go_js_dom_v2.wrapElement", "honnef.co/go/js/dom/v2", "honnef.co_go_js_dom_v2"},
		{"github.com_lifeline_go_lifeline_gateway.__Gateway_.Run", "github.com/lifeline-go/lifeline/gateway", "github.com_lifeline_go_lifeline_gateway"},
		{"github.com_lifeline_go_lifeline_gateway.__Gateway_.Run.func1", "github.com/lifeline-go/lifeline/gateway", "github.com_lifeline_go_lifeline_gateway"},
		{"github.com_go_json_experiment_json_jsontext.__decoderState_.ReadToken", "github.com/go-json-experiment/json/jsontext", "github.com_go_json_experiment_json_jsontext"},
		{"vendor_golang.org_x_net_dns_dnsmessage.init", "vendor/golang.org/x/net/dns/dnsmessage", "vendor_golang.org_x_net_dns_dnsmessage"},
		// net and net/http share a prefix: the longer path that is followed by '.' wins.
		{"net_http.__Client_.Do", "net/http", "net_http"},
		{"net.ParseIP", "net", "net"},
		{"go_ast.Inspect", "go/ast", "go_ast"},
		{"slices.pdqsortOrdered_go.shape.int_", "slices", "slices"},
		{"main.main", "main", "main"},
		{"type_.eq.internal_runtime_maps.Map", "internal/runtime/maps", "internal_runtime_maps"},
		{"type_.hash.net_http.Request", "net/http", "net_http"},
		{"type_.eq._2_interface__", "(compiler: eq/hash of unnamed types)", "(compiler: eq/hash of unnamed types)"},
		{"go_struct___io.Reader__io.WriterTo__.Read", Generated, Generated},
		{"go___struct___io.Reader__io.WriterTo___.Read", Generated, Generated},
		{"go_buildid", Assembly, Assembly},
		{"wasm_pc_f_loop", Assembly, Assembly},
		{"memeqbody", Assembly, Assembly},
		{"", Unnamed, Unnamed},
	}
	for _, tt := range tests {
		if got := known.Of(tt.name); got != tt.known {
			t.Errorf("known paths: Of(%q) = %q, want %q", tt.name, got, tt.known)
		}
		if got := guess.Of(tt.name); got != tt.guessed {
			t.Errorf("no paths: Of(%q) = %q, want %q", tt.name, got, tt.guessed)
		}
	}
}

func TestMangleIsWhatTheLinkerWrites(t *testing.T) {
	for in, want := range map[string]string{
		"github.com/coder/websocket.(*Conn).Read": "github.com_coder_websocket.__Conn_.Read",
		"type:.eq.[2]interface {}":                "type_.eq._2_interface___",
		"slices.Sort[go.shape.int]":               "slices.Sort_go.shape.int_",
	} {
		if got := Mangle(in); got != want {
			t.Errorf("Mangle(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestByPackageAndModule(t *testing.T) {
	m := &Module{Funcs: []Func{
		{Name: "runtime.a", Size: 50}, {Name: "runtime.b", Size: 30},
		{Name: "github.com_coder_websocket.Dial", Size: 40},
		{Name: "github.com_coder_websocket_internal_wsjs.New", Size: 15},
		{Name: "crypto_tls.Dial", Size: 10}, {Name: "crypto_sha256.Sum", Size: 5},
		{Name: "main.main", Size: 7}, {Name: "cmpbody", Size: 3},
	}}
	pkgs := ByPackage(m, NewPackages([]string{"github.com/coder/websocket", "github.com/coder/websocket/internal/wsjs", "crypto/tls", "crypto/sha256"}))
	want := []PackageSize{{"runtime", 80, 2}, {"github.com/coder/websocket", 40, 1}, {"github.com/coder/websocket/internal/wsjs", 15, 1},
		{"crypto/tls", 10, 1}, {"main", 7, 1}, {"crypto/sha256", 5, 1}, {Assembly, 3, 1}}
	if !equal(pkgs, want) {
		t.Errorf("ByPackage = %+v\nwant %+v", pkgs, want)
	}
	mods := ByModule(pkgs, []string{"github.com/coder/websocket"})
	wantMods := []PackageSize{{"std: runtime", 80, 2}, {"github.com/coder/websocket", 55, 2}, {"std: crypto", 15, 2}, {"main", 7, 1}, {Assembly, 3, 1}}
	if !equal(mods, wantMods) {
		t.Errorf("ByModule = %+v\nwant %+v", mods, wantMods)
	}
	rows := Rows(pkgs, m.CodeBytes(), 2)
	if len(rows) != 3 || rows[2][0] != "5 others" || rows[2][1] != "40" || rows[0][2] != "50.0%" {
		t.Errorf("Rows = %q, want runtime, websocket and a row of the 5 others (40 bytes); runtime 50.0%%", rows)
	}
}

func equal(a, b []PackageSize) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestThousands(t *testing.T) {
	for in, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 6765821: "6,765,821", -12345: "-12,345"} {
		if got := Thousands(in); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestCodeOfHoldsTheBodiesByPackageSumsThem(t *testing.T) {
	m, err := Parse(sample())
	if err != nil {
		t.Fatal(err)
	}
	p := NewPackages([]string{"github.com/x/y"})
	code := CodeOf(m, p)
	for _, s := range ByPackage(m, p) {
		if len(code[s.Package]) != s.Bytes {
			t.Errorf("CodeOf(%s) holds %d bytes, ByPackage says %d", s.Package, len(code[s.Package]), s.Bytes)
		}
	}
	if got := len(m.Payload("code")); got != m.Section("code") {
		t.Errorf("Payload(code) holds %d bytes, the section %d", got, m.Section("code"))
	}
}
