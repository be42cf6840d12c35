//go:build !js

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// freezeBound is how long after resuming a page is watched: past socket.io's ping timer
// (pingInterval 25 s + pingTimeout 20 s after the last ping) and Lifeline's watchdog
// (2.5 × 15 s), so that a client that does not probe is seen noticing by its timers, and
// past a few of socket.io's 20 s connect timeouts after that: its reconnect's polling
// requests go out on the browser's pooled keep-alive connections, which the stall froze too.
const freezeBound = 2 * time.Minute

// freezeSample is one page through one freeze, as bench/browser/freeze.js reports it. Times
// are ms since the epoch.
type freezeSample struct {
	Name, Kind, Mode               string
	FreezeMs                       float64
	SettleMs                       float64 // from connected to the freeze
	FrozenAt, StalledAt, ResumedAt float64
	Before                         freezeBefore
	Events                         []freezeEvent
}

// freezeBefore is the page at the freeze: Lifeline's state and attempt; socket.io's first
// connect and last ping (null before its first), and its engine's timers where the bundle
// did not rename them (socket.io.min.js does).
type freezeBefore struct {
	State                     string
	Attempt                   int
	ConnectedAt               float64
	LastPing                  *float64
	PingInterval, PingTimeout float64
}

// socket.io's server defaults (socket.io 4.8.4): a ping every 25 s, and the client gives up
// pingInterval + pingTimeout after its last.
const sioPingInterval, sioPingTimeout = 25_000.0, 20_000.0

// freezeEvent is a lifeline:state event (T when the page heard it, At when its hub changed
// state) or a socket.io event (Ev connect, disconnect, reconnect_attempt or reconnect_error,
// the last two its Manager's, with a Reason for disconnect and reconnect_error).
type freezeEvent struct {
	T, At        float64
	State, Error string
	Attempt      int
	Ev, Reason   string
}

// freezeOutcome is what one page did after resuming, in ms after the resume.
type freezeOutcome struct {
	Connected   bool     // connected on a new connection within the bound
	ToConnected float64  // resume → that connected
	Noticed     bool     // showed the link lost within the bound
	ToNoticed   float64  // resume → the first sign of it
	Cause       string   // how it noticed
	Failed      []string // socket.io: its reconnect attempts that failed (their errors) before it connected
	// The hub (a shared page's worker) had noticed before the page resumed: ms before the
	// resume; NaN where it had not or there is no hub.
	HubEarly float64
	PingDue  float64 // socket.io: its ping timer's due time, ms after the resume (negative: overdue); NaN if unknown
}

// analyseFreeze reads one sample: the events from the resume to bound after it.
func analyseFreeze(s freezeSample, bound time.Duration) freezeOutcome {
	o := freezeOutcome{ToConnected: math.NaN(), ToNoticed: math.NaN(), HubEarly: math.NaN(), PingDue: math.NaN()}
	end := s.ResumedAt + float64(bound.Milliseconds())
	for _, ev := range s.Events {
		if ev.T < s.ResumedAt || ev.T > end {
			continue
		}
		rel := ev.T - s.ResumedAt
		switch s.Kind {
		case kLifeline:
			if !o.Noticed && ev.State != "connected" {
				o.Noticed, o.ToNoticed, o.Cause = true, rel, lifelineCause(ev.Error)
				if ev.At > 0 && ev.At < s.ResumedAt {
					o.HubEarly = s.ResumedAt - ev.At
				}
			}
			if !o.Connected && ev.State == "connected" && ev.Attempt > s.Before.Attempt {
				o.Connected, o.ToConnected = true, rel
			}
		default:
			if !o.Noticed && ev.Ev == "disconnect" {
				o.Noticed, o.ToNoticed, o.Cause = true, rel, ev.Reason
			}
			if !o.Connected && ev.Ev == "reconnect_error" {
				o.Failed = append(o.Failed, ev.Reason)
			}
			if !o.Connected && ev.Ev == "connect" {
				o.Connected, o.ToConnected = true, rel
			}
		}
	}
	// On a new connection without a word of the old one's loss: it noticed, at the latest then.
	if o.Connected && !o.Noticed {
		o.Noticed, o.ToNoticed, o.Cause = true, o.ToConnected, "no state between"
	}
	if s.Kind != kLifeline {
		// engine.io-client sets its ping timer at the handshake (just before connect) and at
		// every ping.
		last := s.Before.ConnectedAt
		if s.Before.LastPing != nil {
			last = max(last, *s.Before.LastPing)
		}
		interval, timeout := s.Before.PingInterval, s.Before.PingTimeout
		if interval <= 0 || timeout <= 0 {
			interval, timeout = sioPingInterval, sioPingTimeout
		}
		if last > 0 {
			o.PingDue = last + interval + timeout - s.ResumedAt
		}
	}
	return o
}

