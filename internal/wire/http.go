package wire

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/lifeline-go/lifeline/internal/jsontok"
	"github.com/lifeline-go/lifeline/internal/tinyfmt"
)

// The HTTP carrier (PROTOCOL.md §11): the same frames as the WebSocket, for a path that will
// not carry one (a proxy that refuses CONNECT to the Host's port, strips Upgrade, answers the
// upgrade with 403, or passes a socket that never delivers the ready frame). Host → page frames
// go down one long-lived GET answered as a text/event-stream (or, where a proxy buffers the
// stream, in the answers of long polls); page → Host frames go up in POSTs, each a batch in
// order. Everything is at the events endpoint's URL: the query parameter CarrierParam opens a
// session, an Envelope at the head of a POST's body says what the POST is for.

// CarrierParam is the query parameter of a GET that opens a session on the HTTP carrier; its
// value is CarrierStream or CarrierPoll. A GET without it is the refusal query (§2.4).
const CarrierParam = "lifeline-carrier"

// The carriers, as a page names them (the indicator's data-carrier, a Host's metrics).
const (
	CarrierWebSocket = "websocket" // a WebSocket, the first choice
	CarrierStream    = "stream"    // HTTP: one streaming GET down, POSTs up
	CarrierPoll      = "poll"      // HTTP: long polls down (a proxy buffers the stream), POSTs up
)

// ProbeParam marks a WebSocket upgrade as a probe of the path, not a session: a page on the
// HTTP carrier asks now and then whether a WebSocket gets through. The Host answers the probe's
// ping with a heartbeat and closes (1000); it takes no session slot and sends no ready frame.
const ProbeParam = "lifeline-probe"

// DialerParam names, on the URL of every WebSocket upgrade, the page's dialer: an id of 1 to
// MaxDialer letters, digits, '-' or '_', random per hub, the same on each of its attempts. A
// Host holds at most one handshake per dialer: a newer one ends the older one's wait before it
// goes on (PROTOCOL.md §2.2). A page that gives up on a connecting socket cannot always end
// it: Firefox, asked to close a WebSocket that is connecting, leaves its HTTP upgrade pending
// until the browser exits, and the Host's handshake with it.
const DialerParam = "lifeline-dialer"

// MaxDialer is the longest dialer id.
const MaxDialer = 64

// CheckDialer reports whether id is a dialer id (DialerParam).
func CheckDialer(id string) error {
	if id == "" || len(id) > MaxDialer {
		return tinyfmt.Errorf("wire: %s %q: want 1 to %d characters", DialerParam, Truncate(id), MaxDialer)
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return tinyfmt.Errorf("wire: %s %q: character %d is %q: want letters, digits, '-' or '_'", DialerParam, Truncate(id), i+1, string(rune(c)))
		}
	}
	return nil
}

// TypeClose is the HTTP carrier's close frame, the last of a stream or a poll: what a
// WebSocket's close frame says (Status, Reason) for a carrier that has none. A WebSocket never
// carries it.
const TypeClose = "close"

// Content types of the HTTP carrier's bodies.
const (
	// EventStreamType is the type of what the Host sends down: proxies and antivirus
	// software know not to hold a text/event-stream back for its end.
	EventStreamType = "text/event-stream"
	// SendType is the type of a POST's body: text/plain keeps the POST a CORS "simple
	// request", which a cross-origin page of an allowed origin makes without a preflight.
	SendType = "text/plain;charset=UTF-8"
)

// Envelope heads every POST's body, on its first line; the frames it carries follow it, one
// a line. Session and Secret are the ready frame's: a POST is taken only with the session's
// own secret, never on a cookie alone.
type Envelope struct {
	// T is EnvelopeSend (page frames follow), EnvelopePoll (the page waits for frames) or
	// EnvelopeBye (the page leaves the session).
	T       string
	Session string
	Secret  string
	// Seq numbers a session's sends 1, 2, …: the Host applies each once and in order, so a
	// send that the page is not sure arrived (its answer was lost) can go again.
	Seq uint64
	// Ack is, in a poll, how many frames of the session the page has read: the Host drops
	// those and answers with what follows, so a poll whose answer was lost loses nothing.
	Ack uint64
	// Reason is a bye's: why the page leaves, for the Host's log.
	Reason string
}

// The envelopes' types.
const (
	EnvelopeSend = "send"
	EnvelopePoll = "poll"
	EnvelopeBye  = "bye"
)

// Bounds of the HTTP carrier.
const (
	// MaxSecret bounds a session's secret, in bytes.
	MaxSecret = 64
	// MaxBatchFrames bounds the frames of one send.
	MaxBatchFrames = 256
)

// Encode returns the envelope's line (no newline).
func (e Envelope) Encode() []byte {
	b := str(append(make([]byte, 0, 64+len(e.Session)+len(e.Secret)+len(e.Reason)), `{"t":`...), e.T)
	b = optStr(b, "session", e.Session)
	b = optStr(b, "secret", e.Secret)
	if e.Seq != 0 {
		b = strconv.AppendUint(append(b, `,"seq":`...), e.Seq, 10)
	}
	if e.Ack != 0 {
		b = strconv.AppendUint(append(b, `,"ack":`...), e.Ack, 10)
	}
	b = optStr(b, "reason", e.Reason)
	return append(b, '}')
}

