//go:build !js

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// peerDefaults is what the peers do with no options, read in their sources
// (bench/node_modules/…) at the pinned versions.
const peerDefaults = `## The peers and their defaults

Every peer runs in Node 20 with **no options** passed; these are the defaults that apply, read
in the installed sources.

**socket.io-client 4.8.4** (` + "`build/cjs/manager.js`, `contrib/backo2.js`" + `, engine.io-client 6.6 ` + "`socket.js`" + `)

| option | default | effect |
| --- | --- | --- |
| reconnection | true | |
| reconnectionAttempts | Infinity | never gives up |
| reconnectionDelay | 1000 ms | first backoff step |
| reconnectionDelayMax | 5000 ms | top of the ladder; ` + "`Math.min(ms, max)`" + ` is applied **after** the jitter, so at the top every client waits exactly 5000 ms (lockstep) |
| randomizationFactor | 0.5 | ±50% around 1000·2^n |
| timeout | 20000 ms | a connect attempt (engine.io open) still pending after this is abandoned |
| backoff reset | on every successful reconnect | a Host that accepts and drops pulls clients back to 1 s |
| transports | polling, then upgrade to websocket | each connect is an HTTP long-polling handshake first (several TCP connections with ` + "`agent: false`" + `) |
| server (socket.io 4.8.4) | pingInterval 25000, pingTimeout 20000, connectionStateRecovery off | |

**reconnecting-websocket 4.4.0** (` + "`dist/reconnecting-websocket-cjs.js`" + `), over ws 8.18.3

| option | default | effect |
| --- | --- | --- |
| minReconnectionDelay | 1000 + Math.random() × 4000 ms | drawn **once per module load**, then the same for every retry |
| maxReconnectionDelay | 10000 ms | |
| reconnectionDelayGrowFactor | 1.3 | delay = min × 1.3^(retry−1), no jitter per retry |
| minUptime | 5000 ms | the retry count resets only after 5 s open (an uptime window) |
| connectionTimeout | 4000 ms | an attempt not open after this is closed |
| maxRetries | Infinity | |
| first connect | no delay | |

How the peers are run: ` + "`bench/peers/sio-clients.js`" + ` gives each client a Manager of its own (` + "`io(url)`" + ` would
multiplex every client of a process over one Manager, unlike N pages); ` + "`bench/peers/rws-clients.js`" + `
loads a fresh copy of reconnecting-websocket per client (a page loads the module once, so each
page draws its own minReconnectionDelay; one shared copy would put every client in lockstep),
and gives each ws socket a no-op error listener (ws throws an unheard ` + "`error`" + `; a browser does
not). Neither changes an option.

**Lifeline** (the README's config table): deadline 15 s, slow warning 3 s, ladder caps 500 ms → 1 s → 2 s → 4 s →
8 s → 10 s forever, delay = cap × (1 − 0.5 × U[0,1)), the ladder resets only after a generation
stayed ready 10 s (` + "`stableAfterMs`" + `). Run as ` + "`bin/swarm`" + ` (cmd/swarm: the page's controller and gateway,
natively) against ` + "`bin/host`" + ` (cmd/host) with an empty config, except where a table says otherwise.
`

const method = `## Method

- One fault proxy (` + "`internal/test/faultproxy`" + `) per server, on loopback, all switched together by one clock in
  the harness: up; refuse (accept, then reset with SO_LINGER 0); blackhole (accept, never
  forward, never close); flap (forward, reset each connection 200 ms after its accept). Leaving
  up resets every forwarded connection, so an outage starts for everyone at the same moment.
  The proxy logs every accepted connection with its time (` + "`bench/raw/<run>/*-proxy.jsonl`" + `).
- Each client kind is one process of N clients printing one JSON line per event
  ` + "`{\"t\": ms, \"id\": i, \"event\": \"attempt\"|\"connected\"|\"disconnected\"}`" + `; one analyser reads them all.
- The three kinds run side by side in each scenario, on the same schedule, on the same two
  cores: compare the rows of one table; absolute times on a shared machine are noisy.
- Percentiles are nearest-rank over the clients: p99 of 50 clients is the worst of them; of 200, the 198th.
`

