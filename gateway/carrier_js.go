//go:build js

package gateway

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"syscall/js"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/internal/tinyfmt"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// frameKind is what a message carried: text (the protocol's frames) or binary (refused).
type frameKind int

const (
	textFrame frameKind = iota + 1
	binaryFrame
)

// maxBuffered bounds what may wait in the browser's send buffer (bufferedAmount) when a frame
// is written. The browser never makes a write wait: over a link that stopped draining (half
// open, or a Host that stopped reading) every frame would pile up in the page's memory until
// the watchdog ends the session. Past this bound the write fails and the session ends, as a
// native write blocked on a full TCP window would end it at teardown. One frame of any size
// can always go: the bound is checked before the send. As much as the calls waiting while
// disconnected may hold (DefaultMaxQueuedBytes).
const maxBuffered = DefaultMaxQueuedBytes

// errMessageTooBig ends a read of a frame over the read limit. The browser has received the
// whole frame by then (the WebSocket API has no streaming), and cannot send 1009 (it may only
// close with 1000 or 3000–4999): the session ends with 1000 and the error as its reason.
var errMessageTooBig = errors.New("gateway: message too big")

// closeError is the browser's CloseEvent of a socket: its code and reason (the Host's close
// frame, or 1006 when none came: a dropped connection, a failed handshake).
type closeError struct {
	code   int
	reason string
	// leaving: the page was going away when the socket closed (the tab script set
	// globalThis.__lifelinePageLeaving on pagehide): the browser closed it, not the Host.
	leaving bool
}

func (e *closeError) Error() string {
	switch {
	case e.leaving:
		return tinyfmt.Sprintf("gateway: the browser closed the socket as the page went away (%d)", e.code)
	case e.code == closeAbnormal:
		return "gateway: the connection was lost (no close frame: 1006)"
	}
	return tinyfmt.Sprintf("gateway: socket closed with %d %q", e.code, e.reason)
}

// Unwrap makes errors.Is(err, controller.ErrLeaving) hold for a socket the browser closed as
// the page went away.
func (e *closeError) Unwrap() error {
	if e.leaving {
		return controller.ErrLeaving
	}
	return nil
}

// pageLeaving reports whether the page is going away (see closeError.leaving), waiting up to
// patience for its pagehide to say so. The pagehide ends the wait when it comes (a listener of
// its own, after the tab script's, which sets the word): a loop of short sleeps would be clamped
// to a second each in a background tab, where a browser throttles timers, and made a hidden
// page notice a Host's restart seconds late. Where there is no document (the shared hub's
// worker, Node) no page can go away under the program: no wait. It blocks: never call it from a
// listener, whose caller is the browser's event loop.
func pageLeaving(patience time.Duration) bool {
	global := js.Global()
	leaving := func() bool { return global.Get("__lifelinePageLeaving").Truthy() }
	if leaving() || !global.Get("document").Truthy() {
		return leaving()
	}
	hidden := make(chan struct{}, 1)
	onHide := js.FuncOf(func(js.Value, []js.Value) any {
		select {
		case hidden <- struct{}{}:
		default:
		}
		return nil
	})
	global.Call("addEventListener", "pagehide", onHide)
	defer func() {
		global.Call("removeEventListener", "pagehide", onHide)
		onHide.Release()
	}()
	t := time.NewTimer(patience)
	defer t.Stop()
	select {
	case <-hidden:
	case <-t.C:
	}
	return leaving()
}

// closeAbnormal is the code a browser reports when no close frame came (RFC 6455 §7.1.5).
const closeAbnormal = 1006

// closeStatus returns the code and reason of the Host's close that ended a read, if one came:
// a WebSocket's close frame, or the HTTP carrier's.
func closeStatus(err error) (code int, reason string, ok bool) {
	if code, reason, ok := hostClose(err); ok {
		return code, reason, ok
	}
	var ce *closeError
	if errors.As(err, &ce) && ce.code != closeAbnormal && !ce.leaving {
		return ce.code, ce.reason, true
	}
	return 0, "", false
}

