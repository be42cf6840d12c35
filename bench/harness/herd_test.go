//go:build !js

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/internal/test/faultproxy"
)

// The moments of a canned run: the cut at t0, the return at t1 = t0 + 10 s.
var (
	herdT0 = time.UnixMilli(1_000_000)
	herdT1 = herdT0.Add(10 * time.Second)
)

func msAfter(base time.Time, ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }

// herdRecords: the page loads and the sessions before the cut, the refused dials and probes
// during it, and after the return two sessions that lasted, a 1013 refusal (answered, closed
// 20 ms later), an HTTP probe refused… and a connection the Host never answered.
func herdRecords() []faultproxy.Record {
	return []faultproxy.Record{
		{ID: 1, Accepted: msAfter(herdT0, -9000), Mode: faultproxy.Up, FirstReply: msAfter(herdT0, -8990), Ended: msAfter(herdT0, 0)},
		{ID: 2, Accepted: msAfter(herdT0, -8000), Mode: faultproxy.Up, FirstReply: msAfter(herdT0, -7990), Ended: msAfter(herdT0, 0)},
		{ID: 3, Accepted: msAfter(herdT0, 300), Mode: faultproxy.Refuse, Ended: msAfter(herdT0, 300)},
		{ID: 4, Accepted: msAfter(herdT0, 310), Mode: faultproxy.Refuse, Ended: msAfter(herdT0, 310)},
		{ID: 5, Accepted: msAfter(herdT0, 4000), Mode: faultproxy.Refuse, Ended: msAfter(herdT0, 4000)},
		{ID: 6, Accepted: msAfter(herdT1, 800), Mode: faultproxy.Up, FirstReply: msAfter(herdT1, 810)},                               // lasting, still open
		{ID: 7, Accepted: msAfter(herdT1, 900), Mode: faultproxy.Up, FirstReply: msAfter(herdT1, 910), Ended: msAfter(herdT1, 2000)}, // lasted 1.09 s
		{ID: 8, Accepted: msAfter(herdT1, 950), Mode: faultproxy.Up, FirstReply: msAfter(herdT1, 960), Ended: msAfter(herdT1, 980)},  // refused by the Host
		{ID: 9, Accepted: msAfter(herdT1, 990), Mode: faultproxy.Up},                                                                 // never answered
	}
}

// tab builds a herdTab from (ms from t0, state) pairs and its final state.
func tab(b, i int, final string, states ...any) herdTab {
	ht := herdTab{Browser: b, Tab: i}
	for k := 0; k+1 < len(states); k += 2 {
		ht.States = append(ht.States, struct {
			T     int64
			State string
		}{msAfter(herdT0, states[k].(int)).UnixMilli(), states[k+1].(string)})
	}
	if final != "" {
		ht.Final = &struct{ State, DOM string }{"connected", final}
	}
	return ht
}

func TestAnalyseHerd(t *testing.T) {
	tabs := []herdTab{
		// Browser 0: both tabs cut, both back 1.2 s after the return, agreeing.
		tab(0, 0, "connected", -5000, "connected", 5, "reconnecting", 11200, "connected"),
		tab(0, 1, "connected", -4000, "connected", 6, "reconnecting", 11200, "connected"),
		// Browser 1: tab 0 back at 2.5 s; tab 1 never left connected (it missed the outage),
		// and its DOM shows reconnecting at the end: the browser does not agree.
		tab(1, 0, "connected", -3000, "connected", 5, "reconnecting", 7000, "slow", 12500, "connected"),
		tab(1, 1, "reconnecting", -2000, "connected"),
		// Browser 2: tab 1 showed connected before the return (a stale event) and never after:
		// down, not back, and its final state unread.
		tab(2, 0, "connected", -3000, "connected", 5, "reconnecting", 10500, "connected"),
		tab(2, 1, "", -3000, "connected", 5, "reconnecting", 9000, "connected"),
	}
	f := analyseHerd(herdRecords(), tabs, 3, 2, herdT0, herdT1)
	want := herdFigures{Browsers: 3, Tabs: 2, Returning: 2, DialsOutage: 3, DialsAfter: 4,
		Down: 5, Back: 4, AllBack: 2500 * time.Millisecond, Agree: 1, SameSeq: 2}
	if f != want {
		t.Errorf("analyseHerd:\n got %+v\nwant %+v", f, want)
	}
	f.HostBefore, f.HostAfter, f.HostUpgrades = 3, 3, 3
	if herdMet(f, true) {
		t.Errorf("herdMet(%+v) = true with tabs not back", f)
	}
}

