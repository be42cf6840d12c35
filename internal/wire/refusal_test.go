package wire_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lifeline-go/lifeline/internal/wire"
)

var refusalCases = []struct {
	name string
	in   string
	want wire.Refusal
	err  string // "" for success; else a substring of the error
}{
	{"an unauthorized refusal decodes", `{"error":"unauthorized","reason":"sign in first"}`, wire.Refusal{Error: "unauthorized", Reason: "sign in first"}, ""},
	{"a refusal without a reason decodes", `{"error":"upgrade required"}`, wire.Refusal{Error: "upgrade required"}, ""},
	{"members a later Host may add are ignored", `{"error":"forbidden","reason":"r","retry":{"at":5}}`, wire.Refusal{Error: "forbidden", Reason: "r"}, ""},
	{"a rate refusal carries its wait", `{"error":"too many sockets","retryAfterMs":1500}`, wire.Refusal{Error: "too many sockets", RetryAfterMs: 1500}, ""},
	{"a wait that is not an integer is refused", `{"error":"too many sockets","retryAfterMs":1.5}`, wire.Refusal{}, "retryAfterMs must be an integer"},
	{"null is an empty string", `{"error":null,"reason":null}`, wire.Refusal{}, ""},
	{"a reason that is not a string is refused", `{"error":"forbidden","reason":5}`, wire.Refusal{}, "reason must be a string, got a number"},
	{"a duplicate member is refused", `{"error":"forbidden","error":"unauthorized"}`, wire.Refusal{}, "duplicate"},
	{"an HTML page is refused", `<html><body>401 Authorization Required</body></html>`, wire.Refusal{}, "refusal"},
	{"an array is refused", `[]`, wire.Refusal{}, "must be a JSON object, got an array"},
	{"trailing data is refused", `{"error":"forbidden"} {}`, wire.Refusal{}, "trailing data"},
	{"an empty body is refused", ``, wire.Refusal{}, "refusal"},
	{"a 426 names the HTTP carriers", `{"error":"upgrade required","carriers":["stream","poll"]}`, wire.Refusal{Error: "upgrade required", Carriers: []string{"stream", "poll"}}, ""},
	{"carriers must be strings", `{"error":"upgrade required","carriers":[1]}`, wire.Refusal{}, "each of carriers must be a string"},
	{"carriers are a few", `{"error":"x","carriers":["a","b","c","d","e","f","g","h","i"]}`, wire.Refusal{}, "at most 8"},
}

func TestDecodeRefusal(t *testing.T) {
	for _, tc := range refusalCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := wire.DecodeRefusal([]byte(tc.in))
			if tc.err == "" {
				if err != nil || !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("DecodeRefusal(%s) = %+v, %v; want %+v", tc.in, got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, wire.ErrFrame) {
				t.Fatalf("DecodeRefusal(%s) = %+v, %v; want an ErrFrame containing %q", tc.in, got, err, tc.err)
			}
		})
	}
}

func TestRefusalEncodesAsTheRefusalQueryDocumentsIt(t *testing.T) {
	for _, tc := range []struct {
		r    wire.Refusal
		want string
	}{
		{wire.Refusal{Error: wire.RefusalUpgradeRequired}, `{"error":"upgrade required"}`},
		{wire.Refusal{Error: wire.RefusalUnauthorized, Reason: `say "hi" </script>`}, `{"error":"unauthorized","reason":"say \"hi\" </script>"}`},
		{wire.Refusal{Error: wire.RefusalForbidden, Reason: "bad \xff byte"}, "{\"error\":\"forbidden\",\"reason\":\"bad \ufffd byte\"}"},
		{wire.Refusal{Error: wire.RefusalRate, RetryAfterMs: 250}, `{"error":"too many sockets","retryAfterMs":250}`},
		{wire.Refusal{Error: wire.RefusalUpgradeRequired, Carriers: []string{wire.CarrierStream, wire.CarrierPoll}}, `{"error":"upgrade required","carriers":["stream","poll"]}`},
	} {
		if got := string(tc.r.Encode()); got != tc.want {
			t.Errorf("%+v.Encode() = %s, want %s", tc.r, got, tc.want)
		}
	}
}

func FuzzDecodeRefusal(f *testing.F) {
	for _, tc := range refusalCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := wire.DecodeRefusal(b)
		if err != nil {
			if !errors.Is(err, wire.ErrFrame) {
				t.Fatalf("DecodeRefusal(%q) error %v does not wrap ErrFrame", b, err)
			}
			return
		}
		enc := r.Encode()
		if !json.Valid(enc) {
			t.Fatalf("Encode(DecodeRefusal(%q)) = %s is not valid JSON", b, enc)
		}
		r2, err := wire.DecodeRefusal(enc)
		if err != nil || !reflect.DeepEqual(r2, r) {
			t.Fatalf("DecodeRefusal(Encode(%+v) = %s) = %+v, %v; want it back", r, enc, r2, err)
		}
	})
}
