package clientline_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/internal/testbed/clientline"
)

// Every kind of line bin/client prints, as it prints it, and as a reader gets it back.
func TestLinesPrintAsTheReadersExpectAndDecodeBack(t *testing.T) {
	const at = 1764438000123.456
	tests := []struct {
		name string
		line clientline.Line
		want string
	}{
		{"a dial carries only the three members", clientline.Line{T: at, ID: 3, Event: clientline.Attempt},
			`{"t":1764438000123.456,"id":3,"event":"attempt"}`},
		{"a delivery carries stream, seq and reset, even when they are zero",
			clientline.Line{T: at, ID: 0, Event: clientline.Delivery, Stream: "ticks", Seq: 0, Reset: false},
			`{"t":1764438000123.456,"id":0,"event":"delivery","stream":"ticks","seq":0,"reset":false}`},
		{"a baseline delivery says reset", clientline.Line{T: at, ID: 1, Event: clientline.Delivery, Stream: "ticks", Seq: 12, Reset: true},
			`{"t":1764438000123.456,"id":1,"event":"delivery","stream":"ticks","seq":12,"reset":true}`},
		{"a violation carries the seq it wanted",
			clientline.Line{T: at, ID: 2, Event: clientline.Violation, Stream: "ticks", Seq: 14, Want: clientline.WantSeq(13)},
			`{"t":1764438000123.456,"id":2,"event":"violation","stream":"ticks","seq":14,"want":13}`},
		{"a violation before any reset says what it wanted",
			clientline.Line{T: at, ID: 2, Event: clientline.Violation, Stream: "a<b", Seq: 1, Want: clientline.WantText("a reset first")},
			`{"t":1764438000123.456,"id":2,"event":"violation","stream":"a\u003cb","seq":1,"want":"a reset first"}`},
		{"stats are the process's, id -1", clientline.Line{T: at, ID: -1, Event: clientline.Stats, Goroutines: 212, HeapInuse: 4718592},
			`{"t":1764438000123.456,"id":-1,"event":"stats","goroutines":212,"heapInuse":4718592}`},
	}
	for _, tt := range tests {
		got := tt.line.Append(nil)
		if string(got) != tt.want+"\n" {
			t.Errorf("%s: Append = %s; want %s", tt.name, got, tt.want)
			continue
		}
		back, err := clientline.Decode(got)
		if err != nil || !reflect.DeepEqual(back, tt.line) {
			t.Errorf("%s: Decode(%s) = %+v, %v; want %+v", tt.name, got, back, err, tt.line)
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
		if l, err := clientline.Decode([]byte(tt.line)); !errors.Is(err, clientline.ErrLine) {
			t.Errorf("%s: Decode(%s) = %+v, %v; want ErrLine", tt.name, tt.line, l, err)
		}
	}
}

func TestWantSeqTellsASeqFromText(t *testing.T) {
	if seq, ok := (clientline.Line{Want: clientline.WantSeq(7)}).WantSeq(); !ok || seq != 7 {
		t.Errorf("WantSeq of want 7 = %d, %v; want 7, true", seq, ok)
	}
	if _, ok := (clientline.Line{Want: clientline.WantText("a reset first")}).WantSeq(); ok {
		t.Error("WantSeq of a text want = true; want false")
	}
}

func TestAtKeepsTheMicroseconds(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 30, 0, 123456000, time.UTC)
	if got := (clientline.Line{T: clientline.Stamp(at)}).At(); got.Sub(at).Abs() > time.Microsecond {
		t.Errorf("At(Stamp(%v)) = %v; want within 1 µs", at, got)
	}
}

// Whatever a reader is handed, Decode does not panic, and what it accepts prints back to a
// line that decodes to the same thing.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"t":1764438000123.456,"id":0,"event":"delivery","stream":"ticks","seq":12,"reset":true}`))
	f.Add([]byte(`{"t":1,"id":-1,"event":"stats","goroutines":2,"heapInuse":3}`))
	f.Add([]byte(`{"t":1,"id":2,"event":"violation","stream":"s","seq":1,"want":"a reset first"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := clientline.Decode(b)
		if err != nil {
			return
		}
		once := l.Append(nil)
		l2, err := clientline.Decode(once)
		if err != nil {
			t.Fatalf("Decode(Append(%+v)) = %v", l, err)
		}
		if twice := l2.Append(nil); !bytes.Equal(once, twice) {
			t.Fatalf("Append is not stable: %s then %s", once, twice)
		}
	})
}
