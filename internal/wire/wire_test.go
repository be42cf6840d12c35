package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lifeline-go/lifeline/internal/jsontok"
	"github.com/lifeline-go/lifeline/internal/wire"
)

var hostCases = []struct {
	name string
	in   string
	want wire.HostFrame // compared on T, Session, HeartbeatMs, Stream, Seq, Epoch, URI, Message
	err  string         // "" for success; else a substring of the error
}{
	{"a ready frame decodes", `{"t":"ready","session":"s1","heartbeatMs":15000}`, wire.HostFrame{T: "ready", Session: "s1", HeartbeatMs: 15000}, ""},
	{"a ready at the heartbeat floor decodes", `{"t":"ready","session":"s","heartbeatMs":100}`, wire.HostFrame{T: "ready", Session: "s", HeartbeatMs: 100}, ""},
	{"a ready at the heartbeat ceiling decodes", `{"t":"ready","session":"s","heartbeatMs":600000}`, wire.HostFrame{T: "ready", Session: "s", HeartbeatMs: 600000}, ""},
	{"a ready with calls decodes", `{"t":"ready","session":"s","heartbeatMs":100,"dedup":"d1","maxFrameBytes":4096}`, wire.HostFrame{T: "ready", Session: "s", HeartbeatMs: 100, Dedup: "d1", MaxFrameBytes: 4096}, ""},
	{"a fenced decodes", `{"t":"fenced","session":"5f1c0a9e3b7d2c4e8a6f1b0d","started":7}`, wire.HostFrame{T: "fenced", Session: "5f1c0a9e3b7d2c4e8a6f1b0d", Started: 7}, ""},
	{"a fenced of a session none of whose calls started decodes", `{"t":"fenced","session":"s1"}`, wire.HostFrame{T: "fenced", Session: "s1"}, ""},
	{"a fenced without a session is refused", `{"t":"fenced","started":7}`, wire.HostFrame{}, "fenced without a session"},
	{"a ready naming the dedup window decodes", `{"t":"ready","session":"s","heartbeatMs":100,"dedup":"d1","dedupMs":600000}`, wire.HostFrame{T: "ready", Session: "s", HeartbeatMs: 100, Dedup: "d1", DedupMs: 600000}, ""},
	{"a ready with a negative dedup window names none", `{"t":"ready","session":"s","heartbeatMs":100,"dedup":"d1","dedupMs":-1}`, wire.HostFrame{T: "ready", Session: "s", HeartbeatMs: 100, Dedup: "d1", DedupMs: -1}, ""},
	{"a ready asking for reports decodes", `{"t":"ready","session":"s","heartbeatMs":100,"report":true}`, wire.HostFrame{T: "ready", Session: "s", HeartbeatMs: 100, Report: true}, ""},
	{"a ready with a report that is no boolean is refused", `{"t":"ready","session":"s","heartbeatMs":100,"report":1}`, wire.HostFrame{}, "report must be a boolean, got a number"},
	{"a ready with a negative maxFrameBytes is refused", `{"t":"ready","session":"s","heartbeatMs":100,"maxFrameBytes":-1}`, wire.HostFrame{}, "maxFrameBytes must be at least 0, got -1"},
	{"a reply decodes", `{"t":"reply","id":4,"data":{"ok":true}}`, wire.HostFrame{T: "reply", ID: 4}, ""},
	{"a reply of null decodes", `{"t":"reply","id":4,"data":null}`, wire.HostFrame{T: "reply", ID: 4}, ""},
	{"a failed reply decodes", `{"t":"reply","id":4,"error":"no such room","code":"app"}`, wire.HostFrame{T: "reply", ID: 4, Error: "no such room", Code: "app"}, ""},
	{"a busy reply decodes", `{"t":"reply","id":4,"error":"slow down","code":"busy","retryAfterMs":250}`, wire.HostFrame{T: "reply", ID: 4, Error: "slow down", Code: "busy", RetryAfterMs: 250}, ""},
	{"a reply without an id is refused", `{"t":"reply","data":1}`, wire.HostFrame{}, "reply without an id"},
	{"a reply with neither data nor code is refused", `{"t":"reply","id":4}`, wire.HostFrame{}, "reply 4 has neither data nor a code"},
	{"a reply with data and a code is refused", `{"t":"reply","id":4,"data":1,"code":"app"}`, wire.HostFrame{}, "reply 4 has both data and a code"},
	{"a reply with a long code is refused", `{"t":"reply","id":4,"code":"` + strings.Repeat("c", 33) + `"}`, wire.HostFrame{}, "code must be at most 32 bytes, got 33"},
	{"a reply with a negative retryAfterMs is refused", `{"t":"reply","id":4,"code":"busy","retryAfterMs":-1}`, wire.HostFrame{}, "retryAfterMs must be at least 0, got -1"},
	{"a ready without a session is refused", `{"t":"ready","heartbeatMs":15000}`, wire.HostFrame{}, "ready without a session"},
	{"a ready without a heartbeat is refused", `{"t":"ready","session":"s"}`, wire.HostFrame{}, "heartbeatMs must be in 100..600000, got 0"},
	{"a ready below the heartbeat floor is refused", `{"t":"ready","session":"s","heartbeatMs":99}`, wire.HostFrame{}, "got 99"},
	{"a ready above the heartbeat ceiling is refused", `{"t":"ready","session":"s","heartbeatMs":600001}`, wire.HostFrame{}, "got 600001"},
	{"a negative heartbeat is refused", `{"t":"ready","session":"s","heartbeatMs":-5}`, wire.HostFrame{}, "got -5"},
	{"a fractional heartbeat is refused", `{"t":"ready","session":"s","heartbeatMs":1.5}`, wire.HostFrame{}, "heartbeatMs must be an integer, got 1.5"},
	{"a heartbeat decodes", `{"t":"hb"}`, wire.HostFrame{T: "hb"}, ""},
	{"an event decodes", `{"t":"event","stream":"S","seq":7,"data":{"x":1}}`, wire.HostFrame{T: "event", Stream: "S", Seq: 7}, ""},
	{"an event without a stream is refused", `{"t":"event","seq":7,"data":1}`, wire.HostFrame{}, "bad stream name: must be 1..256 bytes, got 0"},
	{"an event on a 257-byte stream is refused", `{"t":"event","stream":"` + strings.Repeat("s", 257) + `","seq":7,"data":1}`, wire.HostFrame{}, "bad stream name: must be 1..256 bytes, got 257"},
	{"an event without a seq is refused", `{"t":"event","stream":"S","data":1}`, wire.HostFrame{}, `event on stream "S" without a seq`},
	{"an event without data is refused", `{"t":"event","stream":"S","seq":7}`, wire.HostFrame{}, `event "S"/7 without data`},
	{"a negative seq is refused", `{"t":"event","stream":"S","seq":-1,"data":1}`, wire.HostFrame{}, "seq must be an integer in 0..18446744073709551615, got -1"},
	{"a reset decodes", `{"t":"reset","stream":"S","epoch":"E","seq":4,"baseline":[1,2]}`, wire.HostFrame{T: "reset", Stream: "S", Epoch: "E", Seq: 4}, ""},
	{"a reset at seq 0 decodes", `{"t":"reset","stream":"S","epoch":"E","baseline":null}`, wire.HostFrame{T: "reset", Stream: "S", Epoch: "E"}, ""},
	{"a reset without an epoch is refused", `{"t":"reset","stream":"S","seq":4}`, wire.HostFrame{}, `reset on stream "S" without an epoch`},
	{"a goaway with a uri decodes", `{"t":"goaway","uri":"wss://b/_lifeline/events"}`, wire.HostFrame{T: "goaway", URI: "wss://b/_lifeline/events"}, ""},
	{"a goaway without a uri decodes", `{"t":"goaway"}`, wire.HostFrame{T: "goaway"}, ""},
	{"an error frame decodes", `{"t":"error","message":"retry-after=300"}`, wire.HostFrame{T: "error", Message: "retry-after=300"}, ""},
	{"unknown fields are ignored", `{"t":"hb","future":true}`, wire.HostFrame{T: "hb"}, ""},
	{"unknown fields of any kind are ignored", `{"t":"hb","future":{"a":[1,{"b":null}]},"x":"y"}`, wire.HostFrame{T: "hb"}, ""},
	{"a key given twice is refused", `{"t":"hb","t":"ready","session":"s","heartbeatMs":100}`, wire.HostFrame{}, "duplicate"},
	{"a denied frame decodes", `{"t":"denied","stream":"S","reason":"not yours"}`, wire.HostFrame{T: "denied", Stream: "S", Reason: "not yours"}, ""},
	{"a denied frame without a reason decodes", `{"t":"denied","stream":"S"}`, wire.HostFrame{T: "denied", Stream: "S"}, ""},
	{"a denied frame without a stream is refused", `{"t":"denied","reason":"no"}`, wire.HostFrame{}, "bad stream name: must be 1..256 bytes, got 0"},
	{"escapes in strings are decoded", `{"t":"goaway","uri":"\u002fb\/c"}`, wire.HostFrame{T: "goaway", URI: "/b/c"}, ""},
	{"white space around the frame is fine", " \n{\"t\" : \"hb\"}\t ", wire.HostFrame{T: "hb"}, ""},
	{"nulls are absent fields", `{"t":"goaway","uri":null,"seq":null}`, wire.HostFrame{T: "goaway"}, ""},
	{"a seq in exponent form is refused", `{"t":"event","stream":"S","seq":1e3,"data":1}`, wire.HostFrame{}, "seq must be an integer"},
	{"a missing type is refused", `{"session":"s"}`, wire.HostFrame{}, `missing type field "t"`},
	{"an unknown type is refused", `{"t":"hello"}`, wire.HostFrame{}, `unknown type "hello"`},
	{"a long unknown type is truncated in the error", `{"t":"` + strings.Repeat("x", 100) + `"}`, wire.HostFrame{}, strings.Repeat("x", 32) + "…"},
	{"a client frame type is refused", `{"t":"sub","stream":"S"}`, wire.HostFrame{}, `unknown type "sub"`},
	{"a type of the wrong JSON type is refused", `{"t":1}`, wire.HostFrame{}, "t must be a string, got a number"},
	{"trailing data is refused", `{"t":"hb"}{"t":"hb"}`, wire.HostFrame{}, "trailing data"},
	{"truncated JSON is refused", `{"t":"hb"`, wire.HostFrame{}, "the document ends too soon"},
	{"an array is refused", `[]`, wire.HostFrame{}, "must be a JSON object, got an array"},
	{"empty input is refused", ``, wire.HostFrame{}, "the document ends too soon"},
}

