package configdoc_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/internal/configdoc"
	"github.com/lifeline-go/lifeline/internal/strictjson"
)

// resolveRecovery reads a recovery object on its own, as cmd/swarm reads its -recovery flag.
func resolveRecovery(data string) (controller.Config, error) {
	doc := configdoc.New("client")
	var rec controller.Recovery
	if data != "" {
		doc.Decode([]byte(data), &rec, "", "recovery")
	}
	cfg, err := controller.Resolve(rec)
	doc.Check(err)
	return cfg, doc.Err()
}

func TestARecoveryDocumentIsDecodedStrictly(t *testing.T) {
	known := "(known: slowAfterMs, deadlineMs, initialDelayMs, maxDelayMs, factor, jitter, stableAfterMs)"
	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{"no document takes every default", ``, ""},
		{"an empty object takes every default", `{}`, ""},
		{"null takes every default", `null`, ""},
		{"numbers are read", `{"deadlineMs":5000,"jitter":0.25}`, ""},
		{"a string where a number belongs names the field", `{"deadlineMs":"5000"}`, `client: recovery.deadlineMs: must be a number, got "5000"`},
		{"an unknown field is refused with the known ones", `{"deadline":5000}`, `client: recovery.deadline: is not a known field ` + known},
		{"keys are case-sensitive", `{"deadlinems":5}`, `client: recovery.deadlinems: is not a known field ` + known},
		{"a Go field name is not a key", `{"DeadlineMs":5}`, `client: recovery.DeadlineMs: is not a known field ` + known},
		{"a key may appear once", `{"deadlineMs":5000,"deadlineMs":5}`, `client: recovery.deadlineMs: appears more than once`},
		{"an array is not an object", `[1,2]`, `client: recovery: must be a JSON object, got [1,2]`},
		{"broken JSON is refused", `{"deadlineMs":`, `client: recovery.deadlineMs: invalid JSON at line 1, column 15: the document ends too soon`},
		{"trailing data is refused", `{} {}`, `client: recovery: must hold one JSON value and nothing after it (line 1, column 4), got {}`},
		{"a trailing brace is refused", `{}}`, `client: recovery: must hold one JSON value and nothing after it (line 1, column 3), got }`},
		{"a decoded value then meets the resolver", `{"deadlineMs":0}`, "client: recovery.deadlineMs: must be an integer in 1..2147483647, got 0"},
	}
	for _, tt := range tests {
		_, err := resolveRecovery(tt.in)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.wantErr {
			t.Errorf("%s: reading %s: error = %q, want %q", tt.name, tt.in, got, tt.wantErr)
		}
	}
}

func TestErrorsPrintValuesAsWritten(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"deadlineMs":2147483648}`, "got 2147483648"},
		{`{"deadlineMs":1e300}`, "got 1e300"},
		{`{"deadlineMs":15000.5}`, "got 15000.5"},
		{`{"jitter":1.50}`, "got 1.50"},
		{`{"factor":-0}`, "got -0"},
		{`{"initialDelayMs":2E4}`, "got 2E4"},
	}
	for _, tt := range tests {
		_, err := resolveRecovery(tt.in)
		if err == nil || !strings.HasSuffix(err.Error(), tt.want) {
			t.Errorf("reading %s: %v, want an error ending %q", tt.in, err, tt.want)
		}
	}
}

// TestALaterDocumentOverridesFieldByFieldAndIsNamedWhereItWrote: the page reads its bootstrap,
// then its options onto the same values; a broken value is named in the document that wrote it
// last, with its text there.
func TestALaterDocumentOverridesFieldByFieldAndIsNamedWhereItWrote(t *testing.T) {
	tests := []struct {
		name, first, second, want string
	}{
		{"the second document's value wins and is named there", `{"deadlineMs":5000}`, `{"deadlineMs":0}`,
			"page: lifelineOptions.recovery.deadlineMs: must be an integer in 1..2147483647, got 0"},
		{"a field only the first wrote is named in the first", `{"deadlineMs":0}`, `{"jitter":0.1}`,
			"page: recovery.deadlineMs: must be an integer in 1..2147483647, got 0"},
		{"a broken override keeps the first's value, named in the first", `{"deadlineMs":0E0}`, `{"deadlineMs":"x"}`,
			`page: lifelineOptions.recovery.deadlineMs: must be a number, got "x"; ` +
				"recovery.deadlineMs: must be an integer in 1..2147483647, got 0E0"},
		{"a rule between two fields names the field where it was written", `{"maxDelayMs":100}`, `{"initialDelayMs":2e2}`,
			"page: lifelineOptions.recovery.initialDelayMs: must be <= maxDelayMs (100), got 2e2"},
		{"a rule on a default value names the field with the default", `{"maxDelayMs":100}`, `{}`,
			"page: recovery.initialDelayMs: must be <= maxDelayMs (100), got 500"},
	}
	for _, tt := range tests {
		doc := configdoc.New("page")
		var rec controller.Recovery
		doc.Decode([]byte(tt.first), &rec, "", "recovery")
		doc.Decode([]byte(tt.second), &rec, "lifelineOptions", "recovery")
		_, err := controller.Resolve(rec)
		doc.Check(err)
		err = doc.Err()
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s:\n got %v\nwant %s", tt.name, err, tt.want)
		}
		var ce *controller.ConfigError
		if err != nil && !errors.As(err, &ce) {
			t.Errorf("%s: error %T is not a *controller.ConfigError", tt.name, err)
		}
	}
}

type heartbeatAndEndpoint struct {
	HeartbeatMs *float64 `json:"heartbeatMs"`
	Endpoint    *string  `json:"endpoint"`
}

func (v *heartbeatAndEndpoint) JSONFields() []strictjson.Field {
	return []strictjson.Field{{Name: "heartbeatMs", Ptr: &v.HeartbeatMs}, {Name: "endpoint", Ptr: &v.Endpoint}}
}

func TestADocumentRefusedWholeIsNotCheckedFieldByField(t *testing.T) {
	for _, in := range []string{`<b>`, `[]`, `5`, `{} {}`, ``} {
		doc := configdoc.New("hostplugin")
		var v heartbeatAndEndpoint
		if doc.Decode([]byte(in), &v, "", "") {
			t.Errorf("Decode(%q) = true, want the document refused whole", in)
		}
		if doc.Err() == nil {
			t.Errorf("Decode(%q): no error recorded", in)
		}
	}
	doc := configdoc.New("hostplugin")
	var v heartbeatAndEndpoint
	if !doc.Decode([]byte(`{"heartbeatMs":"x","endpoint":5}`), &v, "", "") {
		t.Errorf("a document with bad fields was refused whole: its other fields can still be checked")
	}
	if want := `hostplugin: heartbeatMs: must be a number, got "x"; endpoint: must be a string, got 5`; doc.Err() == nil || doc.Err().Error() != want {
		t.Errorf("Err() = %v, want %s", doc.Err(), want)
	}
}

func TestNoProblemIsNoError(t *testing.T) {
	doc := configdoc.New("page")
	var rec controller.Recovery
	if !doc.Decode([]byte(`{"deadlineMs":5000}`), &rec, "", "recovery") {
		t.Fatal("a good document was refused")
	}
	cfg, err := controller.Resolve(rec)
	doc.Check(err)
	if err := doc.Err(); err != nil || cfg.Deadline().Milliseconds() != 5000 {
		t.Fatalf("Err() = %v, deadline %v", err, cfg.Deadline())
	}
}
