package callline_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/lifeline-go/lifeline/bench/callline"
)

// The lines the Go processes print decode back as the harness reads them, and so do the
// Node peers' (whose t is a whole millisecond).
func TestLinesDecodeBackAsPrinted(t *testing.T) {
	for _, tc := range []struct {
		name string
		line callline.Line
		want string
	}{
		{"a run carries its call", callline.Line{T: 1764438000123.456, ID: -1, Event: callline.Run, Call: "3-17"},
			`{"t":1764438000123.456,"id":-1,"event":"run","call":"3-17"}`},
		{"an outcome carries what the caller was told, why and when", callline.Line{T: 1764438000123.5, ID: 3, Event: callline.Call, Call: "3-17", Told: callline.Unknown, Why: "interrupted (sent)", Ms: 812.5},
			`{"t":1764438000123.5,"id":3,"event":"call","call":"3-17","told":"unknown","why":"interrupted (sent)","ms":812.5}`},
		{"settled carries the calls made", callline.Line{T: 1764438000124, ID: -1, Event: callline.Settled, Made: 240},
			`{"t":1764438000124,"id":-1,"event":"settled","made":240}`},
	} {
		got := tc.line.Append(nil)
		if string(got) != tc.want+"\n" {
			t.Errorf("%s: Append = %s; want %s", tc.name, got, tc.want)
			continue
		}
		back, err := callline.Decode(got)
		if err != nil || !reflect.DeepEqual(back, tc.line) {
			t.Errorf("%s: Decode(%s) = %+v, %v; want %+v", tc.name, got, back, err, tc.line)
		}
	}
}

func TestDecodeRefusesWhatIsNotACallLine(t *testing.T) {
	for _, tc := range []struct{ name, line string }{
		{"a connection event", `{"t":1,"id":0,"event":"connected"}`},
		{"a run without its call", `{"t":1,"id":-1,"event":"run"}`},
		{"an outcome without what was told", `{"t":1,"id":0,"event":"call","call":"0-1"}`},
		{"a server's own line", `{"listening":3000}`},
		{"not JSON", `callhost: listen tcp: address in use`},
	} {
		if l, err := callline.Decode([]byte(tc.line)); !errors.Is(err, callline.ErrLine) {
			t.Errorf("%s: Decode(%s) = %+v, %v; want an error wrapping ErrLine", tc.name, tc.line, l, err)
		}
	}
}
