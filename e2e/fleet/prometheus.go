//go:build !js

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/test/testbed"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// A real Prometheus (Debian's, installed by scripts/setup.sh metrics) scrapes the three Hosts'
// -metrics every second and evaluates deploy/lifeline-rules.yml; the fleet asks it, through its
// HTTP API, whether the metrics say what the fleet did: the session gauge follows the pages,
// the refusals and goaways are the ones the fleet caused, and the time disconnected the pages
// the SIGKILL cut reported is within the bound the fleet asserts on their own clocks. Every
// Host's /metrics passes promtool check metrics, and every query of deploy/'s dashboard and
// rules runs.

// prom is the fleet's Prometheus.
type prom struct {
	addr string   // its HTTP API
	jobs []string // the Hosts' metrics addresses, h1..h3
}

// promBound is how long the fleet waits for Prometheus to see something: a few scrapes, at
// the scrape interval of promConfig (1 s).
const promBound = 15 * time.Second

const promConfig = `global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
rule_files:
  - {{RULES}}
scrape_configs:
  - job_name: lifeline
    static_configs:
      - {targets: ["{{M1}}"], labels: {host: h1}}
      - {targets: ["{{M2}}"], labels: {host: h2}}
      - {targets: ["{{M3}}"], labels: {host: h3}}
`

// startPrometheus starts Prometheus scraping the Hosts' metrics and waits until it has scraped
// each of them.
func (f *fleet) startPrometheus() error {
	rules, err := filepath.Abs("deploy/lifeline-rules.yml")
	if err != nil {
		return err
	}
	if out, err := exec.Command("promtool", "check", "rules", rules).CombinedOutput(); err != nil {
		return fmt.Errorf("promtool check rules %s: %v\n%s", rules, err, out)
	}
	dir := filepath.Join(f.dir, "prometheus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	conf := strings.NewReplacer("{{RULES}}", rules, "{{M1}}", f.metricsAddr[0], "{{M2}}", f.metricsAddr[1], "{{M3}}", f.metricsAddr[2]).Replace(promConfig)
	path := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return err
	}
	f.prom = &prom{addr: freeAddr(), jobs: f.metricsAddr[:]}
	if _, err := f.start("prometheus", nil, "prometheus", "--config.file="+path, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+f.prom.addr, "--log.level=warn"); err != nil {
		return err
	}
	if err := waitHTTP("http://"+f.prom.addr+"/-/ready", 30*time.Second); err != nil {
		return fmt.Errorf("prometheus: %w", err)
	}
	return f.waitProm("Prometheus to scrape the three Hosts", func() (bool, string) {
		v, err := f.prom.scalar(`count(up{job="lifeline"} == 1)`, time.Time{})
		return err == nil && v == 3, fmt.Sprintf("up: %v %v", v, err)
	})
}

// waitProm polls cond until it holds, at most promBound; its text says what was seen last.
func (f *fleet) waitProm(what string, cond func() (bool, string)) error {
	var last string
	ok := testbed.Poll(context.Background(), promBound, 250*time.Millisecond, func() bool {
		var done bool
		done, last = cond()
		return done
	})
	if !ok {
		return fmt.Errorf("prometheus: timed out after %v waiting for %s (last seen: %s)", promBound, what, last)
	}
	return nil
}

// sample is one series of an instant vector.
type sample struct {
	Metric map[string]string
	Value  float64
}

