//go:build !js

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lifeline-go/lifeline/internal/test/faultproxy"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// Scenario 8: a herd of browsers, each with several tabs of the page, through a refused
// outage. In shared mode a browser's tabs share one hub and one socket, so the Host sees one
// returning socket per browser; in-page, one per tab.

// herdTab is one tab as bench/browser/herd.js reports it: its lifeline:state events (t in ms
// since the epoch) and what it showed at the end (lifeline.state().state, the DOM contract's
// #connection-status[data-state]).
type herdTab struct {
	Browser, Tab int
	States       []struct {
		T     int64
		State string
	}
	Final *struct{ State, DOM string }
}

// herdLine is one line herd.js prints: ready, down, or the result.
type herdLine struct {
	Event  string
	T      int64
	Opened int64
	Tabs   []herdTab
	Errors []string
}

// herdFigures is what one herd run measured.
type herdFigures struct {
	Browsers, Tabs int
	// Returning counts the TCP connections accepted from the proxy's return on that the Host
	// answered and that then lasted over 500 ms (as scenario 4's sessions admitted): the
	// sessions that came back, and any HTTP connection kept alive after them (a failed dial's
	// refusal query that crossed the return), which the proxy cannot tell from a WebSocket.
	Returning int
	// DialsOutage and DialsAfter are the proxy's accepts during the outage (each one reset) and
	// from its return on, whatever they were.
	DialsOutage, DialsAfter int
	// Down counts the tabs that left connected after the cut; Back those connected again at or
	// after the proxy's return; AllBack is when the last of them was (from the return).
	Down, Back int
	AllBack    time.Duration
	// Agree counts the browsers whose tabs all show connected at the end, in the API and the
	// DOM alike; SameSeq those whose tabs saw the same sequence of states from the cut on.
	Agree, SameSeq int
	// The Host's own count (its /_lifeline/health): sessions with every tab connected before the
	// cut and once every tab is back, and the upgrade requests that reached it from the
	// return to then: the returning sockets as the Host sees them.
	HostBefore, HostAfter, HostUpgrades int
}

// analyseHerd reads one run: the proxy's records, the tabs' events, the moments of the cut
// (t0) and of the return (t1).
func analyseHerd(recs []faultproxy.Record, tabs []herdTab, browsers, perBrowser int, t0, t1 time.Time) herdFigures {
	f := herdFigures{Browsers: browsers, Tabs: perBrowser}
	for _, r := range recs {
		switch {
		case r.Accepted.Before(t0):
		case r.Accepted.Before(t1):
			f.DialsOutage++
		default:
			f.DialsAfter++
			if r.Mode == faultproxy.Up && !r.FirstReply.IsZero() &&
				(r.Ended.IsZero() || r.Ended.Sub(r.FirstReply) > 500*time.Millisecond) {
				f.Returning++
			}
		}
	}
	ms0, ms1 := t0.UnixMilli(), t1.UnixMilli()
	type shown struct{ final, seq string }
	byBrowser := map[int][]shown{}
	for _, tab := range tabs {
		down, back := false, int64(0)
		var seq []string
		for _, s := range tab.States {
			if s.T < ms0 {
				continue
			}
			if len(seq) == 0 || seq[len(seq)-1] != s.State {
				seq = append(seq, s.State)
			}
			if s.State != "connected" {
				down = true
			} else if down && back == 0 && s.T >= ms1 {
				back = s.T
			}
		}
		if down {
			f.Down++
		}
		if back != 0 {
			f.Back++
			f.AllBack = max(f.AllBack, time.Duration(back-ms1)*time.Millisecond)
		}
		final := "unread"
		if tab.Final != nil {
			final = tab.Final.State + "/" + tab.Final.DOM
		}
		byBrowser[tab.Browser] = append(byBrowser[tab.Browser], shown{final, strings.Join(seq, ",")})
	}
	for _, shows := range byBrowser {
		agree, same := len(shows) == perBrowser, len(shows) == perBrowser
		for _, s := range shows {
			agree = agree && s.final == "connected/connected"
			same = same && s.seq == shows[0].seq
		}
		if agree {
			f.Agree++
		}
		if same {
			f.SameSeq++
		}
	}
	return f
}

