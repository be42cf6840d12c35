//go:build js

package gateway_test

import (
	"errors"
	"strings"
	"sync"
	"syscall/js"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
	ts "github.com/lifeline-go/lifeline/internal/test/testserver"
)

// captureSockets records every WebSocket the page makes until the test ends (the constructor
// wrapped in a Proxy, as web/runner.js wraps it); sockets returns them.
func captureSockets(t *testing.T) (sockets func() []js.Value) {
	t.Helper()
	var mu sync.Mutex
	var made []js.Value
	native := js.Global().Get("WebSocket")
	construct := js.FuncOf(func(_ js.Value, args []js.Value) any {
		ws := js.Global().Get("Reflect").Call("construct", args[0], args[1], args[2])
		mu.Lock()
		made = append(made, ws)
		mu.Unlock()
		return ws
	})
	handler := js.Global().Get("Object").New()
	handler.Set("construct", construct)
	js.Global().Set("WebSocket", js.Global().Get("Proxy").New(native, handler))
	t.Cleanup(func() {
		js.Global().Set("WebSocket", native)
		construct.Release()
	})
	return func() []js.Value {
		mu.Lock()
		defer mu.Unlock()
		return append([]js.Value(nil), made...)
	}
}

// TestALinkThatStopsDrainingEndsTheSession: the browser never makes a write wait, so a link
// that stopped draining shows only as the socket's bufferedAmount growing. Past its bound the
// next write fails and the session ends, rather than the page piling frames up in memory until
// the watchdog (natively the write would block on the full TCP window until the teardown).
func TestALinkThatStopsDrainingEndsTheSession(t *testing.T) {
	sc := newScenario(t)
	script(t, sc, "a", readyServe)
	sockets := captureSockets(t)
	r := newRig(t, sc.URL("a"), fast(), nil)
	r.ctl.Start()
	r.waitConnected()
	made := sockets()
	if len(made) != 1 {
		t.Fatalf("%d sockets made, want 1", len(made))
	}
	// What a link that stopped draining leaves behind: the instance's own property hides the
	// prototype's getter.
	js.Global().Get("Object").Call("defineProperty", made[0], "bufferedAmount", map[string]any{"value": 1 << 30})
	r.gw.Subscribe("s", func(gateway.Delivery) {})
	st := r.waitFailure()
	if !errors.Is(st.Err, gateway.ErrSessionClosed) || !strings.Contains(st.Err.Error(), "not draining: 1073741824 bytes") {
		t.Fatalf("failure %v, want ErrSessionClosed naming the bytes waiting to be sent", st.Err)
	}
	r.waitConnected() // a fresh socket
	waitHost(t, sc, "a", "subs", "==", 1)
}

// TestASocketTheAttemptGaveUpOnIsClosedWhileConnecting: a handshake the Host holds past the
// deadline is failed by the page at once (close() during CONNECTING), not left pending.
func TestASocketTheAttemptGaveUpOnIsClosedWhileConnecting(t *testing.T) {
	sc := newScenario(t)
	script(t, sc, "a", []ts.Step{{Hold: true}})
	sockets := captureSockets(t)
	r := newRig(t, sc.URL("a"), fast(), nil)
	r.ctl.Start()
	r.waitFailure()
	r.ctl.Stop()
	made := sockets()
	if len(made) == 0 {
		t.Fatal("no socket made")
	}
	if state := made[0].Get("readyState").Int(); state != 2 && state != 3 {
		t.Fatalf("the first socket's readyState is %d after its attempt gave up, want CLOSING (2) or CLOSED (3)", state)
	}
}

// TestASocketTheBrowserClosesAsThePageGoesAwayIsNoFailureOfTheHost: Firefox closes the page's
// sockets as it starts to unload the page, before its pagehide (1001, no reason), and the
// page's console must not say the Host failed on every reload: a socket end the page did not
// ask for waits a moment, and once the page has said it is leaving
// (globalThis.__lifelinePageLeaving, set by the tab script on pagehide) it is
// controller.ErrLeaving. Without the word, the same end is the Host's.
func TestASocketTheBrowserClosesAsThePageGoesAwayIsNoFailureOfTheHost(t *testing.T) {
	for _, c := range []struct {
		name    string
		leaving bool
		// late: the pagehide comes this long after the socket is up, 400 ms after its close
		// (as on a loaded machine; the end-to-end suite saw it), or at once when 0.
		late time.Duration
	}{
		{"leaving", true, 0},
		{"leaving, its pagehide late", true, 500 * time.Millisecond},
		{"staying", false, 0},
	} {
		if c.late > 0 && !js.Global().Get("document").Truthy() {
			continue // no document (Node): no page can go away late under the program
		}
		sc := newScenario(t)
		script(t, sc, "a", []ts.Step{{Ready: true}, {SleepMs: 100}, {Close: 1001}})
		if c.late == 0 {
			js.Global().Set("__lifelinePageLeaving", c.leaving)
		}
		r := newRig(t, sc.URL("a"), fast(), nil)
		r.ctl.Start()
		r.waitConnected()
		if c.late > 0 {
			// As the tab script does on pagehide (web/lifeline.js): the word, then the event.
			time.AfterFunc(c.late, func() {
				js.Global().Set("__lifelinePageLeaving", c.leaving)
				js.Global().Call("dispatchEvent", js.Global().Get("Event").New("pagehide"))
			})
		}
		st := r.waitFailure()
		r.ctl.Stop()
		js.Global().Delete("__lifelinePageLeaving")
		if got := errors.Is(st.Err, controller.ErrLeaving); got != c.leaving {
			t.Fatalf("%s: failure %v, ErrLeaving %v; want %v", c.name, st.Err, got, c.leaving)
		}
	}
}
