//go:build !js

package testbed

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// RawSocket is the client end of a WebSocket read and written by hand: one reused buffer,
// no allocation per message, no goroutine of its own. It is for load tests, where the
// clients must cost as little as they can beside the server they measure (a library's client
// allocates each message it reads). It reads one message at a time, answers pings, and
// masks what it sends with a zero key (servers check the mask bit, not the key).
//
// It is not safe for concurrent use, but for Close.
type RawSocket struct {
	conn net.Conn
	br   *bufio.Reader
	msg  []byte // the message Next returned
	out  []byte // a frame being written
	hdr  [8]byte
	ctl  [125]byte
}

// ErrSocketClosed is returned by [RawSocket.Next] once the server sent a close frame.
var ErrSocketClosed = errors.New("testbed: the server closed the WebSocket")

// DialRaw opens a WebSocket to rawURL (ws://host:port/path) offering subprotocol, from the
// local IP address laddr ("" for the system's choice: several loopback addresses, 127.0.0.x,
// give a client more than one range of ports to the same server). readBuf sizes the reader.
func DialRaw(ctx context.Context, rawURL, laddr, subprotocol string, readBuf int) (*RawSocket, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "ws" {
		return nil, fmt.Errorf("testbed: dial %q: want a ws:// URL", rawURL)
	}
	d := net.Dialer{}
	if laddr != "" {
		ip := net.ParseIP(laddr)
		if ip == nil {
			return nil, fmt.Errorf("testbed: dial %s: local address %q is not an IP", rawURL, laddr)
		}
		d.LocalAddr = &net.TCPAddr{IP: ip}
	}
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, fmt.Errorf("testbed: dial %s: %w", rawURL, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	s := &RawSocket{conn: conn, br: bufio.NewReaderSize(conn, max(readBuf, 512))}
	if err := s.handshake(u, subprotocol); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("testbed: dial %s: %w", rawURL, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return s, nil
}

func (s *RawSocket) handshake(u *url.URL, subprotocol string) error {
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	path := u.RequestURI()
	req := "GET " + path + " HTTP/1.1\r\nHost: " + u.Host +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " +
		base64.StdEncoding.EncodeToString(nonce[:])
	if subprotocol != "" {
		req += "\r\nSec-WebSocket-Protocol: " + subprotocol
	}
	if _, err := io.WriteString(s.conn, req+"\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(s.br, nil)
	if err != nil {
		return fmt.Errorf("reading the handshake's answer: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("handshake answered %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	if subprotocol != "" && resp.Header.Get("Sec-WebSocket-Protocol") != subprotocol {
		return fmt.Errorf("the server chose subprotocol %q, want %q", resp.Header.Get("Sec-WebSocket-Protocol"), subprotocol)
	}
	return nil
}

// LocalAddr is the socket's local address.
func (s *RawSocket) LocalAddr() net.Addr { return s.conn.LocalAddr() }

// Close closes the socket at once, without a close frame.
func (s *RawSocket) Close() error { return s.conn.Close() }

// Next returns the next data message: its opcode (1 text, 2 binary) and payload, which is
// valid until the next call. Pings are answered and skipped; a close frame ends it with
// ErrSocketClosed.
func (s *RawSocket) Next() (opcode byte, payload []byte, err error) {
	s.msg = s.msg[:0]
	for {
		h := s.hdr[:2]
		if _, err := io.ReadFull(s.br, h); err != nil {
			return 0, nil, err
		}
		b0, b1 := h[0], h[1]
		fin, op := b0&0x80 != 0, b0&0x0f
		if b1&0x80 != 0 {
			return 0, nil, errors.New("testbed: the server masked a frame")
		}
		n := uint64(b1 & 0x7f)
		switch n {
		case 126:
			ext := s.hdr[:2]
			if _, err := io.ReadFull(s.br, ext); err != nil {
				return 0, nil, err
			}
			n = uint64(binary.BigEndian.Uint16(ext))
		case 127:
			ext := s.hdr[:8]
			if _, err := io.ReadFull(s.br, ext); err != nil {
				return 0, nil, err
			}
			n = binary.BigEndian.Uint64(ext)
		}
		if n > 64<<20 {
			return 0, nil, fmt.Errorf("testbed: a frame of %d bytes", n)
		}
		if op >= 8 { // a control frame, between the fragments of a message or not
			if n > 125 {
				return 0, nil, fmt.Errorf("testbed: a control frame of %d bytes", n)
			}
			ctl := s.ctl[:n]
			if _, err := io.ReadFull(s.br, ctl); err != nil {
				return 0, nil, err
			}
			switch op {
			case 8:
				return 0, nil, ErrSocketClosed
			case 9:
				if err := s.write(10, ctl); err != nil {
					return 0, nil, err
				}
			}
			continue
		}
		if op != 0 {
			opcode = op
		}
		start := len(s.msg)
		s.msg = growTo(s.msg, start+int(n))
		if _, err := io.ReadFull(s.br, s.msg[start:]); err != nil {
			return 0, nil, err
		}
		if fin {
			return opcode, s.msg, nil
		}
	}
}

// WriteText sends p as one text message.
func (s *RawSocket) WriteText(p []byte) error { return s.write(1, p) }

func (s *RawSocket) write(op byte, p []byte) error {
	b := append(s.out[:0], 0x80|op)
	switch n := len(p); {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n < 1<<16:
		b = append(b, 0x80|126, byte(n>>8), byte(n))
	default:
		b = append(b, 0x80|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	b = append(b, 0, 0, 0, 0) // the masking key: zero, so the payload goes as it is
	b = append(b, p...)
	s.out = b
	_, err := s.conn.Write(b)
	return err
}

func growTo(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	return append(b[:cap(b)], make([]byte, n-cap(b))...)[:n]
}