// query runs an instant query at t (now when zero).
func (p *prom) query(q string, t time.Time) ([]sample, error) {
	v := url.Values{"query": {q}}
	if !t.IsZero() {
		v.Set("time", strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.addr+"/api/v1/query?"+v.Encode(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status    string `json:"status"`
		Error     string `json:"error"`
		ErrorType string `json:"errorType"`
		Data      struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("prometheus: %s: %v", q, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("prometheus: %s: %s: %s", q, body.ErrorType, body.Error)
	}
	var out []sample
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("prometheus: %s: value %q", q, s)
		}
		out = append(out, sample{Metric: r.Metric, Value: x})
	}
	return out, nil
}

// scalar runs a query whose answer is one series, or none (then NaN).
func (p *prom) scalar(q string, t time.Time) (float64, error) {
	s, err := p.query(q, t)
	switch {
	case err != nil:
		return math.NaN(), err
	case len(s) == 0:
		return math.NaN(), nil
	case len(s) > 1:
		return math.NaN(), fmt.Errorf("prometheus: %s: %d series, want one", q, len(s))
	}
	return s[0].Value, nil
}

// checkSessions: the fleet-wide session gauge is what the Hosts' own counts add up to, the
// swarm's clients are the native ones, and the Chromium pages are the others.
func (f *fleet) checkSessions(when string) error {
	err := f.waitProm("the session gauge to follow the pages "+when, func() (bool, string) {
		want := 0
		for i := range 3 {
			want += max(f.sessions(i), 0) // a Host killed has none, and Prometheus's series of it went stale
		}
		total, err1 := f.prom.scalar(`sum(lifeline_sessions_open)`, time.Time{})
		native, err2 := f.prom.scalar(`sum(lifeline_sessions_open{mode="native"})`, time.Time{})
		pages, err3 := f.prom.scalar(`sum(lifeline_sessions_open{mode=~"shared|in-page"})`, time.Time{})
		seen := fmt.Sprintf("lifeline_sessions_open %v (native %v, pages %v), the Hosts' health %d; %v %v %v", total, native, pages, want, err1, err2, err3)
		return total == float64(want) && native == float64(f.clientsN) && (f.pagesN == 0) == (pages == 0), seen
	})
	if err == nil {
		logf("prometheus: the session gauge follows the pages %s", when)
	}
	return err
}

// counterAt is the value of a counter's sum at t, the Host up across the window (no reset).
func (p *prom) counterAt(q string, t time.Time) (float64, error) {
	v, err := p.scalar(q, t)
	if math.IsNaN(v) && err == nil {
		return 0, nil
	}
	return v, err
}

// checkGoAways: the goaways Host i sent between from and now (it stayed up) are the ones it
// was asked to send.
func (f *fleet) checkGoAways(i int, from time.Time, want int) error {
	q := fmt.Sprintf(`sum(lifeline_goaways_total{host="h%d"})`, i+1)
	before, err := f.prom.counterAt(q, from)
	if err != nil {
		return err
	}
	err = f.waitProm(fmt.Sprintf("h%d's %d goaways", i+1, want), func() (bool, string) {
		now, err := f.prom.counterAt(q, time.Time{})
		return err == nil && now-before == float64(want), fmt.Sprintf("%v goaways since %s (%v)", now-before, from.Format("15:04:05.000"), err)
	})
	if err == nil {
		logf("prometheus: h%d sent the %d goaways the fleet asked for", i+1, want)
	}
	return err
}

// refuseOrigins opens n sockets from a foreign origin straight to Host i: each is refused
// with 1008 (origin), as the Host's metrics must say.
func (f *fleet) refuseOrigins(i, n int) error {
	q := fmt.Sprintf(`sum(lifeline_upgrades_total{host="h%d",outcome="origin"})`, i+1)
	before, err := f.prom.counterAt(q, time.Time{})
	if err != nil {
		return err
	}
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, _, err := websocket.Dial(ctx, "ws://"+f.hostAddr[i]+wire.DefaultPath, &websocket.DialOptions{
			Subprotocols: []string{wire.Subprotocol}, HTTPHeader: http.Header{"Origin": {"https://elsewhere.example"}}})
		if err != nil {
			cancel()
			return fmt.Errorf("a foreign origin's dial: %w", err)
		}
		for {
			if _, _, err := c.Read(ctx); err != nil {
				break
			}
		}
		cancel()
	}
	err = f.waitProm(fmt.Sprintf("h%d's %d origin refusals", i+1, n), func() (bool, string) {
		now, err := f.prom.counterAt(q, time.Time{})
		return err == nil && now-before == float64(n), fmt.Sprintf("%v refused since (%v)", now-before, err)
	})
	if err == nil {
		logf("prometheus: h%d counts the %d foreign-origin sockets the fleet opened", i+1, n)
	}
	return err
}

