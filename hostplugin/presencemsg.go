//go:build !js

package hostplugin

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// The messages Hosts exchange about presence (presencefleet.go), in a compact binary form: a
// burst of joins is many small entries, and a Host answers a query with every member it has.
//
//	"LP" 1                  magic and version
//	kind                    one byte: fleetHeartbeat, fleetDelta, fleetQuery, fleetState, fleetBye
//	from                    the sending Host's name (a string: uvarint length, then bytes)
//	seq, req, part          uvarints
//	flags                   one byte: 1 the last part of a state, 2 a hello
//	n, then n entries       stream, identity (strings), count (uvarint), meta (bytes: uvarint length, then bytes)

// Kinds of fleet messages.
const (
	fleetHeartbeat = 'h' // seq: the sender's last delta; hello: it just started (answer with a heartbeat)
	fleetDelta     = 'd' // seq: one more than the last; entries: its counts that changed (0: none here now)
	fleetQuery     = 'q' // req: the asker's number for its query; answered with fleetState parts
	fleetState     = 's' // req, part, last; seq: the sender's seq as of it; entries: every count it has
	fleetBye       = 'b' // the sender is leaving: its members count no more
)

// fleetMsg is one message between the Hosts of a fleet.
type fleetMsg struct {
	kind        byte
	from        string
	seq, req    uint64
	part        uint64
	last, hello bool
	entries     []fleetEntry
}

// fleetEntry is one Host's count of one member.
type fleetEntry struct {
	stream, id string
	count      int
	meta       []byte
}

// errFleetMsg wraps every error of decodeFleet.
var errFleetMsg = errors.New("hostplugin: bad presence message")

// Bounds of a fleet message.
const (
	maxFleetHost  = 64
	maxFleetCount = 1 << 30
	// fleetMsgBytes is what a Host puts in one message before it starts another: well under
	// NATS's default max payload (1 MiB).
	fleetMsgBytes = 60 << 10
)

func (m *fleetMsg) encode() []byte {
	b := make([]byte, 0, 32+len(m.from)+m.size())
	b = append(b, 'L', 'P', 1, m.kind)
	b = appendStr(b, m.from)
	b = binary.AppendUvarint(b, m.seq)
	b = binary.AppendUvarint(b, m.req)
	b = binary.AppendUvarint(b, m.part)
	var flags byte
	if m.last {
		flags |= 1
	}
	if m.hello {
		flags |= 2
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(len(m.entries)))
	for _, e := range m.entries {
		b = appendStr(b, e.stream)
		b = appendStr(b, e.id)
		b = binary.AppendUvarint(b, uint64(e.count))
		b = appendStr(b, string(e.meta))
	}
	return b
}

// size is about how many bytes the entries take.
func (m *fleetMsg) size() int {
	n := 0
	for _, e := range m.entries {
		n += e.bytes()
	}
	return n
}

func (e fleetEntry) bytes() int { return len(e.stream) + len(e.id) + len(e.meta) + 16 }

func appendStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// decodeFleet reads a fleet message. It never panics, and it refuses anything out of bounds:
// a fleet is trusted, but its messages cross a network.
func decodeFleet(b []byte) (fleetMsg, error) {
	var m fleetMsg
	r := fleetReader{b: b}
	if len(b) < 4 || b[0] != 'L' || b[1] != 'P' {
		return m, fmt.Errorf("%w: not one (%d bytes)", errFleetMsg, len(b))
	}
	if b[2] != 1 {
		return m, fmt.Errorf("%w: version %d, this Host reads 1", errFleetMsg, b[2])
	}
	m.kind = b[3]
	switch m.kind {
	case fleetHeartbeat, fleetDelta, fleetQuery, fleetState, fleetBye:
	default:
		return m, fmt.Errorf("%w: unknown kind %q", errFleetMsg, m.kind)
	}
	r.b = b[4:]
	m.from = r.str("from", maxFleetHost)
	m.seq = r.uvarint("seq")
	m.req = r.uvarint("req")
	m.part = r.uvarint("part")
	flags := r.byte1("flags")
	m.last, m.hello = flags&1 != 0, flags&2 != 0
	n := r.uvarint("entries")
	if r.err == nil && n > uint64(len(r.b)/4) { // an entry takes at least 4 bytes
		r.fail("%d entries in %d bytes", n, len(r.b))
	}
	for i := uint64(0); r.err == nil && i < n; i++ {
		var e fleetEntry
		e.stream = r.str("stream", wire.MaxStreamName)
		e.id = r.str("identity", wire.MaxPresenceID)
		c := r.uvarint("count")
		if c > maxFleetCount {
			r.fail("count %d over %d", c, maxFleetCount)
		}
		e.count = int(c)
		if meta := r.str("meta", MaxPresenceMetaBytes); meta != "" {
			e.meta = []byte(meta)
		}
		if r.err == nil && wire.CheckStream(e.stream) != nil {
			r.fail("stream of %d bytes", len(e.stream))
		}
		m.entries = append(m.entries, e)
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d bytes after the message", len(r.b))
	}
	if r.err != nil {
		return fleetMsg{}, r.err
	}
	if m.from == "" {
		return fleetMsg{}, fmt.Errorf("%w: from no Host", errFleetMsg)
	}
	return m, nil
}

// fleetReader reads a message's fields; the first error sticks and ends the reading.
type fleetReader struct {
	b   []byte
	err error
}

func (r *fleetReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{errFleetMsg}, args...)...)
	}
	r.b = nil
}

func (r *fleetReader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("%s is no uvarint", what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *fleetReader) byte1(what string) byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.fail("%s missing", what)
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *fleetReader) str(what string, limit int) string {
	n := r.uvarint(what)
	if r.err != nil {
		return ""
	}
	if n > uint64(limit) || n > uint64(len(r.b)) {
		r.fail("%s of %d bytes (at most %d, %d left)", what, n, limit, len(r.b))
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}