func TestDecodeHost(t *testing.T) {
	for _, tc := range hostCases {
		got, err := wire.DecodeHost([]byte(tc.in))
		if tc.err != "" {
			if !errors.Is(err, wire.ErrFrame) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: DecodeHost(%.60s) error = %v, want ErrFrame containing %q", tc.name, tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: DecodeHost(%.60s) error = %v", tc.name, tc.in, err)
			continue
		}
		got.Data, got.Baseline = nil, nil
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: DecodeHost(%.60s) = %+v, want %+v", tc.name, tc.in, got, tc.want)
		}
	}
}

// TestAnEventWhoseDataIsNullDecodes: null is a JSON value an app may publish
// (hostplugin's Publish takes any valid JSON). A page that refused it as "an event without
// data" ended the session, resumed from its cursor into the same event and looped on the
// ladder for as long as the event was in the log, on every page subscribed to the stream.
func TestAnEventWhoseDataIsNullDecodes(t *testing.T) {
	in, err := wire.HostFrame{T: wire.TypeEvent, Stream: "S", Seq: 3, Data: wire.RawJSON("null")}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	f, err := wire.DecodeHost(in)
	if err != nil {
		t.Fatalf("DecodeHost(%s): %v", in, err)
	}
	if string(f.Data) != "null" {
		t.Fatalf("Data = %q, want the JSON value null", f.Data)
	}
	// A baseline of null is still no baseline: a reset carries one or does not.
	f, err = wire.DecodeHost([]byte(`{"t":"reset","stream":"S","epoch":"E","seq":2,"baseline":null}`))
	if err != nil || f.Baseline != nil {
		t.Fatalf("reset with baseline null = %+v, %v; want no baseline", f, err)
	}
}

