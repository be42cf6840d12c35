package wire_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lifeline-go/lifeline/internal/wire"
)

func TestAccessEndedReasonsReadBackAsWritten(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		reason string
		reauth bool
		ok     bool
	}{
		{"an end with the app's reason", "access-ended: you signed out", "you signed out", false, true},
		{"a reauthentication", "access-ended reauth: your role changed", "your role changed", true, true},
		{"an end without a reason", "access-ended", "", false, true},
		{"a reauthentication without a reason", "access-ended reauth", "", true, true},
		{"spaces around it", "  access-ended: signed out \n", "signed out", false, true},
		{"a reason with a colon", "access-ended: a: b", "a: b", false, true},
		{"another word glued on", "access-endedness: x", "", false, false},
		{"reauth glued on", "access-ended reauthorised: x", "", false, false},
		{"a restart", "service-restart", "", false, false},
		{"nothing", "", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, reauth, ok := wire.ParseAccessEnded(tt.in)
			if reason != tt.reason || reauth != tt.reauth || ok != tt.ok {
				t.Fatalf("ParseAccessEnded(%q) = %q, %v, %v; want %q, %v, %v", tt.in, reason, reauth, ok, tt.reason, tt.reauth, tt.ok)
			}
			if !ok {
				return
			}
			back := wire.AccessEndedReason(reason, reauth)
			if r, re, ok := wire.ParseAccessEnded(back); r != reason || re != reauth || !ok {
				t.Fatalf("ParseAccessEnded(AccessEndedReason(%q, %v) = %q) = %q, %v, %v", reason, reauth, back, r, re, ok)
			}
		})
	}
}

var renewalCases = []struct {
	name string
	in   string
	want wire.Renewal
	err  string
}{
	{"a renewal on the cookie", `{"session":"h.s","secret":"k"}`, wire.Renewal{Session: "h.s", Secret: "k"}, ""},
	{"a renewal with a token", `{"session":"h.s","secret":"k","token":"eyJ.x.y"}`, wire.Renewal{Session: "h.s", Secret: "k", Token: "eyJ.x.y"}, ""},
	{"unknown members are skipped", `{"session":"h.s","secret":"k","later":[1]}`, wire.Renewal{Session: "h.s", Secret: "k"}, ""},
	{"no session", `{"secret":"k"}`, wire.Renewal{}, "session must be 1..64 bytes"},
	{"a session too long", `{"session":"` + strings.Repeat("s", 65) + `","secret":"k"}`, wire.Renewal{}, "session must be 1..64 bytes"},
	{"no secret", `{"session":"h.s"}`, wire.Renewal{}, "secret must be 1..64 bytes"},
	{"a token too long", `{"session":"h.s","secret":"k","token":"` + strings.Repeat("t", wire.MaxToken+1) + `"}`, wire.Renewal{}, "token must be at most"},
	{"a token that would split a header", `{"session":"h.s","secret":"k","token":"a\r\nX-Evil: 1"}`, wire.Renewal{}, "control character at byte 1"},
	{"a session twice", `{"session":"a","session":"b","secret":"k"}`, wire.Renewal{}, "duplicate key"},
	{"a number for a string", `{"session":7,"secret":"k"}`, wire.Renewal{}, "session must be a string"},
	{"garbage", `renew me`, wire.Renewal{}, "bad frame"},
	{"trailing data", `{"session":"h.s","secret":"k"} {}`, wire.Renewal{}, "trailing data"},
	{"a body past the bound", `{"session":"h.s","secret":"k","pad":"` + strings.Repeat(" ", wire.MaxRenewal) + `"}`, wire.Renewal{}, "at most"},
}

func TestDecodeRenewal(t *testing.T) {
	for _, tt := range renewalCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wire.DecodeRenewal([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, wire.ErrFrame) {
					t.Fatalf("DecodeRenewal = %+v, %v; want an ErrFrame containing %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("DecodeRenewal = %+v, %v; want %+v", got, err, tt.want)
			}
			if back, err := wire.DecodeRenewal(got.Encode()); err != nil || back != got {
				t.Fatalf("DecodeRenewal(Encode()) = %+v, %v", back, err)
			}
		})
	}
}

func FuzzDecodeRenewal(f *testing.F) {
	for _, tc := range renewalCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := wire.DecodeRenewal(b)
		if err != nil {
			if !errors.Is(err, wire.ErrFrame) {
				t.Fatalf("DecodeRenewal(%q) error %v does not wrap ErrFrame", b, err)
			}
			return
		}
		if back, err := wire.DecodeRenewal(r.Encode()); err != nil || back != r {
			t.Fatalf("DecodeRenewal(Encode(%+v)) = %+v, %v", r, back, err)
		}
	})
}

func TestDecodeRenewed(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		err  bool
	}{
		{`{"expiresMs":60000}`, 60000, false},
		{`{"expiresMs":0}`, 0, false},
		{`{}`, 0, false},
		{`{"expiresMs":-1}`, 0, true},
		{`{"expiresMs":1.5}`, 0, true},
		{`{"expiresMs":"9"}`, 0, true},
		{`[]`, 0, true},
	} {
		got, err := wire.DecodeRenewed([]byte(tt.in))
		if (err != nil) != tt.err || got.ExpiresMs != tt.want {
			t.Errorf("DecodeRenewed(%s) = %+v, %v; want %d (error %v)", tt.in, got, err, tt.want, tt.err)
		}
	}
	if got, err := wire.DecodeRenewed(wire.Renewed{ExpiresMs: 42}.Encode()); err != nil || got.ExpiresMs != 42 {
		t.Fatalf("DecodeRenewed(Encode(42)) = %+v, %v", got, err)
	}
}

func TestAReadyFrameCarriesItsExpiry(t *testing.T) {
	f := wire.Ready("h.s", wire.MinHeartbeat)
	f.Secret, f.ExpiresMs = "k", 90000
	b, _ := f.Encode()
	got, err := wire.DecodeHost(b)
	if err != nil || got.ExpiresMs != 90000 || got.Secret != "k" {
		t.Fatalf("DecodeHost(%s) = %+v, %v", b, got, err)
	}
	if _, err := wire.DecodeHost([]byte(`{"t":"ready","session":"s","heartbeatMs":1000,"expiresMs":-5}`)); err == nil {
		t.Fatal("a ready frame expiring in the past was accepted")
	}
}