// lifelineCause names what ended Lifeline's connection, from its status error.
func lifelineCause(err string) string {
	switch {
	case strings.Contains(err, "liveness probe"):
		return "probe unanswered"
	case strings.Contains(err, "no frame for"):
		return "watchdog"
	case err == "":
		return "no error given"
	}
	return err
}

// freezeRows is scenario 9's table: one row per page and freeze length, in the order the
// samples came.
func freezeRows(samples []freezeSample, bound time.Duration) [][]string {
	type key struct {
		name   string
		freeze float64
	}
	var keys []key
	groups := map[key][]freezeOutcome{}
	for _, s := range samples {
		k := key{s.Name, s.FreezeMs}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], analyseFreeze(s, bound))
	}
	var rows [][]string
	for _, k := range keys {
		outs := groups[k]
		var conn, noticed, early, due []float64
		causes, failed := map[string]int{}, map[string]int{}
		tries := 0
		for _, o := range outs {
			if o.Connected {
				conn = append(conn, o.ToConnected)
			}
			if o.Noticed {
				noticed = append(noticed, o.ToNoticed)
				c := o.Cause
				if !math.IsNaN(o.HubEarly) {
					c += ", in the worker during the freeze"
				}
				causes[c]++
			}
			if !math.IsNaN(o.HubEarly) {
				early = append(early, o.HubEarly)
			}
			for _, f := range o.Failed {
				failed[f]++
			}
			tries = max(tries, len(o.Failed))
			if !math.IsNaN(o.PingDue) {
				due = append(due, o.PingDue)
			}
		}
		var how []string
		for c, n := range causes {
			how = append(how, fmt.Sprintf("%s ×%d", c, n))
		}
		slices.Sort(how)
		if miss := len(outs) - len(noticed); miss > 0 {
			how = append(how, fmt.Sprintf("believed connected for the whole %.0f s ×%d", bound.Seconds(), miss))
		}
		if len(failed) > 0 {
			var fs []string
			for f, n := range failed {
				fs = append(fs, fmt.Sprintf("%s ×%d", f, n))
			}
			slices.Sort(fs)
			how = append(how, fmt.Sprintf("then reconnect attempts failed (%s; at most %d in a sample)", strings.Join(fs, ", "), tries))
		}
		if len(early) > 0 {
			how = append(how, fmt.Sprintf("the worker noticed %s–%s before the resume", fmtS(slices.Min(early)/1000), fmtS(slices.Max(early)/1000)))
		}
		if len(due) > 0 {
			how = append(how, fmt.Sprintf("its ping timer was due %s to %s after the resume", fmtS(slices.Min(due)/1000), fmtS(slices.Max(due)/1000)))
			if slices.Max(due) < 0 {
				how[len(how)-1] = fmt.Sprintf("its ping timer was overdue at the resume (by %s to %s)", fmtS(-slices.Max(due)/1000), fmtS(-slices.Min(due)/1000))
			}
		}
		connCell := fmtS(pct(conn, 50) / 1000)
		if len(conn) < len(outs) {
			connCell += fmt.Sprintf(" (%d never)", len(outs)-len(conn))
		}
		rows = append(rows, []string{k.name, fmtS(k.freeze / 1000), fmt.Sprint(len(outs)),
			connCell, fmtS(maxOf(conn) / 1000), fmt.Sprintf("%d/%d", len(noticed), len(outs)),
			fmtS(pct(noticed, 50) / 1000), fmtS(maxOf(noticed) / 1000), strings.Join(how, "; ")})
	}
	return rows
}

