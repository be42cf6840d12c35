//go:build !js

// Package metrics is a Lifeline Host's metrics in the Prometheus format. A [Metrics] is both
// the hostplugin.Observer the Host tells what it does and the prometheus.Collector an
// embedder registers:
//
//	m := metrics.New()
//	prometheus.MustRegister(m) // or a registry of the embedder's
//	h, err := hostplugin.New(cfg, &hostplugin.Options{Authorize: authorize, Observer: m})
//	http.Handle("/metrics", promhttp.Handler())
//
// It is a package of its own, so that an embedder who does not use Prometheus links none of
// it (and downloads none of it: the go command downloads a module only for the packages a
// build imports). The README's "Operating Lifeline" lists every metric and what it means;
// deploy/ has a Grafana dashboard and alerting rules built on them.
//
// Names follow the Prometheus naming guide: the lifeline_ prefix, base units (seconds,
// bytes), _total for counters, and labels from bounded sets only (outcomes, close codes,
// page modes, kinds of failure, the names of registered call handlers). A stream name, an
// identity or an address is never a label. Every series of a bounded label set exists from
// the start, at 0, so that rate() and increase() see the first event.
package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// Metrics is one Host's metrics. Create it with [New], set it as hostplugin.Options.Observer
// and register it on a prometheus.Registerer. It is safe for concurrent use; one Metrics
// serves one Host (two Hosts in a process take a Metrics each, registered with
// prometheus.WrapRegistererWith and a label that tells them apart).
type Metrics struct {
	upgrades      map[hostplugin.Upgrade]prometheus.Counter
	queries       *prometheus.CounterVec
	open, ready   map[string]prometheus.Gauge
	closed        *prometheus.CounterVec
	lived         prometheus.Histogram
	heartbeats    prometheus.Counter
	probes        prometheus.Counter
	goaways       prometheus.Counter
	subscriptions map[hostplugin.CatchUp]prometheus.Counter
	resets        map[hostplugin.CatchUp]prometheus.Counter
	liveResets    prometheus.Counter
	denied        prometheus.Counter
	published     prometheus.Counter
	appendTime    prometheus.Histogram
	appendErrors  prometheus.Counter
	delivered     prometheus.Counter
	shed          prometheus.Counter
	badFrames     prometheus.Counter
	calls         *prometheus.CounterVec
	callTime      *prometheus.HistogramVec
	drainTime     prometheus.Histogram
	drainForced   prometheus.Counter
	stopTime      prometheus.Histogram
	hostReady     prometheus.Gauge
	hostDraining  prometheus.Gauge
	gateMu        sync.Mutex // guards gateOpen and draining
	gateOpen      bool
	draining      bool
	down          map[string]prometheus.Observer
	attempts      prometheus.Histogram
	failures      map[string]prometheus.Counter
	reportBytes   prometheus.Counter
	carried       map[string]prometheus.Gauge
	sent          map[string]prometheus.Counter

	all []prometheus.Collector
}

var _ hostplugin.Observer = (*Metrics)(nil)

// Buckets of the histograms, in seconds unless said otherwise.
var (
	// DisconnectedBuckets are those of lifeline_page_disconnected_seconds: from a GOAWAY's
	// fraction of a second through the ladder's caps (the default deadline is 15 s, the top
	// cap 10 s: 25 s is a SIGKILLed Host's worst case) to an hour asleep.
	DisconnectedBuckets = []float64{0.1, 0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 25, 30, 45, 60, 120, 300, 600, 1800, 3600}
	// AttemptBuckets are those of lifeline_page_recovery_attempts (attempts, not seconds).
	AttemptBuckets = []float64{1, 2, 3, 4, 5, 7, 10, 15, 20, 30, 50, 100}
	// LatencyBuckets are those of the log's appends and the calls' handlers.
	LatencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
	// LifeBuckets are those of lifeline_session_duration_seconds: a minute to a day.
	LifeBuckets = []float64{1, 10, 60, 300, 900, 1800, 3600, 4 * 3600, 12 * 3600, 24 * 3600}
	// EndBuckets are those of the drain and stop durations (drainTimeoutMs is 10 s by default).
	EndBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60}
)

// modes are the label values of a page's mode: wire's, and "unknown" for a page that named
// none.
var modes = []string{wire.ModeShared, wire.ModeInPage, wire.ModeNative, unknownMode}

