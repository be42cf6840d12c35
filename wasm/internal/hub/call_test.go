//go:build !js

package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/wasm/internal/hub"
)

// callHost is a Host whose "who" handler answers with its data, and whose "hold" handler
// waits for release; runs counts both.
func callHost(t *testing.T) (*host, *atomic.Int32, chan struct{}) {
	t.Helper()
	x := newHost(t)
	var runs atomic.Int32
	release := make(chan struct{})
	x.h.HandleCall("who", func(_ context.Context, c *hostplugin.Call) (json.RawMessage, error) {
		runs.Add(1)
		return c.Data, nil
	})
	x.h.HandleCall("hold", func(context.Context, *hostplugin.Call) (json.RawMessage, error) {
		runs.Add(1)
		<-release
		return json.RawMessage(`"held"`), nil
	})
	return x, &runs, release
}

func TestTwoTabsCallingAtOnceAreNeverMixedUp(t *testing.T) {
	x, runs, _ := callHost(t)
	h := newHub(t)
	a, ca := helloTab(h, x)
	b, cb := helloTab(h, x)
	// The same ids in both tabs, at once: each tab gets its own replies.
	for id := 1; id <= 20; id++ {
		ca.Handle(hub.In{T: hub.MsgCall, ID: id, Name: "who", Data: fmt.Sprintf(`"a%d"`, id)})
		cb.Handle(hub.In{T: hub.MsgCall, ID: id, Name: "who", Data: fmt.Sprintf(`"b%d"`, id), Key: fmt.Sprintf("b-%d", id)})
	}
	for _, w := range []struct {
		c    *tab
		name string
	}{{a, "a"}, {b, "b"}} {
		w.c.wait(t, w.name+"'s 20 replies", func(c *tab) bool { return len(c.replies) == 20 })
		w.c.mu.Lock()
		for id := 1; id <= 20; id++ {
			r := w.c.replies[id]
			if r.err != nil || r.data != fmt.Sprintf(`"%s%d"`, w.name, id) {
				t.Errorf("tab %s, call %d: %+v, want its own reply", w.name, id, r)
			}
			if w.c.sent[id] == "" {
				t.Errorf("tab %s, call %d: never told it was sent", w.name, id)
			}
		}
		w.c.mu.Unlock()
	}
	if n := runs.Load(); n != 40 {
		t.Fatalf("the handler ran %d times for 40 calls", n)
	}
}

func TestATabThatLeavesWithdrawsItsUnsentCallsAndItsSentOnesStillRun(t *testing.T) {
	x, runs, release := callHost(t)
	h := newHub(t)
	a, ca := connectedTab(t, h, x)
	ca.Handle(hub.In{T: hub.MsgCall, ID: 1, Name: "hold"})
	a.wait(t, "the held call sent", func(c *tab) bool { return c.sent[1] != "" })
	waitUntil(t, "the held call running on the Host", func() bool { return runs.Load() == 1 })
	// Cut the link: the next call waits unsent, then the tab leaves.
	x.h.SetReady(false)
	x.h.Stop(context.Background(), 0)
	ca.Handle(hub.In{T: hub.MsgCall, ID: 2, Name: "who", Data: `"never"`})
	ca.Handle(hub.In{T: hub.MsgBye})
	<-ca.Done()
	close(release)
	if n := runs.Load(); n != 1 {
		t.Fatalf("%d runs, want only the call sent before the tab left", n)
	}
}

func TestACallBeforeHelloIsMadeOnceTheHubIsBuilt(t *testing.T) {
	x, _, _ := callHost(t)
	h := newHub(t)
	a := newClient()
	ca := h.Attach(a)
	ca.Handle(hub.In{T: hub.MsgCall, ID: 5, Name: "who", Data: `"early"`})
	ca.Handle(hello(x))
	a.wait(t, "the reply", func(c *tab) bool { return c.replies[5].data == `"early"` })
}

func TestACallOfAMisconfiguredHubSaysWhy(t *testing.T) {
	h := newHub(t)
	a := newClient()
	ca := h.Attach(a)
	ca.Handle(hub.In{T: hub.MsgHello, Bootstrap: `{"recovery":{"deadlineMs":0}}`, Href: "http://x.invalid/"})
	ca.Handle(hub.In{T: hub.MsgCall, ID: 1, Name: "who"})
	a.wait(t, "the refusal", func(c *tab) bool { return c.replies[1].err != nil })
	var ce *gateway.CallError
	if err := a.replies[1].err; !errors.As(err, &ce) || ce.Kind != gateway.CallClosed || ce.Sent {
		t.Fatalf("a call on a misconfigured hub: %v, want closed, not sent, with the reason", err)
	}
}

