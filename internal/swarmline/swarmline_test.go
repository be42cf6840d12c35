package swarmline_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/internal/swarmline"
)

// Every kind of line bin/swarm prints, as it prints it, and as a reader gets it back.
func TestLinesPrintAsTheReadersExpectAndDecodeBack(t *testing.T) {
	const at = 1764438000123.456
	tests := []struct {
		name string
		line swarmline.Line
		want string
	}{
		{"a dial carries only the three members", swarmline.Line{T: at, ID: 3, Event: swarmline.Attempt},
			`{"t":1764438000123.456,"id":3,"event":"attempt"}`},
		{"a delivery carries stream, seq and reset, even when they are zero",
			swarmline.Line{T: at, ID: 0, Event: swarmline.Delivery, Stream: "ticks", Seq: 0, Reset: false},
			`{"t":1764438000123.456,"id":0,"event":"delivery","stream":"ticks","seq":0,"reset":false}`},
		{"a baseline delivery says reset", swarmline.Line{T: at, ID: 1, Event: swarmline.Delivery, Stream: "ticks", Seq: 12, Reset: true},
			`{"t":1764438000123.456,"id":1,"event":"delivery","stream":"ticks","seq":12,"reset":true}`},
		{"a violation carries the seq it wanted",
			swarmline.Line{T: at, ID: 2, Event: swarmline.Violation, Stream: "ticks", Seq: 14, Want: swarmline.WantSeq(13)},
			`{"t":1764438000123.456,"id":2,"event":"violation","stream":"ticks","seq":14,"want":13}`},
		{"a violation before any reset says what it wanted",
			swarmline.Line{T: at, ID: 2, Event: swarmline.Violation, Stream: "a<b", Seq: 1, Want: swarmline.WantText("a reset first")},
			`{"t":1764438000123.456,"id":2,"event":"violation","stream":"a\u003cb","seq":1,"want":"a reset first"}`},
		{"stats are the process's, id -1", swarmline.Line{T: at, ID: -1, Event: swarmline.Stats, Goroutines: 212, HeapInuse: 4718592, HeapAlloc: 2359296, OnHTTP: 3},
			`{"t":1764438000123.456,"id":-1,"event":"stats","goroutines":212,"heapInuse":4718592,"heapAlloc":2359296,"onHTTP":3}`},
		{"an answered call carries its number, key, epoch and the reply",
			swarmline.Line{T: at, ID: 4, Event: swarmline.Call, Call: 7, Keyed: true, Made: at - 3, Epoch: "e1", Reply: []byte(`"p0/4/7"`)},
			`{"t":1764438000123.456,"id":4,"event":"call","call":7,"keyed":true,"made":1764438000120.456,"epoch":"e1","reply":"p0/4/7"}`},
		{"a failed call carries kind, sent, code and message instead of a reply",
			swarmline.Line{T: at, ID: 4, Event: swarmline.Call, Call: 0, Made: at, Epoch: "", Kind: "interrupted", Sent: true, Code: "", Message: "the session ended"},
			`{"t":1764438000123.456,"id":4,"event":"call","call":0,"keyed":false,"made":1764438000123.456,"epoch":"","kind":"interrupted","sent":true,"code":"","message":"the session ended"}`},
	}
	for _, tt := range tests {
		got := tt.line.Append(nil)
		if string(got) != tt.want+"\n" {
			t.Errorf("%s: Append = %s; want %s", tt.name, got, tt.want)
			continue
		}
		back, err := swarmline.Decode(got)
		if err != nil || !reflect.DeepEqual(back, tt.line) {
			t.Errorf("%s: Decode(%s) = %+v, %v; want %+v", tt.name, got, back, err, tt.line)
		}
	}
}

// A reply is one JSON value of the Host's: printed compact, since a line holds no newline, and
// as null when it is none (a line is always JSON).
func TestACallsReplyIsPrintedCompactOnOneLine(t *testing.T) {
	for _, tt := range []struct{ name, reply, want string }{
		{"a reply spread over lines", "{\"a\": [1,\n 2]}", `{"a":[1,2]}`},
		{"no reply at all", "", "null"},
		{"bytes that are not JSON", "{", "null"},
	} {
		got := string(swarmline.Line{T: 1, Event: swarmline.Call, Reply: []byte(tt.reply)}.Append(nil))
		want := `{"t":1.000,"id":0,"event":"call","call":0,"keyed":false,"made":0.000,"epoch":"","reply":` + tt.want + "}\n"
		if got != want {
			t.Errorf("%s: Append = %q; want %q", tt.name, got, want)
		}
	}
}

