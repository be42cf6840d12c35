//go:build !js

package hostplugin

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// frameOf returns an error frame whose JSON text is n bytes long (n ≥ 27).
func frameOf(t *testing.T, n int) wire.HostFrame {
	t.Helper()
	f := wire.HostFrame{T: wire.TypeError}
	b, _ := f.Encode()
	f.Message = strings.Repeat("x", n-len(b)-len(`,"message":""`))
	if b, _ = f.Encode(); len(b) != n {
		t.Fatalf("a frame of %d bytes, want %d", len(b), n)
	}
	return f
}

// TestAMessageIsOneTextFrameWithTheShortestLength checks the header encode writes against
// RFC 6455 §5.2: FIN, no RSV bits, opcode text, no mask, and the length in the fewest bytes
// (7 bits, then 16, then 64), which is what a page's WebSocket requires.
func TestAMessageIsOneTextFrameWithTheShortestLength(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		header []byte
	}{
		{"a short frame has its length in the first byte", 40, []byte{0x81, 40}},
		{"125 bytes is the longest 7-bit length", 125, []byte{0x81, 125}},
		{"126 bytes take a 16-bit length", 126, []byte{0x81, 126, 0, 126}},
		{"65535 bytes is the longest 16-bit length", 65535, []byte{0x81, 126, 0xff, 0xff}},
		{"65536 bytes take a 64-bit length", 65536, []byte{0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := frameOf(t, tc.n)
			json, _ := f.Encode()
			m, err := encode(f)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(m.b[:len(tc.header)], tc.header) || !bytes.Equal(m.payload(), json) || len(m.b) != len(tc.header)+tc.n {
				t.Errorf("encode gave header % x and %d bytes of payload (equal to Encode: %v), want header % x and %d",
					m.b[:min(len(m.b), 10)], len(m.payload()), bytes.Equal(m.payload(), json), tc.header, tc.n)
			}
		})
	}
}

func TestNoMessageFollowsTheCloseFrame(t *testing.T) {
	server, page := net.Pipe()
	defer page.Close()
	s := &socket{conn: server}
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(page)
		got <- b
	}()
	hb := mustEncode(wire.HostFrame{T: wire.TypeHeartbeat})
	if err := s.writeMessages(net.Buffers{hb.b}); err != nil {
		t.Fatal(err)
	}
	closeFrame := []byte{0x88, 5, 0x03, 0xe9, 'b', 'y', 'e'} // 1001 "bye"
	if _, err := s.Write(closeFrame); err != nil {
		t.Fatal(err)
	}
	if err := s.writeMessages(net.Buffers{hb.b}); !errors.Is(err, errCloseSent) {
		t.Errorf("a batch after the close frame: %v, want errCloseSent", err)
	}
	server.Close()
	if b, want := <-got, append(bytes.Clone(hb.b), closeFrame...); !bytes.Equal(b, want) {
		t.Errorf("the page read % x, want the heartbeat then the close frame, % x", b, want)
	}
}

func TestOnlyAWholeCloseFrameCountsAsOne(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    []byte
		want bool
	}{
		{"a close frame with a code and reason", []byte{0x88, 4, 0x03, 0xe8, 'o', 'k'}, true},
		{"a close frame with no payload", []byte{0x88, 0}, true},
		{"a pong", []byte{0x8a, 0}, false},
		{"a close frame's header alone", []byte{0x88, 4}, false},
		{"a text frame", []byte{0x81, 2, '{', '}'}, false},
	} {
		if got := isCloseFrame(tc.p); got != tc.want {
			t.Errorf("%s: isCloseFrame(% x) = %v, want %v", tc.name, tc.p, got, tc.want)
		}
	}
}

// vectorConn is a connection wrapper that writes vectors (as hostplugin/restart's does).
type vectorConn struct{ net.Conn }

func (vectorConn) WriteBuffers(*net.Buffers) (int64, error) { return 0, nil }

// A session's batch goes out in one writev on a TCP connection and on a wrapper of one that
// says it can (hostplugin/restart's, under cmd/host): a wrapper must not turn every batch into
// a copy. TLS, which cannot, gets the copy.
func TestABatchIsOneWritevOnATCPConnectionOrAWrapperThatSaysItCan(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if vectors(c) == nil {
		t.Error("a TCP connection: no writev")
	}
	if vw := vectors(vectorConn{c}); vw == nil {
		t.Error("a wrapper with WriteBuffers: no writev")
	} else if _, ok := vw.(vectorConn); !ok {
		t.Errorf("a wrapper with WriteBuffers: %T, want the wrapper's own", vw)
	}
	if vectors(struct{ net.Conn }{c}) != nil {
		t.Error("a wrapper without WriteBuffers (TLS is one): writev, want the copy")
	}
}