// waitUntil polls cond until it holds, failing the test after 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestATabsCallsReachTheHostInTheOrderItMadeThem(t *testing.T) {
	x := newHost(t)
	var mu sync.Mutex
	var got []string
	x.h.HandleCall("log", func(_ context.Context, c *hostplugin.Call) (json.RawMessage, error) {
		mu.Lock()
		got = append(got, string(c.Data))
		mu.Unlock()
		return c.Data, nil
	})
	h := newHub(t)
	a, ca := connectedTab(t, h, x)
	// Made at once, as a page's calls in one turn of its event loop arrive: one after another.
	const n = 50
	for id := 1; id <= n; id++ {
		key := ""
		if id%2 == 0 {
			key = fmt.Sprintf("k-%d", id)
		}
		ca.Handle(hub.In{T: hub.MsgCall, ID: id, Name: "log", Data: fmt.Sprintf(`%d`, id), Key: key})
	}
	a.wait(t, "every reply", func(c *tab) bool { return len(c.replies) == n })
	a.mu.Lock()
	for id, r := range a.replies {
		if r.err != nil {
			t.Errorf("call %d: %v, want its reply", id, r.err)
		}
	}
	a.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != n {
		t.Fatalf("the Host ran %d calls (%v), want %d", len(got), got, n)
	}
	for i, d := range got {
		if d != fmt.Sprint(i+1) {
			t.Fatalf("the Host ran the calls in the order %v, want 1..%d as made", got, n)
		}
	}
}

// A tab whose hub was lost makes its unkeyed calls that hub said it sent again on a fresh hub,
// naming the session and the id each went out as. The fresh hub sends neither: it fences
// that session, which the Host may still hold (a hub that died leaves its socket to the
// browser), and tells the tab what started there: interrupted, or not-run, which never runs.
func TestAnUnkeyedCallOfALostHubIsToldWhatItsSessionsFenceSays(t *testing.T) {
	x, runs, release := callHost(t)
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	lost := newHub(t)
	a := newClient()
	ca := lost.Attach(a)
	ca.Handle(hello(x))
	ca.Handle(hub.In{T: hub.MsgCall, ID: 1, Name: "hold", Data: `1`})
	ca.Handle(hub.In{T: hub.MsgCall, ID: 2, Name: "who", Data: `"behind"`})
	a.wait(t, "both calls sent", func(c *tab) bool { return c.sentOn[1].ID != 0 && c.sentOn[2].ID != 0 })
	waitUntil(t, "the first call to run", func() bool { return runs.Load() == 1 }) // it holds; the second waits behind it on the Host
	a.mu.Lock()
	sent := []gateway.Sent{a.sentOn[1], a.sentOn[2]}
	a.mu.Unlock()

	fresh := newHub(t)
	b := newClient()
	cb := fresh.Attach(b)
	cb.Handle(hello(x))
	for i, on := range sent {
		cb.Handle(hub.In{T: hub.MsgCall, ID: i + 1, Name: []string{"hold", "who"}[i], Data: []string{`1`, `"behind"`}[i],
			Epoch: on.Epoch, Who: on.Who, Session: on.Session, WireID: int(on.ID), TimeoutMs: 30000})
	}
	b.wait(t, "both calls told", func(c *tab) bool { return len(c.replies) == 2 })
	b.mu.Lock()
	got := []reply{b.replies[1], b.replies[2]}
	b.mu.Unlock()
	for i, want := range []string{gateway.CallInterrupted, gateway.CallNotRun} {
		var ce *gateway.CallError
		if !errors.As(got[i].err, &ce) || ce.Kind != want || !ce.Sent {
			t.Errorf("call %d made again: %+v, want %s, sent", i+1, got[i], want)
		}
	}
	close(release) // the first run ends on the lost hub's session; the one behind it must not start
	a.wait(t, "the held call's reply on the lost hub", func(c *tab) bool { _, ok := c.replies[1]; return ok })
	if n := runs.Load(); n != 1 {
		t.Fatalf("%d runs, want the first call's alone: the call behind it was fenced", n)
	}
}