func TestDecodeHostKeepsPayloadsRaw(t *testing.T) {
	f, err := wire.DecodeHost([]byte(`{"t":"reset","stream":"S","epoch":"E","seq":2,"baseline":{"a": [1, 2]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(f.Baseline) != `{"a": [1, 2]}` {
		t.Fatalf("Baseline = %s, want the raw JSON as sent", f.Baseline)
	}
}

var pageCases = []struct {
	name string
	in   string
	want wire.PageFrame
	err  string
}{
	{"a fresh sub decodes", `{"t":"sub","stream":"S"}`, wire.PageFrame{T: "sub", Stream: "S"}, ""},
	{"a sub with a cursor decodes", `{"t":"sub","stream":"S","epoch":"E","after":9}`, wire.PageFrame{T: "sub", Stream: "S", Epoch: "E", After: 9}, ""},
	{"a sub with an epoch at after 0 decodes", `{"t":"sub","stream":"S","epoch":"E"}`, wire.PageFrame{T: "sub", Stream: "S", Epoch: "E"}, ""},
	{"a sub with after but no epoch is refused", `{"t":"sub","stream":"S","after":9}`, wire.PageFrame{}, `sub "S" has after=9 without an epoch`},
	{"a sub without a stream is refused", `{"t":"sub"}`, wire.PageFrame{}, "bad stream name: must be 1..256 bytes, got 0"},
	{"a sub on a 257-byte stream is refused", `{"t":"sub","stream":"` + strings.Repeat("s", 257) + `"}`, wire.PageFrame{}, "bad stream name: must be 1..256 bytes, got 257"},
	{"an unsub decodes", `{"t":"unsub","stream":"S"}`, wire.PageFrame{T: "unsub", Stream: "S"}, ""},
	{"an unsub without a stream is refused", `{"t":"unsub"}`, wire.PageFrame{}, "bad stream name: must be 1..256 bytes, got 0"},
	{"a server frame type is refused", `{"t":"ready","stream":"S"}`, wire.PageFrame{}, `unknown type "ready"`},
	{"a missing type is refused", `{"stream":"S"}`, wire.PageFrame{}, `missing type field "t"`},
	{"trailing data is refused", `{"t":"unsub","stream":"S"} x`, wire.PageFrame{}, "trailing data"},
	{"a negative after is refused", `{"t":"sub","stream":"S","epoch":"E","after":-1}`, wire.PageFrame{}, "after must be an integer in 0..18446744073709551615, got -1"},
	{"unknown fields are ignored", `{"t":"unsub","stream":"S","x":1}`, wire.PageFrame{T: "unsub", Stream: "S"}, ""},
	{"a ping decodes", `{"t":"ping"}`, wire.PageFrame{T: "ping"}, ""},
	{"a call decodes", `{"t":"call","id":3,"name":"chat.post","data":{"a":1},"key":"k1"}`, wire.PageFrame{T: "call", ID: 3, Name: "chat.post", Data: wire.RawJSON(`{"a":1}`), Key: "k1"}, ""},
	{"a call without data decodes", `{"t":"call","id":3,"name":"n"}`, wire.PageFrame{T: "call", ID: 3, Name: "n"}, ""},
	{"a call with null data keeps null", `{"t":"call","id":3,"name":"n","data":null}`, wire.PageFrame{T: "call", ID: 3, Name: "n", Data: wire.RawJSON("null")}, ""},
	{"a call without an id is refused", `{"t":"call","name":"n"}`, wire.PageFrame{}, "call without an id"},
	{"a call without a name is refused", `{"t":"call","id":1}`, wire.PageFrame{}, "bad call name: must be 1..128 bytes, got 0"},
	{"a call name with a space is refused", `{"t":"call","id":1,"name":"a b"}`, wire.PageFrame{}, `bad call name: "a b" has ' ' at byte 1`},
	{"a call name over 128 bytes is refused", `{"t":"call","id":1,"name":"` + strings.Repeat("n", 129) + `"}`, wire.PageFrame{}, "bad call name: must be 1..128 bytes, got 129"},
	{"a call key with a control character is refused", `{"t":"call","id":1,"name":"n","key":"a\u0007"}`, wire.PageFrame{}, "bad call key: has a control character at byte 1"},
	{"a call key over 128 bytes is refused", `{"t":"call","id":1,"name":"n","key":"` + strings.Repeat("k", 129) + `"}`, wire.PageFrame{}, "bad call key: must be 1..128 bytes, got 129"},
	{"a call with a stream is refused", `{"t":"call","id":1,"name":"n","stream":"S"}`, wire.PageFrame{}, "call 1 carries no stream"},
	{"a call with an id that is not an integer is refused", `{"t":"call","id":1.5,"name":"n"}`, wire.PageFrame{}, "id must be an integer"},
	{"a sub with call fields is refused", `{"t":"sub","stream":"S","id":4}`, wire.PageFrame{}, "sub carries no id, name, data or key"},
	{"a ping with a stream is refused", `{"t":"ping","stream":"S"}`, wire.PageFrame{}, "ping carries no stream"},
	{"a key given twice is refused", `{"t":"sub","stream":"S","stream":"T"}`, wire.PageFrame{}, "duplicate"},
	{"an invalid UTF-8 stream is refused", "{\"t\":\"sub\",\"stream\":\"\xff\"}", wire.PageFrame{}, "invalid UTF-8"},
	{"a fence decodes", `{"t":"fence","session":"5f1c0a9e3b7d2c4e8a6f1b0d"}`, wire.PageFrame{T: "fence", Session: "5f1c0a9e3b7d2c4e8a6f1b0d"}, ""},
	{"a fence without a session is refused", `{"t":"fence"}`, wire.PageFrame{}, "session must be 1..64 bytes, got 0"},
	{"a fence of a session no Host names is refused", `{"t":"fence","session":"a/b"}`, wire.PageFrame{}, `session "a/b" has '/' at byte 1`},
	{"a fence of a session named as a Host names it decodes", `{"t":"fence","session":"1f2e3d4c.5f1c0a9e3b7d2c4e8a6f1b0d"}`, wire.PageFrame{T: "fence", Session: "1f2e3d4c.5f1c0a9e3b7d2c4e8a6f1b0d"}, ""},
	{"a fence of a 65-byte session is refused", `{"t":"fence","session":"` + strings.Repeat("s", 65) + `"}`, wire.PageFrame{}, "session must be 1..64 bytes, got 65"},
	{"a fence with a stream is refused", `{"t":"fence","session":"s","stream":"S"}`, wire.PageFrame{}, "fence carries no stream"},
	{"a fence with call fields is refused", `{"t":"fence","session":"s","id":3}`, wire.PageFrame{}, "fence carries no id, name, data or key"},
	{"a sub naming a session is refused", `{"t":"sub","stream":"S","session":"s"}`, wire.PageFrame{}, "sub carries no session"},
	{"a call naming a session is refused", `{"t":"call","id":2,"name":"n","session":"s"}`, wire.PageFrame{}, "call carries no session"},
	{"a report decodes", `{"t":"report","downMs":12400,"attempts":3,"kinds":["closed","refused","timeout"]}`,
		wire.PageFrame{T: "report", DownMs: 12400, Attempts: 3, Kinds: []string{"closed", "refused", "timeout"}}, ""},
	{"a report of no time decodes", `{"t":"report","attempts":1,"kinds":["other"]}`, wire.PageFrame{T: "report", Attempts: 1, Kinds: []string{"other"}}, ""},
	{"a report naming every kind decodes", `{"t":"report","downMs":1,"attempts":1,"kinds":["closed","refused","timeout","silent","busy","restarting","offline","unauthorized","protocol","hidden","other"]}`,
		wire.PageFrame{T: "report", DownMs: 1, Attempts: 1, Kinds: wire.ReportKinds[:]}, ""},
	{"a report without kinds is refused", `{"t":"report","downMs":5,"attempts":1}`, wire.PageFrame{}, "must name 1..11 kinds, got 0"},
	{"a report with no kind is refused", `{"t":"report","downMs":5,"attempts":1,"kinds":[]}`, wire.PageFrame{}, "must name 1..11 kinds, got 0"},
	{"a report with more kinds than there are is refused", `{"t":"report","downMs":5,"attempts":1,"kinds":["closed","closed","closed","closed","closed","closed","closed","closed","closed","closed","closed","closed"]}`, wire.PageFrame{}, "must name 1..11 kinds, got more"},
	{"a report naming a kind twice is refused", `{"t":"report","downMs":5,"attempts":1,"kinds":["closed","refused","closed"]}`, wire.PageFrame{}, `"closed" twice`},
	{"a report naming an unknown kind is refused", `{"t":"report","downMs":5,"attempts":1,"kinds":["eaten by a grue"]}`, wire.PageFrame{}, `unknown kind "eaten by a grue"`},
	{"a report whose kinds are not strings is refused", `{"t":"report","downMs":5,"attempts":1,"kinds":[1]}`, wire.PageFrame{}, "each of kinds must be a string, got a number"},
	{"a report whose kinds are a string is refused", `{"t":"report","downMs":5,"attempts":1,"kinds":"closed"}`, wire.PageFrame{}, "kinds must be an array of strings, got a string"},
	{"a report whose kinds end too soon is refused", `{"t":"report","downMs":5,"attempts":1,"kinds":["closed"`, wire.PageFrame{}, "the document ends too soon"},
	{"a report of no attempt is refused", `{"t":"report","downMs":5,"kinds":["closed"]}`, wire.PageFrame{}, "report attempts must be in 1..1000000, got 0"},
	{"a report of too many attempts is refused", `{"t":"report","downMs":5,"attempts":1000001,"kinds":["closed"]}`, wire.PageFrame{}, "report attempts must be in 1..1000000, got 1000001"},
	{"a report of more than 30 days is refused", `{"t":"report","downMs":2592000001,"attempts":1,"kinds":["closed"]}`, wire.PageFrame{}, "report downMs must be in 0..2592000000, got 2592000001"},
	{"a report of a negative time is refused", `{"t":"report","downMs":-1,"attempts":1,"kinds":["closed"]}`, wire.PageFrame{}, "downMs must be an integer in 0..18446744073709551615, got -1"},
	{"a report with a stream is refused", `{"t":"report","stream":"S","attempts":1,"kinds":["closed"]}`, wire.PageFrame{}, "report carries no stream"},
	{"a report with call fields is refused", `{"t":"report","id":2,"attempts":1,"kinds":["closed"]}`, wire.PageFrame{}, "report carries no id, name, data or key"},
	{"a sub with report fields is refused", `{"t":"sub","stream":"S","kinds":[]}`, wire.PageFrame{}, "sub carries no downMs, attempts or kinds"},
	{"a ping with report fields is refused", `{"t":"ping","attempts":2}`, wire.PageFrame{}, "ping carries no downMs, attempts or kinds"},
}

func TestDecodePage(t *testing.T) {
	for _, tc := range pageCases {
		got, err := wire.DecodePage([]byte(tc.in))
		if tc.err != "" {
			if !errors.Is(err, wire.ErrFrame) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: DecodePage(%.60s) error = %v, want ErrFrame containing %q", tc.name, tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: DecodePage(%.60s) = %+v, %v; want %+v", tc.name, tc.in, got, err, tc.want)
		}
	}
}

// A call frame that breaks a rule but names its id, whatever the rule and wherever the id
// stands in the frame, is read far enough to name that call: the Host answers it with a
// reply to its id (bad-request), and the call settles on the page. One that names no id, or
// names two, or one of the wrong type, names no call.
func TestABadCallFrameStillNamesItsCall(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		id       uint64 // 0: the frame names no call
		err      string
	}{
		{"a name that is a number", `{"t":"call","id":3,"name":5}`, 3, "name must be a string, got a number"},
		{"a key that is an object", `{"t":"call","id":3,"name":"n","key":{"a":1}}`, 3, "key must be a string, got an object"},
		{"a key that is an array, before the id", `{"t":"call","key":["k"],"id":4,"name":"n"}`, 4, "key must be a string, got an array"},
		{"every member of the wrong type, the type last", `{"name":[1],"key":true,"stream":2,"id":4,"t":"call"}`, 4, "name must be a string, got an array"},
		{"a name given twice", `{"t":"call","id":5,"name":"n","name":"m"}`, 5, "duplicate key"},
		{"a stream of the wrong type", `{"t":"call","id":8,"stream":5,"name":"n"}`, 8, "stream must be a string, got a number"},
		{"a frame that ends too soon after its id", `{"t":"call","id":6,"name":"n","data":`, 6, "ends too soon"},
		{"trailing data", `{"t":"call","id":7,"name":"n"} x`, 7, "trailing data"},
		{"an id given twice", `{"t":"call","id":5,"id":6,"name":"n"}`, 0, "duplicate key"},
		{"an id that is a string", `{"t":"call","id":"5","name":"n"}`, 0, "id must be a number, got a string"},
		{"an id that is not an integer", `{"t":"call","id":1.5,"name":5}`, 0, "id must be an integer"},
		{"a negative id", `{"t":"call","id":-2,"name":"n"}`, 0, "id must be an integer"},
		{"a type that is a number", `{"t":1,"id":5,"name":"n"}`, 0, "t must be a string, got a number"},
	} {
		got, err := wire.DecodePage([]byte(tc.in))
		if !errors.Is(err, wire.ErrFrame) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: DecodePage(%s) error = %v, want ErrFrame containing %q", tc.name, tc.in, err, tc.err)
		}
		want := wire.PageFrame{T: wire.TypeCall, ID: tc.id}
		if tc.id == 0 {
			want = wire.PageFrame{T: got.T} // no id, so no call to answer, whatever the type read
		}
		if got.ID != want.ID || (tc.id != 0 && got.T != wire.TypeCall) {
			t.Errorf("%s: DecodePage(%s) read %+v, want %+v with the error", tc.name, tc.in, got, want)
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
	frames := []wire.HostFrame{
		wire.Ready("s1", 15*time.Second),
		{T: wire.TypeReady, Session: "s2", HeartbeatMs: 100, Dedup: "d", DedupMs: 600000, MaxFrameBytes: 4096, Report: true},
		{T: wire.TypeHeartbeat},
		{T: wire.TypeEvent, Stream: "S", Seq: 1, Data: []byte(`{"v":1}`)},
		{T: wire.TypeReset, Stream: "S", Epoch: "E", Seq: 9, Baseline: []byte(`[1,2,3]`)},
		{T: wire.TypeGoAway, URI: "/elsewhere"},
		{T: wire.TypeGoAway},
		{T: wire.TypeError, Message: "retry-after=10"},
		{T: wire.TypeDenied, Stream: "S", Reason: "not yours \u2028 <b>"},
		{T: wire.TypeFenced, Session: "5f1c0a9e3b7d2c4e8a6f1b0d", Started: 3},
		{T: wire.TypeFenced, Session: "s"},
	}
	for _, f := range frames {
		b, err := f.Encode()
		if err != nil {
			t.Fatalf("Encode(%+v): %v", f, err)
		}
		got, err := wire.DecodeHost(b)
		if err != nil {
			t.Fatalf("DecodeHost(Encode(%+v) = %s): %v", f, b, err)
		}
		b2, _ := got.Encode()
		if !bytes.Equal(b, b2) {
			t.Errorf("round trip of %+v: %s then %s", f, b, b2)
		}
	}
	for _, f := range []wire.PageFrame{
		{T: wire.TypeSub, Stream: "S"},
		{T: wire.TypeSub, Stream: "S", Epoch: "E", After: 3},
		{T: wire.TypeUnsub, Stream: "S"},
		{T: wire.TypePing},
		{T: wire.TypeCall, ID: 1, Name: "chat.post", Data: wire.RawJSON(`{"text":"hi"}`)},
		{T: wire.TypeCall, ID: 7, Name: "cart/add:v2", Data: wire.RawJSON(`null`), Key: "order-7 ✓"},
		{T: wire.TypeCall, ID: 8, Name: "n"},
		wire.Report(12400*time.Millisecond, 3, []string{wire.KindClosed, wire.KindRefused}),
		wire.Report(0, 1, []string{wire.KindOther}),
	} {
		b, _ := f.Encode()
		if got, err := wire.DecodePage(b); err != nil || !reflect.DeepEqual(got, f) {
			t.Errorf("DecodePage(Encode(%+v) = %s) = %+v, %v", f, b, got, err)
		}
	}
}

func FuzzDecodeHost(f *testing.F) {
	for _, tc := range hostCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := wire.DecodeHost(b)
		if err != nil {
			if !errors.Is(err, wire.ErrFrame) {
				t.Fatalf("DecodeHost(%q) error %v does not wrap ErrFrame", b, err)
			}
			return
		}
		if err := fr.Validate(); err != nil {
			t.Fatalf("DecodeHost(%q) = %+v, which does not validate: %v", b, fr, err)
		}
		enc, err := fr.Encode()
		if err != nil {
			t.Fatalf("Encode(%+v): %v", fr, err)
		}
		if !json.Valid(enc) {
			t.Fatalf("Encode(DecodeHost(%q)) = %s is not valid JSON", b, enc)
		}
		fr2, err := wire.DecodeHost(enc)
		if err != nil {
			t.Fatalf("DecodeHost(Encode(DecodeHost(%q)) = %s): %v", b, enc, err)
		}
		enc2, _ := fr2.Encode()
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip of %q is not stable: %s then %s", b, enc, enc2)
		}
	})
}

// FuzzDecodePage: what the Host reads from any page. Decoding never panics; what it accepts
// is a frame the Host can act on, and survives encoding. (The Host plugin has no copy of this
// target: it decodes with this very function.)
func FuzzDecodePage(f *testing.F) {
	for _, tc := range pageCases {
		f.Add([]byte(tc.in))
	}
	for _, s := range []string{`{"t":"launch"}`, `{"t":"sub","stream":"s"} trailing`, `[]`, `null`, ``,
		`{"t":"sub","stream":"\u0000"}`, `{"t":"ping","after":0}`} {
		f.Add([]byte(s))
	}
	for _, s := range []string{`{"t":"call","id":3,"name":5}`, `{"key":{},"id":9,"t":"call"}`, `{"t":"call","id":2,"name":"n","name":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := wire.DecodePage(b)
		if err != nil {
			if !errors.Is(err, wire.ErrFrame) {
				t.Fatalf("DecodePage(%q) error %v does not wrap ErrFrame", b, err)
			}
			// Every call frame with a readable id names it, so that the Host can answer it.
			if id, ok := callID(b); ok && (fr.T != wire.TypeCall || fr.ID != id) {
				t.Fatalf("DecodePage(%q) = %+v, %v: a call frame whose id %d reads, returned without it", b, fr, err, id)
			}
			if fr.ID != 0 && fr.T != wire.TypeCall {
				t.Fatalf("DecodePage(%q) = %+v, %v: an id returned for a frame that is no call", b, fr, err)
			}
			return
		}
		switch fr.T {
		case wire.TypeSub, wire.TypeUnsub:
			if fr.Stream == "" || len(fr.Stream) > wire.MaxStreamName {
				t.Fatalf("DecodePage(%q) accepted %+v", b, fr)
			}
		case wire.TypePing:
			if !reflect.DeepEqual(fr, wire.PageFrame{T: wire.TypePing}) {
				t.Fatalf("DecodePage(%q) accepted a ping with fields: %+v", b, fr)
			}
		case wire.TypeCall:
			if fr.ID == 0 || wire.CheckCallName(fr.Name) != nil || fr.Key != "" && wire.CheckCallKey(fr.Key) != nil || fr.Stream != "" {
				t.Fatalf("DecodePage(%q) accepted %+v", b, fr)
			}
		case wire.TypeFence:
			if !reflect.DeepEqual(fr, wire.PageFrame{T: wire.TypeFence, Session: fr.Session}) || wire.CheckSessionID(fr.Session) != nil {
				t.Fatalf("DecodePage(%q) accepted %+v", b, fr)
			}
		case wire.TypeReport:
			// What a Host puts in its histograms: bounded, and of the fixed kinds only.
			if fr.Attempts == 0 || fr.Attempts > wire.MaxReportAttempts || fr.Down() > wire.MaxReportDown ||
				wire.CheckKinds(fr.Kinds) != nil || fr.Stream != "" || fr.ID != 0 {
				t.Fatalf("DecodePage(%q) accepted %+v", b, fr)
			}
		default:
			t.Fatalf("DecodePage(%q) accepted type %q", b, fr.T)
		}
		enc, err := fr.Encode()
		if err != nil {
			t.Fatalf("Encode(%+v): %v", fr, err)
		}
		if !json.Valid(enc) {
			t.Fatalf("Encode(DecodePage(%q)) = %s is not valid JSON", b, enc)
		}
		fr2, err := wire.DecodePage(enc)
		if err != nil {
			t.Fatalf("DecodePage(Encode(DecodePage(%q)) = %s): %v", b, enc, err)
		}
		// Decoding refuses invalid UTF-8, so a decoded frame always survives the round trip.
		if !reflect.DeepEqual(fr2, fr) {
			t.Fatalf("round trip of %q: %+v then %+v", b, fr, fr2)
		}
	})
}

// callID reads b the way a reader that knows JSON and nothing of the protocol would: when b is
// one JSON object (by the strict rules frames are read with) whose "t" is "call" and whose
// "id", given once, is a positive integer, it returns that id.
func callID(b []byte) (uint64, bool) {
	if !utf8.Valid(b) || !json.Valid(b) || jsontok.NewDecoder(b).SkipValue() != nil {
		return 0, false
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return 0, false
	}
	var typ, id []json.RawMessage
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return 0, false
		}
		var v json.RawMessage
		if d.Decode(&v) != nil {
			return 0, false
		}
		switch k {
		case "t":
			typ = append(typ, v)
		case "id":
			id = append(id, v)
		}
	}
	if len(typ) != 1 || string(typ[0]) != `"call"` || len(id) != 1 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(id[0]), 10, 64)
	return n, err == nil && n != 0
}
