package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lifeline-go/lifeline/internal/wire"
)

var presenceCases = []struct {
	name string
	in   string
	want wire.HostFrame
	err  string // "" for success; else a substring of the error
}{
	{"a snapshot decodes",
		`{"t":"presence","stream":"room","seq":3,"epoch":"E","snapshot":true,"total":2,"members":[{"id":"alice","count":2,"meta":{"name":"Alice"}},{"id":"bob","count":1}]}`,
		wire.HostFrame{T: "presence", Stream: "room", Seq: 3, Epoch: "E", Snapshot: true, Total: 2,
			Members: []wire.PresenceMember{{ID: "alice", Count: 2, Meta: wire.RawJSON(`{"name":"Alice"}`)}, {ID: "bob", Count: 1}}}, ""},
	{"an empty snapshot at seq 0 decodes", `{"t":"presence","stream":"room","epoch":"E","snapshot":true,"total":0}`,
		wire.HostFrame{T: "presence", Stream: "room", Epoch: "E", Snapshot: true}, ""},
	{"a diff decodes", `{"t":"presence","stream":"room","seq":5,"epoch":"E","from":4,"total":1,"members":[{"id":"carol","count":1}],"left":["alice","bob"]}`,
		wire.HostFrame{T: "presence", Stream: "room", Seq: 5, Epoch: "E", From: 4, Total: 1,
			Members: []wire.PresenceMember{{ID: "carol", Count: 1}}, Left: []string{"alice", "bob"}}, ""},
	{"a capped snapshot in two frames decodes", `{"t":"presence","stream":"room","seq":9,"epoch":"E","snapshot":true,"more":true,"total":5000,"limit":1,"members":[{"id":"a","count":1}]}`,
		wire.HostFrame{T: "presence", Stream: "room", Seq: 9, Epoch: "E", Snapshot: true, More: true, Total: 5000, Limit: 1,
			Members: []wire.PresenceMember{{ID: "a", Count: 1}}}, ""},
	{"the empty identity is a member like any other", `{"t":"presence","stream":"room","seq":1,"epoch":"E","snapshot":true,"total":1,"members":[{"id":"","count":7}]}`,
		wire.HostFrame{T: "presence", Stream: "room", Seq: 1, Epoch: "E", Snapshot: true, Total: 1, Members: []wire.PresenceMember{{ID: "", Count: 7}}}, ""},
	{"a snapshot holding what it does not list decodes", `{"t":"presence","stream":"r","epoch":"E","snapshot":true,"total":0,"hold":9500}`,
		wire.HostFrame{T: "presence", Stream: "r", Epoch: "E", Snapshot: true, HoldMs: 9500}, ""},
	{"a diff that holds is refused", `{"t":"presence","stream":"r","seq":2,"from":1,"epoch":"E","hold":5}`, wire.HostFrame{}, "only a snapshot does"},
	{"a hold over ten minutes is refused", `{"t":"presence","stream":"r","epoch":"E","snapshot":true,"hold":600001}`, wire.HostFrame{}, "must be in 0..600000"},
	{"a refusal decodes", `{"t":"presence","stream":"room","reason":"stream \"room\" carries no presence"}`,
		wire.HostFrame{T: "presence", Stream: "room", Reason: `stream "room" carries no presence`}, ""},
	{"a member's meta of null is none", `{"t":"presence","stream":"r","seq":1,"epoch":"E","snapshot":true,"total":1,"members":[{"id":"a","count":1,"meta":null}]}`,
		wire.HostFrame{T: "presence", Stream: "r", Seq: 1, Epoch: "E", Snapshot: true, Total: 1, Members: []wire.PresenceMember{{ID: "a", Count: 1}}}, ""},
	{"a member's unknown fields are skipped", `{"t":"presence","stream":"r","seq":1,"epoch":"E","snapshot":true,"total":1,"members":[{"id":"a","count":1,"since":1234}]}`,
		wire.HostFrame{T: "presence", Stream: "r", Seq: 1, Epoch: "E", Snapshot: true, Total: 1, Members: []wire.PresenceMember{{ID: "a", Count: 1}}}, ""},
	{"a member's keys written with escapes are its keys", `{"t":"presence","stream":"r","seq":1,"epoch":"E","snapshot":true,"total":1,"members":[{"\u0069d":"a","c\u006funt":2}]}`,
		wire.HostFrame{T: "presence", Stream: "r", Seq: 1, Epoch: "E", Snapshot: true, Total: 1, Members: []wire.PresenceMember{{ID: "a", Count: 2}}}, ""},
	{"a ready carrying presence decodes", `{"t":"ready","session":"s","heartbeatMs":100,"presence":true}`,
		wire.HostFrame{T: "ready", Session: "s", HeartbeatMs: 100, HasPresence: true}, ""},

	{"presence without a stream is refused", `{"t":"presence","seq":1,"epoch":"E","snapshot":true}`, wire.HostFrame{}, "bad stream name"},
	{"presence without an epoch is refused", `{"t":"presence","stream":"r","seq":1,"snapshot":true}`, wire.HostFrame{}, `presence on "r" without an epoch`},
	{"a diff that does not go forward is refused", `{"t":"presence","stream":"r","seq":4,"from":4,"epoch":"E"}`, wire.HostFrame{}, "goes from 4 to 4: it must go forward"},
	{"a snapshot from somewhere is refused", `{"t":"presence","stream":"r","seq":4,"from":2,"epoch":"E","snapshot":true}`, wire.HostFrame{}, "a snapshot is from nothing"},
	{"a snapshot of who left is refused", `{"t":"presence","stream":"r","seq":4,"epoch":"E","snapshot":true,"left":["a"]}`, wire.HostFrame{}, "a snapshot lists who is there"},
	{"a refusal with a batch is refused", `{"t":"presence","stream":"r","reason":"no","epoch":"E"}`, wire.HostFrame{}, "refused with a reason carries nothing else"},
	{"a member without a count is refused", `{"t":"presence","stream":"r","seq":1,"epoch":"E","snapshot":true,"members":[{"id":"a"}]}`, wire.HostFrame{}, "a member needs an id and a count"},
	{"a member without an id is refused", `{"t":"presence","stream":"r","seq":1,"epoch":"E","snapshot":true,"members":[{"count":1}]}`, wire.HostFrame{}, "a member needs an id and a count"},
	{"a member of no session is refused", `{"t":"presence","stream":"r","seq":1,"epoch":"E","snapshot":true,"members":[{"id":"a","count":0}]}`, wire.HostFrame{}, "a member's count must be in 1..1073741824, got 0"},
	{"a member with a null id is refused", `{"t":"presence","stream":"r","seq":1,"epoch":"E","snapshot":true,"members":[{"id":null,"count":1}]}`, wire.HostFrame{}, "a member's id must be a string, got null"},
	{"a member given twice is refused", `{"t":"presence","stream":"r","seq":2,"from":1,"epoch":"E","members":[{"id":"a","count":1}],"left":["a"]}`, wire.HostFrame{}, `names "a" twice`},
	{"a member's key given twice is refused", `{"t":"presence","stream":"r","seq":1,"epoch":"E","snapshot":true,"members":[{"id":"a","id":"b","count":1}]}`, wire.HostFrame{}, "a member gives id twice"},
	{"a member's id over 256 bytes is refused", `{"t":"presence","stream":"r","seq":1,"epoch":"E","snapshot":true,"members":[{"id":"` + strings.Repeat("x", 257) + `","count":1}]}`, wire.HostFrame{}, "id must be at most 256 bytes, got 257"},
	{"members that are no array are refused", `{"t":"presence","stream":"r","seq":1,"epoch":"E","snapshot":true,"members":{}}`, wire.HostFrame{}, "members must be an array of members, got an object"},
	{"left that is no array of strings is refused", `{"t":"presence","stream":"r","seq":2,"from":1,"epoch":"E","left":[1]}`, wire.HostFrame{}, "each of left must be a string, got a number"},
	{"more members than the limit are refused", `{"t":"presence","stream":"r","seq":1,"epoch":"E","snapshot":true,"limit":1,"total":2,"members":[{"id":"a","count":1},{"id":"b","count":1}]}`, wire.HostFrame{}, "lists 2 members, over its limit 1"},
	{"a total that no int holds is refused", `{"t":"presence","stream":"r","seq":1,"epoch":"E","snapshot":true,"total":99999999999}`, wire.HostFrame{}, "total must be in 0..1073741824"},
	{"a plain member's id with an escape is read by the tokens", `{"t":"presence","stream":"r","seq":1,"epoch":"E","snapshot":true,"total":1,"members":[{"id":"a\"b","count":12}]}`,
		wire.HostFrame{T: "presence", Stream: "r", Seq: 1, Epoch: "E", Snapshot: true, Total: 1, Members: []wire.PresenceMember{{ID: `a"b`, Count: 12}}}, ""},
	{"a plain member's id beyond ASCII is read by the tokens", `{"t":"presence","stream":"r","seq":1,"epoch":"E","snapshot":true,"total":1,"members":[{"id":"Zoë","count":1073741824}]}`,
		wire.HostFrame{T: "presence", Stream: "r", Seq: 1, Epoch: "E", Snapshot: true, Total: 1, Members: []wire.PresenceMember{{ID: "Zoë", Count: 1 << 30}}}, ""},
	{"a count with a leading zero is refused", `{"t":"presence","stream":"r","seq":1,"epoch":"E","snapshot":true,"members":[{"id":"a","count":01}]}`, wire.HostFrame{}, "invalid"},
	{"a count over the bound is refused", `{"t":"presence","stream":"r","seq":1,"epoch":"E","snapshot":true,"members":[{"id":"a","count":1073741825}]}`, wire.HostFrame{}, "a member's count must be in 1..1073741824, got 1073741825"},
	{"a count of eleven digits is refused", `{"t":"presence","stream":"r","seq":1,"epoch":"E","snapshot":true,"members":[{"id":"a","count":12345678901}]}`, wire.HostFrame{}, "a member's count must be in 1..1073741824, got 12345678901"},
	{"a member given twice in order is refused", `{"t":"presence","stream":"r","seq":1,"epoch":"E","snapshot":true,"members":[{"id":"a","count":1},{"id":"a","count":2}]}`, wire.HostFrame{}, `names "a" twice`},
	{"a member given twice out of order is refused", `{"t":"presence","stream":"r","seq":1,"epoch":"E","snapshot":true,"members":[{"id":"b","count":1},{"id":"a","count":1},{"id":"b","count":2}]}`, wire.HostFrame{}, `names "b" twice`},
	{"a member that also left, all in order, is refused", `{"t":"presence","stream":"r","seq":2,"from":1,"epoch":"E","members":[{"id":"a","count":1},{"id":"c","count":1}],"left":["b","c"]}`, wire.HostFrame{}, `names "c" twice`},
	{"a frame out of order of id decodes", `{"t":"presence","stream":"r","seq":2,"from":1,"epoch":"E","total":2,"members":[{"id":"c","count":1},{"id":"a","count":1}],"left":["z","b"]}`,
		wire.HostFrame{T: "presence", Stream: "r", Seq: 2, From: 1, Epoch: "E", Total: 2,
			Members: []wire.PresenceMember{{ID: "c", Count: 1}, {ID: "a", Count: 1}}, Left: []string{"z", "b"}}, ""},
	{"members ending too soon are refused", `{"t":"presence","stream":"r","members":[{"id":"a","count":1}`, wire.HostFrame{}, "the document ends too soon"},
}