// DecodeEnvelope decodes and checks an envelope's line.
func DecodeEnvelope(b []byte) (Envelope, error) {
	var e Envelope
	err := decodeObject(b, func(key string, d *jsontok.Decoder) error {
		switch key {
		case "t":
			return readString(d, key, &e.T)
		case "session":
			return readString(d, key, &e.Session)
		case "secret":
			return readString(d, key, &e.Secret)
		case "seq":
			return readUint(d, key, &e.Seq)
		case "ack":
			return readUint(d, key, &e.Ack)
		case "reason":
			return readString(d, key, &e.Reason)
		}
		return frameErr(d.SkipValue())
	}, nil)
	if err != nil {
		return Envelope{}, tinyfmt.Errorf("%w (in a POST's envelope)", err)
	}
	switch {
	case e.T != EnvelopeSend && e.T != EnvelopePoll && e.T != EnvelopeBye:
		return Envelope{}, tinyfmt.Errorf("%w: envelope t must be %q, %q or %q, got %q", ErrFrame, EnvelopeSend, EnvelopePoll, EnvelopeBye, Truncate(e.T))
	case e.Session == "" || len(e.Session) > 64:
		return Envelope{}, tinyfmt.Errorf("%w: envelope session must be 1..64 bytes, got %d", ErrFrame, len(e.Session))
	case e.Secret == "" || len(e.Secret) > MaxSecret:
		return Envelope{}, tinyfmt.Errorf("%w: envelope secret must be 1..%d bytes, got %d", ErrFrame, MaxSecret, len(e.Secret))
	case e.T == EnvelopeSend && e.Seq == 0:
		return Envelope{}, tinyfmt.Errorf("%w: a send needs its seq (1, 2, …)", ErrFrame)
	case e.T != EnvelopeSend && e.Seq != 0, e.T != EnvelopePoll && e.Ack != 0:
		return Envelope{}, tinyfmt.Errorf("%w: seq belongs to a send and ack to a poll, got %s with seq=%d ack=%d", ErrFrame, e.T, e.Seq, e.Ack)
	}
	return e, nil
}

// AppendLine appends frame (one JSON text) and a newline to b, as a POST's body carries it
// after its envelope. A CR or LF in frame can only be JSON whitespace (inside a string they
// are escaped), so it becomes a space: a line holds one frame.
func AppendLine(b, frame []byte) []byte {
	return append(appendFlat(b, frame), '\n')
}

// AppendEvent appends frame as one text/event-stream event: "data: ", the frame on one line
// (as AppendLine flattens it), and the blank line that ends the event.
func AppendEvent(b, frame []byte) []byte {
	return append(appendFlat(append(b, "data: "...), frame), '\n', '\n')
}

func appendFlat(b, frame []byte) []byte {
	start := len(b)
	b = append(b, frame...)
	for i := start; i < len(b); i++ {
		if b[i] == '\n' || b[i] == '\r' {
			b[i] = ' '
		}
	}
	return b
}

// ErrEventTooLong is returned by EventScanner.Next for an event over its limit.
var ErrEventTooLong = errors.New("wire: an event of the stream is over the read limit")

// EventScanner splits a text/event-stream, as it arrives in pieces, into the data of its
// events: the "data:" lines of each event joined by newlines (the Host writes one a frame).
// Comment lines (":…") and other fields are skipped, so a Host or a proxy may pad the stream.
// The zero value has no limit; Limit bounds an event's data.
type EventScanner struct {
	// Limit is the largest event data Next returns, in bytes; 0 is none.
	Limit int

	buf  []byte // what Write gave: buf[off:] is what no line has taken yet
	off  int
	data []byte // the data lines of the event being read
	has  bool   // the event being read has a data line
}

// keepBuffer is the largest buffer a scanner keeps once it is empty: a burst's larger one goes,
// so that an idle stream holds no more than this. Below it the buffer is used again, so that
// a stream of small events makes no garbage (letting it go after each event made a page
// allocate every piece the stream brought: 6.7 MB/s for 2,000 pages at 66,000 events/s).
const keepBuffer = 16 << 10

// Write adds what arrived of the stream.
func (s *EventScanner) Write(p []byte) {
	if s.off > 0 && (s.off == len(s.buf) || len(s.buf)+len(p) > cap(s.buf)) {
		n := copy(s.buf, s.buf[s.off:]) // what no line took yet, to the front
		s.buf, s.off = s.buf[:n], 0
	}
	s.buf = append(s.buf, p...)
}

// Buffered is how many bytes wait for the end of their line.
func (s *EventScanner) Buffered() int { return len(s.buf) - s.off }

// Next returns the data of the next complete event, or nil when the stream has not brought
// one yet. The bytes are the scanner's until the next call. An event whose data is over
// Limit is an error.
func (s *EventScanner) Next() ([]byte, error) {
	for {
		rest := s.buf[s.off:]
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			if s.Limit > 0 && len(rest) > s.Limit+16 {
				return nil, tinyfmt.Errorf("%w: a line of more than %d bytes", ErrEventTooLong, s.Limit)
			}
			return nil, nil
		}
		line := rest[:i]
		s.off += i + 1
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 {
			if !s.has {
				continue
			}
			out := s.data
			s.data, s.has = s.data[:0], false
			if s.off == len(s.buf) {
				s.buf, s.off = s.buf[:0], 0
				if cap(s.buf) > keepBuffer {
					s.buf = nil
				}
			}
			return out, nil
		}
		v, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue // a comment or another field
		}
		v = bytes.TrimPrefix(v, []byte{' '})
		if s.has {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, v...)
		s.has = true
		if s.Limit > 0 && len(s.data) > s.Limit {
			return nil, tinyfmt.Errorf("%w: more than %d bytes", ErrEventTooLong, s.Limit)
		}
	}
}
