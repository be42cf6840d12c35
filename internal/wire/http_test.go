package wire_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/lifeline-go/lifeline/internal/wire"
)

var envelopeCases = []struct {
	name string
	in   string
	want wire.Envelope
	err  string
}{
	{"a send", `{"t":"send","session":"h.s","secret":"k","seq":3}`, wire.Envelope{T: "send", Session: "h.s", Secret: "k", Seq: 3}, ""},
	{"a poll", `{"t":"poll","session":"h.s","secret":"k","ack":17}`, wire.Envelope{T: "poll", Session: "h.s", Secret: "k", Ack: 17}, ""},
	{"a poll of nothing read yet", `{"t":"poll","session":"h.s","secret":"k"}`, wire.Envelope{T: "poll", Session: "h.s", Secret: "k"}, ""},
	{"a bye", `{"t":"bye","session":"h.s","secret":"k","reason":"gone"}`, wire.Envelope{T: "bye", Session: "h.s", Secret: "k", Reason: "gone"}, ""},
	{"a newer field is skipped", `{"t":"bye","session":"h.s","secret":"k","later":[1]}`, wire.Envelope{T: "bye", Session: "h.s", Secret: "k"}, ""},
	{"another kind", `{"t":"put","session":"h.s","secret":"k"}`, wire.Envelope{}, `envelope t must be "send", "poll" or "bye", got "put"`},
	{"no session", `{"t":"send","secret":"k","seq":1}`, wire.Envelope{}, "envelope session must be 1..64 bytes, got 0"},
	{"a session too long", `{"t":"send","session":"` + strings.Repeat("s", 65) + `","secret":"k","seq":1}`, wire.Envelope{}, "envelope session must be 1..64 bytes, got 65"},
	{"no secret", `{"t":"send","session":"h.s","seq":1}`, wire.Envelope{}, "envelope secret must be 1..64 bytes, got 0"},
	{"a send without its seq", `{"t":"send","session":"h.s","secret":"k"}`, wire.Envelope{}, "a send needs its seq"},
	{"a poll with a seq", `{"t":"poll","session":"h.s","secret":"k","seq":2}`, wire.Envelope{}, "seq belongs to a send"},
	{"a send with an ack", `{"t":"send","session":"h.s","secret":"k","seq":1,"ack":2}`, wire.Envelope{}, "ack to a poll"},
	{"a seq that is no number", `{"t":"send","session":"h.s","secret":"k","seq":"1"}`, wire.Envelope{}, "seq must be a number"},
	{"a duplicate key", `{"t":"send","t":"poll","session":"h.s","secret":"k","seq":1}`, wire.Envelope{}, "duplicate"},
	{"garbage", "\x00\xff", wire.Envelope{}, "envelope"},
	{"empty", ``, wire.Envelope{}, "envelope"},
}

func TestDecodeEnvelope(t *testing.T) {
	for _, tc := range envelopeCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := wire.DecodeEnvelope([]byte(tc.in))
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Fatalf("DecodeEnvelope(%s) = %+v, %v; want %+v", tc.in, got, err, tc.want)
				}
				if back, err := wire.DecodeEnvelope(got.Encode()); err != nil || back != got {
					t.Fatalf("DecodeEnvelope(Encode(%+v) = %s) = %+v, %v", got, got.Encode(), back, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, wire.ErrFrame) {
				t.Fatalf("DecodeEnvelope(%s) = %+v, %v; want an ErrFrame containing %q", tc.in, got, err, tc.err)
			}
		})
	}
}

func FuzzDecodeEnvelope(f *testing.F) {
	for _, tc := range envelopeCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := wire.DecodeEnvelope(b)
		if err != nil {
			if !errors.Is(err, wire.ErrFrame) {
				t.Fatalf("DecodeEnvelope(%q) error %v does not wrap ErrFrame", b, err)
			}
			return
		}
		if back, err := wire.DecodeEnvelope(e.Encode()); err != nil || back != e {
			t.Fatalf("DecodeEnvelope(Encode(%+v)) = %+v, %v", e, back, err)
		}
	})
}

func TestAFrameGoesOnOneLineWhateverItsWhitespace(t *testing.T) {
	frame := []byte("{\"t\":\"event\",\n\"data\":{\r\n\"a\": \"x\\ny\"}}")
	line := wire.AppendLine(nil, frame)
	if bytes.Count(line, []byte{'\n'}) != 1 || line[len(line)-1] != '\n' || bytes.IndexByte(line, '\r') >= 0 {
		t.Fatalf("AppendLine = %q, want one line", line)
	}
	ev := wire.AppendEvent(nil, frame)
	var s wire.EventScanner
	s.Write(ev)
	got, err := s.Next()
	if err != nil || !bytes.Equal(got, bytes.TrimSuffix(line, []byte{'\n'})) {
		t.Fatalf("the event's data = %q, %v; want the frame on one line %q", got, err, line)
	}
}