func TestDecodePresence(t *testing.T) {
	for _, tc := range presenceCases {
		got, err := wire.DecodeHost([]byte(tc.in))
		if tc.err != "" {
			if !errors.Is(err, wire.ErrFrame) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: DecodeHost(%.80s) error = %v, want ErrFrame containing %q", tc.name, tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: DecodeHost(%.80s) = %+v, %v; want %+v", tc.name, tc.in, got, err, tc.want)
		}
	}
}

func TestPresenceFramesRoundTrip(t *testing.T) {
	for _, f := range []wire.HostFrame{
		{T: wire.TypePresence, Stream: "room", Epoch: "E", Snapshot: true, Members: []wire.PresenceMember{}},
		{T: wire.TypePresence, Stream: "room", Epoch: "E", Seq: 2, Snapshot: true, More: true, Total: 3000, Limit: 2,
			Members: []wire.PresenceMember{{ID: "a\u2028<b>", Count: 1, Meta: wire.RawJSON(`{"n":"Ä"}`)}, {ID: "", Count: 3}}},
		{T: wire.TypePresence, Stream: "room", Epoch: "E", Seq: 7, From: 5, Total: 1, Left: []string{"x", "y"}},
		{T: wire.TypePresence, Stream: "room", Reason: "no presence here"},
		{T: wire.TypeReady, Session: "s", HeartbeatMs: 1000, HasPresence: true},
	} {
		b, err := f.Encode()
		if err != nil {
			t.Fatalf("Encode(%+v): %v", f, err)
		}
		if !json.Valid(b) {
			t.Fatalf("Encode(%+v) = %s: not JSON", f, b)
		}
		got, err := wire.DecodeHost(b)
		if err != nil || !reflect.DeepEqual(got, f) {
			t.Errorf("DecodeHost(Encode(%+v) = %s) = %+v, %v", f, b, got, err)
		}
	}
}