const unknownMode = "unknown"

// closeCodes are the close codes that are label values of their own; any other is "other",
// so a page closing with codes of its own (3000–4999) cannot grow the series without bound.
// wire.CloseAccessEnded (4401) is the Host's own: sessions whose access the application ended.
var closeCodes = []int{1000, 1001, 1002, 1003, 1006, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, wire.CloseAccessEnded}

// refusalStatuses are the statuses of a refusal query (hostplugin's package documentation).
var refusalStatuses = []int{401, 403, 405, 426, 429, 500, 503}

// carriers are the label values of a session's carrier.
var carriers = []string{wire.CarrierWebSocket, wire.CarrierStream, wire.CarrierPoll}

// New returns the metrics of one Host, every series of a bounded label set at 0.
func New() *Metrics {
	m := &Metrics{}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		m.all = append(m.all, c)
		return c
	}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
		m.all = append(m.all, g)
		return g
	}
	histogram := func(name, help string, buckets []float64) prometheus.Histogram {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
		m.all = append(m.all, h)
		return h
	}
	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		m.all = append(m.all, v)
		return v
	}
	gaugeVec := func(name, help, label string, values []string) map[string]prometheus.Gauge {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{label})
		m.all = append(m.all, v)
		out := map[string]prometheus.Gauge{}
		for _, x := range values {
			out[x] = v.WithLabelValues(x)
		}
		return out
	}

	upgrades := counterVec("lifeline_upgrades_total", "Requests for a socket at the events endpoint, by what became of them: admitted, or the refusal (origin, unauthenticated, forbidden, auth_error, address_rate, session_cap, accept_rate, draining, bad_request, left, injected).", "outcome")
	m.upgrades = map[hostplugin.Upgrade]prometheus.Counter{}
	for _, u := range hostplugin.Upgrades {
		m.upgrades[u] = upgrades.WithLabelValues(string(u))
	}
	m.queries = counterVec("lifeline_refusal_queries_total", "Refusal queries (a page asking why its upgrade failed), by the HTTP status answered.", "status")
	for _, s := range refusalStatuses {
		m.queries.WithLabelValues(strconv.Itoa(s))
	}
	m.open = gaugeVec("lifeline_sessions_open", "Sessions open (ready or waiting for the readiness gate), by page mode.", "mode", modes)
	m.ready = gaugeVec("lifeline_sessions_ready", "Sessions that were sent their ready frame and are open, by page mode.", "mode", modes)
	m.closed = counterVec("lifeline_sessions_closed_total", "Sessions ended, by close code: the Host's, else the page's; 1006 for a socket that dropped without one.", "code")
	for _, c := range closeCodes {
		m.closed.WithLabelValues(strconv.Itoa(c))
	}
	m.lived = histogram("lifeline_session_duration_seconds", "How long sessions lived, from the upgrade to their end.", LifeBuckets)
	m.heartbeats = counter("lifeline_heartbeats_total", "Heartbeats sent to idle sessions.")
	m.probes = counter("lifeline_probes_total", "Liveness probes (pings) of pages answered.")
	m.goaways = counter("lifeline_goaways_total", "Goaway frames sent: sessions sent elsewhere by a drain, and sockets turned away while draining.")
	subs := counterVec("lifeline_subscriptions_total", "Subscriptions caught up with their stream, by how they started: fresh (no cursor), cursor (resumed by cursor, nothing lost) or reset (the cursor could not be served: see lifeline_resets_total).", "start")
	resets := counterVec("lifeline_resets_total", "Subscriptions reset to the log's head instead of resumed, by why: epoch (a cursor of another log epoch), behind (older than the log keeps), ahead (past its head), live (what the log delivered did not follow what the page held).", "why")
	m.subscriptions, m.resets = map[hostplugin.CatchUp]prometheus.Counter{}, map[hostplugin.CatchUp]prometheus.Counter{}
	for _, c := range hostplugin.CatchUps {
		switch c {
		case hostplugin.CatchUpFresh, hostplugin.CatchUpCursor:
			m.subscriptions[c] = subs.WithLabelValues(string(c))
		default:
			m.subscriptions[c] = subs.WithLabelValues("reset")
			m.resets[c] = resets.WithLabelValues(string(c))
		}
	}
	m.liveResets = resets.WithLabelValues("live")
	m.denied = counter("lifeline_subscriptions_denied_total", "Subscriptions denied, by Authorize or past a session's stream limit.")
	m.published = counter("lifeline_events_published_total", "Events Publish appended to the stream log.")
	m.appendTime = histogram("lifeline_log_append_duration_seconds", "How long Publish's appends to the stream log took, failed ones included.", LatencyBuckets)
	m.appendErrors = counter("lifeline_log_append_errors_total", "Appends to the stream log that failed.")
	m.delivered = counter("lifeline_events_delivered_total", "Event frames queued on sessions live (one per page following the stream).")
	m.shed = counter("lifeline_sessions_shed_total", "Sessions shed because the page read too slowly (its queue was full).")
	m.badFrames = counter("lifeline_bad_frames_total", "Frames pages sent that the protocol does not allow, malformed, oversized-within-the-limit and too frequent reports included.")
	m.calls = counterVec("lifeline_calls_total", "Calls answered, by handler name (empty for a name no handler has) and outcome: ok, or the failed reply's code.", "name", "outcome")
	m.callTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lifeline_call_duration_seconds", Help: "How long call handlers ran, by handler name.", Buckets: LatencyBuckets}, []string{"name"})
	m.all = append(m.all, m.callTime)
	m.drainTime = histogram("lifeline_drain_duration_seconds", "How long Drain took, from the first goaway until every page left or the rest were closed.", EndBuckets)
	m.drainForced = counter("lifeline_drain_forced_closes_total", "Sessions Drain closed because they did not leave within drainTimeoutMs.")
	m.stopTime = histogram("lifeline_stop_duration_seconds", "How long Stop took to close every session with 1012.", EndBuckets)
	m.hostReady = gauge("lifeline_host_ready", "1 while the Host's readiness gate is open and it is not draining.")
	m.hostDraining = gauge("lifeline_host_draining", "1 once Drain or Stop began.")
	down := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lifeline_page_disconnected_seconds", Help: "How long pages were not connected before they came back to this Host, as they reported it, by what ended their session (the first kind of failure).", Buckets: DisconnectedBuckets}, []string{"cause"})
	m.all = append(m.all, down)
	m.attempts = histogram("lifeline_page_recovery_attempts", "The attempts pages took to come back, as they reported it, the one that connected included.", AttemptBuckets)
	failures := counterVec("lifeline_page_recovery_failures_total", "Kinds of failure pages met on their way back, each counted once a report.", "kind")
	m.down, m.failures = map[string]prometheus.Observer{}, map[string]prometheus.Counter{}
	for _, k := range wire.ReportKinds {
		m.down[k] = down.WithLabelValues(k)
		m.failures[k] = failures.WithLabelValues(k)
	}
	m.reportBytes = counter("lifeline_page_report_bytes_total", "Bytes of the report frames pages sent.")
	m.carried = gaugeVec("lifeline_sessions_by_carrier", "Sessions open, by carrier: websocket, or the HTTP carrier's stream or poll (for pages whose network does not carry a WebSocket).", "carrier", carriers)
	sent := counterVec("lifeline_sent_bytes_total", "Bytes of frames written to pages, by carrier (WebSocket framing included; on HTTP the frames' JSON).", "carrier")
	m.sent = map[string]prometheus.Counter{}
	for _, c := range carriers {
		m.sent[c] = sent.WithLabelValues(c)
	}
	return m
}