func TestHerdMet(t *testing.T) {
	all := herdFigures{Browsers: 50, Tabs: 4, Down: 200, Back: 200, Agree: 50}
	for _, c := range []struct {
		name                             string
		shared                           bool
		upgrades, before, after, returns int
		want                             bool
	}{
		{"shared: one socket per browser", true, 50, 50, 50, 50, true},
		{"shared: a probe kept alive across the return is one more TCP connection, not a socket", true, 50, 50, 50, 51, true},
		{"shared: one socket per tab is the herd the mode exists to avoid", true, 200, 50, 50, 200, false},
		{"shared: a hub that dialled twice", true, 51, 50, 50, 51, false},
		{"shared: a tab with a socket of its own", true, 50, 51, 51, 51, false},
		{"shared: the Host counts a session the proxy never saw come back", true, 50, 50, 50, 49, false},
		{"shared: a browser did not come back", true, 49, 50, 49, 49, false},
		{"in-page: one socket per tab", false, 200, 200, 200, 200, true},
		{"in-page: 50 would mean tabs not back", false, 50, 200, 50, 50, false},
	} {
		f := all
		f.HostUpgrades, f.HostBefore, f.HostAfter, f.Returning = c.upgrades, c.before, c.after, c.returns
		if got := herdMet(f, c.shared); got != c.want {
			t.Errorf("%s: herdMet(%+v) = %v, want %v", c.name, f, got, c.want)
		}
	}
	notBack := all
	notBack.Back = 199
	notBack.HostUpgrades, notBack.HostBefore, notBack.HostAfter, notBack.Returning = 50, 50, 50, 50
	if herdMet(notBack, true) {
		t.Error("herdMet with a tab not back = true")
	}
	disagree := notBack
	disagree.Back, disagree.Agree = 200, 49
	if herdMet(disagree, true) {
		t.Error("herdMet with a browser whose tabs disagree = true")
	}
}

// readHerdResult finds the last result line among the driver's others (a scenario run again
// after a stall appends to the same log) and reads its tabs as herd.js writes them
// (lower-case keys).
func TestReadHerdResult(t *testing.T) {
	path := filepath.Join(t.TempDir(), "herd.out")
	earlier := `{"event":"result","t":4,"tabs":[{"browser":0,"tab":0,"states":[]}],"errors":[]}`
	res := `{"event":"result","t":5,"tabs":[{"browser":1,"tab":3,"states":[{"t":2,"state":"connected"}],"final":{"state":"connected","dom":"reconnecting"}}],"errors":["x"]}`
	if err := os.WriteFile(path, []byte(earlier+"\n"+`{"event":"ready","t":1,"opened":900}`+"\n"+`{"event":"down","t":3}`+"\n"+res+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := readHerdResult(path)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(l.Tabs)
	if len(l.Tabs) != 1 || l.Tabs[0].Browser != 1 || l.Tabs[0].Tab != 3 || len(l.Tabs[0].States) != 1 ||
		l.Tabs[0].States[0].T != 2 || l.Tabs[0].Final == nil || l.Tabs[0].Final.DOM != "reconnecting" || len(l.Errors) != 1 {
		t.Errorf("readHerdResult: %s, errors %q", got, l.Errors)
	}
	if err := os.WriteFile(path, []byte(`{"event":"ready","t":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readHerdResult(path); err == nil {
		t.Error("readHerdResult of a log without a result: no error")
	}
}