func TestASubAsksForPresenceWithItsCursor(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want wire.PageFrame
		err  string
	}{
		{"a sub asking for presence decodes", `{"t":"sub","stream":"r","presence":true}`, wire.PageFrame{T: "sub", Stream: "r", Presence: true}, ""},
		{"a sub resuming presence by cursor decodes", `{"t":"sub","stream":"r","epoch":"E","after":4,"presence":true,"presenceEpoch":"P","presenceAfter":9}`,
			wire.PageFrame{T: "sub", Stream: "r", Epoch: "E", After: 4, Presence: true, PresenceEpoch: "P", PresenceAfter: 9}, ""},
		{"a presence cursor at seq 0 decodes", `{"t":"sub","stream":"r","presence":true,"presenceEpoch":"P"}`,
			wire.PageFrame{T: "sub", Stream: "r", Presence: true, PresenceEpoch: "P"}, ""},
		{"a presence cursor without presence is refused", `{"t":"sub","stream":"r","presenceEpoch":"P"}`, wire.PageFrame{}, "a presence cursor without presence"},
		{"a presence seq without its epoch is refused", `{"t":"sub","stream":"r","presence":true,"presenceAfter":3}`, wire.PageFrame{}, "presenceAfter=3 without a presenceEpoch"},
		{"an unsub with presence is refused", `{"t":"unsub","stream":"r","presence":true}`, wire.PageFrame{}, "unsub carries no presence"},
		{"presence that is no boolean is refused", `{"t":"sub","stream":"r","presence":"yes"}`, wire.PageFrame{}, "presence must be a boolean, got a string"},
	}
	for _, tt := range tests {
		got, err := wire.DecodePage([]byte(tt.in))
		if tt.err != "" {
			if !errors.Is(err, wire.ErrFrame) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: DecodePage(%s) error = %v, want ErrFrame containing %q", tt.name, tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: DecodePage(%s) = %+v, %v; want %+v", tt.name, tt.in, got, err, tt.want)
		}
		if b, _ := got.Encode(); !bytes.Equal(b, []byte(tt.in)) {
			t.Errorf("%s: Encode = %s, want %s", tt.name, b, tt.in)
		}
	}
}

