//go:build js

package gateway_test

import (
	"syscall/js"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/gateway"
	ts "github.com/lifeline-go/lifeline/internal/test/testserver"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// openEarly does what the page's loader does while the wasm loads (web/boot.js and
// web/worker.js, openEarly): it opens the Host's socket at url and keeps its events for the
// first dial. This copy keeps the contract the gateway reads (url, ws, take, drop); the
// loader's own is exercised in the browser by the e2e suite.
func openEarly(t *testing.T, url string) js.Value {
	t.Helper()
	js.Global().Call("eval", `globalThis.__testOpenEarly = (url) => {
		const ws = new WebSocket(url, 'lifeline.v1');
		ws.binaryType = 'arraybuffer';
		const events = [];
		const keep = (e) => events.push(e);
		const types = ['open', 'message', 'error', 'close'];
		for (const t of types) ws.addEventListener(t, keep);
		const release = () => {
			for (const t of types) ws.removeEventListener(t, keep);
			if (globalThis.__lifelineEarly === early) delete globalThis.__lifelineEarly;
		};
		const early = {
			url, ws, events,
			take() { release(); return { ws, events }; },
			drop() { release(); try { ws.close(1000, 'not taken'); } catch (_) {} },
		};
		globalThis.__lifelineEarly = early;
		return early;
	}`)
	e := js.Global().Call("__testOpenEarly", url)
	t.Cleanup(func() {
		if js.Global().Get("__lifelineEarly").Equal(e) {
			e.Call("drop")
		}
		e.Get("ws").Call("close")
	})
	return e
}

// waitEvents waits until the early socket has had n events.
func waitEvents(t *testing.T, e js.Value, n int, what string) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for e.Get("events").Length() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d events on the early socket after %v, want %d", what, e.Get("events").Length(), bound, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// earlyDialer is the dialer id the test's loader gives its early socket.
const earlyDialer = "loader-1"

// inPage is the URL of the loader's early socket for an in-page gateway of url: the
// gateway's dial URL (gateway.dialURL) once it adopts the loader's dialer id.
func inPage(url string) string {
	return url + "?" + wire.ModeParam + "=" + wire.ModeInPage + "&" + wire.DialerParam + "=" + earlyDialer
}

func TestTheFirstDialTakesTheSocketTheLoaderOpenedEarly(t *testing.T) {
	sc := newScenario(t)
	script(t, sc, "a", readyServe)
	e := openEarly(t, inPage(sc.URL("a")))
	waitEvents(t, e, 2, "the open and the ready frame") // they wait for the program, kept
	sockets := captureSockets(t)
	r := newRig(t, sc.URL("a"), fast(), &gateway.Options{Mode: wire.ModeInPage})
	r.ctl.Start()
	r.waitConnected()
	r.gw.Subscribe("s", func(gateway.Delivery) {})
	waitHost(t, sc, "a", "subs", "==", 1) // the early socket carries the session
	if n := len(sockets()); n != 0 {
		t.Fatalf("the gateway made %d sockets of its own, want none: it had one open", n)
	}
	if st := stats(t, sc); st.Hosts["a"].Dials != 1 {
		t.Fatalf("the Host saw %d sockets, want the early one only", st.Hosts["a"].Dials)
	}
	if js.Global().Get("__lifelineEarly").Truthy() {
		t.Fatal("the early socket is still on offer after the dial took it")
	}
}

func TestAnEarlySocketToAnotherURLIsClosedAndTheGatewayDialsItsOwn(t *testing.T) {
	sc := newScenario(t)
	script(t, sc, "a", readyServe)
	script(t, sc, "b", readyServe)
	e := openEarly(t, inPage(sc.URL("b"))) // the loader read the config otherwise
	waitEvents(t, e, 1, "the open")
	r := newRig(t, sc.URL("a"), fast(), &gateway.Options{Mode: wire.ModeInPage})
	r.ctl.Start()
	r.waitConnected()
	if st := e.Get("ws").Get("readyState").Int(); st != 2 && st != 3 {
		t.Fatalf("the early socket to another URL has readyState %d, want CLOSING (2) or CLOSED (3)", st)
	}
	if st := stats(t, sc); st.Hosts["a"].Dials != 1 {
		t.Fatalf("Host a saw %d sockets, want the gateway's own", st.Hosts["a"].Dials)
	}
	// Its own dials carry the early socket's dialer: a Host that holds the early socket's
	// handshake (a browser that cannot end it) ends it when the gateway dials.
	if got, want := gateway.DialURL(r.gw), inPage(sc.URL("a")); got != want {
		t.Fatalf("the gateway dials %s, want %s (the loader's dialer)", got, want)
	}
}

// A page that remembers a path that did not carry WebSockets starts on HTTP, unless the socket
// its loader opened is open: the path carries them now, and the page takes it.
func TestARememberedBlockedPathGivesWayToAnEarlySocketThatOpened(t *testing.T) {
	if serverURL == "" {
		t.Skip("no test server: set " + ts.EnvServer)
	}
	for _, tc := range []struct {
		mode, want string
	}{
		{"open", wire.CarrierWebSocket},
		{"refuse-403", wire.CarrierStream}, // the early socket failed: dropped, on HTTP at once
	} {
		t.Run(tc.mode, func(t *testing.T) {
			url := ts.PathURL(serverURL, tc.mode)
			e := openEarly(t, inPage(url))
			waitEvents(t, e, 1, "the open, or the failure")
			var cs carriers
			r := newRig(t, url, carrierRecovery(), &gateway.Options{Mode: wire.ModeInPage, Carrier: wire.CarrierStream, UpgradeAfter: time.Hour, OnCarrier: cs.on})
			r.ctl.Start()
			if st := r.waitConnected(); st.Attempt != 1 || st.Failures != 0 {
				t.Fatalf("connected at attempt %d with %d failures, want the first, none", st.Attempt, st.Failures)
			}
			if cs.wait(t, tc.want); cs.all()[0].Kind != tc.want {
				t.Fatalf("carriers %+v, want %s from the start", cs.all(), tc.want)
			}
			if js.Global().Get("__lifelineEarly").Truthy() {
				t.Fatal("the early socket is still on offer after the first attempt")
			}
		})
	}
}

func TestDropEarlyClosesTheLoadersSocketThatNoDialTook(t *testing.T) {
	sc := newScenario(t)
	script(t, sc, "a", readyServe)
	e := openEarly(t, inPage(sc.URL("a")))
	waitEvents(t, e, 2, "the open and the ready frame")
	gateway.DropEarly() // as a hub whose settings are invalid does
	if js.Global().Get("__lifelineEarly").Type() != js.TypeUndefined {
		t.Fatal("the early socket is still offered after DropEarly")
	}
	deadline := time.Now().Add(bound)
	for e.Get("ws").Get("readyState").Int() != 3 { // CLOSED
		if time.Now().After(deadline) {
			t.Fatalf("the early socket's readyState is %d after %v, want 3 (closed)", e.Get("ws").Get("readyState").Int(), bound)
		}
		time.Sleep(5 * time.Millisecond)
	}
	gateway.DropEarly() // twice, or with none, does nothing
}
