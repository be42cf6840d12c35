//go:build !js

package hostplugin

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// A message is one Host → page frame as the socket carries it: the header of a WebSocket text
// message, then the frame's JSON. The bytes are the ones coder/websocket writes for the frame
// (one unmasked, unfragmented, uncompressed text frame: acceptOptions turns compression off),
// so that an event is encoded once, its message shared by every session it goes to, and a
// session's writer hands its queue to the kernel in one write instead of one per frame. (A
// struct, so that JSON text cannot be sent for one.)
type message struct{ b []byte }

// maxHeader is the longest header of a server's WebSocket frame (RFC 6455 §5.2).
const maxHeader = 10

// encode returns f as a message, in one buffer: the JSON is appended after room for the
// longest header, and the header written right before it.
func encode(f wire.HostFrame) (message, error) {
	room := 64 + len(f.Session) + len(f.Secret) + len(f.Dedup) + len(f.Error) + len(f.Code) + len(f.Stream) + len(f.Data) +
		len(f.Epoch) + len(f.Baseline) + len(f.URI) + len(f.Message) + len(f.Reason)
	b, err := f.Append(make([]byte, maxHeader, maxHeader+room))
	if err != nil {
		return message{}, err
	}
	n := len(b) - maxHeader
	start := maxHeader - headerLen(n)
	h := b[start:maxHeader]
	h[0] = 0x80 | 0x1 // FIN, text
	switch len(h) {
	case 2:
		h[1] = byte(n)
	case 4:
		h[1] = 126
		binary.BigEndian.PutUint16(h[2:], uint16(n))
	default:
		h[1] = 127
		binary.BigEndian.PutUint64(h[2:], uint64(n))
	}
	return message{b[start:]}, nil
}

// mustEncode is encode for the frames the Host builds from its own values, which always
// encode.
func mustEncode(f wire.HostFrame) message {
	m, err := encode(f)
	if err != nil {
		panic(fmt.Sprintf("hostplugin: encoding a %s frame: %v", f.T, err))
	}
	return m
}

// headerLen is the length of a server's header for a payload of n bytes.
func headerLen(n int) int {
	switch {
	case n < 126:
		return 2
	case n < 1<<16:
		return 4
	}
	return 10
}

// payload is the message's frame: its JSON text.
func (m message) payload() []byte {
	switch m.b[1] & 0x7f {
	case 126:
		return m.b[4:]
	case 127:
		return m.b[10:]
	}
	return m.b[2:]
}

// socket is a session's connection, shared by its two writers: coder/websocket, which writes
// its control frames (pongs, the close handshake) through the bufio.Writer that slimWriter
// gives it, and the session's writer, which writes batches of messages. Each write carries
// whole frames, under mu, and has between writeTimeout/2 and writeTimeout to be taken by the
// kernel: a page that reads nothing for that long is gone. The deadline is the connection's
// own, moved on only when half of it is used, so that a write costs no timer and no context
// of its own, and most writes not even a change of deadline.
type socket struct {
	conn net.Conn
	// br is the reader coder/websocket reads the page's frames from: the session's reader
	// waits on it (session.run) while coder/websocket is not reading.
	br *bufio.Reader

	mu        sync.Mutex  // guards the fields below, and orders the writes
	closeSent bool        // a close frame went out: no frame may follow it (RFC 6455 §5.5.1)
	vec       net.Buffers // the part of a batch being written, as writev consumes it
	renew     time.Time   // when the write deadline must be moved on
}

// maxBatch is the most messages one write hands the kernel. The kernel keeps an array of
// that many iovecs per connection (internal/poll caches the largest), so it is kept small:
// 32 frames of an event are several kilobytes, enough to make a system call cheap per frame.
const maxBatch = 32

// errCloseSent is what a batch gets once the close frame is out: the session is ending
// through its close handshake, and its last frames are not for the page.
var errCloseSent = errors.New("hostplugin: the socket's close frame is out")

// Write is coder/websocket's way onto the connection. For a session it carries control frames
// only, each in one call (slimWriterSize holds the longest whole); a socket that never becomes
// a session writes its frames through it too, and nothing else writes there then. Once a
// close frame is out it writes nothing more: coder/websocket, which does not know of a close
// frame the session sent (session.closeWith), answers the page's close with one of its own.
func (s *socket) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closeSent {
		return len(p), nil
	}
	if isCloseFrame(p) {
		s.closeSent = true
	}
	s.deadlineLocked()
	return s.conn.Write(p)
}