// wsCarrier is one browser WebSocket, driven through syscall/js. Its listeners are registered
// in the same task that creates the socket, before the browser can dispatch any event, so
// nothing is missed: the Host's first frames (ready, or a refusal's error frame) may be
// dispatched before dial has even seen the open event, and wait in the queue.
//
// The listeners never block (the browser's event loop waits for them): they queue and signal.
// Every message event comes before the close event, and read drains the queue before it
// reports the close, so a frame the Host sent right before closing (a retry-after, a goaway,
// the last events) is always read.
type wsCarrier struct {
	ws        js.Value
	readLimit int64         // set before the pump starts
	opened    chan struct{} // closed by the open event
	closed    chan struct{} // closed by the close event, or when the page gives up on it
	signal    chan struct{} // capacity 1: a message was queued or the socket closed
	release   func()        // removes the listeners and releases their js.Funcs

	closing atomic.Bool // the page asked the browser to close the socket

	mu    sync.Mutex
	queue []message
	end   error // why the socket is closed; nil while it is not
}

type message struct {
	kind frameKind
	b    []byte
}

// dial opens the socket. If ctx ends first, the socket is closed there and then: close()
// fails a connecting socket at once, which matters beyond tidiness, since Chromium lets only
// one WebSocket per host connect at a time and a stalled handshake left pending would hold up
// every later attempt. The browser says nothing of why a dial failed: the session asks the
// Host with the refusal query (hostcheck.go).
func dial(ctx context.Context, url string, _ Handshake) (*wsCarrier, error) {
	k, err := open(url)
	if err != nil {
		return nil, err
	}
	select {
	case <-k.opened:
		return k, nil
	case <-k.closed:
		select {
		case <-k.opened:
			// It opened, and closed before dial looked (a Host refusing the page at once,
			// 1013 or 1008): the pump reads what the Host said, then the close.
			return k, nil
		default:
		}
		return nil, k.reason()
	case <-ctx.Done():
		k.close(closeReason(context.Cause(ctx)))
		k.shut(errClosedByPage)
		return nil, context.Cause(ctx)
	}
}

// open creates the WebSocket and registers its listeners.
func open(url string) (k *wsCarrier, err error) {
	defer func() {
		// The constructor throws on a URL it refuses (SyntaxError, SecurityError).
		if p := recover(); p != nil {
			k, err = nil, tinyfmt.Errorf("gateway: new WebSocket(%q): %s", url, thrown(p))
		}
	}()
	ws, early := takeEarly(url)
	if !ws.Truthy() {
		ws = js.Global().Get("WebSocket").New(url, wire.Subprotocol)
		ws.Set("binaryType", "arraybuffer")
	}
	k = &wsCarrier{
		ws:     ws,
		opened: make(chan struct{}),
		closed: make(chan struct{}),
		signal: make(chan struct{}, 1),
	}
	type listener struct {
		event string
		f     js.Func
	}
	var listeners []listener
	handlers := map[string]func(js.Value){}
	on := func(event string, fn func(e js.Value)) {
		f := js.FuncOf(func(_ js.Value, args []js.Value) any {
			fn(arg0(args))
			return nil
		})
		ws.Call("addEventListener", event, f)
		listeners = append(listeners, listener{event, f})
		handlers[event] = fn
	}
	on("open", func(js.Value) { close(k.opened) })
	on("message", k.received)
	on("error", func(js.Value) {
		// A browser follows a failed handshake's error with the close event (1006); Node's
		// WebSocket may leave it at the error. Once open, the close event says more.
		select {
		case <-k.opened:
		default:
			k.shut(&closeError{code: closeAbnormal})
		}
	})
	on("close", func(e js.Value) {
		ce := &closeError{code: e.Get("code").Int(), reason: e.Get("reason").String()}
		k.release()
		select {
		case <-k.opened:
			if k.closing.Load() {
				k.shut(ce) // the page closed it: no news of anyone
				return
			}
			// An open socket's end that the page did not ask for waits to see whether the
			// page is going away.
			go func() {
				patience := leavingWait
				if ce.code == closeGoingAway {
					patience = goingAwayWait
				}
				ce.leaving = pageLeaving(patience)
				k.shut(ce)
			}()
		default:
			k.shut(ce)
		}
	})
	k.release = func() {
		for _, l := range listeners {
			ws.Call("removeEventListener", l.event, l.f)
			l.f.Release()
		}
	}
	// What happened to an early socket before it was taken happens to it again, in order: no
	// event can come between (the browser dispatches none while Go runs).
	for _, e := range early {
		if h := handlers[e.Get("type").String()]; h != nil {
			h(e)
		}
	}
	return k, nil
}

