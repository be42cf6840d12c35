//go:build js && wasm

// The browser glue of the hub: a tab's messages over a real MessagePort reach the hub, and the
// hub's answers come back as the tab expects them. These run under Node and in Chromium
// (scripts/wasmtest.sh), against the scriptable test Host started natively beside them.
package main

import (
	"context"
	"math"
	"os"
	"strings"
	"syscall/js"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/internal/test/testserver"
	"github.com/lifeline-go/lifeline/wasm/internal/hub"
)

const bound = 10 * time.Second

// tab is the page side of one MessageChannel: what it receives, as JS objects.
type tab struct {
	port js.Value
	got  chan js.Value
	fn   js.Func
}

func newTab(t *testing.T, h *hub.Hub) *tab {
	t.Helper()
	ch := js.Global().Get("MessageChannel").New()
	tb := &tab{port: ch.Get("port1"), got: make(chan js.Value, 1024)}
	tb.fn = js.FuncOf(func(_ js.Value, args []js.Value) any {
		tb.got <- args[0].Get("data")
		return nil
	})
	tb.port.Set("onmessage", tb.fn)
	attach(h, ch.Get("port2"))
	t.Cleanup(func() {
		tb.send(map[string]any{"t": "bye"})
		tb.port.Call("close")
		tb.fn.Release()
	})
	return tb
}

func (tb *tab) send(m map[string]any) { tb.port.Call("postMessage", m) }

// next returns the next message for which pred holds, skipping others, or fails after bound.
func (tb *tab) next(t *testing.T, what string, pred func(js.Value) bool) js.Value {
	t.Helper()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for {
		select {
		case m := <-tb.got:
			if pred(m) {
				return m
			}
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
			return js.Undefined()
		}
	}
}

func is(t, field, value string) func(js.Value) bool {
	return func(m js.Value) bool { return m.Get("t").String() == t && m.Get(field).String() == value }
}