// deadlineLocked gives the write about to start at least writeTimeout/2. s.mu is held.
func (s *socket) deadlineLocked() {
	if now := time.Now(); !now.Before(s.renew) {
		_ = s.conn.SetWriteDeadline(now.Add(writeTimeout))
		s.renew = now.Add(writeTimeout / 2)
	}
}

// writeClose writes m, a close frame, unless one went out already (errCloseSent).
func (s *socket) writeClose(m message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closeSent {
		return errCloseSent
	}
	s.closeSent = true
	s.deadlineLocked()
	_, err := s.conn.Write(m.b)
	return err
}

// closeMessage is the close frame of code and reason (RFC 6455 §5.5.1), as coder/websocket
// writes it; a reason is cut to the 123 bytes a control frame holds, at a character.
func closeMessage(code int, reason string) message {
	for len(reason) > maxControl-2 {
		_, size := utf8.DecodeLastRuneInString(reason)
		reason = reason[:len(reason)-size]
	}
	b := make([]byte, 0, 4+len(reason))
	b = append(b, 0x80|0x8, byte(2+len(reason)))
	b = binary.BigEndian.AppendUint16(b, uint16(code))
	return message{append(b, reason...)}
}

// maxControl is the longest payload of a control frame.
const maxControl = 125

// idle takes the write deadline off a connection that has nothing more to write for a while
// (a heartbeat is out): left on, it would fire a timer for nothing, once per heartbeat of
// every idle session. The next write sets it again.
func (s *socket) idle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.conn.SetWriteDeadline(time.Time{})
	s.renew = time.Time{}
}

// isCloseFrame reports whether p is exactly one close frame, as a server writes it (unmasked,
// at most 125 bytes of payload).
func isCloseFrame(p []byte) bool {
	return len(p) >= 2 && p[0] == 0x80|0x8 && int(p[1]) == len(p)-2
}

// vectorWriter is a connection that writes net.Buffers in one system call (a writev), as a TCP
// connection does: hostplugin/restart's connections, which wrap the TCP connection they
// accepted, say so by this method.
type vectorWriter interface {
	WriteBuffers(b *net.Buffers) (int64, error)
}

// vectors returns how c writes a batch in one system call, or nil where it cannot (TLS).
func vectors(c net.Conn) vectorWriter {
	switch c := c.(type) {
	case *net.TCPConn, *net.UnixConn:
		return plainVectors{c}
	case vectorWriter:
		return c
	}
	return nil
}

// plainVectors is a TCP or Unix connection's writev (net.Buffers.WriteTo).
type plainVectors struct{ net.Conn }

func (c plainVectors) WriteBuffers(b *net.Buffers) (int64, error) { return b.WriteTo(c.Conn) }

// writeMessages writes batch, messages all, in as few system calls as the kernel takes: a
// writev of the shared messages on a TCP connection (or a wrapper of one: vectors), maxBatch at
// a time. Another connection (TLS) gets a copy of them in one buffer, so that a batch is one
// TLS record and not one per frame (and so does every connection under -race: race.go). It
// clears batch's elements: the messages are shared, and a session holds none of them past
// their write.
func (s *socket) writeMessages(batch net.Buffers) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer clear(batch)
	if s.closeSent {
		return errCloseSent
	}
	s.deadlineLocked()
	if vw := vectors(s.conn); vw != nil && !raceBuild {
		for len(batch) > 0 {
			n := min(len(batch), maxBatch)
			s.vec = batch[:n]
			if _, err := vw.WriteBuffers(&s.vec); err != nil {
				return err
			}
			batch = batch[n:]
		}
		return nil
	}
	n := 0
	for _, m := range batch {
		n += len(m)
	}
	b := make([]byte, 0, n)
	for _, m := range batch {
		b = append(b, m...)
	}
	_, err := s.conn.Write(b)
	return err
}

// wsCarrier is a WebSocket session's carrier: its frames written through its socket, its
// close a close frame.
type wsCarrier struct {
	conn *websocket.Conn
	sock *socket
}

func (c wsCarrier) write(batch net.Buffers) error { return c.sock.writeMessages(batch) }

func (c wsCarrier) writeClose(code int, reason string) error {
	return c.sock.writeClose(closeMessage(code, reason))
}

func (c wsCarrier) drop() { _ = c.conn.CloseNow() }

func (c wsCarrier) idle() { c.sock.idle() }

// leaving: a socket's page says goodbye on it (its close), so nothing changes.
func (wsCarrier) leaving() {}

func (wsCarrier) kind() string { return wire.CarrierWebSocket }

func (wsCarrier) secret() string { return "" }