// An older Host skips what it does not know: the presence members of a sub leave the sub as it
// was, so a page that asks an older Host for presence subscribes all the same.
func TestAnOlderHostReadsASubWithPresenceAsASub(t *testing.T) {
	b, _ := wire.PageFrame{T: wire.TypeSub, Stream: "r", Presence: true, PresenceEpoch: "P", PresenceAfter: 2}.Encode()
	var old map[string]any
	if err := json.Unmarshal(b, &old); err != nil {
		t.Fatal(err)
	}
	if old["t"] != "sub" || old["stream"] != "r" {
		t.Errorf("%s does not read as a sub of r", b)
	}
}

// FuzzDecodePresence: what a page reads of any presence frame. Decoding never panics; what it
// accepts validates, names no identity twice, lists no more than its limit, and survives
// encoding.
func FuzzDecodePresence(f *testing.F) {
	for _, tc := range presenceCases {
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
		if fr.T == wire.TypePresence {
			ids := map[string]bool{}
			for _, m := range fr.Members {
				if m.Count < 1 || ids[m.ID] || len(m.ID) > wire.MaxPresenceID {
					t.Fatalf("DecodeHost(%q) accepted member %+v", b, m)
				}
				ids[m.ID] = true
			}
			for _, id := range fr.Left {
				if ids[id] {
					t.Fatalf("DecodeHost(%q) accepted %q as a member and as gone", b, id)
				}
				ids[id] = true
			}
			if fr.Limit > 0 && len(fr.Members) > fr.Limit {
				t.Fatalf("DecodeHost(%q) accepted %d members over a limit of %d", b, len(fr.Members), fr.Limit)
			}
		}
		enc, err := fr.Encode()
		if err != nil || !json.Valid(enc) {
			t.Fatalf("Encode(DecodeHost(%q)) = %s, %v", b, enc, err)
		}
		fr2, err := wire.DecodeHost(enc)
		if err != nil {
			t.Fatalf("DecodeHost(Encode(DecodeHost(%q)) = %s): %v", b, enc, err)
		}
		if enc2, _ := fr2.Encode(); !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip of %q is not stable: %s then %s", b, enc, enc2)
		}
	})
}