// herdMet is the aim: the Host saw one returning socket per browser (shared) or per tab
// (in-page), no more, and holds as many sessions before and after; every tab came back and
// every browser's tabs agree. The proxy's count bounds the Host's from above: a session the
// proxy did not see come back was not a new socket.
func herdMet(f herdFigures, shared bool) bool {
	n := f.Browsers * f.Tabs
	want := n
	if shared {
		want = f.Browsers
	}
	return f.HostUpgrades == want && f.HostBefore == want && f.HostAfter == want && f.Returning >= want &&
		f.Down == n && f.Back == n && f.Agree == f.Browsers
}

// s8Herd: B browsers × T tabs, shared mode, through a 10 s refused outage; then the same herd
// in in-page mode (a wasm instance and a socket per tab), for comparison.
func (e *env) s8Herd(r *report) error {
	const perBrowser = 4
	browsers := e.n(50, 2)
	// The in-page herd is the same size by default: its B × T sockets are the figure shared
	// mode is measured against. It is the heavy half (a Go wasm instance per tab: about 12 GB
	// and 3 minutes to open 200 tabs on a 2-core machine), so BENCH_HERD_INPAGE sets its
	// browsers apart (0: no in-page run).
	inPage := browsers
	if v := os.Getenv("BENCH_HERD_INPAGE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("BENCH_HERD_INPAGE must be a count of browsers (0: no in-page run), got %q", v)
		}
		inPage = n
	}
	outage := 10 * time.Second
	t := r.table(fmt.Sprintf("8. A herd of browsers through a %v refused outage, %d tabs each (shared mode; in-page for comparison)", outage, perBrowser),
		fmt.Sprintf("shared mode: the Host sees one returning socket per browser (%d), not one per tab (%d); every tab back, and every tab of a browser showing the same state (issue 17)", browsers, browsers*perBrowser),
		"mode", "browsers × tabs", "Host sessions before", "returning sockets (upgrades at the Host)", "Host sessions after", "lasting TCP connections back (proxy)", "TCP accepts during the outage", "TCP accepts after", "tabs down / back", "all tabs back", "browsers agreeing", "tabs opened in")
	runs := []struct {
		mode     string
		browsers int
	}{{"shared", browsers}, {"in-page", inPage}}
	if inPage == 0 {
		runs = runs[:1]
	}
	for _, run := range runs {
		if err := e.s8Run(r, t, run.mode, run.browsers, perBrowser, outage); err != nil {
			r.fail("8 "+run.mode, err)
		}
	}
	r.note(t, "each browser is a Playwright browser context of one Chromium (a SharedWorker is per profile, so each runs one hub), its tabs opened one after another, up to 4 browsers at a time; the page is the demo Host's, loaded through the fault proxy, whose refuse resets every open socket and every new one")
	r.note(t, "returning sockets: the upgrade requests that reached the Host from the proxy's return until every tab was back (the growth of its /_lifeline/health `accepted`); Host sessions: its `sessions` with every tab open, before the cut and once every tab is back")
	r.note(t, "lasting TCP connections back: the proxy's accepts from its return on that the Host answered and that lasted over 500 ms (as scenario 4's sessions admitted); the proxy cannot tell a WebSocket from an HTTP connection kept alive, so a failed dial's refusal query (a GET of the events endpoint) that crossed the return counts here too; TCP accepts during the outage are the dials and their refusal queries, each reset")
	r.note(t, "tabs down / back: tabs whose lifeline:state left connected after the cut / reached connected again after the return; all tabs back: from the return to the last tab's connected; browsers agreeing: browsers whose every tab shows connected at the end in `lifeline.state()` and `#connection-status[data-state]`; same sequence: browsers whose tabs all saw the same sequence of states from the cut on")
	r.note(t, "in-page, each tab runs its own wasm instance and socket and climbs its own ladder, so the tabs of a browser need not see the same sequence of states; in shared mode they see the hub's")
	if inPage != browsers {
		r.note(t, "in-page ran %d browsers (%d tabs) where shared ran %d (BENCH_HERD_INPAGE=%d)", inPage, inPage*perBrowser, browsers, inPage)
	}
	return nil
}

