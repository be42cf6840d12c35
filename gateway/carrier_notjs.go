//go:build !js

package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// frameKind is what a message carried: text (the protocol's frames) or binary (refused).
type frameKind = websocket.MessageType

const textFrame = websocket.MessageText

// errMessageTooBig ends a read of a frame over the read limit (the library closes with 1009).
var errMessageTooBig = websocket.ErrMessageTooBig

// closeStatus returns the code and reason of the Host's close that ended a read, if one came:
// a WebSocket's close frame, or the HTTP carrier's.
func closeStatus(err error) (code int, reason string, ok bool) {
	if code, reason, ok := hostClose(err); ok {
		return code, reason, ok
	}
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return int(ce.Code), ce.Reason, true
	}
	return 0, "", false
}

// wsCarrier is one socket. Natively every read and write runs under ctx, which is cancelled
// only to tear the socket down (the library closes a connection whose read or write context
// ends); the pump never uses a per-read timeout.
type wsCarrier struct {
	c     *websocket.Conn
	ctx   context.Context
	force context.CancelFunc
}

// handshakeClient carries the WebSocket handshake; nil is http.DefaultClient. A test hook
// (export_notjs_test.go): the gateway's tests put a Host in memory (internal/test/wstest) to
// run it and the gateway in one synctest bubble.
var handshakeClient *http.Client

// dial opens the socket. Cancelling ctx aborts the HTTP upgrade, so a socket that never
// opens is released at once. A Host that refuses the page's credentials (401, 403) fails it
// with an *UnauthorizedError: natively the handshake's own answer says so.
func dial(ctx context.Context, url string, h Handshake) (*wsCarrier, error) {
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		Subprotocols: []string{wire.Subprotocol},
		HTTPHeader:   h.Header,
		HTTPClient:   handshakeClient,
	})
	if err != nil && resp == nil {
		return nil, &unansweredError{err}
	}
	if err != nil {
		if resp != nil && resp.Body != nil {
			// The library keeps the first KiB of a failed handshake's body, in memory.
			body, _ := io.ReadAll(io.LimitReader(resp.Body, wire.MaxRefusalBody))
			if resp.StatusCode == http.StatusForbidden && !isRefusalBody(body) {
				// A 403 in words that are not a Lifeline Host's is a middlebox refusing the
				// WebSocket, not the Host refusing the page: the refusal query, a plain GET
				// through the same path, says which (PROTOCOL.md §11.3).
				return nil, err
			}
			if refused := refusedBy(resp.StatusCode, resp.Header.Get("Retry-After"), body); refused != nil {
				return nil, refused
			}
		}
		return nil, err
	}
	fctx, force := context.WithCancel(context.Background())
	return &wsCarrier{c: c, ctx: fctx, force: force}, nil
}

func (k *wsCarrier) setReadLimit(n int64) { k.c.SetReadLimit(n) }

func (k *wsCarrier) subprotocol() string { return k.c.Subprotocol() }

func (k *wsCarrier) kind() string { return wire.CarrierWebSocket }

func (k *wsCarrier) read() (frameKind, []byte, error) { return k.c.Read(k.ctx) }

func (k *wsCarrier) write(b []byte) error { return k.c.Write(k.ctx, websocket.MessageText, b) }

// hangup closes the socket. A healthy peer gets a close frame and grace to answer it;
// force (a dead link) or an expired grace tears the connection down at once.
func (k *wsCarrier) hangup(reason string, force bool, grace time.Duration) {
	defer k.force()
	if force {
		k.force()
		k.c.CloseNow()
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		k.c.Close(websocket.StatusNormalClosure, reason)
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		k.force() // unblocks the pump's read, which closes the connection, and so Close
		<-done
	}
}

// settle waits for the pump and the writer. Natively a closed connection releases both, a
// forced one at once.
func (k *wsCarrier) settle(_ time.Duration, _ bool, done ...<-chan struct{}) {
	for _, d := range done {
		<-d
	}
}

// checkBeforeRedial: natively no runtime holds a WebSocket back after failures, and a failed
// handshake's answer says why at once; a test turns the check on (export_notjs_test.go).
var checkBeforeRedial = false

// pageLeaving: natively there is no page to go away.
func pageLeaving(time.Duration) bool { return false }

// dialOpaque: natively a failed dial says whether anything answered it (unanswered).
const dialOpaque = false

// unansweredError is a dial that no HTTP answer came back to: refused, reset, no route, a
// timeout. A path that blocks WebSockets answers (a proxy's 403, a 426 without the upgrade) or
// lets the socket open; this is the network or the Host being down.
type unansweredError struct{ err error }

func (e *unansweredError) Error() string { return e.err.Error() }
func (e *unansweredError) Unwrap() error { return e.err }

func unanswered(err error) bool {
	var ue *unansweredError
	return errors.As(err, &ue)
}

// earlyOpen: natively no loader opened a socket ahead of the program (see carrier_js.go).
func earlyOpen(string) bool { return false }

// DropEarly does nothing: only a browser's loader opens a socket early (carrier_js.go).
func DropEarly() {}

// earlyDialer is "": no loader opens a socket for a native gateway.
func earlyDialer() string { return "" }