// takeEarly takes the socket the page's loader opened to url while the wasm loaded (web/boot.js
// and web/worker.js, openEarly), with the events it has had so far; js.Undefined() if there is
// none. One to another URL (the loader's reading of the config differed from the hub's) is
// closed: no dial will take it.
func takeEarly(url string) (js.Value, []js.Value) {
	e := js.Global().Get("__lifelineEarly")
	if e.Type() != js.TypeObject {
		return js.Undefined(), nil
	}
	if !sameURL(e.Get("url").String(), url) {
		e.Call("drop")
		return js.Undefined(), nil
	}
	got := e.Call("take")
	events := got.Get("events")
	out := make([]js.Value, events.Length())
	for i := range out {
		out[i] = events.Index(i)
	}
	return got.Get("ws"), out
}

// earlyDialer is the dialer id (wire.DialerParam) on the URL of the socket the page's loader
// opened while the wasm loaded, "" if there is none: the gateway dials with the same, so that
// the Host ends that socket's handshake when the gateway dials again, whether it takes the
// socket or not.
func earlyDialer() string {
	e := js.Global().Get("__lifelineEarly")
	if e.Type() != js.TypeObject {
		return ""
	}
	// The loader's id is of characters a query carries as they are (wire.CheckDialer, which
	// the gateway asks of it): no unescaping to do.
	url := e.Get("url").String()
	if i := strings.IndexByte(url, '#'); i >= 0 {
		url = url[:i]
	}
	// The last one is the loader's, after any the configured endpoint held (as the Host reads
	// it, hostplugin's dialerOf).
	_, query, _ := strings.Cut(url, "?")
	id := ""
	for kv := range strings.SplitSeq(query, "&") {
		if v, ok := strings.CutPrefix(kv, wire.DialerParam+"="); ok {
			id = v
		}
	}
	return id
}

// DropEarly closes the socket the page's loader opened while the wasm loaded, if no dial took
// it: a hub that will not connect (its settings are invalid) must leave no session at the Host
// (README, "misconfigured": nothing connects). The loader's own 30 s limit is for a page that
// never starts its hub at all.
func DropEarly() {
	if e := js.Global().Get("__lifelineEarly"); e.Type() == js.TypeObject {
		e.Call("drop")
	}
}

// earlyOpen reports whether the loader's early socket to url is open (then the first dial
// takes it, whatever carrier the page remembered: the network carries WebSockets now). One
// that is not open yet, or failed, is closed: a page that remembers a path that holds
// WebSockets back does not wait to see.
func earlyOpen(url string) bool {
	e := js.Global().Get("__lifelineEarly")
	if e.Type() != js.TypeObject {
		return false
	}
	if sameURL(e.Get("url").String(), url) && e.Get("ws").Get("readyState").Int() == wsOpen {
		return true
	}
	e.Call("drop")
	return false
}

// wsOpen is WebSocket.OPEN, the readyState of a socket that opened and is not closing.
const wsOpen = 1

// received queues a message event's data.
func (k *wsCarrier) received(e js.Value) {
	m := message{kind: textFrame}
	if d := e.Get("data"); d.Type() == js.TypeString {
		m.b = []byte(d.String())
	} else {
		m.kind = binaryFrame
		u := js.Global().Get("Uint8Array").New(d)
		m.b = make([]byte, u.Length())
		js.CopyBytesToGo(m.b, u)
	}
	k.mu.Lock()
	if k.end == nil {
		k.queue = append(k.queue, m)
	}
	k.mu.Unlock()
	k.wake()
}

