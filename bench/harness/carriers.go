//go:build !js

package main

import (
	"fmt"
	"math"
	"time"
)

// The carriers scenario (what a page pays for the HTTP carrier, beside a WebSocket): the fan-out workload on Lifeline's Host at 2,000 pages,
// once with every page on a WebSocket and once with every page on the HTTP carrier's stream
// (bench/cmd/fanout-pages -kind lifeline-http): publications per second sustained, p50 and p99
// delivery latency at each rate, and what a session costs the Host, in memory and, idle, in CPU.

// carrierIdle is how long the sessions sit idle before the ladder, for their CPU.
var carrierIdle = 30 * time.Second

func (e *env) sCarriers(r *report) error {
	if err := e.buildFanout(); err != nil {
		return err
	}
	step := e.d(15*time.Second, 2*time.Second)
	if e.fanStep > 0 {
		step = e.fanStep
	}
	rates := fanRates
	if e.scale < 0.2 {
		rates = rates[:2]
	}
	n := min(e.n(2000, 20), fdLimit()/2-100) // a stream and its POSTs' connections per page
	idle := e.d(carrierIdle, 5*time.Second)
	ws := e.fanKind(n, fLifeline, rates, step, idle)
	h := e.fanKind(n, fLifelineHTTP, rates, step, idle)
	for _, run := range []*fanRun{ws, h} {
		if run.err != nil {
			r.fail(fmt.Sprintf("carriers: %s at %d pages", run.kind, n), run.err)
		}
	}

	sum := r.table(fmt.Sprintf("carriers. Lifeline's Host at %d pages, on a WebSocket and on the HTTP carrier (a streaming GET down, POSTs up)", n),
		"the HTTP carrier's p99 within 2× the WebSocket's",
		"carrier", "sustained R (publications/s)", "RSS per session", "idle CPU per session", "CPU per 100k deliveries at the highest R both sustain")
	r.note(sum, "the fanout workload (see fanout): each page follows user.<i> and group.<i/10>, 100-byte publications from the server's own process; sustained means p99 ≤ 200 ms, none behind, lost or duplicated")
	r.note(sum, "the pages are bench/cmd/fanout-pages: raw WebSockets (testbed.RawSocket), or net/http with a streaming GET per page and its POSTs (the subscriptions, and a ping every 10 s as a page's poster sends one after a heartbeat of silence)")
	r.note(sum, "RSS per session: the server's resident memory with the pages subscribed, less without, over n; idle CPU: the server's CPU seconds over %v with nothing published, per session and hour (heartbeats every 15 s; on HTTP also the pings)", idle)
	var common float64
	for _, s := range ws.steps {
		if c := h.at(s.rate); c != nil && s.sustained() && c.sustained() {
			common = s.rate
		}
	}
	for _, run := range []*fanRun{ws, h} {
		best, _ := run.best()
		cpu := "–"
		if s := run.at(common); s != nil && common > 0 {
			cpu = fmt.Sprintf("%.2f s at %s/s", s.cpuPer100k, fmtN(common))
		}
		name := "WebSocket"
		if run.kind == fLifelineHTTP {
			name = "HTTP stream"
		}
		r.row(sum, name, fmtN(best), fmtKiB(run.rssPerConn), fmt.Sprintf("%.0f CPU ms an hour", run.idleCPU*1000), cpu)
	}

	t := r.table(fmt.Sprintf("carriers at %d pages: each rate, WebSocket and HTTP stream", n), "",
		"R (publications/s)", "deliveries/s", "WebSocket p50 / p99", "HTTP p50 / p99", "HTTP p99 ÷ WebSocket p99", "lost / duplicated, WebSocket", "HTTP")
	worst := 0.0
	for i := range max(len(ws.steps), len(h.steps)) {
		var rate float64
		cell := func(run *fanRun, f func(fanStep) string) string {
			if i >= len(run.steps) {
				return "–"
			}
			rate = run.steps[i].rate
			return f(run.steps[i])
		}
		lat := func(s fanStep) string {
			v := fmt.Sprintf("%s / %s", fmtDur(s.p50), fmtDur(s.p99))
			if !s.sustained() {
				v += " (" + fanWhy(s) + ")"
			}
			return v
		}
		loss := func(s fanStep) string { return fmt.Sprintf("%d / %d", s.lost, s.dup) }
		a, b := cell(ws, lat), cell(h, lat)
		q := "–"
		if i < len(ws.steps) && i < len(h.steps) && ws.steps[i].sustained() && h.steps[i].sustained() {
			x := float64(h.steps[i].p99) / math.Max(float64(ws.steps[i].p99), 1)
			q = fmt.Sprintf("%.2f×", x)
			worst = math.Max(worst, x)
		}
		r.row(t, fmtN(rate), fmtN(math.Round(rate*deliveriesPerPublish(n))), a, b, q, cell(ws, loss), cell(h, loss))
	}
	r.judge("carriers", fmt.Sprintf("at %d pages, the HTTP carrier's p99 within 2× the WebSocket's at every rate both sustain", n),
		common > 0 && worst <= 2, fmt.Sprintf("worst %.2f× (rates up to %s/s)", worst, fmtN(common)),
		"the Host writes each frame of a stream with its own flush: batch what is queued into one write, as the socket's writer does")
	hb, _ := h.best()
	wsb, _ := ws.best()
	r.judge("carriers", fmt.Sprintf("at %d pages, the HTTP carrier sustains the WebSocket's rate", n), wsb > 0 && hb >= wsb,
		fmt.Sprintf("%s vs %s publications/s", fmtN(hb), fmtN(wsb)), "profile the Host at the rate it missed (bench/cmd/fanout-server serves /debug/pprof)")
	return nil
}