func (e *env) writeResults(path string, rep *report, started time.Time, chosen []scenario) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Lifeline benchmarks\n\n")
	// Whatever is measured by hand or by another program has a file of its own, so that this
	// one can be rewritten whole: the fleet's is FLEET.md, the page-load levers' PAGELOAD.md,
	// the fan-out's and Append's tails, profiled by hand, TAILS.md.
	fmt.Fprintf(&b, "Written by `make bench` (`go run ./bench/harness`); do not edit by hand, run it again. The\n")
	fmt.Fprintf(&b, "fleet's figures (`go run ./e2e/fleet`, `go run ./bench/cmd/streamlogs`) are in [FLEET.md](FLEET.md),\n")
	fmt.Fprintf(&b, "what each page-load lever did in [PAGELOAD.md](PAGELOAD.md), and where the fan-out's and Append's\n")
	fmt.Fprintf(&b, "tails go (issue 37) in [TAILS.md](TAILS.md): `make bench` touches none of them.\n\n")
	fmt.Fprintf(&b, "| | |\n| --- | --- |\n")
	fmt.Fprintf(&b, "| date | %s (%.0f min) |\n", started.UTC().Format("2006-01-02 15:04 MST"), time.Since(started).Minutes())
	fmt.Fprintf(&b, "| machine | %s |\n", machine())
	fmt.Fprintf(&b, "| scale | %g", e.scale)
	if e.scale < 1 {
		fmt.Fprintf(&b, " (quick mode: durations and client counts × %g; the aims are for scale 1)", e.scale)
	}
	fmt.Fprintf(&b, " |\n")
	fmt.Fprintf(&b, "| Lifeline | %s, %s |\n", cmdOut("git", "-C", e.root, "describe", "--always", "--dirty"), cmdOut("go", "version"))
	fmt.Fprintf(&b, "| Node | %s |\n", cmdOut(e.node, "--version"))
	fmt.Fprintf(&b, "| peers | socket.io-client %s, socket.io %s, reconnecting-websocket %s, ws %s |\n",
		e.pkgVersion("socket.io-client"), e.pkgVersion("socket.io"), e.pkgVersion("reconnecting-websocket"), e.pkgVersion("ws"))
	fmt.Fprintf(&b, "| browser | %s, playwright-core %s |\n", cmdOut("/usr/bin/chromium", "--version"), e.pkgVersion("playwright-core"))
	var ids []string
	for _, s := range chosen {
		ids = append(ids, s.id)
	}
	fmt.Fprintf(&b, "| scenarios | %s |\n\n", strings.Join(ids, ", "))

	fmt.Fprintf(&b, "## Aims\n\n")
	missed, skipped := 0, 0
	for _, v := range rep.verdicts {
		switch {
		case v.skipped:
			skipped++
		case !v.met:
			missed++
		}
	}
	judged := len(rep.verdicts) - skipped
	fmt.Fprintf(&b, "%d of %d aims met", judged-missed, judged)
	if skipped > 0 {
		fmt.Fprintf(&b, "; %d not judged (they hold for scale 1)", skipped)
	}
	fmt.Fprintf(&b, ".\n\n| scenario | aim | Lifeline | |\n| --- | --- | --- | --- |\n")
	for _, v := range rep.verdicts {
		mark := "met"
		switch {
		case v.skipped:
			mark = "not judged"
		case !v.met:
			mark = "**missed**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", v.scenario, v.aim, v.measured, mark)
	}
	fmt.Fprintln(&b)
	if missed > 0 {
		fmt.Fprintf(&b, "### Where Lifeline misses an aim, and what it would take\n\n")
		for _, v := range rep.verdicts {
			if !v.met && !v.skipped {
				fmt.Fprintf(&b, "- **%s: %s** — measured %s. %s\n", v.scenario, v.aim, v.measured, capitalize(v.take))
			}
		}
		fmt.Fprintln(&b)
	}
	if len(rep.errors) > 0 {
		fmt.Fprintf(&b, "### Scenarios that failed to run\n\n")
		for _, s := range rep.errors {
			fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(s, "\n", " "))
		}
		fmt.Fprintln(&b)
	}

	fmt.Fprintf(&b, "### How close the aims sit to the ladder's own design\n\n")
	fmt.Fprintf(&b, "Lifeline's ladder alone (controller.Delay with the default config), simulated %d times on each scenario's schedule with dials that take no time: several aims sit at what the ladder gives by design, so a single run falls either side of them by chance. A miss on such an aim is a property of the defaults, not of the code; meeting it in every run takes other defaults (see the notes under each table).\n\n", ladderTrials)
	b.WriteString(ladderOdds())
	fmt.Fprintln(&b)

	var stalls []string
	if rep.stalls != nil {
		for _, st := range rep.stalls.all() {
			stalls = append(stalls, fmt.Sprintf("%s (%.1f s)", st.at.UTC().Format("15:04:05"), st.d.Seconds()))
		}
	}
	if len(rep.warnings) > 0 || len(stalls) > 0 {
		fmt.Fprintf(&b, "### The machine during the run\n\n")
		for _, w := range rep.warnings {
			fmt.Fprintf(&b, "- %s\n", w)
		}
		if len(stalls) > 0 {
			fmt.Fprintf(&b, "- the harness's process was not scheduled for more than %v at: %s\n", stallThreshold, strings.Join(stalls, ", "))
		}
		fmt.Fprintln(&b)
	}

	fmt.Fprintf(&b, "## Results\n\n")
	for _, t := range rep.tables {
		t.markdown(&b)
	}
	b.WriteString(peerDefaults)
	b.WriteString("\n")
	b.WriteString(method)
	fmt.Fprintf(&b, "\nRaw logs of this run: `bench/raw/%s/` (not committed).\n", filepath.Base(e.raw))
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
