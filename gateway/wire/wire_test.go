package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/gateway/wire"
)

var serverCases = []struct {
	name string
	in   string
	want wire.ServerFrame // compared on T, Session, HeartbeatMs, Stream, Seq, Epoch, URI, Message
	err  string           // "" for success; else a substring of the error
}{
	{"a ready frame decodes", `{"t":"ready","session":"s1","heartbeatMs":15000}`, wire.ServerFrame{T: "ready", Session: "s1", HeartbeatMs: 15000}, ""},
	{"a ready at the heartbeat floor decodes", `{"t":"ready","session":"s","heartbeatMs":100}`, wire.ServerFrame{T: "ready", Session: "s", HeartbeatMs: 100}, ""},
	{"a ready at the heartbeat ceiling decodes", `{"t":"ready","session":"s","heartbeatMs":600000}`, wire.ServerFrame{T: "ready", Session: "s", HeartbeatMs: 600000}, ""},
	{"a ready without a session is refused", `{"t":"ready","heartbeatMs":15000}`, wire.ServerFrame{}, "ready without a session"},
	{"a ready without a heartbeat is refused", `{"t":"ready","session":"s"}`, wire.ServerFrame{}, "heartbeatMs must be in 100..600000, got 0"},
	{"a ready below the heartbeat floor is refused", `{"t":"ready","session":"s","heartbeatMs":99}`, wire.ServerFrame{}, "got 99"},
	{"a ready above the heartbeat ceiling is refused", `{"t":"ready","session":"s","heartbeatMs":600001}`, wire.ServerFrame{}, "got 600001"},
	{"a negative heartbeat is refused", `{"t":"ready","session":"s","heartbeatMs":-5}`, wire.ServerFrame{}, "got -5"},
	{"a fractional heartbeat is refused", `{"t":"ready","session":"s","heartbeatMs":1.5}`, wire.ServerFrame{}, "heartbeatMs must be an integer, got 1.5"},
	{"a heartbeat decodes", `{"t":"hb"}`, wire.ServerFrame{T: "hb"}, ""},
	{"an event decodes", `{"t":"event","stream":"S","seq":7,"data":{"x":1}}`, wire.ServerFrame{T: "event", Stream: "S", Seq: 7}, ""},
	{"an event without a stream is refused", `{"t":"event","seq":7,"data":1}`, wire.ServerFrame{}, "bad stream name: must be 1..256 bytes, got 0"},
	{"an event on a 257-byte stream is refused", `{"t":"event","stream":"` + strings.Repeat("s", 257) + `","seq":7,"data":1}`, wire.ServerFrame{}, "bad stream name: must be 1..256 bytes, got 257"},
	{"an event without a seq is refused", `{"t":"event","stream":"S","data":1}`, wire.ServerFrame{}, `event on stream "S" without a seq`},
	{"an event without data is refused", `{"t":"event","stream":"S","seq":7}`, wire.ServerFrame{}, `event "S"/7 without data`},
	{"a negative seq is refused", `{"t":"event","stream":"S","seq":-1,"data":1}`, wire.ServerFrame{}, "seq must be an integer in 0..18446744073709551615, got -1"},
	{"a reset decodes", `{"t":"reset","stream":"S","epoch":"E","seq":4,"baseline":[1,2]}`, wire.ServerFrame{T: "reset", Stream: "S", Epoch: "E", Seq: 4}, ""},
	{"a reset at seq 0 decodes", `{"t":"reset","stream":"S","epoch":"E","baseline":null}`, wire.ServerFrame{T: "reset", Stream: "S", Epoch: "E"}, ""},
	{"a reset without an epoch is refused", `{"t":"reset","stream":"S","seq":4}`, wire.ServerFrame{}, `reset on stream "S" without an epoch`},
	{"a goaway with a uri decodes", `{"t":"goaway","uri":"wss://b/_lifeline/events"}`, wire.ServerFrame{T: "goaway", URI: "wss://b/_lifeline/events"}, ""},
	{"a goaway without a uri decodes", `{"t":"goaway"}`, wire.ServerFrame{T: "goaway"}, ""},
	{"an error frame decodes", `{"t":"error","message":"retry-after=300"}`, wire.ServerFrame{T: "error", Message: "retry-after=300"}, ""},
	{"unknown fields are ignored", `{"t":"hb","future":true}`, wire.ServerFrame{T: "hb"}, ""},
	{"unknown fields of any kind are ignored", `{"t":"hb","future":{"a":[1,{"b":null}]},"x":"y"}`, wire.ServerFrame{T: "hb"}, ""},
	{"a key given twice is refused", `{"t":"hb","t":"ready","session":"s","heartbeatMs":100}`, wire.ServerFrame{}, "duplicate"},
	{"a denied frame decodes", `{"t":"denied","stream":"S","reason":"not yours"}`, wire.ServerFrame{T: "denied", Stream: "S", Reason: "not yours"}, ""},
	{"a denied frame without a reason decodes", `{"t":"denied","stream":"S"}`, wire.ServerFrame{T: "denied", Stream: "S"}, ""},
	{"a denied frame without a stream is refused", `{"t":"denied","reason":"no"}`, wire.ServerFrame{}, "bad stream name: must be 1..256 bytes, got 0"},
	{"escapes in strings are decoded", `{"t":"goaway","uri":"\u002fb\/c"}`, wire.ServerFrame{T: "goaway", URI: "/b/c"}, ""},
	{"white space around the frame is fine", " \n{\"t\" : \"hb\"}\t ", wire.ServerFrame{T: "hb"}, ""},
	{"nulls are absent fields", `{"t":"goaway","uri":null,"seq":null}`, wire.ServerFrame{T: "goaway"}, ""},
	{"a seq in exponent form is refused", `{"t":"event","stream":"S","seq":1e3,"data":1}`, wire.ServerFrame{}, "seq must be an integer"},
	{"a missing type is refused", `{"session":"s"}`, wire.ServerFrame{}, `missing type field "t"`},
	{"an unknown type is refused", `{"t":"hello"}`, wire.ServerFrame{}, `unknown type "hello"`},
	{"a long unknown type is truncated in the error", `{"t":"` + strings.Repeat("x", 100) + `"}`, wire.ServerFrame{}, strings.Repeat("x", 32) + "…"},
	{"a client frame type is refused", `{"t":"sub","stream":"S"}`, wire.ServerFrame{}, `unknown type "sub"`},
	{"a type of the wrong JSON type is refused", `{"t":1}`, wire.ServerFrame{}, "t must be a string, got a number"},
	{"trailing data is refused", `{"t":"hb"}{"t":"hb"}`, wire.ServerFrame{}, "trailing data"},
	{"truncated JSON is refused", `{"t":"hb"`, wire.ServerFrame{}, "the document ends too soon"},
	{"an array is refused", `[]`, wire.ServerFrame{}, "must be a JSON object, got an array"},
	{"empty input is refused", ``, wire.ServerFrame{}, "the document ends too soon"},
}

