//go:build js && wasm

// These tests need a real DOM: they run in Chromium through wasmbrowsertest (make test does
// this), and skip under Node, which has no document.
package main

import (
	"strings"
	"syscall/js"
	"testing"
	"time"

	"honnef.co/go/js/dom/v2"
)

func needDOM(t *testing.T) {
	t.Helper()
	if js.Global().Get("document").IsUndefined() {
		t.Skip("no DOM here (Node); run in Chromium with wasmbrowsertest")
	}
}

// withBootstrap puts a #lifeline-bootstrap element with text into the document for one test.
func withBootstrap(t *testing.T, text string) {
	t.Helper()
	doc := js.Global().Get("document")
	if old := doc.Call("getElementById", "lifeline-bootstrap"); !old.IsNull() {
		old.Call("remove")
	}
	el := doc.Call("createElement", "script")
	el.Set("type", "application/json")
	el.Set("id", "lifeline-bootstrap")
	el.Set("textContent", text)
	doc.Get("head").Call("appendChild", el)
	t.Cleanup(func() { el.Call("remove") })
}

// states collects the lifeline:state events dispatched on window during one test.
func states(t *testing.T) func() []js.Value {
	t.Helper()
	var got []js.Value
	win := dom.GetWindow()
	fn := win.AddEventListener("lifeline:state", false, func(e dom.Event) {
		got = append(got, e.Underlying().Get("detail"))
	})
	t.Cleanup(func() { win.RemoveEventListener("lifeline:state", false, fn) })
	return func() []js.Value { return got }
}

func TestReadConfigResolvesTheBootstrapAgainstThePage(t *testing.T) {
	needDOM(t)
	withBootstrap(t, `{"recovery":{"deadlineMs":4000},"endpoint":"/_lifeline/events"}`)
	p := &page{win: dom.GetWindow()}
	cfg, err := p.readConfig()
	if err != nil {
		t.Fatalf("readConfig: %v", err)
	}
	host := js.Global().Get("location").Get("host").String()
	if want := "ws://" + host + "/_lifeline/events"; cfg.URL != want {
		t.Errorf("URL = %q, want %q", cfg.URL, want)
	}
	if cfg.Recovery.Deadline() != 4*time.Second {
		t.Errorf("deadline = %v, want 4s", cfg.Recovery.Deadline())
	}
}

func TestEmbeddingOptionsOverrideTheBootstrap(t *testing.T) {
	needDOM(t)
	withBootstrap(t, `{"recovery":{"deadlineMs":4000}}`)
	opts := js.Global().Get("JSON").Call("parse", `{"recovery":{"deadlineMs":6000}}`)
	js.Global().Set("lifelineOptions", opts)
	defer js.Global().Delete("lifelineOptions")
	p := &page{win: dom.GetWindow()}
	cfg, err := p.readConfig()
	if err != nil {
		t.Fatalf("readConfig: %v", err)
	}
	if cfg.Recovery.Deadline() != 6*time.Second {
		t.Errorf("deadline = %v, want the override's 6s", cfg.Recovery.Deadline())
	}
}

func TestInvalidBootstrapIsMisconfiguredNamingTheField(t *testing.T) {
	needDOM(t)
	withBootstrap(t, `{"recovery":{"deadlineMs":0}}`)
	got := states(t)
	p := &page{win: dom.GetWindow()}
	_, err := p.readConfig()
	if err == nil {
		t.Fatal("readConfig accepted deadlineMs 0")
	}
	p.misconfigured(err)
	evs := got()
	if len(evs) != 1 {
		t.Fatalf("%d lifeline:state events, want 1", len(evs))
	}
	if s := evs[0].Get("state").String(); s != "misconfigured" {
		t.Errorf("state = %q, want misconfigured", s)
	}
	if msg := evs[0].Get("error").String(); !strings.Contains(msg, "recovery.deadlineMs") || !strings.Contains(msg, "got 0") {
		t.Errorf("error %q does not name the field and the value", msg)
	}
}

func TestMissingBootstrapIsAnError(t *testing.T) {
	needDOM(t)
	p := &page{win: dom.GetWindow()}
	if _, err := p.readConfig(); err == nil || !strings.Contains(err.Error(), "#lifeline-bootstrap") {
		t.Fatalf("readConfig without a bootstrap = %v, want an error naming the element", err)
	}
}

func TestExposedAPIReportsStateAndReleasesUnsubscribers(t *testing.T) {
	needDOM(t)
	withBootstrap(t, `{}`)
	p := &page{win: dom.GetWindow()}
	cfg, err := p.readConfig()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.build(cfg); err != nil {
		t.Fatal(err)
	}
	p.expose()
	defer js.Global().Delete("lifeline")
	api := js.Global().Get("lifeline")
	for _, name := range []string{"state", "onState", "reconnectNow", "stop", "start", "subscribe"} {
		if api.Get(name).Type() != js.TypeFunction {
			t.Errorf("lifeline.%s is not a function", name)
		}
	}
	var seen []string
	cb := js.FuncOf(func(_ js.Value, args []js.Value) any {
		seen = append(seen, args[0].Get("state").String())
		return nil
	})
	defer cb.Release()
	unsub := api.Call("onState", cb)
	p.onChange(statusFor("connecting"))
	unsub.Invoke()
	unsub.Invoke() // a second call is harmless
	p.onChange(statusFor("stopped"))
	if strings.Join(seen, ",") != "connecting" {
		t.Errorf("onState saw %v, want [connecting] (nothing after unsubscribe)", seen)
	}
	if s := api.Call("state").Get("state").String(); s != "stopped" {
		t.Errorf("lifeline.state() = %q, want stopped", s)
	}
	// Misuse is reported, not panicked: a panic would end the wasm program.
	if v := api.Call("subscribe", 5); !v.IsUndefined() {
		t.Errorf("subscribe(5) = %v, want undefined", v)
	}
	p.gw.Close(nil)
}