func TestDecodeRefusesWhatIsNotAnEventLine(t *testing.T) {
	for _, tt := range []struct{ name, line string }{
		{"a line that is not JSON", `client: -url is required`},
		{"a line without an id", `{"t":1,"event":"attempt"}`},
		{"a line without a time", `{"id":0,"event":"attempt"}`},
		{"a line without an event", `{"t":1,"id":0}`},
		{"an id that is not a number", `{"t":1,"id":"0","event":"attempt"}`},
		{"a server's own line", `{"listening":8080}`},
	} {
		if l, err := swarmline.Decode([]byte(tt.line)); !errors.Is(err, swarmline.ErrLine) {
			t.Errorf("%s: Decode(%s) = %+v, %v; want ErrLine", tt.name, tt.line, l, err)
		}
	}
}

func TestWantSeqTellsASeqFromText(t *testing.T) {
	if seq, ok := (swarmline.Line{Want: swarmline.WantSeq(7)}).WantSeq(); !ok || seq != 7 {
		t.Errorf("WantSeq of want 7 = %d, %v; want 7, true", seq, ok)
	}
	if _, ok := (swarmline.Line{Want: swarmline.WantText("a reset first")}).WantSeq(); ok {
		t.Error("WantSeq of a text want = true; want false")
	}
}

func TestAtKeepsTheMicroseconds(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 30, 0, 123456000, time.UTC)
	if got := (swarmline.Line{T: swarmline.Stamp(at)}).At(); got.Sub(at).Abs() > time.Microsecond {
		t.Errorf("At(Stamp(%v)) = %v; want within 1 µs", at, got)
	}
}

// Whatever a reader is handed, Decode does not panic, and what it accepts prints back to a
// line that decodes to the same thing.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"t":1764438000123.456,"id":0,"event":"delivery","stream":"ticks","seq":12,"reset":true}`))
	f.Add([]byte(`{"t":1,"id":-1,"event":"stats","goroutines":2,"heapInuse":3,"heapAlloc":1}`))
	f.Add([]byte(`{"t":1,"id":2,"event":"violation","stream":"s","seq":1,"want":"a reset first"}`))
	f.Add([]byte(`{"t":1,"id":2,"event":"call","call":3,"keyed":true,"epoch":"e","reply":{"a": [1, 2]}}`))
	f.Add([]byte(`{"t":1,"id":2,"event":"call","call":3,"keyed":false,"epoch":"","kind":"busy","sent":false,"code":"","message":"m"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := swarmline.Decode(b)
		if err != nil {
			return
		}
		once := l.Append(nil)
		l2, err := swarmline.Decode(once)
		if err != nil {
			t.Fatalf("Decode(Append(%+v)) = %v", l, err)
		}
		if twice := l2.Append(nil); !bytes.Equal(once, twice) {
			t.Fatalf("Append is not stable: %s then %s", once, twice)
		}
	})
}

// errWriter fails every write after the first n.
type errWriter struct{ n int }

func (w *errWriter) Write(b []byte) (int, error) {
	if w.n == 0 {
		return 0, errors.New("disk full")
	}
	w.n--
	return len(b), nil
}

func TestAPrinterStopsAtQuietAndKeepsItsFirstError(t *testing.T) {
	var buf strings.Builder
	p := swarmline.NewPrinter(&buf)
	p.Event(3, swarmline.Connected)
	p.Quiet()
	p.Event(3, swarmline.Disconnected) // the shutdown's own event: not printed
	if got := strings.Count(buf.String(), "\n"); got != 1 || !strings.Contains(buf.String(), `"event":"connected"`) {
		t.Fatalf("printed %q, want the one line before Quiet", buf.String())
	}
	w := &errWriter{n: 1}
	q := swarmline.NewPrinter(w)
	q.Event(1, swarmline.Attempt)
	q.Event(1, swarmline.Connected)
	q.Event(1, swarmline.Slow)
	if err := q.Err(); err == nil || err.Error() != "disk full" {
		t.Fatalf("Err() = %v, want the first write error", err)
	}
}
