//go:build js

package gateway

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/gateway/wire"
)

// carrier is one browser WebSocket. Under js/wasm the library answers a cancelled read,
// write or dial context by calling WebSocket.close(1008), a code the WebSocket API refuses
// (it throws; only 1000 and 3000–4999 are allowed): the socket would stay open. So no context
// given to the library here is ever cancelled, and every close goes through Close(1000).
type carrier struct {
	c *websocket.Conn
}

type dialResult struct {
	c   *websocket.Conn
	err error
}

// dial opens the socket. If ctx ends first, dial asks abort (Options.AbortDial) to fail the
// browser's connecting socket, returns at once, and a reaper goroutine waits for the browser:
// should the socket open after all, it is closed there and then, so a dial that completes
// late (during Stop or Close) leaves no socket open. A dial that failed is followed by the
// probe (probe_js.go), which finds out whether the Host refused the page's credentials.
func dial(ctx context.Context, url string, _ http.Header, abort func(string)) (*carrier, error) {
	res := make(chan dialResult, 1)
	go func() {
		c, _, err := websocket.Dial(context.Background(), url, &websocket.DialOptions{
			Subprotocols: []string{wire.Subprotocol},
		})
		res <- dialResult{c, err}
	}()
	select {
	case r := <-res:
		if r.err != nil {
			return nil, probe(ctx, url, r.err)
		}
		return &carrier{c: r.c}, nil
	case <-ctx.Done():
		if abort != nil {
			abort(url)
		}
		go func() {
			if r := <-res; r.c != nil {
				r.c.Close(websocket.StatusNormalClosure, "lifeline: attempt cancelled")
			}
		}()
		return nil, context.Cause(ctx)
	}
}

func (k *carrier) setReadLimit(n int64) { k.c.SetReadLimit(n) }

func (k *carrier) subprotocol() string { return k.c.Subprotocol() }

// closedRereads is how often read asks again after the library reported the socket closed.
const closedRereads = 32

// read returns the next frame. coder/websocket's browser read picks at random between "a
// message is buffered" and "the socket closed" once both are ready, so a frame the Host sent
// right before closing (a retry-after, a goaway, the last events) could be dropped. Closed is
// final and a buffered message keeps its signal, so asking again finds such a frame with
// probability 1 − 2⁻³²; when nothing is buffered every reread returns at once.
func (k *carrier) read() (websocket.MessageType, []byte, error) {
	typ, b, err := k.c.Read(context.Background())
	if err == nil || !errors.Is(err, net.ErrClosed) {
		return typ, b, err
	}
	for range closedRereads {
		if t2, b2, err2 := k.c.Read(context.Background()); err2 == nil {
			return t2, b2, nil
		}
	}
	return typ, b, err
}

func (k *carrier) write(b []byte) error {
	return k.c.Write(context.Background(), websocket.MessageText, b)
}

// hangup asks the browser to close the socket and waits, up to grace, for its close event.
// The browser owns the closing handshake: for a dead link (force) there is nothing to wait
// for, and past grace the close event releases the library's goroutines when it comes.
func (k *carrier) hangup(reason string, force bool, grace time.Duration) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		k.c.Close(websocket.StatusNormalClosure, reason)
	}()
	if force {
		return
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// settle waits for the pump and the writer, up to grace: the pump's read ends with the
// browser's close event, which a dead link may delay; the writer never blocks. After a forced
// end (a dead link, a deadline) there is nobody to answer the browser's close handshake, so the
// close event may come seconds later: settle waits for the writer only, and the pump, whose
// frames are dropped from here on (its session's context has ended), leaves with that event.
// Waiting the grace would only delay the next attempt.
func (k *carrier) settle(grace time.Duration, force bool, done ...<-chan struct{}) {
	if force && len(done) > 1 {
		done = done[1:] // pumpDone is first
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	for _, d := range done {
		select {
		case <-d:
		case <-t.C:
			return
		}
	}
}