// s8Run is one herd: a Host, its proxy, the browsers; the outage; the figures.
func (e *env) s8Run(r *report, t *table, mode string, browsers, perBrowser int, outage time.Duration) error {
	name := "s8-" + mode
	host, err := e.startServer(kLifeline, name+"-host", 0, "")
	if err != nil {
		return err
	}
	defer host.proc.Stop(5 * time.Second)
	st := &stack{kind: kLifeline}
	if err := st.addProxy(e, name, host.addr()); err != nil {
		return err
	}
	defer func() { st.proxy.Close(); st.proxyF.Close() }()
	sched, err := os.Create(filepath.Join(e.raw, name+"-schedule.txt"))
	if err != nil {
		return err
	}
	defer sched.Close()
	note := func(s string) { fmt.Fprintf(sched, "%s %s\n", time.Now().Format("15:04:05.000"), s) }

	n := browsers * perBrowser
	within := outage + 60*time.Second
	openWithin := 2*time.Minute + time.Duration(n)*3*time.Second
	events := make(chan herdLine, 4)
	p, err := e.bed.Start(name+"-browsers", []string{e.node, filepath.Join(e.root, "bench/browser/herd.js"),
		"--url", "http://" + st.proxy.Addr() + "/", "--browsers", fmt.Sprint(browsers), "--tabs", fmt.Sprint(perBrowser),
		"--mode", mode, "--within", fmt.Sprint(within.Milliseconds()), "--open-within", fmt.Sprint(openWithin.Milliseconds())},
		&testbed.Options{Dir: filepath.Join(e.root, "bench"), DeathSig: syscall.SIGTERM, Lines: func(line []byte) {
			var l herdLine
			if bytes.HasPrefix(line, []byte(`{"event":"ready"`)) || bytes.HasPrefix(line, []byte(`{"event":"down"`)) ||
				bytes.HasPrefix(line, []byte(`{"event":"result"`)) {
				if json.Unmarshal(line, &l) == nil {
					select {
					case events <- herdLine{Event: l.Event, T: l.T, Opened: l.Opened}:
					default:
					}
				}
			}
		}})
	if err != nil {
		return err
	}
	defer p.Stop(10 * time.Second)
	driverFailed := func(what string) error {
		_ = p.Stop(10 * time.Second)
		res, _ := readHerdResult(p.OutLog())
		stderr, _ := os.ReadFile(p.ErrLog())
		msg := lastLines(string(stderr), 5)
		if res != nil && len(res.Errors) > 0 {
			msg = strings.Join(res.Errors, "; ")
		}
		return fmt.Errorf("herd.js %s %d×%d: %s: %s", mode, browsers, perBrowser, what, msg)
	}
	// await waits for the driver's next line of kind ev, at most d.
	await := func(ev string, d time.Duration) (herdLine, error) {
		timer := time.NewTimer(d)
		defer timer.Stop()
		for {
			select {
			case l := <-events:
				if l.Event == ev {
					return l, nil
				}
				if l.Event == "result" {
					return l, driverFailed("ended before " + ev)
				}
			case <-p.Done():
				return herdLine{}, driverFailed("exited before " + ev)
			case <-timer.C:
				return herdLine{}, driverFailed(fmt.Sprintf("no %s within %v", ev, d))
			}
		}
	}
	ready, err := await("ready", openWithin+30*time.Second)
	if err != nil {
		return err
	}
	note(fmt.Sprintf("all %d tabs connected (opened in %d ms)", n, ready.Opened))
	base := "http://" + host.addr()
	want := n
	if mode == "shared" {
		want = browsers
	}
	// The Host counts a session once its ready frame is out: a tab can show connected a moment
	// before the count settles.
	var before testbed.Health
	waitFor(5*time.Second, func() bool {
		h, err := testbed.GetHealth(context.Background(), base)
		before = h
		return err == nil && h.Sessions == want
	})
	note(fmt.Sprintf("Host sessions %d (want %d)", before.Sessions, want))

	time.Sleep(time.Second)
	t0 := time.Now()
	st.proxy.SetMode(faultproxy.Refuse)
	note("mode refuse")
	time.Sleep(outage)
	atUp, err := testbed.GetHealth(context.Background(), base)
	if err != nil {
		return err
	}
	t1 := time.Now()
	st.proxy.SetMode(faultproxy.Up)
	note("mode up")
	if _, err := await("result", 2*within+30*time.Second); err != nil {
		return err
	}
	after, err := testbed.GetHealth(context.Background(), base)
	if err != nil {
		return err
	}
	note(fmt.Sprintf("Host sessions %d, accepted %d since the return", after.Sessions, after.Accepted-atUp.Accepted))
	_ = p.Signal(syscall.SIGUSR2)
	if err := p.Wait(60 * time.Second); err != nil {
		return driverFailed("closing")
	}
	res, err := readHerdResult(p.OutLog())
	if err != nil {
		return err
	}
	f := analyseHerd(st.proxy.Records(), res.Tabs, browsers, perBrowser, t0, t1)
	f.HostBefore, f.HostAfter, f.HostUpgrades = before.Sessions, after.Sessions, int(after.Accepted-atUp.Accepted)
	if len(res.Errors) > 0 {
		r.note(t, "%s: herd.js: %s", mode, strings.Join(res.Errors, "; "))
	}
	r.row(t, mode, fmt.Sprintf("%d × %d", browsers, perBrowser), fmt.Sprint(f.HostBefore), fmt.Sprint(f.HostUpgrades), fmt.Sprint(f.HostAfter),
		fmt.Sprint(f.Returning), fmt.Sprint(f.DialsOutage), fmt.Sprint(f.DialsAfter),
		fmt.Sprintf("%d / %d of %d", f.Down, f.Back, n), fmtS(f.AllBack.Seconds()), fmt.Sprintf("%d/%d (same sequence %d)", f.Agree, browsers, f.SameSeq),
		fmtS(float64(ready.Opened)/1000))
	ok := herdMet(f, mode == "shared") && p.Err() == nil
	measured := fmt.Sprintf("%d upgrades at the Host after the return, %d sessions (%d before the cut), %d lasting TCP connections at the proxy; %d/%d tabs back within %s; %d/%d browsers agreeing",
		f.HostUpgrades, f.HostAfter, f.HostBefore, f.Returning, f.Back, n, fmtS(f.AllBack.Seconds()), f.Agree, browsers)
	if mode == "shared" {
		r.judgeFull(browsers >= 50, "8", fmt.Sprintf("shared mode, %d browsers × %d tabs through an outage: the Host sees %d returning sockets, not %d", browsers, perBrowser, browsers, n),
			ok, measured, "one hub per browser context: a tab that opens its own socket (a hub that failed to start, an in-page fallback) or a hub that dials twice shows here; see the raw schedule and the proxy log")
	} else {
		r.judge("8", fmt.Sprintf("in-page mode, %d × %d: every tab its own socket back (%d)", browsers, perBrowser, n),
			ok, measured, "in-page is one socket per tab by design: a miss here is a tab that did not come back")
	}
	return nil
}

// readHerdResult reads the last result line of herd.js's stdout log: a scenario run again
// (after a stall) appends to the same log.
func readHerdResult(path string) (*herdLine, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		if bytes.HasPrefix(sc.Bytes(), []byte(`{"event":"result"`)) {
			last = append(last[:0], sc.Bytes()...)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("harness: reading herd.js's log %s: %w", path, err)
	}
	if last == nil {
		return nil, errors.New("harness: herd.js printed no result in " + path)
	}
	var l herdLine
	if err := json.Unmarshal(last, &l); err != nil {
		return nil, fmt.Errorf("harness: herd.js's result in %s: %w", path, err)
	}
	return &l, nil
}