func TestDecodeServer(t *testing.T) {
	for _, tc := range serverCases {
		got, err := wire.DecodeServer([]byte(tc.in))
		if tc.err != "" {
			if !errors.Is(err, wire.ErrFrame) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: DecodeServer(%.60s) error = %v, want ErrFrame containing %q", tc.name, tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: DecodeServer(%.60s) error = %v", tc.name, tc.in, err)
			continue
		}
		got.Data, got.Baseline = nil, nil
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: DecodeServer(%.60s) = %+v, want %+v", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestDecodeServerKeepsPayloadsRaw(t *testing.T) {
	f, err := wire.DecodeServer([]byte(`{"t":"reset","stream":"S","epoch":"E","seq":2,"baseline":{"a": [1, 2]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(f.Baseline) != `{"a": [1, 2]}` {
		t.Fatalf("Baseline = %s, want the raw JSON as sent", f.Baseline)
	}
}

var clientCases = []struct {
	name string
	in   string
	want wire.ClientFrame
	err  string
}{
	{"a fresh sub decodes", `{"t":"sub","stream":"S"}`, wire.ClientFrame{T: "sub", Stream: "S"}, ""},
	{"a sub with a cursor decodes", `{"t":"sub","stream":"S","epoch":"E","after":9}`, wire.ClientFrame{T: "sub", Stream: "S", Epoch: "E", After: 9}, ""},
	{"a sub with an epoch at after 0 decodes", `{"t":"sub","stream":"S","epoch":"E"}`, wire.ClientFrame{T: "sub", Stream: "S", Epoch: "E"}, ""},
	{"a sub with after but no epoch is refused", `{"t":"sub","stream":"S","after":9}`, wire.ClientFrame{}, `sub "S" has after=9 without an epoch`},
	{"a sub without a stream is refused", `{"t":"sub"}`, wire.ClientFrame{}, "bad stream name: must be 1..256 bytes, got 0"},
	{"a sub on a 257-byte stream is refused", `{"t":"sub","stream":"` + strings.Repeat("s", 257) + `"}`, wire.ClientFrame{}, "bad stream name: must be 1..256 bytes, got 257"},
	{"an unsub decodes", `{"t":"unsub","stream":"S"}`, wire.ClientFrame{T: "unsub", Stream: "S"}, ""},
	{"an unsub without a stream is refused", `{"t":"unsub"}`, wire.ClientFrame{}, "bad stream name: must be 1..256 bytes, got 0"},
	{"a server frame type is refused", `{"t":"ready","stream":"S"}`, wire.ClientFrame{}, `unknown type "ready"`},
	{"a missing type is refused", `{"stream":"S"}`, wire.ClientFrame{}, `missing type field "t"`},
	{"trailing data is refused", `{"t":"unsub","stream":"S"} x`, wire.ClientFrame{}, "trailing data"},
	{"a negative after is refused", `{"t":"sub","stream":"S","epoch":"E","after":-1}`, wire.ClientFrame{}, "after must be an integer in 0..18446744073709551615, got -1"},
	{"unknown fields are ignored", `{"t":"unsub","stream":"S","x":1}`, wire.ClientFrame{T: "unsub", Stream: "S"}, ""},
	{"a ping decodes", `{"t":"ping"}`, wire.ClientFrame{T: "ping"}, ""},
	{"a ping with a stream is refused", `{"t":"ping","stream":"S"}`, wire.ClientFrame{}, "ping carries no stream"},
	{"a key given twice is refused", `{"t":"sub","stream":"S","stream":"T"}`, wire.ClientFrame{}, "duplicate"},
	{"an invalid UTF-8 stream is refused", "{\"t\":\"sub\",\"stream\":\"\xff\"}", wire.ClientFrame{}, "invalid UTF-8"},
}

func TestDecodeClient(t *testing.T) {
	for _, tc := range clientCases {
		got, err := wire.DecodeClient([]byte(tc.in))
		if tc.err != "" {
			if !errors.Is(err, wire.ErrFrame) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: DecodeClient(%.60s) error = %v, want ErrFrame containing %q", tc.name, tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: DecodeClient(%.60s) = %+v, %v; want %+v", tc.name, tc.in, got, err, tc.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reason string
		want   time.Duration
		ok     bool
	}{
		{"milliseconds are read", "retry-after=300", 300 * time.Millisecond, true},
		{"zero is a valid wait", "retry-after=0", 0, true},
		{"surrounding space is trimmed", "  retry-after=5\t", 5 * time.Millisecond, true},
		{"exactly the cap is kept", "retry-after=60000", wire.MaxRetryAfter, true},
		{"above the cap is clamped to 60 s", "retry-after=60001", wire.MaxRetryAfter, true},
		{"a huge value is clamped", "retry-after=9223372036854775807", wire.MaxRetryAfter, true},
		{"a value beyond int64 is refused", "retry-after=9223372036854775808", 0, false},
		{"a negative value is refused", "retry-after=-1", 0, false},
		{"a fraction is refused", "retry-after=1.5", 0, false},
		{"a unit is refused", "retry-after=5s", 0, false},
		{"an empty value is refused", "retry-after=", 0, false},
		{"another case is refused", "Retry-After=5", 0, false},
		{"another reason is refused", "server shutting down", 0, false},
		{"an empty reason is refused", "", 0, false},
	} {
		got, ok := wire.ParseRetryAfter(tc.reason)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: ParseRetryAfter(%q) = %v, %v; want %v, %v", tc.name, tc.reason, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRetryAfterReasonRoundTrips(t *testing.T) {
	for _, d := range []time.Duration{0, time.Millisecond, 1500 * time.Millisecond, wire.MaxRetryAfter} {
		r := wire.RetryAfterReason(d)
		if got, ok := wire.ParseRetryAfter(r); !ok || got != d {
			t.Errorf("ParseRetryAfter(RetryAfterReason(%v) = %q) = %v, %v", d, r, got, ok)
		}
	}
	if r := wire.RetryAfterReason(-time.Second); r != "retry-after=0" {
		t.Errorf("RetryAfterReason(-1s) = %q, want retry-after=0", r)
	}
	// A close reason is at most 123 bytes; the longest retry-after fits with room to spare.
	if r := wire.RetryAfterReason(time.Duration(1<<63 - 1)); len(r) > 123 {
		t.Errorf("RetryAfterReason(max) = %q: %d bytes, more than a close reason holds", r, len(r))
	}
}

func TestParseRestart(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want time.Duration
		ok   bool
	}{
		{"a restart without a minimum is read", "service-restart", 0, true},
		{"a restart with a minimum is read", "service-restart retry-after=250", 250 * time.Millisecond, true},
		{"surrounding space is trimmed", " service-restart retry-after=5\n", 5 * time.Millisecond, true},
		{"a tab may separate the minimum", "service-restart\tretry-after=5", 5 * time.Millisecond, true},
		{"a minimum above the cap is clamped to 60 s", "service-restart retry-after=600000", wire.MaxRetryAfter, true},
		{"a negative minimum is refused", "service-restart retry-after=-1", 0, false},
		{"a minimum with a unit is refused", "service-restart retry-after=1s", 0, false},
		{"anything else after the word is refused", "service-restart soon", 0, false},
		{"a longer word is refused", "service-restarted", 0, false},
		{"a bare retry-after is an overload, not a restart", "retry-after=250", 0, false},
		{"another case is refused", "Service-Restart", 0, false},
		{"an empty message is refused", "", 0, false},
	} {
		got, ok := wire.ParseRestart(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: ParseRestart(%q) = %v, %v; want %v, %v", tc.name, tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRestartReasonRoundTripsAndFitsACloseReason(t *testing.T) {
	for _, d := range []time.Duration{0, time.Millisecond, 1500 * time.Millisecond, wire.MaxRetryAfter} {
		r := wire.RestartReason(d)
		if got, ok := wire.ParseRestart(r); !ok || got != d {
			t.Errorf("ParseRestart(RestartReason(%v) = %q) = %v, %v", d, r, got, ok)
		}
		if _, ok := wire.ParseRetryAfter(r); ok {
			t.Errorf("RestartReason(%v) = %q reads as an overload's retry-after", d, r)
		}
	}
	if r := wire.RestartReason(-time.Second); r != "service-restart" {
		t.Errorf("RestartReason(-1s) = %q, want service-restart", r)
	}
	if r := wire.RestartReason(time.Duration(1<<63 - 1)); len(r) > 123 {
		t.Errorf("RestartReason(max) = %q: %d bytes, more than a close reason holds", r, len(r))
	}
}

// FuzzParseRestart: a page parses what any Host sends; it never panics, and whatever it
// accepts is a minimum the page honours (within the cap) and that the Host side re-encodes
// to the same reading.
func FuzzParseRestart(f *testing.F) {
	for _, s := range []string{"service-restart", "service-restart retry-after=250", "retry-after=1", "service-restart retry-after=", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := wire.ParseRestart(s)
		if !ok {
			if d != 0 {
				t.Fatalf("ParseRestart(%q) = %v, false; want 0 when refused", s, d)
			}
			return
		}
		if d < 0 || d > wire.MaxRetryAfter {
			t.Fatalf("ParseRestart(%q) = %v, outside [0, %v]", s, d, wire.MaxRetryAfter)
		}
		if again, ok := wire.ParseRestart(wire.RestartReason(d)); !ok || again != d {
			t.Fatalf("ParseRestart(RestartReason(%v)) = %v, %v", d, again, ok)
		}
	})
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	frames := []wire.ServerFrame{
		wire.Ready("s1", 15*time.Second),
		{T: wire.TypeHeartbeat},
		{T: wire.TypeEvent, Stream: "S", Seq: 1, Data: []byte(`{"v":1}`)},
		{T: wire.TypeReset, Stream: "S", Epoch: "E", Seq: 9, Baseline: []byte(`[1,2,3]`)},
		{T: wire.TypeGoAway, URI: "/elsewhere"},
		{T: wire.TypeGoAway},
		{T: wire.TypeError, Message: "retry-after=10"},
		{T: wire.TypeDenied, Stream: "S", Reason: "not yours \u2028 <b>"},
	}
	for _, f := range frames {
		b, err := f.Encode()
		if err != nil {
			t.Fatalf("Encode(%+v): %v", f, err)
		}
		got, err := wire.DecodeServer(b)
		if err != nil {
			t.Fatalf("DecodeServer(Encode(%+v) = %s): %v", f, b, err)
		}
		b2, _ := got.Encode()
		if !bytes.Equal(b, b2) {
			t.Errorf("round trip of %+v: %s then %s", f, b, b2)
		}
	}
	for _, f := range []wire.ClientFrame{
		{T: wire.TypeSub, Stream: "S"},
		{T: wire.TypeSub, Stream: "S", Epoch: "E", After: 3},
		{T: wire.TypeUnsub, Stream: "S"},
		{T: wire.TypePing},
	} {
		b, _ := f.Encode()
		if got, err := wire.DecodeClient(b); err != nil || got != f {
			t.Errorf("DecodeClient(Encode(%+v) = %s) = %+v, %v", f, b, got, err)
		}
	}
}

func FuzzDecodeServer(f *testing.F) {
	for _, tc := range serverCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := wire.DecodeServer(b)
		if err != nil {
			if !errors.Is(err, wire.ErrFrame) {
				t.Fatalf("DecodeServer(%q) error %v does not wrap ErrFrame", b, err)
			}
			return
		}
		if err := fr.Validate(); err != nil {
			t.Fatalf("DecodeServer(%q) = %+v, which does not validate: %v", b, fr, err)
		}
		enc, err := fr.Encode()
		if err != nil {
			t.Fatalf("Encode(%+v): %v", fr, err)
		}
		if !json.Valid(enc) {
			t.Fatalf("Encode(DecodeServer(%q)) = %s is not valid JSON", b, enc)
		}
		fr2, err := wire.DecodeServer(enc)
		if err != nil {
			t.Fatalf("DecodeServer(Encode(DecodeServer(%q)) = %s): %v", b, enc, err)
		}
		enc2, _ := fr2.Encode()
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip of %q is not stable: %s then %s", b, enc, enc2)
		}
	})
}

// FuzzDecodeClient: what the Host reads from any page. Decoding never panics; what it accepts
// is a frame the Host can act on, and survives encoding. (The Host plugin has no copy of this
// target: it decodes with this very function.)
func FuzzDecodeClient(f *testing.F) {
	for _, tc := range clientCases {
		f.Add([]byte(tc.in))
	}
	for _, s := range []string{`{"t":"launch"}`, `{"t":"sub","stream":"s"} trailing`, `[]`, `null`, ``,
		`{"t":"sub","stream":"\u0000"}`, `{"t":"ping","after":0}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := wire.DecodeClient(b)
		if err != nil {
			if !errors.Is(err, wire.ErrFrame) {
				t.Fatalf("DecodeClient(%q) error %v does not wrap ErrFrame", b, err)
			}
			return
		}
		switch fr.T {
		case wire.TypeSub, wire.TypeUnsub:
			if fr.Stream == "" || len(fr.Stream) > wire.MaxStreamName {
				t.Fatalf("DecodeClient(%q) accepted %+v", b, fr)
			}
		case wire.TypePing:
			if fr != (wire.ClientFrame{T: wire.TypePing}) {
				t.Fatalf("DecodeClient(%q) accepted a ping with fields: %+v", b, fr)
			}
		default:
			t.Fatalf("DecodeClient(%q) accepted type %q", b, fr.T)
		}
		enc, err := fr.Encode()
		if err != nil {
			t.Fatalf("Encode(%+v): %v", fr, err)
		}
		if !json.Valid(enc) {
			t.Fatalf("Encode(DecodeClient(%q)) = %s is not valid JSON", b, enc)
		}
		fr2, err := wire.DecodeClient(enc)
		if err != nil {
			t.Fatalf("DecodeClient(Encode(DecodeClient(%q)) = %s): %v", b, enc, err)
		}
		// Decoding refuses invalid UTF-8, so a decoded frame always survives the round trip.
		if fr2 != fr {
			t.Fatalf("round trip of %q: %+v then %+v", b, fr, fr2)
		}
	})
}