// checkNoOverload: nothing in the fleet's run is over a limit or refused for its credential:
// every such refusal counted anywhere, from the start, is 0.
func (f *fleet) checkNoOverload() error {
	s, err := f.prom.query(`sum by (outcome) (max_over_time(lifeline_upgrades_total{outcome=~"session_cap|accept_rate|address_rate|unauthenticated|forbidden|auth_error|bad_request"}[1h]))`, time.Time{})
	if err != nil {
		return err
	}
	for _, x := range s {
		if x.Value != 0 {
			return fmt.Errorf("prometheus: %v sockets refused as %s, but the fleet caused none", x.Value, x.Metric["outcome"])
		}
	}
	return nil
}

// histogram is a snapshot of the page-side histogram, summed over the Hosts up: its buckets
// by upper bound, and its counts by cause.
type histogram struct {
	buckets map[float64]float64
	byCause map[string]float64
}

func (f *fleet) reportsAt(t time.Time) (histogram, error) {
	h := histogram{buckets: map[float64]float64{}, byCause: map[string]float64{}}
	s, err := f.prom.query(`sum by (le) (lifeline_page_disconnected_seconds_bucket)`, t)
	if err != nil {
		return h, err
	}
	for _, x := range s {
		le, err := strconv.ParseFloat(x.Metric["le"], 64)
		if err != nil {
			return h, fmt.Errorf("prometheus: le %q", x.Metric["le"])
		}
		h.buckets[le] = x.Value
	}
	if s, err = f.prom.query(`sum by (cause) (lifeline_page_disconnected_seconds_count)`, t); err != nil {
		return h, err
	}
	for _, x := range s {
		h.byCause[x.Metric["cause"]] = x.Value
	}
	return h, nil
}

// since is h minus an earlier snapshot of the same Hosts.
func (h histogram) since(before histogram) histogram {
	out := histogram{buckets: map[float64]float64{}, byCause: map[string]float64{}}
	for le, v := range h.buckets {
		out.buckets[le] = v - before.buckets[le]
	}
	for c, v := range h.byCause {
		if d := v - before.byCause[c]; d != 0 {
			out.byCause[c] = d
		}
	}
	return out
}

// quantile is the upper bound of the bucket that holds the q-quantile (the bound
// histogram_quantile interpolates within), and the count.
func (h histogram) quantile(q float64) (float64, float64) {
	les := slices.Sorted(maps.Keys(h.buckets))
	if len(les) == 0 {
		return math.NaN(), 0
	}
	total := h.buckets[les[len(les)-1]] // +Inf
	for _, le := range les {
		if h.buckets[le] >= q*total {
			return le, total
		}
	}
	return math.Inf(1), total
}