// TestPlainMembersReadAsTheTokensReadThem: a member in the form a Host writes is read by a
// fast path (plainMember); a space after its '{' sends the same member through the tokens.
// Both must agree, member by member, and on what they refuse.
func TestPlainMembersReadAsTheTokensReadThem(t *testing.T) {
	for _, m := range plainMemberCases {
		checkPlainMember(t, []byte(m))
	}
}

var plainMemberCases = []string{
	`{"id":"user-00001","count":1}`, `{"id":"","count":7}`, `{"id":"a","count":1073741824}`,
	`{"id":"a","count":1073741825}`, `{"id":"a","count":0}`, `{"id":"a","count":01}`,
	`{"id":"a","count":9999999999}`, `{"id":"a","count":12345678901}`, `{"id":"a","count":-1}`,
	`{"id":"a","count":1.5}`, `{"id":"a","count":1e3}`, `{"id":"a","count":1,"meta":{}}`,
	`{"id":"a\u0062","count":1}`, `{"id":"a\"b","count":1}`, `{"id":"Zoë","count":1}`,
	`{"id":"a` + "\x01" + `","count":1}`, `{"id":"a","count":1 }`, `{"id":"a","count":"1"}`,
	`{"id":"a","count":1`, `{"id":"a","count":`, `{"id":"a`, `{"id":"` + strings.Repeat("x", 300) + `","count":1}`,
}

func checkPlainMember(t *testing.T, m []byte) {
	if len(m) == 0 || m[0] != '{' {
		return
	}
	const head = `{"t":"presence","stream":"r","seq":2,"from":1,"epoch":"E","total":1,"members":[`
	fast := []byte(head + string(m) + `]}`)
	slow := []byte(head + "{ " + string(m[1:]) + `]}`)
	ff, ferr := wire.DecodeHost(fast)
	sf, serr := wire.DecodeHost(slow)
	if (ferr == nil) != (serr == nil) || !reflect.DeepEqual(ff, sf) {
		t.Errorf("member %q: read as written %+v, %v; read by the tokens %+v, %v", m, ff, ferr, sf, serr)
	}
}

// FuzzPlainMember: the fast path and the tokens agree on any member.
func FuzzPlainMember(f *testing.F) {
	for _, m := range plainMemberCases {
		f.Add([]byte(m))
	}
	f.Fuzz(func(t *testing.T, m []byte) { checkPlainMember(t, m) })
}

// BenchmarkDecodePresence decodes a full presence frame (as many members of 30 bytes as
// wire.MaxPresenceFrame holds): a page joining a stream of 2,000 reads two of them, and the
// 2,000-page join of make bench is bound by this decoding.
func BenchmarkDecodePresence(b *testing.B) {
	f := wire.HostFrame{T: wire.TypePresence, Stream: "room", Epoch: "e.1", Seq: 2, From: 1, Total: 2000}
	for i := range (wire.MaxPresenceFrame - 100) / 30 {
		f.Members = append(f.Members, wire.PresenceMember{ID: fmt.Sprintf("user-%05d", i), Count: 1})
	}
	frame, err := f.Append(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		g, err := wire.DecodeHost(frame)
		if err != nil || len(g.Members) != len(f.Members) {
			b.Fatalf("decoded %d members, %v; want %d", len(g.Members), err, len(f.Members))
		}
	}
}
