//go:build js && wasm

package main

import (
	"errors"
	"math"
	"syscall/js"

	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/internal/wire"
	"github.com/lifeline-go/lifeline/wasm/internal/hub"
)

// port is one tab's MessagePort, as a hub.Tab.
//
// Tab → hub: {t:"hello", bootstrap, options, href, online, carrier}, {t:"command", command},
// {t:"online", online}, {t:"subscribe", id, stream, presence, epoch, after} (epoch and
// after: the cursor it had in a hub that ended, to resume at), {t:"unsubscribe", id},
// {t:"life", event}, {t:"call", id, name, data (JSON text), key, timeoutMs, epoch, who,
// session, wid, sentAgoMs},
// {t:"cancel", id}, {t:"renewer", on}, {t:"token", id, token, failure}, {t:"ping"}, {t:"bye"}
// (hub.Msg, hub.Command and hub.Event name them).
// Hub → tab: {t:"status", state, slow, attempt, failures, nextAttempt (ms since the epoch, 0
// for none), error, kind, reason (the Host app's words: why it refused or ended access), retryAfter (ms),
// carrier, blocked}, {t:"renew", id} (the page's renewer is asked for a token), {t:"delivery", id, stream, seq, reset, epoch,
// data, baseline} (data and baseline as JSON text: the tab parses them),
// {t:"ended", id, error, denied, reason} (reason: the Host's words when it denied the
// subscription, "" otherwise), {t:"sent", id, epoch, who, session, wid} (the call is being
// written under that dedup epoch and identity tag, on that session as its call wid),
// {t:"reply", id, data (JSON text)} or {t:"reply", id, error, kind, sent, code,
// retryAfter (ms)} (gateway.CallError's fields), {t:"presence", id, stream, first, total,
// limit, reason, joined, updated, left} (joined and updated: [{id, count, meta (JSON text, ""
// for none)}], left: [id]; first: the tab's first for id, whose joined lists every member),
// {t:"pong"} (the answer to a ping, at once: the tab's check that its hub is alive,
// web/lifeline.js).
type port struct {
	v    js.Value
	conn *hub.Conn
}

func attach(h *hub.Hub, v js.Value) {
	p := &port{v: v}
	p.conn = h.Attach(p)
	// Released when the tab leaves; setting onmessage also starts the port.
	onMessage := js.FuncOf(func(_ js.Value, args []js.Value) any {
		defer contain("reading a message from the page")
		in := inbound(args[0].Get("data"))
		sweep.heard(p)
		if in.T == hub.MsgPing {
			p.post(map[string]any{"t": "pong"})
		}
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
		T:         hub.Msg(str("t")),
		Bootstrap: str("bootstrap"),
		Options:   str("options"),
		Href:      str("href"),
		Online:    d.Get("online").Truthy(),
		Command:   hub.Command(str("command")),
		Event:     hub.Event(str("event")),
		ID:        num("id"),
		Stream:    str("stream"),
		Name:      str("name"),
		Data:      str("data"),
		Key:       str("key"),
		Epoch:     str("epoch"),
		Who:       str("who"),
		Session:   str("session"),
		WireID:    num("wid"),
		TimeoutMs: num("timeoutMs"),
		SentAgoMs: num("sentAgoMs"),
		Carrier:   str("carrier"),
		Presence:  d.Get("presence").Truthy(),
		After:     seq(d.Get("after")),
		On:        d.Get("on").Truthy(),
		Token:     str("token"),
		Failure:   str("failure"),
	}
}

// seq reads a seq a tab sent: a whole number of the float64s JavaScript has (as the hub
// posted it), 0 for anything else.
func seq(v js.Value) uint64 {
	if v.Type() != js.TypeNumber {
		return 0
	}
	f := v.Float()
	if !(f >= 0 && f <= 1<<53) || f != math.Trunc(f) {
		return 0
	}
	return uint64(f)
}

func (p *port) post(m map[string]any) {
	defer contain("posting a message to the page")
	p.v.Call("postMessage", m)
}

// Status implements hub.Tab.
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
		"failures": s.Failures, "nextAttempt": next, "error": msg, "kind": kind, "reason": gateway.Reason(err),
		"retryAfter": float64(hub.RetryAfter(err).Milliseconds()), "at": float64(s.At.UnixMilli()),
		"carrier": s.Carrier.Kind, "blocked": s.Carrier.Blocked,
	})
}

// Renew implements hub.Renewer: the page's renewer is asked for a token.
func (p *port) Renew(id int) { p.post(map[string]any{"t": "renew", "id": id}) }

// Deliver implements hub.Tab.
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

// Ended implements hub.Tab.
func (p *port) Ended(id int, err error) { p.post(ended(id, err)) }

// ended is the message that ends subscription id. A denial carries the Host's reason as the
// Host gave it, beside the error (which reads `gateway: the host denied stream "s": <reason>`),
// so that a page can show the reason alone.
func ended(id int, err error) map[string]any {
	msg := "ended"
	if err != nil {
		msg = err.Error()
	}
	reason := ""
	if de := (*gateway.DeniedError)(nil); errors.As(err, &de) {
		reason = de.Reason
	}
	return map[string]any{"t": "ended", "id": id, "error": msg, "denied": errors.Is(err, gateway.ErrDenied), "reason": reason}
}

// Sent implements hub.Tab.
func (p *port) Sent(id int, on gateway.Sent) {
	p.post(map[string]any{"t": "sent", "id": id, "epoch": on.Epoch, "who": on.Who, "session": on.Session, "wid": float64(on.ID)})
}

// Replied implements hub.Tab.
func (p *port) Replied(id int, reply wire.RawJSON, err error) {
	if err == nil {
		p.post(map[string]any{"t": "reply", "id": id, "data": string(reply)})
		return
	}
	m := map[string]any{"t": "reply", "id": id, "error": err.Error(), "kind": gateway.CallClosed, "sent": false}
	var ce *gateway.CallError
	if errors.As(err, &ce) {
		m["kind"], m["sent"], m["code"], m["error"] = ce.Kind, ce.Sent, ce.Code, ce.Message
		m["retryAfter"] = float64(ce.RetryAfter.Milliseconds())
	}
	p.post(m)
}

// Presence implements hub.Tab: only what changed crosses to the tab, which keeps the list.
func (p *port) Presence(id int, pr gateway.Presence, first bool) {
	left := make([]any, len(pr.Left))
	for i, l := range pr.Left {
		left[i] = l
	}
	p.post(map[string]any{
		"t": "presence", "id": id, "stream": pr.Stream, "first": first, "total": pr.Total, "limit": pr.Limit,
		"reason": pr.Reason, "joined": members(pr.Joined), "updated": members(pr.Updated), "left": left,
	})
}

// members are presence members as a tab reads them.
func members(ms []gateway.Member) []any {
	out := make([]any, len(ms))
	for i, m := range ms {
		out[i] = map[string]any{"id": m.ID, "count": m.Count, "meta": string(m.Meta)}
	}
	return out
}
