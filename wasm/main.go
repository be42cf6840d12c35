//go:build js && wasm

// Command wasm is Lifeline's hub in the browser: the controller and the gateway behind the
// page's JavaScript API (package hub), in the page itself (in-page mode) or once per origin in
// a SharedWorker serving every tab (shared mode). It touches no DOM: the tab-side script
// (web/lifeline.js) reads the bootstrap, binds the browser's events and keeps the JS API, and
// talks to this program over a MessagePort per tab (see port.go for the messages).
//
// The ports: the script that starts this program (web/runner.js) queues them in
// globalThis.__lifelinePorts until it runs; it takes those over and installs
// globalThis.__lifelineAttach for later ones, in the same task, so none is missed.
package main

import (
	"errors"
	"syscall/js"

	"github.com/lifeline-go/lifeline/internal/wire"
	"github.com/lifeline-go/lifeline/wasm/internal/hub"
)

// current is the program's hub.
var current *hub.Hub

var errNoTab = errors.New("lifeline: no tab left")

func main() {
	g := js.Global()
	// For the DevTools performance panel and the page-load benchmark, beside the runner's
	// lifeline:compiled and lifeline:instantiated.
	if p := g.Get("performance"); p.Type() == js.TypeObject && p.Get("mark").Type() == js.TypeFunction {
		p.Call("mark", "lifeline:go-ready")
	}
	opts := &hub.Options{Logger: console{}, Mode: wire.ModeInPage}
	if inWorker() {
		opts.Mode = wire.ModeShared
		// Shared mode: the hub outlives no tab for long (hub.DefaultIdleAfter), and drops tabs
		// that vanished without a word.
		opts.OnIdle = func() {
			h := current
			h.Close(errNoTab)
			g.Call("__lifelineClose")
		}
		go sweep.run()
	}
	h := hub.New(opts)
	current = h
	// Lives as long as the program.
	g.Set("__lifelineAttach", js.FuncOf(func(_ js.Value, args []js.Value) any {
		defer contain("attaching a port")
		if len(args) > 0 {
			attach(h, args[0])
		}
		return nil
	}))
	if pending := g.Get("__lifelinePorts"); pending.Truthy() {
		for i := 0; i < pending.Length(); i++ {
			attach(h, pending.Index(i))
		}
		g.Set("__lifelinePorts", js.Undefined())
	}
	select {}
}
