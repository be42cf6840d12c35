package strictjson_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/lifeline-go/lifeline/internal/strictjson"
	"github.com/lifeline-go/lifeline/internal/test/fieldtest"
)

type inner struct {
	DeadlineMs *float64 `json:"deadlineMs"`
	Jitter     *float64 `json:"jitter"`
}

func (in *inner) JSONFields() []strictjson.Field {
	return []strictjson.Field{{Name: "deadlineMs", Ptr: &in.DeadlineMs}, {Name: "jitter", Ptr: &in.Jitter}}
}

type doc struct {
	Recovery    inner           `json:"recovery"`
	Endpoint    *string         `json:"endpoint"`
	HeartbeatMs int64           `json:"heartbeatMs"`
	Origins     []string        `json:"allowedOrigins"`
	Shared      bool            `json:"shared"`
	Raw         json.RawMessage `json:"raw"`
	Skipped     string          `json:"-"`
	Plain       float64
	Ready       *bool   `json:"ready"`
	Name        *string `json:"name"`
}

func (d *doc) JSONFields() []strictjson.Field {
	return []strictjson.Field{
		{Name: "recovery", Ptr: &d.Recovery},
		{Name: "endpoint", Ptr: &d.Endpoint},
		{Name: "heartbeatMs", Ptr: &d.HeartbeatMs},
		{Name: "allowedOrigins", Ptr: &d.Origins},
		{Name: "shared", Ptr: &d.Shared},
		{Name: "raw", Ptr: (*[]byte)(&d.Raw)},
		{Name: "Plain", Ptr: &d.Plain},
		{Name: "ready", Ptr: &d.Ready},
		{Name: "name", Ptr: &d.Name},
	}
}

func TestTheTestDocumentListsItsFields(t *testing.T) {
	fieldtest.Check(t, &doc{})
}

func problems(r strictjson.Result) string {
	var out []string
	for _, p := range r.Problems {
		out = append(out, fmt.Sprintf("%s|%s|%s", p.Path, p.Rule, p.Value))
	}
	return strings.Join(out, "\n")
}

func TestDecodeRules(t *testing.T) {
	known := "is not a known field (known: recovery, endpoint, heartbeatMs, allowedOrigins, shared, raw, Plain, ready, name)"
	tests := []struct {
		name string
		in   string
		want string // problems, one per line: path|rule|value
	}{
		{"an empty object is all defaults", `{}`, ""},
		{"null is all defaults", `null`, ""},
		{"keys match exactly, not by case", `{"recovery":{"deadlinems":5}}`,
			"recovery.deadlinems|is not a known field (known: deadlineMs, jitter)|"},
		{"a Go field name is not a key", `{"Recovery":{}}`, "Recovery|" + known + "|"},
		{"an upper-case key is unknown", `{"RECOVERY":{"deadlineMs":5}}`, "RECOVERY|" + known + "|"},
		{"a key may appear once", `{"endpoint":"/a","endpoint":"/b"}`, "endpoint|appears more than once|"},
		{"a nested key may appear once", `{"recovery":{"jitter":0.1,"jitter":0.2}}`, "recovery.jitter|appears more than once|"},
		{"a trailing brace is refused", `{"recovery":{}}}`,
			"|must hold one JSON value and nothing after it (line 1, column 16)|}"},
		{"a trailing bracket is refused", `{} ]`, "|must hold one JSON value and nothing after it (line 1, column 4)|]"},
		{"a second document is refused", "{}\n{}", "|must hold one JSON value and nothing after it (line 2, column 1)|{}"},
		{"trailing white space is fine", "{}\n\t ", ""},
		{"an empty document", "  ", "|must be a JSON object, the document is empty|"},
		{"not an object", `[1]`, "|must be a JSON object|[1]"},
		{"a syntax error names line and column", "{\n  \"endpoint\": \"/a\",\n  oops\n}",
			`|invalid JSON at line 3, column 3: invalid character 'o' at start of an object name (expecting '"')|`},
		{"a document that ends too soon", `{"recovery":{`, "recovery|invalid JSON at line 1, column 14: the document ends too soon|"},
		{"a string where a number goes", `{"recovery":{"deadlineMs":"5"}}`, `recovery.deadlineMs|must be a number|"5"`},
		{"a number where a string goes", `{"endpoint":5}`, "endpoint|must be a string|5"},
		{"a number beyond float64", `{"recovery":{"deadlineMs":1e400}}`, "recovery.deadlineMs|must be a number within the float64 range|1e400"},
		{"an integer field takes no fraction", `{"heartbeatMs":1.5}`, "heartbeatMs|must be an integer|1.5"},
		{"an integer field takes no huge value", `{"heartbeatMs":1e300}`, "heartbeatMs|must be an integer|1e300"},
		{"a list item of the wrong kind", `{"allowedOrigins":["a",2,"c"]}`, "allowedOrigins[1]|must be a string|2"},
		{"a list that is not a list", `{"allowedOrigins":"a"}`, `allowedOrigins|must be a JSON array|"a"`},
		{"a bool that is not", `{"shared":"yes"}`, `shared|must be true or false|"yes"`},
		{"every problem is reported", `{"x":1,"recovery":{"jitter":"a","y":2},"endpoint":[]}`,
			"x|" + known + "|\nrecovery.jitter|must be a number|\"a\"\nrecovery.y|is not a known field (known: deadlineMs, jitter)|\nendpoint|must be a string|[]"},
		{"a long value is shortened", `{"endpoint":` + strings.Repeat("1", 100) + `}`, "endpoint|must be a string|" + strings.Repeat("1", 64) + "…"},
		{"invalid UTF-8 is a syntax error", "{\"endpoint\":\"\xff\"}", "endpoint|invalid JSON at line 1, column 14: invalid UTF-8|"},
		{"a skipped Go field is unknown", `{"Skipped":"x"}`, "Skipped|" + known + "|"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d doc
			got := problems(strictjson.Decode([]byte(tt.in), &d, ""))
			if got != tt.want {
				t.Fatalf("Decode(%q) problems:\n%s\nwant:\n%s", tt.in, got, tt.want)
			}
		})
	}
}