// checkRecoveries: the pages the SIGKILL cut reported, to the Hosts they came back to, a time
// disconnected whose p99 is within bound, and each of them reported once. cut is the clients
// that saw the disconnect, callersCut the calls step's gateways on the victim: they report too.
func (f *fleet) checkRecoveries(before histogram, killed time.Time, cut, callersCut int, bound time.Duration) error {
	var got histogram
	err := f.waitProm(fmt.Sprintf("the reports of the %d clients the SIGKILL cut", cut), func() (bool, string) {
		now, err := f.reportsAt(time.Time{})
		if err != nil {
			return false, err.Error()
		}
		got = now.since(before)
		_, n := got.quantile(0.99)
		return n >= float64(cut), fmt.Sprintf("%v reports", n)
	})
	if err != nil {
		return err
	}
	p99, n := got.quantile(0.99)
	promP99, _ := f.prom.scalar(fmt.Sprintf(`histogram_quantile(0.99, sum by (le) (increase(lifeline_page_disconnected_seconds_bucket[%ds])))`,
		int(time.Since(killed).Seconds())+2), time.Time{})
	logf("prometheus: %v reports after the SIGKILL (the clients saw %d disconnects); p99 of the time disconnected ≤ %vs (histogram_quantile %.2fs); by cause %v",
		n, cut, p99, promP99, got.byCause)
	// A SIGKILLed Host's sockets are closed by its kernel: every page saw its session closed.
	if got.byCause["closed"] != n {
		return fmt.Errorf("prometheus: the reports after the SIGKILL name the causes %v; every one should be closed", got.byCause)
	}
	// Each cut client reports once; the callers and the Chromium pages the SIGKILL cut report
	// too. (Counting the clients alone failed CI once: 74 reports for 69 clients, 4 callers
	// and 1 page.)
	if n > float64(cut+callersCut+f.pagesN) {
		return fmt.Errorf("prometheus: %v reports after the SIGKILL, but only %d clients, %d callers and %d pages could have been cut", n, cut, callersCut, f.pagesN)
	}
	if p99 > bound.Seconds() {
		return fmt.Errorf("prometheus: the p99 of the time disconnected the cut pages reported is within the bucket ≤ %vs, over the fleet's bound of %v", p99, bound)
	}
	return nil
}

// checkMetricsLint runs promtool check metrics on every Host's /metrics.
func (f *fleet) checkMetricsLint() error {
	for i, addr := range f.metricsAddr {
		body, err := getBody("http://" + addr + "/metrics")
		if err != nil {
			return fmt.Errorf("h%d's metrics: %w", i+1, err)
		}
		cmd := exec.Command("promtool", "check", "metrics")
		cmd.Stdin = bytes.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("promtool check metrics on h%d's /metrics: %v\n%s", i+1, err, out)
		}
	}
	logf("prometheus: promtool check metrics passes on every Host's /metrics")
	return nil
}

func getBody(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// checkDeployQueries runs every query of deploy/'s dashboard against the fleet's Prometheus
// (Grafana's variables as Grafana would fill them), and checks that every rule of
// deploy/lifeline-rules.yml evaluates without error.
func (f *fleet) checkDeployQueries() error {
	b, err := os.ReadFile("deploy/lifeline-dashboard.json")
	if err != nil {
		return err
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return err
	}
	grafana := strings.NewReplacer(`$instance`, `.*`, `$__rate_interval`, `1m`)
	n := 0
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			if _, err := f.prom.query(grafana.Replace(t.Expr), time.Time{}); err != nil {
				return fmt.Errorf("the dashboard's panel %q: %w", p.Title, err)
			}
			n++
		}
	}
	var rules struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name, Health, LastError string
				}
			}
		}
	}
	err = f.waitProm("every rule evaluated", func() (bool, string) {
		body, err := getBody("http://" + f.prom.addr + "/api/v1/rules")
		if err != nil {
			return false, err.Error()
		}
		if err := json.Unmarshal(body, &rules); err != nil {
			return false, err.Error()
		}
		var bad []string
		count := 0
		for _, g := range rules.Data.Groups {
			for _, r := range g.Rules {
				count++
				if r.Health != "ok" {
					bad = append(bad, fmt.Sprintf("%s: %s %s", r.Name, r.Health, r.LastError))
				}
			}
		}
		return count > 0 && len(bad) == 0, fmt.Sprintf("%d rules; not ok: %v", count, bad)
	})
	if err == nil {
		logf("prometheus: the dashboard's %d queries run, and every rule of deploy/lifeline-rules.yml evaluates", n)
	}
	return err
}
