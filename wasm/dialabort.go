//go:build js && wasm

package main

import "syscall/js"

// abortDial is the gateway's Options.AbortDial: it fails every socket still connecting to
// url. The sockets are those the runner (web/runner.js) records as the program creates them
// (globalThis.__lifelineSockets), the same record it uses to close them all if the program
// ends.
//
// Why: coder/websocket answers a cancelled dial by calling close(1008), which the WebSocket API
// refuses (it throws), so a stalled handshake would stay pending after the controller gave up
// on it. Chromium lets only one WebSocket per host connect at a time, so every later attempt,
// and "Reconnect now", would queue behind it. close() without a code is always allowed and
// fails a connecting socket at once.
func abortDial(url string) {
	defer contain("aborting a connecting WebSocket")
	sockets := js.Global().Get("__lifelineSockets")
	if !sockets.Truthy() {
		return
	}
	want := normalise(url)
	list := js.Global().Get("Array").Call("from", sockets)
	for i := 0; i < list.Length(); i++ {
		ws := list.Index(i)
		if ws.Get("readyState").Int() == 0 && normalise(ws.Get("url").String()) == want {
			ws.Call("close")
		}
	}
}

func normalise(u string) (href string) {
	href = u
	defer func() { _ = recover() }() // new URL throws on garbage; then compare as given
	return js.Global().Get("URL").New(u).Get("href").String()
}
