//go:build js && wasm

package main

import "syscall/js"

// installDialAbort wraps the page's WebSocket constructor in a Proxy that remembers the
// sockets it makes, and returns the gateway's Options.AbortDial: a function that fails every
// socket still connecting to url.
//
// Why: coder/websocket answers a cancelled dial by calling close(1008), which the WebSocket API
// refuses (it throws), so a stalled handshake would stay pending after the controller gave up
// on it. Chromium lets only one WebSocket per host connect at a time, so every later attempt,
// and "Reconnect now", would queue behind it. close() without a code is always allowed and
// fails a connecting socket at once.
func installDialAbort() func(url string) {
	g := js.Global()
	sockets := g.Get("Set").New()
	handler := g.Get("Object").New()
	// Lives as long as the page, like the Proxy that calls it.
	handler.Set("construct", js.FuncOf(func(_ js.Value, args []js.Value) (ws any) {
		// A constructor that throws (a malformed URL, a page that replaced WebSocket) must not
		// end the program: the trap then returns nothing, which the Proxy turns into a
		// TypeError for the caller, and coder/websocket reports that as a failed dial.
		defer contain("new WebSocket")
		prune(sockets)
		v := g.Get("Reflect").Call("construct", args[0], args[1], args[2])
		sockets.Call("add", v)
		return v
	}))
	g.Set("WebSocket", g.Get("Proxy").New(g.Get("WebSocket"), handler))
	return func(url string) {
		defer contain("aborting a connecting WebSocket")
		want := normalise(url)
		list := g.Get("Array").Call("from", sockets)
		for i := 0; i < list.Length(); i++ {
			ws := list.Index(i)
			if ws.Get("readyState").Int() == 0 && normalise(ws.Get("url").String()) == want {
				ws.Call("close")
				sockets.Call("delete", ws)
			}
		}
		prune(sockets)
	}
}

// prune forgets sockets that are no longer connecting: only those can need an abort.
func prune(sockets js.Value) {
	list := js.Global().Get("Array").Call("from", sockets)
	for i := 0; i < list.Length(); i++ {
		if ws := list.Index(i); ws.Get("readyState").Int() != 0 {
			sockets.Call("delete", ws)
		}
	}
}

func normalise(u string) (href string) {
	href = u
	defer func() { _ = recover() }() // new URL throws on garbage; then compare as given
	return js.Global().Get("URL").New(u).Get("href").String()
}