// shut records why the socket is closed, once, and releases every reader.
func (k *wsCarrier) shut(why error) {
	k.mu.Lock()
	first := k.end == nil
	if first {
		k.end = why
	}
	k.mu.Unlock()
	if first {
		close(k.closed)
		k.wake()
	}
}

func (k *wsCarrier) wake() {
	select {
	case k.signal <- struct{}{}:
	default:
	}
}

func (k *wsCarrier) reason() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.end
}

func (k *wsCarrier) setReadLimit(n int64) { k.readLimit = n }

func (k *wsCarrier) kind() string { return wire.CarrierWebSocket }

func (k *wsCarrier) subprotocol() string { return k.ws.Get("protocol").String() }

// read returns the next frame: every message received, in order, then why the socket closed.
func (k *wsCarrier) read() (frameKind, []byte, error) {
	for {
		k.mu.Lock()
		if len(k.queue) > 0 {
			m := k.queue[0]
			k.queue[0] = message{}
			k.queue = k.queue[1:]
			k.mu.Unlock()
			if int64(len(m.b)) > k.readLimit {
				return 0, nil, tinyfmt.Errorf("%w: %d bytes, over the read limit of %d", errMessageTooBig, len(m.b), k.readLimit)
			}
			return m.kind, m.b, nil
		}
		end := k.end
		k.mu.Unlock()
		if end != nil {
			return 0, nil, end
		}
		<-k.signal
	}
}

// write sends one text frame. The browser queues it and never makes the caller wait, so a
// link that stopped draining shows only as a growing bufferedAmount (see maxBuffered).
func (k *wsCarrier) write(b []byte) (err error) {
	if err := k.reason(); err != nil {
		return err
	}
	if n := k.ws.Get("bufferedAmount").Int(); n > maxBuffered {
		return tinyfmt.Errorf("gateway: the link is not draining: %d bytes wait to be sent (bound %d)", n, maxBuffered)
	}
	defer func() {
		if p := recover(); p != nil {
			err = tinyfmt.Errorf("gateway: WebSocket.send: %s", thrown(p))
		}
	}()
	k.ws.Call("send", string(b))
	return nil
}

// close asks the browser to close the socket with 1000 and reason, which also fails one still
// connecting; closing a closed socket does nothing. The browser throws only for a reason over
// 123 bytes (closeReason cuts every reason to that): should it throw all the same, the socket
// is closed without one.
func (k *wsCarrier) close(reason string) {
	k.closing.Store(true)
	defer func() {
		if recover() != nil {
			k.ws.Call("close")
		}
	}()
	k.ws.Call("close", 1000, reason)
}

// hangup asks the browser to close the socket and waits, up to grace, for its close event. The
// browser owns the closing handshake: for a dead link (force) there is nobody to answer it,
// and past grace neither is there worth waiting for. Then the page gives up on the socket
// itself: its reader is released at once, and the browser's close event, when it comes, only
// releases the listeners.
func (k *wsCarrier) hangup(reason string, force bool, grace time.Duration) {
	k.close(reason)
	if !force {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-k.closed:
		case <-t.C:
		}
	}
	k.shut(errClosedByPage)
}

// settle waits for the pump and the writer: hangup has released both.
func (k *wsCarrier) settle(_ time.Duration, _ bool, done ...<-chan struct{}) {
	for _, d := range done {
		<-d
	}
}

// thrown describes what a syscall/js call panicked with: the JS exception's message, or the
// Go value.
func thrown(p any) string {
	if e, ok := p.(js.Error); ok {
		return jsString(e.Value)
	}
	return tinyfmt.Sprint(p)
}

// checkBeforeRedial: in the browser a WebSocket is checked with a plain GET before it is dialed
// again after a failure (session.checkFirst): a browser may hold new WebSockets back after
// failures of its own accord, and the page must not wait on it for a Host that is down.
const checkBeforeRedial = true

// dialOpaque: a browser says nothing of why a WebSocket failed before it opened (a reset and a
// proxy's 403 are the same error event): such a failure is confirmed by a second one before
// the page takes the path for one that refuses WebSockets (session.run).
const dialOpaque = true

// unanswered: a browser cannot tell (dialOpaque).
func unanswered(error) bool { return false }