type freezeRun struct {
	Samples []freezeSample
	Errors  []string
}

// s9Freeze: a page frozen while its link went half-open, Lifeline (both modes) against
// socket.io-client, each page behind a fault proxy of its own, in one Chromium.
func (e *env) s9Freeze(r *report) error {
	freezes := []time.Duration{e.d(60*time.Second, 10*time.Second), e.d(20*time.Second, 5*time.Second)}
	n := e.n(3, 1)
	var fs []string
	for _, f := range freezes {
		fs = append(fs, fmt.Sprint(f.Milliseconds()))
	}
	t := r.table(fmt.Sprintf("9. A page frozen while its link went half-open: resume → connected, %d samples per row", n),
		"Lifeline connected again within 3 s of resuming from a 60 s freeze (issue 15)",
		"client", "freeze", "n", "resume → connected p50", "max", fmt.Sprintf("noticed within %.0f s", freezeBound.Seconds()),
		"resume → noticed p50", "max", "how it noticed")

	host, err := e.startServer(kLifeline, "s9-host", 0, "")
	if err != nil {
		return err
	}
	defer host.proc.Stop(5 * time.Second)
	sio, err := e.startServer(kSIO, "s9-sio", 0, "")
	if err != nil {
		return err
	}
	defer sio.proc.Stop(3 * time.Second)

	// A proxy per page, each with its control panel, for the driver to switch while the
	// pages are frozen.
	type page struct {
		Name    string `json:"name"`
		Kind    string `json:"kind"`
		Mode    string `json:"mode,omitempty"`
		URL     string `json:"url"`
		Control string `json:"control"`
	}
	var pages []page
	mux := http.NewServeMux()
	var stacks []*stack
	defer func() {
		for _, st := range stacks {
			st.proxy.Close()
			st.proxyF.Close()
		}
	}()
	for _, p := range []struct{ name, kind, mode, short, path string }{
		{"Lifeline shared", kLifeline, "shared", "lifeline-shared", "/"},
		{"Lifeline in-page", kLifeline, "in-page", "lifeline-inpage", "/"},
		{"socket.io-client", kSIO, "", "sio", "/page.html"},
	} {
		if !slices.Contains(allKinds, p.kind) {
			continue
		}
		up := host
		if p.kind == kSIO {
			up = sio
		}
		st := &stack{kind: p.kind}
		if err := st.addProxy(e, "s9-"+p.short, up.addr()); err != nil {
			return err
		}
		stacks = append(stacks, st)
		prefix := "/" + p.short
		mux.Handle(prefix+"/", http.StripPrefix(prefix, st.proxy.Handler()))
		pages = append(pages, page{p.name, p.kind, p.mode, "http://" + st.proxy.Addr() + p.path, prefix})
	}
	if len(pages) == 0 {
		return fmt.Errorf("scenario 9: no page of the kinds %v", allKinds)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	for i := range pages {
		pages[i].Control = "http://" + ln.Addr().String() + pages[i].Control
	}
	pj, err := json.Marshal(pages)
	if err != nil {
		return err
	}

	p, err := e.bed.Start("s9-freeze", []string{e.node, filepath.Join(e.root, "bench/browser/freeze.js"),
		"--pages", string(pj), "--freeze", strings.Join(fs, ","), "--bound", fmt.Sprint(freezeBound.Milliseconds()),
		"--n", fmt.Sprint(n)},
		&testbed.Options{Dir: filepath.Join(e.root, "bench"), DeathSig: syscall.SIGTERM})
	if err != nil {
		return err
	}
	// Each sample: the loads (30 s each at most), the freeze, the bound, the closes.
	var limit time.Duration
	for _, f := range freezes {
		limit += time.Duration(n) * (f + freezeBound + time.Duration(len(pages))*30*time.Second + 30*time.Second)
	}
	if err := p.Wait(limit + time.Minute); err != nil {
		_ = p.Stop(5 * time.Second)
		return fmt.Errorf("freeze.js: %w", err)
	}
	out, _ := os.ReadFile(p.OutLog())
	if err := p.Err(); err != nil {
		stderr, _ := os.ReadFile(p.ErrLog())
		return fmt.Errorf("freeze.js: %v: %s", err, lastLines(string(stderr), 5))
	}
	// The log is appended to: a scenario run again (the machine stalled) finds the first
	// try's output before its own.
	var res freezeRun
	if err := json.Unmarshal([]byte(lastLines(string(out), 1)), &res); err != nil {
		return fmt.Errorf("freeze.js printed %q: %w", lastLines(string(out), 3), err)
	}
	for _, row := range freezeRows(res.Samples, freezeBound) {
		r.row(t, row...)
	}
	for _, f := range freezes[:1] {
		var worst float64
		got, never := 0, 0
		for _, s := range res.Samples {
			if s.Kind != kLifeline || s.FreezeMs != float64(f.Milliseconds()) {
				continue
			}
			got++
			o := analyseFreeze(s, freezeBound)
			if !o.Connected {
				never++
				continue
			}
			worst = max(worst, o.ToConnected)
		}
		measured := fmt.Sprintf("max %s over %d samples", fmtS(worst/1000), got)
		if never > 0 {
			measured += fmt.Sprintf(", %d not connected within %.0f s", never, freezeBound.Seconds())
		}
		r.judgeFull(e.scale >= 1, "9", fmt.Sprintf("a page frozen %.0f s over a half-open link connected again ≤ 3 s after resuming", f.Seconds()),
			got > 0 && never == 0 && worst <= 3000, measured,
			"the page probes its link on resume (and on a late timer): a probe unanswered within 2 s ends the generation, then the first rung (≤ 500 ms) and the handshake")
	}
	r.note(t, "each sample loads every page in a fresh context of one Chromium, freezes them all at once (the debugger pauses the page's JavaScript: this headless Chromium's Page.setWebLifecycleState 'frozen' changes nothing), switches every page's proxy to stall then up (the open connections are frozen for good, no FIN, no RST; new ones are forwarded), resumes the pages after the freeze and dispatches the lifecycle's resume event to them; the figures are from the page's own events (Date.now(), one clock with the driver's)")
	r.note(t, "connected: Lifeline's `lifeline:state` connected with a new attempt; socket.io's `connect` after the resume. Noticed: the first state other than connected (Lifeline), `disconnect` (socket.io, with its reason); a page still showing connected %.0f s after the resume believed it all along", freezeBound.Seconds())
	r.note(t, "a shared page's hub is its SharedWorker, which the debugger does not pause: over a freeze longer than its watchdog (2.5 × 15 s heartbeat) the worker finds the dead link and reconnects while the page is frozen, and the page hears of it all at once on resuming")
	r.note(t, "socket.io-client (engine.io-client 6.6) closes with `ping timeout` when no ping came for pingInterval + pingTimeout (25 + 20 s after its handshake or its last ping): a timer, and a check of its due time when the page emits; it does not listen for the page's resume, so after a freeze shorter than that it believes the dead link until the timer runs out, then waits its reconnection delay (1 s ± 50%%). The samples freeze 1 s, 1 s + 25/n s, … after the connect, so that its timer's phase is spread over a ping interval")
	r.note(t, "socket.io-client's reconnect begins with HTTP long-polling requests, which Chromium sends on its pooled keep-alive connections to the origin where it has any: those the stall froze too (half-open, they look alive) swallow a request each, and each such attempt ends only at the Manager's 20 s connect timeout (`reconnect_error` timeout), with no new connection at the proxy meanwhile; the next attempt, 1–2 s later, may find another. Whether a page holds such connections depends on what Chromium kept pooled (the socket.io server, Node's http, closes an idle one after 5 s; a proxy in front, nginx say, keeps them 75 s). Lifeline dials a WebSocket, which Chromium never sends on a pooled connection")
	r.note(t, "the command: `go run ./bench/harness -only 9`; the driver is bench/browser/freeze.js, its raw output in bench/raw/<run>/s9-freeze.out")
	if len(res.Errors) > 0 {
		r.note(t, "%d samples failed, first: %s", len(res.Errors), res.Errors[0])
	}
	return nil
}