func scenario(t *testing.T) *testserver.Scenario {
	t.Helper()
	base := os.Getenv(testserver.EnvServer)
	if base == "" {
		t.Skip("no test Host: set " + testserver.EnvServer + " (scripts/wasmtest.sh does)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	sc, err := testserver.Dial(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	return sc
}

func TestATabConnectsSubscribesAndIsToldEverything(t *testing.T) {
	sc := scenario(t)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if _, err := sc.Publish(ctx, "s", 2); err != nil {
		t.Fatal(err)
	}
	h := hub.New(&hub.Options{Logger: console{}})
	defer h.Close(nil)
	tb := newTab(t, h)
	tb.send(map[string]any{"t": "subscribe", "id": 3, "stream": "s"}) // before hello: queued
	tb.send(map[string]any{"t": "hello", "bootstrap": `{"endpoint":"` + sc.URL("a") + `"}`, "href": "http://page.test/", "online": true})
	st := tb.next(t, "connected", is("status", "state", "connected"))
	for _, k := range []string{"slow", "attempt", "failures", "nextAttempt", "error", "kind", "retryAfter", "at"} {
		if st.Get(k).IsUndefined() {
			t.Errorf("status has no %q: the tab reads it", k)
		}
	}
	if st.Get("at").Float() < float64(time.Now().Add(-time.Minute).UnixMilli()) {
		t.Errorf("status at = %v, want the time of the change in ms since the epoch", st.Get("at"))
	}
	reset := tb.next(t, "the baseline", is("delivery", "stream", "s"))
	if reset.Get("id").Int() != 3 || !reset.Get("reset").Bool() || reset.Get("seq").Int() != 2 || reset.Get("epoch").String() == "" {
		t.Fatalf("first delivery %s, want the reset of sub 3 at seq 2", js.Global().Get("JSON").Call("stringify", reset))
	}
	if _, err := sc.Publish(ctx, "s", 1); err != nil {
		t.Fatal(err)
	}
	ev := tb.next(t, "an event", is("delivery", "stream", "s"))
	if ev.Get("reset").Bool() || ev.Get("seq").Int() != 3 || ev.Get("data").Type() != js.TypeString {
		t.Fatalf("event %s, want seq 3 with its data as JSON text", js.Global().Get("JSON").Call("stringify", ev))
	}
	if js.Global().Get("JSON").Call("parse", ev.Get("data")).Type() != js.TypeObject {
		t.Fatalf("event data %q does not parse", ev.Get("data").String())
	}
	tb.send(map[string]any{"t": "command", "command": "stop"})
	tb.next(t, "stopped", is("status", "state", "stopped"))
}

func TestAMisconfiguredTabIsToldTheFieldAndTheValue(t *testing.T) {
	h := hub.New(&hub.Options{Logger: console{}})
	defer h.Close(nil)
	tb := newTab(t, h)
	tb.send(map[string]any{"t": "hello", "bootstrap": `{"recovery":{"deadlineMs":0}}`, "href": "http://page.test/"})
	tb.send(map[string]any{"t": "subscribe", "id": 1, "stream": "s"})
	st := tb.next(t, "misconfigured", is("status", "state", "misconfigured"))
	if msg := st.Get("error").String(); !strings.Contains(msg, "recovery.deadlineMs") || !strings.Contains(msg, "got 0") {
		t.Errorf("error %q does not name the field and the value", msg)
	}
	if k := st.Get("kind").String(); k != "misconfigured" {
		t.Errorf("kind = %q, want misconfigured", k)
	}
	end := tb.next(t, "the subscription's end", func(m js.Value) bool { return m.Get("t").String() == "ended" })
	if end.Get("id").Int() != 1 || !strings.Contains(end.Get("error").String(), "recovery.deadlineMs") {
		t.Errorf("ended %s", js.Global().Get("JSON").Call("stringify", end))
	}
}

func TestGarbageFromATabIsIgnored(t *testing.T) {
	h := hub.New(&hub.Options{Logger: console{}})
	defer h.Close(nil)
	tb := newTab(t, h)
	for _, m := range []any{5, "text", nil, map[string]any{"t": 7}, map[string]any{"t": "subscribe", "id": "x", "stream": 5}, map[string]any{"t": "launch"}} {
		tb.port.Call("postMessage", m)
	}
	tb.send(map[string]any{"t": "hello", "bootstrap": `{"recovery":{"deadlineMs":0}}`, "href": "http://page.test/"})
	tb.next(t, "the hub still answering", is("status", "state", "misconfigured"))
}

// TestADeniedSubscriptionsEndCarriesTheHostsReason: the tab is given the Host's words on their
// own (reason), beside the error and denied, so that a page can show them without the prefix.
func TestADeniedSubscriptionsEndCarriesTheHostsReason(t *testing.T) {
	ch := js.Global().Get("MessageChannel").New()
	got := make(chan js.Value, 2)
	fn := js.FuncOf(func(_ js.Value, args []js.Value) any {
		got <- args[0].Get("data")
		return nil
	})
	defer fn.Release()
	tabSide := ch.Get("port1")
	tabSide.Set("onmessage", fn)
	defer tabSide.Call("close")
	p := &port{v: ch.Get("port2")}
	next := func() js.Value {
		t.Helper()
		select {
		case m := <-got:
			return m
		case <-time.After(bound):
			t.Fatal("timed out waiting for the ended message")
			return js.Undefined()
		}
	}

	denied := &gateway.DeniedError{Stream: "user.bob", Reason: "not yours: ask bob"}
	p.Ended(7, denied)
	m := next()
	if m.Get("t").String() != "ended" || m.Get("id").Int() != 7 || !m.Get("denied").Bool() ||
		m.Get("reason").String() != "not yours: ask bob" || m.Get("error").String() != denied.Error() {
		t.Errorf("denied end %s, want id 7, denied, the reason alone and the full error", js.Global().Get("JSON").Call("stringify", m))
	}
	p.Ended(8, gateway.ErrClosed)
	m = next()
	if m.Get("denied").Bool() || m.Get("reason").String() != "" || m.Get("error").String() != gateway.ErrClosed.Error() {
		t.Errorf("closed end %s, want not denied and no reason", js.Global().Get("JSON").Call("stringify", m))
	}
}

// TestPresenceCrossesToTheTabAsItReadsIt: a presence report reaches the tab as
// web/lifeline.js's applyPresence reads it: the changes only, metadata as JSON text.
func TestPresenceCrossesToTheTabAsItReadsIt(t *testing.T) {
	ch := js.Global().Get("MessageChannel").New()
	got := make(chan js.Value, 1)
	fn := js.FuncOf(func(_ js.Value, args []js.Value) any {
		got <- args[0].Get("data")
		return nil
	})
	defer fn.Release()
	tabSide := ch.Get("port1")
	tabSide.Set("onmessage", fn)
	defer tabSide.Call("close")
	p := &port{v: ch.Get("port2")}
	p.Presence(3, gateway.Presence{
		Stream: "room.1", Total: 5000, Limit: 2,
		Members: []gateway.Member{{ID: "a", Count: 2, Meta: []byte(`{"n":"A"}`)}, {ID: "c", Count: 1}},
		Joined:  []gateway.Member{{ID: "c", Count: 1}},
		Updated: []gateway.Member{{ID: "a", Count: 2, Meta: []byte(`{"n":"A"}`)}},
		Left:    []string{"b"},
	}, false)
	var m js.Value
	select {
	case m = <-got:
	case <-time.After(bound):
		t.Fatal("timed out waiting for the presence message")
	}
	want := `{"first":false,"id":3,"joined":[{"id":"c","count":1,"meta":""}],"left":["b"],"limit":2,"reason":"","stream":"room.1","t":"presence","total":5000,"updated":[{"id":"a","count":2,"meta":"{\"n\":\"A\"}"}]}`
	sorted := js.Global().Get("JSON").Call("stringify", m, js.Global().Get("Object").Call("keys", m).Call("sort").Call("concat", []any{"count", "id", "meta"}))
	if s := sorted.String(); s != want {
		t.Errorf("presence message %s, want %s", s, want)
	}
}

// A tab's cursor seq is outside input: only a whole number JavaScript holds exactly is taken;
// anything else is no cursor (0), so the hub never sends the Host a seq the tab did not have.
func TestACursorsSeqIsReadOnlyAsAWholeNumber(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want uint64
	}{
		{0, 0}, {7, 7}, {float64(1 << 53), 1 << 53}, {float64(1 << 60), 0}, {-1, 0}, {1.5, 0},
		{math.NaN(), 0}, {math.Inf(1), 0}, {"7", 0}, {true, 0}, {nil, 0}, {js.Undefined(), 0},
	} {
		if got := seq(js.ValueOf(tc.v)); got != tc.want {
			t.Errorf("seq(%v) = %d, want %d", tc.v, got, tc.want)
		}
	}
}
