//go:build js && wasm

package main

import (
	"errors"
	"syscall/js"

	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/hub"
)

// port is one tab's MessagePort, as a hub.Client.
//
// Tab → hub: {t:"hello", bootstrap, options, href, online}, {t:"command", command},
// {t:"online", online}, {t:"subscribe", id, stream}, {t:"unsubscribe", id},
// {t:"life", event} (see hub.In.Event), {t:"bye"}.
// Hub → tab: {t:"status", state, slow, attempt, failures, nextAttempt (ms since the epoch, 0
// for none), error, kind, retryAfter (ms)}, {t:"delivery", id, stream, seq, reset, epoch,
// data, baseline} (data and baseline as JSON text: the tab parses them),
// {t:"ended", id, error, denied}.
type port struct {
	v    js.Value
	conn *hub.Conn
}

func attach(h *hub.Hub, v js.Value) {
	p := &port{v: v}
	p.conn = h.Attach(p)
	// Released when the client leaves; setting onmessage also starts the port.
	onMessage := js.FuncOf(func(_ js.Value, args []js.Value) any {
		defer contain("reading a message from the page")
		in := inbound(args[0].Get("data"))
		sweep.heard(p)
		p.conn.Handle(in)
		return nil
	})
	v.Set("onmessage", onMessage)
	sweep.heard(p)
	go func() {
		<-p.conn.Done() // bye, or dropped as silent
		sweep.forget(p)
		v.Set("onmessage", js.Null())
		onMessage.Release()
	}()
}

// inbound reads a tab's message; anything missing reads as its zero value.
func inbound(d js.Value) hub.In {
	if d.Type() != js.TypeObject {
		return hub.In{}
	}
	str := func(k string) string {
		if v := d.Get(k); v.Type() == js.TypeString {
			return v.String()
		}
		return ""
	}
	num := func(k string) int {
		if v := d.Get(k); v.Type() == js.TypeNumber {
			return v.Int()
		}
		return 0
	}
	return hub.In{
		T:         str("t"),
		Bootstrap: str("bootstrap"),
		Options:   str("options"),
		Href:      str("href"),
		Online:    d.Get("online").Truthy(),
		Command:   str("command"),
		Event:     str("event"),
		ID:        num("id"),
		Stream:    str("stream"),
	}
}

func (p *port) post(m map[string]any) {
	defer contain("posting a message to the page")
	p.v.Call("postMessage", m)
}

// Status implements hub.Client.
func (p *port) Status(s hub.Status) {
	state, err := s.State.String(), s.Err
	if s.Misconfigured != nil {
		state, err = "misconfigured", s.Misconfigured
	}
	kind := hub.Kind(err)
	if s.Misconfigured != nil {
		kind = "misconfigured"
	}
	next := 0.0
	if !s.NextAttempt.IsZero() {
		next = float64(s.NextAttempt.UnixMilli())
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	p.post(map[string]any{
		"t": "status", "state": state, "slow": s.Slow, "attempt": float64(s.Attempt),
		"failures": s.Failures, "nextAttempt": next, "error": msg, "kind": kind,
		"retryAfter": float64(hub.RetryAfter(err).Milliseconds()), "at": float64(s.At.UnixMilli()),
	})
}

// Deliver implements hub.Client.
func (p *port) Deliver(id int, d gateway.Delivery) {
	m := map[string]any{"t": "delivery", "id": id, "stream": d.Stream, "seq": float64(d.Seq), "reset": d.Reset}
	if d.Reset {
		m["epoch"] = d.Epoch
		if len(d.Baseline) > 0 {
			m["baseline"] = string(d.Baseline)
		}
	} else {
		m["data"] = string(d.Data)
	}
	p.post(m)
}

// Ended implements hub.Client.
func (p *port) Ended(id int, err error) {
	msg := "ended"
	if err != nil {
		msg = err.Error()
	}
	p.post(map[string]any{"t": "ended", "id": id, "error": msg, "denied": errors.Is(err, gateway.ErrDenied)})
}
