//go:build js && wasm

// Command wasm is Lifeline's browser entry. It reads the Host's bootstrap from the page,
// resolves it (the page trusts nothing it is given), builds the controller and the gateway,
// binds the browser's connectivity and page-lifecycle events, and exposes globalThis.lifeline:
//
//	lifeline.state()               the current status object
//	lifeline.onState(fn)           fn(status) on every change; returns an unsubscribe function
//	lifeline.reconnectNow()        attempt at once, from the first cap
//	lifeline.stop(), .start()      end everything / begin a fresh sequence
//	lifeline.subscribe(stream, fn) fn(delivery) for each event or reset; returns unsubscribe
//
// Every status is also dispatched on window as a `lifeline:state` CustomEvent, which is what
// web/settings.js renders. Embedding code may set globalThis.lifelineOptions = {recovery,
// endpoint} before the wasm starts; they override the bootstrap and are resolved the same way.
package main

import (
	"errors"
	"fmt"
	"sync"
	"syscall/js"

	"honnef.co/go/js/dom/v2"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/gateway/wire"
)

func main() {
	win := dom.GetWindow()
	p := &page{win: win}
	cfg, err := p.readConfig()
	if err != nil {
		p.misconfigured(err)
		p.expose()
		select {} // keep the API answering "misconfigured"
	}
	if err := p.build(cfg); err != nil {
		p.misconfigured(err)
		p.expose()
		select {}
	}
	p.bindBrowser()
	p.expose()
	p.ctl.SetOnline(js.Global().Get("navigator").Get("onLine").Truthy())
	p.ctl.Start()
	select {}
}

type page struct {
	win dom.Window
	gw  *gateway.Gateway
	ctl *controller.Controller

	mu        sync.Mutex
	status    js.Value // the last status object, as given to listeners
	listeners map[int]js.Value
	nextID    int
	badConfig error
}

// build makes the gateway and the controller from a resolved config.
func (p *page) build(cfg gateway.PageConfig) error {
	gw, err := gateway.New(cfg.URL, &gateway.Options{Logger: console{}, AbortDial: installDialAbort()})
	if err != nil {
		return err
	}
	ctl, err := controller.New(gw, cfg.Recovery, &controller.Options{Endpoint: gw.URL(), OnChange: p.onChange, Logger: console{}})
	if err != nil {
		return err
	}
	p.gw, p.ctl = gw, ctl
	return nil
}

// readConfig reads #lifeline-bootstrap and globalThis.lifelineOptions and resolves them.
func (p *page) readConfig() (gateway.PageConfig, error) {
	el := p.win.Document().GetElementByID(wire.BootstrapID)
	if el == nil {
		return gateway.PageConfig{}, errors.New("lifeline: no #" + wire.BootstrapID + " element in the page (is the Host plugin installed?)")
	}
	var overrides []byte
	if o := js.Global().Get("lifelineOptions"); o.Truthy() {
		overrides = []byte(js.Global().Get("JSON").Call("stringify", o).String())
	}
	href := js.Global().Get("location").Get("href").String()
	return gateway.ResolvePage([]byte(el.TextContent()), overrides, href)
}

func (p *page) misconfigured(err error) {
	p.mu.Lock()
	p.badConfig = err
	p.mu.Unlock()
	errorf("lifeline: connection settings are invalid: %v", err).with()
	st := js.ValueOf(map[string]any{"state": "misconfigured", "error": err.Error(), "slow": false, "attempt": 0, "failures": 0, "nextAttempt": 0})
	p.publish(st)
}

func (p *page) onChange(s controller.Status) {
	next := 0.0
	if !s.NextAttempt.IsZero() {
		next = float64(s.NextAttempt.UnixMilli())
	}
	msg := ""
	if s.Err != nil {
		msg = s.Err.Error()
	}
	p.publish(js.ValueOf(map[string]any{
		"state":       s.State.String(),
		"slow":        s.Slow,
		"attempt":     float64(s.Attempt),
		"failures":    s.Failures,
		"nextAttempt": next,
		"error":       msg,
	}))
}

// publish records the status, calls onState listeners and dispatches lifeline:state.
func (p *page) publish(st js.Value) {
	p.mu.Lock()
	p.status = st
	ls := make([]js.Value, 0, len(p.listeners))
	for _, fn := range p.listeners {
		ls = append(ls, fn)
	}
	p.mu.Unlock()
	for _, fn := range ls {
		call("an onState listener", fn, st)
	}
	// dispatchEvent reports a throwing listener to the window's error handler and returns; it
	// is guarded all the same, since a page can replace window.dispatchEvent.
	defer contain("dispatching lifeline:state")
	ev := js.Global().Get("CustomEvent").New("lifeline:state", map[string]any{"detail": st})
	js.Global().Call("dispatchEvent", ev)
}