// SessionCarrier implements hostplugin.Observer.
func (m *Metrics) SessionCarrier(carrier string, open bool) {
	g, ok := m.carried[carrier]
	if !ok {
		return
	}
	if open {
		g.Inc()
	} else {
		g.Dec()
	}
}

// Sent implements hostplugin.Observer.
func (m *Metrics) Sent(carrier string, n int) {
	if c, ok := m.sent[carrier]; ok {
		c.Add(float64(n))
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.all {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.all {
		c.Collect(ch)
	}
}

// mode is the label value of a page mode.
func mode(s string) string {
	if s == "" {
		return unknownMode
	}
	return s
}

// Upgrade implements hostplugin.Observer.
func (m *Metrics) Upgrade(o hostplugin.Upgrade) {
	if c := m.upgrades[o]; c != nil {
		c.Inc()
	}
}

// RefusalQuery implements hostplugin.Observer.
func (m *Metrics) RefusalQuery(status int) { m.queries.WithLabelValues(strconv.Itoa(status)).Inc() }

// SessionOpened implements hostplugin.Observer.
func (m *Metrics) SessionOpened(mode string) { m.modeGauge(m.open, mode).Inc() }

// SessionReady implements hostplugin.Observer.
func (m *Metrics) SessionReady(mode string) { m.modeGauge(m.ready, mode).Inc() }

// SessionClosed implements hostplugin.Observer.
func (m *Metrics) SessionClosed(pageMode string, ready bool, code int, lived time.Duration) {
	m.modeGauge(m.open, pageMode).Dec()
	if ready {
		m.modeGauge(m.ready, pageMode).Dec()
	}
	m.closed.WithLabelValues(codeLabel(code)).Inc()
	m.lived.Observe(lived.Seconds())
}

func (m *Metrics) modeGauge(gs map[string]prometheus.Gauge, pageMode string) prometheus.Gauge {
	if g := gs[mode(pageMode)]; g != nil {
		return g
	}
	return gs[unknownMode]
}

func codeLabel(code int) string {
	for _, c := range closeCodes {
		if c == code {
			return strconv.Itoa(code)
		}
	}
	return "other"
}

// Heartbeat implements hostplugin.Observer.
func (m *Metrics) Heartbeat() { m.heartbeats.Inc() }

// Probe implements hostplugin.Observer.
func (m *Metrics) Probe() { m.probes.Inc() }

// GoAway implements hostplugin.Observer.
func (m *Metrics) GoAway(n int) { m.goaways.Add(float64(n)) }

// Subscribed implements hostplugin.Observer.
func (m *Metrics) Subscribed(how hostplugin.CatchUp) {
	if c := m.subscriptions[how]; c != nil {
		c.Inc()
	}
	if c := m.resets[how]; c != nil {
		c.Inc()
	}
}

// Reset implements hostplugin.Observer.
func (m *Metrics) Reset(n int) { m.liveResets.Add(float64(n)) }

// Denied implements hostplugin.Observer.
func (m *Metrics) Denied() { m.denied.Inc() }

// Published implements hostplugin.Observer.
func (m *Metrics) Published(d time.Duration, err error) {
	m.appendTime.Observe(d.Seconds())
	if err != nil {
		m.appendErrors.Inc()
		return
	}
	m.published.Inc()
}

// Delivered implements hostplugin.Observer.
func (m *Metrics) Delivered(n int) { m.delivered.Add(float64(n)) }

// Shed implements hostplugin.Observer.
func (m *Metrics) Shed() { m.shed.Inc() }

// BadFrame implements hostplugin.Observer.
func (m *Metrics) BadFrame() { m.badFrames.Inc() }

// Call implements hostplugin.Observer.
func (m *Metrics) Call(name, outcome string, d time.Duration) {
	m.calls.WithLabelValues(name, outcome).Inc()
	if d > 0 {
		m.callTime.WithLabelValues(name).Observe(d.Seconds())
	}
}

// Drained implements hostplugin.Observer.
func (m *Metrics) Drained(d time.Duration, forced int) {
	m.drainTime.Observe(d.Seconds())
	m.drainForced.Add(float64(forced))
}

// Stopped implements hostplugin.Observer.
func (m *Metrics) Stopped(d time.Duration, _ int) { m.stopTime.Observe(d.Seconds()) }

// Gate implements hostplugin.Observer.
func (m *Metrics) Gate(open bool) {
	m.gateMu.Lock()
	defer m.gateMu.Unlock()
	m.gateOpen = open
	m.hostReady.Set(boolValue(m.gateOpen && !m.draining))
}

// Draining implements hostplugin.Observer.
func (m *Metrics) Draining() {
	m.gateMu.Lock()
	defer m.gateMu.Unlock()
	m.draining = true
	m.hostDraining.Set(1)
	m.hostReady.Set(0)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// PageReport implements hostplugin.Observer. Its kinds are wire's (the Host refuses any
// other), so every label value is one of a fixed list.
func (m *Metrics) PageReport(r hostplugin.PageReport) {
	if len(r.Kinds) == 0 || m.down[r.Kinds[0]] == nil {
		return
	}
	m.down[r.Kinds[0]].Observe(r.Down.Seconds())
	m.attempts.Observe(float64(r.Attempts))
	for _, k := range r.Kinds {
		if c := m.failures[k]; c != nil {
			c.Inc()
		}
	}
	m.reportBytes.Add(float64(r.Bytes))
}
