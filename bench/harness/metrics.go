//go:build !js

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// s11Metrics: what the Host's metrics cost (bin/host -metrics against none): Host CPU under the
// fan-out load and RSS per session, with n sessions following the ticks stream (one event a
// second to every page) and /metrics scraped every 5 s, as a Prometheus would; then every
// page dropped at once and back, for the report frames' bytes per recovery.
func (e *env) s11Metrics(r *report) error {
	n, window := e.n(10000, 500), e.d(60*time.Second, 15*time.Second)
	t := r.table(fmt.Sprintf("11. The cost of metrics, %d sessions", n),
		"≤ 5% more Host CPU under the fan-out load, ≤ 1 KiB more RSS per session with -metrics",
		"Host", "sessions", "CPU (% of a core)", "CPU per 1,000 sessions", "RSS per session", "how")
	// Off, on, off, on: each figure is the lesser of its two runs, the one a neighbour on
	// the machine disturbed least.
	var off, on cost
	for round := range 2 {
		for _, metrics := range []bool{false, true} {
			c, err := e.s11Run(fmt.Sprintf("s11-%d-%v", round+1, metrics), n, window, metrics)
			if err != nil {
				return err
			}
			best := &off
			if metrics {
				best = &on
			}
			*best = c.least(*best, round == 0)
		}
	}
	for _, c := range []cost{off, on} {
		r.row(t, c.name, fmt.Sprint(c.sessions), fmt.Sprintf("%.1f %%", c.cpu*100), fmt.Sprintf("%.2f %%", c.cpu*100*1000/float64(max(c.sessions, 1))),
			fmt.Sprintf("%.2f KiB", c.rssPer/1024), fmt.Sprintf("the lesser of two runs: CPU over %v of ticks fanned out to every session%s", window, c.how))
	}
	moreCPU := on.cpuPer()/off.cpuPer() - 1
	moreRSS := on.rssPer - off.rssPer
	r.row(t, "metrics on − off", "", fmt.Sprintf("%+.1f %%", moreCPU*100), "", fmt.Sprintf("%+.2f KiB", moreRSS/1024), "per session, on against off")
	full := e.scale >= 1
	r.judgeFull(full, "11", "-metrics costs ≤ 5% more Host CPU under the fan-out load", moreCPU <= 0.05, fmt.Sprintf("%+.1f %%", moreCPU*100),
		"the Observer's calls are one per event (not per page) on the fan-out path: a miss is the scrape's cost, or noise of a shared machine (run it again)")
	r.judgeFull(full, "11", "-metrics costs ≤ 1 KiB more RSS per session", moreRSS <= 1024, fmt.Sprintf("%+.2f KiB", moreRSS/1024),
		"a session's watch (mode, start, close code) is ~60 bytes; a miss is the Prometheus registry's, not per session")
	if on.reports > 0 {
		r.row(t, "report frames", fmt.Sprint(on.reports), "", "", "",
			fmt.Sprintf("every page dropped at once (fault mode outage, 1 s) and back: %.0f bytes of report per recovery (%.0f with the WebSocket frame's 6), p99 of their time disconnected %.1f s",
				on.reportBytes/on.reports, on.reportBytes/on.reports+6, on.p99Down))
	} else {
		r.note(t, "no report frame reached the Host after the drop: the bytes per recovery are not measured")
	}
	r.note(t, "CPU is the Host process's utime+stime over the window (/proc/<pid>/stat); RSS after every page connected, less the idle Host's, per session (each the least of five samples). Figures from a shared 2-core machine are indicative only; the runs are one after the other (off, on, off, on), not side by side")
	return nil
}

// cost is one run of scenario 11.
type cost struct {
	name        string
	sessions    int
	cpu         float64 // cores busy over the window
	rssPer      float64 // bytes per session
	reports     float64 // report frames after the drop (with -metrics)
	reportBytes float64
	p99Down     float64
	how         string
}

func (c cost) cpuPer() float64 { return c.cpu / float64(max(c.sessions, 1)) }

// least is c with the lesser CPU and RSS per session of c and an earlier run (none when
// first), and c's reports.
func (c cost) least(earlier cost, first bool) cost {
	if first {
		return c
	}
	if earlier.cpuPer() < c.cpuPer() {
		c.cpu, c.sessions = earlier.cpu, earlier.sessions
	}
	c.rssPer = min(c.rssPer, earlier.rssPer)
	return c
}

