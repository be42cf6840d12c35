//go:build !js

package hostplugin

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

var fleetSamples = []fleetMsg{
	{kind: fleetHeartbeat, from: "a1b2c3d4", seq: 7, hello: true},
	{kind: fleetDelta, from: "a1b2c3d4", seq: 8, entries: []fleetEntry{
		{stream: "room.1", id: "alice", count: 2, meta: []byte(`{"name":"Alice"}`)},
		{stream: "room.1", id: "", count: 0},
	}},
	{kind: fleetQuery, from: "e5f6", req: 3},
	{kind: fleetState, from: "e5f6", req: 3, seq: 9, part: 1, last: true, entries: []fleetEntry{{stream: "s", id: "bob", count: 1}}},
	{kind: fleetBye, from: "e5f6", seq: 9},
}

func TestFleetMessagesRoundTrip(t *testing.T) {
	for _, m := range fleetSamples {
		got, err := decodeFleet(m.encode())
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Errorf("decodeFleet(encode(%+v)) = %+v, %v", m, got, err)
		}
	}
}

func TestBadFleetMessagesAreRefusedSayingWhy(t *testing.T) {
	good := fleetSamples[1].encode()
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"not one", []byte("hello"), "not one"},
		{"another version", append([]byte("LP\x02"), good[3:]...), "version 2, this Host reads 1"},
		{"an unknown kind", append([]byte("LP\x01z"), good[4:]...), "unknown kind 'z'"},
		{"cut short", good[:len(good)-3], "identity is no uvarint"},
		{"a string cut short", good[:len(good)-6], "stream of 6 bytes (at most 256, 3 left)"},
		{"bytes after it", append(bytes.Clone(good), 0), "1 bytes after the message"},
		{"a stream too long", (&fleetMsg{kind: fleetDelta, from: "h", entries: []fleetEntry{{stream: strings.Repeat("s", 257), id: "a", count: 1}}}).encode(), "stream of 257 bytes"},
		{"an empty stream", (&fleetMsg{kind: fleetDelta, from: "h", entries: []fleetEntry{{stream: "", id: "a", count: 1}}}).encode(), "stream of 0 bytes"},
		{"from no Host", (&fleetMsg{kind: fleetBye}).encode(), "from no Host"},
		{"more entries than bytes", append([]byte("LP\x01d\x01h\x00\x00\x00\x00"), 0xff, 0xff, 0x03), "entries in 0 bytes"},
	}
	for _, tt := range tests {
		_, err := decodeFleet(tt.b)
		if !errors.Is(err, errFleetMsg) || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "hostplugin: ") {
			t.Errorf("%s: decodeFleet: %v, want an error saying %q", tt.name, err, tt.want)
		}
	}
}

// FuzzDecodeFleetMessage: what a Host reads from the fleet. Decoding never panics; what it
// accepts is within the bounds and survives encoding.
func FuzzDecodeFleetMessage(f *testing.F) {
	for _, m := range fleetSamples {
		f.Add(m.encode())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeFleet(b)
		if err != nil {
			if !errors.Is(err, errFleetMsg) {
				t.Fatalf("decodeFleet(%q): %v does not wrap errFleetMsg", b, err)
			}
			return
		}
		if m.from == "" || len(m.from) > maxFleetHost {
			t.Fatalf("decodeFleet(%q) accepted from %q", b, m.from)
		}
		for _, e := range m.entries {
			if e.stream == "" || len(e.stream) > 256 || len(e.id) > 256 || e.count < 0 || e.count > maxFleetCount || len(e.meta) > MaxPresenceMetaBytes {
				t.Fatalf("decodeFleet(%q) accepted %+v", b, e)
			}
		}
		m2, err := decodeFleet(m.encode())
		if err != nil || !reflect.DeepEqual(m2, m) {
			t.Fatalf("round trip of %q: %+v then %+v, %v", b, m, m2, err)
		}
	})
}