func TestDecodeValues(t *testing.T) {
	var d doc
	r := strictjson.Decode([]byte(`{"recovery":{"deadlineMs":2147483648,"jitter":null},"endpoint":"/e",
		"heartbeatMs":15000,"allowedOrigins":["a","b"],"shared":true,"raw":{"k":[1, 2]},"Plain":1.5,"ready":false,"name":"n"}`), &d, "")
	if !r.OK() {
		t.Fatalf("problems: %s", problems(r))
	}
	if *d.Recovery.DeadlineMs != 2147483648 || d.Recovery.Jitter != nil || *d.Endpoint != "/e" || d.HeartbeatMs != 15000 ||
		!reflect.DeepEqual(d.Origins, []string{"a", "b"}) || !d.Shared || string(d.Raw) != `{"k":[1, 2]}` || d.Plain != 1.5 || d.Ready == nil || *d.Ready || *d.Name != "n" {
		t.Fatalf("decoded %+v", d)
	}
	if got := r.Written["recovery.deadlineMs"]; got != "2147483648" {
		t.Fatalf("Written[recovery.deadlineMs] = %q, want the number as written", got)
	}
}

func TestDecodeOverridesFieldByField(t *testing.T) {
	var d doc
	strictjson.Decode([]byte(`{"recovery":{"deadlineMs":15000,"jitter":0.5},"endpoint":"/a"}`), &d, "")
	shared := d.Recovery.DeadlineMs
	r := strictjson.Decode([]byte(`{"recovery":{"deadlineMs":7000}}`), &d, "options")
	if !r.OK() {
		t.Fatalf("problems: %s", problems(r))
	}
	if *d.Recovery.DeadlineMs != 7000 || *d.Recovery.Jitter != 0.5 || *d.Endpoint != "/a" {
		t.Fatalf("after the override: deadline %v jitter %v endpoint %v", *d.Recovery.DeadlineMs, *d.Recovery.Jitter, *d.Endpoint)
	}
	if *shared != 15000 {
		t.Fatalf("the override wrote through a pointer the first document made: %v", *shared)
	}
	if r.Written["options.recovery.deadlineMs"] != "7000" {
		t.Fatalf("Written = %v, want paths under the prefix", r.Written)
	}
	// A bad override leaves the field as it was.
	r = strictjson.Decode([]byte(`{"recovery":{"deadlineMs":"soon"}}`), &d, "options")
	if r.OK() || *d.Recovery.DeadlineMs != 7000 {
		t.Fatalf("bad override: problems %q, deadline %v, want a problem and 7000 kept", problems(r), *d.Recovery.DeadlineMs)
	}
}

// FuzzDecode: any input is answered without a panic, and a document Decode accepts is one
// encoding/json accepts with the same values (Decode is the stricter of the two).
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{}`, `{"recovery":{"deadlineMs":5}}`, `{"allowedOrigins":["a"]}`, `{"raw":[1,{"a":null}]}`,
		`{"endpoint":"\u00e9"}`, `{"heartbeatMs":-0}`, `{"ready":true,"name":null}`, `{"a":1,"a":2}`, `{} x`, `nul`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var d doc
		r := strictjson.Decode(in, &d, "")
		for _, p := range r.Problems {
			if len(p.Value) > 64+len("…") {
				t.Fatalf("problem value of %d bytes: %q", len(p.Value), p.Value)
			}
		}
		if !r.OK() {
			return
		}
		var std struct {
			doc
			Raw json.RawMessage `json:"raw"`
		}
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&std); err != nil {
			t.Fatalf("strictjson accepted %q, encoding/json refused it: %v", in, err)
		}
		if !bytes.Equal(d.Raw, std.Raw) && !(d.Raw == nil && string(std.Raw) == "null") {
			t.Fatalf("raw of %q: strictjson %q, encoding/json %q", in, d.Raw, std.Raw)
		}
		d.Raw = nil
		if !reflect.DeepEqual(d, std.doc) {
			t.Fatalf("strictjson decoded %q as %+v, encoding/json as %+v", in, d, std.doc)
		}
	})
}

func TestFormatNumberWritesANumberAsAPersonWould(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {-1, "-1"}, {1.5, "1.5"}, {2147483648, "2147483648"}, {2e6, "2000000"},
		{1e20, "100000000000000000000"}, {1e21, "1e+21"}, {1e300, "1e+300"}, {0.1, "0.1"},
		{math.NaN(), "NaN"}, {math.Inf(1), "+Inf"}, {math.Inf(-1), "-Inf"},
	} {
		if got := strictjson.FormatNumber(tc.v); got != tc.want {
			t.Errorf("FormatNumber(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