func (e *env) s11Run(name string, n int, window time.Duration, metrics bool) (cost, error) {
	c := cost{name: "-metrics off"}
	var extra []string
	var metricsURL string
	if metrics {
		port, err := testbed.FreePort()
		if err != nil {
			return c, err
		}
		metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
		extra = []string{"-metrics", fmt.Sprintf("127.0.0.1:%d", port)}
		c.name, c.how = "-metrics on", ", /metrics scraped every 5 s"
	}
	host, err := e.startServer(kLifeline, name+"-host", 0, openHostCfg, extra...)
	if err != nil {
		return c, err
	}
	defer host.proc.Stop(5 * time.Second)
	idle, err := steadyRSS(host.proc.Pid())
	if err != nil {
		return c, err
	}
	clients, fl, err := e.startClients(kLifeline, name+"-clients", clientURL(kLifeline, host.addr()), n, "-sub", "ticks")
	if err != nil {
		return c, err
	}
	defer clients.Stop(10 * time.Second)
	if !waitFor(180*time.Second, func() bool { return fl.connectedNow() >= n }) {
		return c, fmt.Errorf("%s: only %d of %d clients connected within 180 s", name, fl.connectedNow(), n)
	}
	time.Sleep(2 * time.Second) // the connect burst's garbage
	rss, err := steadyRSS(host.proc.Pid())
	if err != nil {
		return c, err
	}
	h, _ := getHealth(host.addr())
	c.sessions = h.Sessions
	c.rssPer = float64(rss-idle) / float64(max(h.Sessions, 1))

	cpu0, err := cpuTime(host.proc.Pid())
	if err != nil {
		return c, err
	}
	t0 := time.Now()
	for time.Since(t0) < window {
		time.Sleep(min(5*time.Second, window-time.Since(t0)))
		if metrics {
			if _, err := scrapeText(metricsURL); err != nil {
				return c, err
			}
		}
	}
	cpu1, err := cpuTime(host.proc.Pid())
	if err != nil {
		return c, err
	}
	c.cpu = (cpu1 - cpu0).Seconds() / time.Since(t0).Seconds()
	if !metrics {
		return c, nil
	}

	// Every page at once: dropped, refused for a second, back; each reports its recovery.
	if err := testbed.SetFault(context.Background(), "http://"+host.addr(), "outage"); err != nil {
		return c, err
	}
	time.Sleep(time.Second)
	if err := testbed.SetFault(context.Background(), "http://"+host.addr(), "up"); err != nil {
		return c, err
	}
	waitFor(60*time.Second, func() bool {
		text, err := scrapeText(metricsURL)
		return err == nil && sumOf(text, "lifeline_page_disconnected_seconds_count") >= float64(n)
	})
	text, err := scrapeText(metricsURL)
	if err != nil {
		return c, err
	}
	c.reports = sumOf(text, "lifeline_page_disconnected_seconds_count")
	c.reportBytes = sumOf(text, "lifeline_page_report_bytes_total")
	c.p99Down = bucketQuantile(text, "lifeline_page_disconnected_seconds_bucket", 0.99)
	return c, nil
}

// steadyRSS is the least of a process's RSS over five samples 0.5 s apart: the garbage
// collector's swings are larger than what one Host's metrics add per session.
func steadyRSS(pid int) (int64, error) {
	least := int64(-1)
	for i := range 5 {
		if i > 0 {
			time.Sleep(500 * time.Millisecond)
		}
		v, err := rssBytes(pid)
		if err != nil {
			return 0, err
		}
		if least < 0 || v < least {
			least = v
		}
	}
	return least, nil
}

// cpuTime is a process's user and system time (/proc/<pid>/stat, in clock ticks of 10 ms).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count fields after its closing parenthesis.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

func scrapeText(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), nil
}

var sampleLine = regexp.MustCompile(`^([a-z_:]+)(\{[^}]*\})? (\S+)$`)

// sumOf adds every sample of name in a text exposition.
func sumOf(text, name string) float64 {
	var sum float64
	for line := range strings.Lines(text) {
		m := sampleLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil || m[1] != name {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

var leLabel = regexp.MustCompile(`le="([^"]+)"`)

// bucketQuantile is the upper bound of the bucket holding the q-quantile of a histogram's
// buckets summed over its other labels.
func bucketQuantile(text, name string, q float64) float64 {
	counts := map[float64]float64{}
	var les []float64
	for line := range strings.Lines(text) {
		m := sampleLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil || m[1] != name {
			continue
		}
		lm := leLabel.FindStringSubmatch(m[2])
		if lm == nil {
			continue
		}
		le, err1 := strconv.ParseFloat(lm[1], 64)
		v, err2 := strconv.ParseFloat(m[3], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if _, ok := counts[le]; !ok {
			les = append(les, le)
		}
		counts[le] += v
	}
	if len(les) == 0 {
		return 0
	}
	slices.Sort(les)
	total := counts[les[len(les)-1]]
	for _, le := range les {
		if counts[le] >= q*total {
			return le
		}
	}
	return les[len(les)-1]
}