func TestTheEventScannerReadsAStreamInAnyPieces(t *testing.T) {
	var stream []byte
	stream = append(stream, ": padding the proxy may add\n\n"...)
	stream = wire.AppendEvent(stream, []byte(`{"t":"ready","session":"s","heartbeatMs":1000}`))
	stream = append(stream, "event: other\nid: 3\r\ndata: a\ndata: b\r\n\r\n"...)
	stream = wire.AppendEvent(stream, []byte(`{"t":"hb"}`))
	want := []string{`{"t":"ready","session":"s","heartbeatMs":1000}`, "a\nb", `{"t":"hb"}`}
	for size := 1; size <= len(stream); size++ {
		var s wire.EventScanner
		var got []string
		for i := 0; i < len(stream); i += size {
			s.Write(stream[i:min(i+size, len(stream))])
			drain(t, &s, func(b []byte) { got = append(got, string(b)) })
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("in pieces of %d: %q, want %q", size, got, want)
		}
	}
}

// TestTheEventScannerMakesNoGarbage: a page reads every piece of its stream through the
// scanner, so a stream of small events, in whatever pieces, must allocate nothing once the
// scanner's buffer is grown (it was let go after each event, and every piece then allocated).
func TestTheEventScannerMakesNoGarbage(t *testing.T) {
	stream := wire.AppendEvent(nil, []byte(`{"t":"event","stream":"s","seq":1,"data":"0123456789"}`))
	stream = wire.AppendEvent(stream, []byte(`{"t":"hb"}`))
	var s wire.EventScanner
	read := func() {
		for i := 0; i < len(stream); i += 7 { // pieces that split lines and events
			s.Write(stream[i:min(i+7, len(stream))])
			drain(t, &s, func([]byte) {})
		}
	}
	read() // grows the buffers
	if n := testing.AllocsPerRun(100, read); n != 0 {
		t.Fatalf("reading a stream of small events allocates %v times a pass, want 0", n)
	}
	if s.Buffered() != 0 {
		t.Fatalf("after whole events, %d bytes are still buffered", s.Buffered())
	}
}

func TestTheEventScannerRefusesAnEventOverItsLimit(t *testing.T) {
	s := wire.EventScanner{Limit: 16}
	s.Write(wire.AppendEvent(nil, []byte(strings.Repeat("x", 17))))
	if _, err := s.Next(); !errors.Is(err, wire.ErrEventTooLong) {
		t.Fatalf("an event of 17 bytes at a limit of 16: %v, want ErrEventTooLong", err)
	}
	// A line that never ends is refused too, before it fills the memory.
	s = wire.EventScanner{Limit: 16}
	s.Write([]byte("data: " + strings.Repeat("x", 64)))
	if _, err := s.Next(); !errors.Is(err, wire.ErrEventTooLong) {
		t.Fatalf("an unending line: %v, want ErrEventTooLong", err)
	}
}

func FuzzEventScanner(f *testing.F) {
	f.Add([]byte("data: {}\n\n"), 3)
	f.Add([]byte(": x\n\ndata: a\ndata: b\n\n"), 1)
	f.Add([]byte("data:\r\n\r\n"), 2)
	f.Fuzz(func(t *testing.T, b []byte, size int) {
		if size < 1 || size > len(b)+1 {
			size = len(b) + 1
		}
		var whole, pieces wire.EventScanner
		whole.Limit, pieces.Limit = 64, 64
		var a, c []string
		whole.Write(b)
		for {
			e, err := whole.Next()
			if err != nil || e == nil {
				break
			}
			a = append(a, string(e))
		}
		for i := 0; i < len(b); i += size {
			pieces.Write(b[i:min(i+size, len(b))])
			for {
				e, err := pieces.Next()
				if err != nil || e == nil {
					break
				}
				c = append(c, string(e))
			}
		}
		for _, e := range a {
			if len(e) > 64 {
				t.Fatalf("an event of %d bytes passed a limit of 64", len(e))
			}
		}
		_ = c // pieces may stop at an error the whole did not reach; what both read must agree
		for i := range min(len(a), len(c)) {
			if a[i] != c[i] {
				t.Fatalf("event %d: whole %q, in pieces of %d %q", i, a[i], size, c[i])
			}
		}
	})
}

// drain hands each event the scanner holds to f, in order, until it needs more of the stream.
func drain(t *testing.T, s *wire.EventScanner, f func([]byte)) {
	t.Helper()
	for {
		b, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			return
		}
		f(b)
	}
}

func TestCheckDialer(t *testing.T) {
	for _, tc := range []struct {
		id, err string
	}{
		{"0123456789abcdef0123456789abcdef", ""},
		{"a", ""},
		{"Page_1-x", ""},
		{strings.Repeat("z", wire.MaxDialer), ""},
		{"", `lifeline-dialer "": want 1 to 64 characters`},
		{strings.Repeat("z", wire.MaxDialer+1), "want 1 to 64 characters"},
		{"a b", `lifeline-dialer "a b": character 2 is " "`},
		{"a.b", `character 2 is "."`},
		{"é", `character 1 is`},
		{"a%20", `character 2 is "%"`},
	} {
		err := wire.CheckDialer(tc.id)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("CheckDialer(%q) = %v, want %q", tc.id, err, tc.err)
		}
	}
}

// FuzzCheckDialer: an id it takes is one a query carries as it is (the gateway reads the
// loader's without unescaping) and that fits the bound.
func FuzzCheckDialer(f *testing.F) {
	for _, s := range []string{"a", "0f-_Z", "", "a b", "é", strings.Repeat("x", 65)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if wire.CheckDialer(id) != nil {
			return
		}
		if len(id) == 0 || len(id) > wire.MaxDialer {
			t.Fatalf("took %q, of %d bytes", id, len(id))
		}
		if strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
			t.Fatalf("took %q, with characters a query escapes", id)
		}
	})
}