// bindBrowser follows the browser's connectivity and the page lifecycle. The listeners live
// as long as the page; they run controller calls on goroutines because Stop waits for the
// socket to close, which needs the JS event loop this callback is holding.
func (p *page) bindBrowser() {
	p.win.AddEventListener("online", false, func(dom.Event) { go p.ctl.SetOnline(true) })
	p.win.AddEventListener("offline", false, func(dom.Event) { go p.ctl.SetOnline(false) })
	// Stop on hide so the page can enter the back-forward cache; a fresh sequence when shown.
	p.win.AddEventListener("pagehide", false, func(dom.Event) { go p.ctl.Stop() })
	p.win.AddEventListener("pageshow", false, func(e dom.Event) {
		if e.Underlying().Get("persisted").Truthy() {
			go p.ctl.Start()
		}
	})
}

// expose installs globalThis.lifeline and announces it with a lifeline:ready event.
func (p *page) expose() {
	api := js.Global().Get("Object").New()
	api.Set("state", js.FuncOf(func(js.Value, []js.Value) any {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.status
	}))
	api.Set("onState", js.FuncOf(func(_ js.Value, args []js.Value) any {
		if len(args) == 0 || args[0].Type() != js.TypeFunction {
			misuse("lifeline.onState(fn): fn must be a function, got", arg(args, 0))
			return noop
		}
		p.mu.Lock()
		if p.listeners == nil {
			p.listeners = map[int]js.Value{}
		}
		p.nextID++
		id := p.nextID
		p.listeners[id] = args[0]
		cur := p.status
		p.mu.Unlock()
		if !cur.IsUndefined() {
			call("an onState listener", args[0], cur)
		}
		return remover(func() {
			p.mu.Lock()
			delete(p.listeners, id)
			p.mu.Unlock()
		})
	}))
	api.Set("reconnectNow", js.FuncOf(func(js.Value, []js.Value) any {
		if p.ctl != nil {
			go p.ctl.ReconnectNow()
		}
		return nil
	}))
	api.Set("stop", js.FuncOf(func(js.Value, []js.Value) any {
		if p.ctl != nil {
			go p.ctl.Stop()
		}
		return nil
	}))
	api.Set("start", js.FuncOf(func(js.Value, []js.Value) any {
		if p.ctl != nil {
			go p.ctl.Start()
		}
		return nil
	}))
	api.Set("subscribe", js.FuncOf(func(_ js.Value, args []js.Value) any {
		stream, fn := arg(args, 0), arg(args, 1)
		if stream.Type() != js.TypeString {
			misuse("lifeline.subscribe(stream, fn): stream must be a string, got", stream)
			return noop
		}
		name := stream.String()
		if err := wire.CheckStream(name); err != nil {
			misuse(fmt.Sprintf("lifeline.subscribe(%q, fn): the protocol cannot carry this stream name (1..%d bytes of UTF-8, got %d):",
				wire.Truncate(name), wire.MaxStreamName, len(name)), stream)
			return noop
		}
		if fn.Type() != js.TypeFunction {
			misuse(fmt.Sprintf("lifeline.subscribe(%q, fn): fn must be a function, got", wire.Truncate(name)), fn)
			return noop
		}
		if p.gw == nil {
			return noop // misconfigured: already reported, nothing will ever be delivered
		}
		what := fmt.Sprintf("the lifeline.subscribe(%q) handler", wire.Truncate(name))
		sub := p.gw.Subscribe(name, func(d gateway.Delivery) {
			defer contain(what)
			fn.Invoke(deliveryValue(d))
		})
		return remover(sub.Unsubscribe)
	}))
	js.Global().Set("lifeline", api)
	js.Global().Call("dispatchEvent", js.Global().Get("CustomEvent").New("lifeline:ready"))
}

// arg returns args[i], or undefined.
func arg(args []js.Value, i int) js.Value {
	if i < len(args) {
		return args[i]
	}
	return js.Undefined()
}

func deliveryValue(d gateway.Delivery) js.Value {
	parse := js.Global().Get("JSON").Get("parse")
	v := js.Global().Get("Object").New()
	v.Set("stream", d.Stream)
	v.Set("seq", float64(d.Seq))
	v.Set("reset", d.Reset)
	if d.Reset {
		v.Set("epoch", d.Epoch)
		if len(d.Baseline) > 0 {
			v.Set("baseline", parse.Invoke(string(d.Baseline)))
		}
	} else if len(d.Data) > 0 {
		v.Set("data", parse.Invoke(string(d.Data)))
	}
	return v
}
