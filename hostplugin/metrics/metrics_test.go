//go:build !js

package metrics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/hostplugin/metrics"
	"github.com/lifeline-go/lifeline/internal/test/hosttest"
	"github.com/lifeline-go/lifeline/internal/wire"
)

const bound = 5 * time.Second

// world is a Host with its metrics on a registry of their own, served over loopback.
type world struct {
	*hosttest.Fixture
	t   *testing.T
	m   *metrics.Metrics
	reg *prometheus.Registry
}

func newWorld(t *testing.T, doc string) *world {
	t.Helper()
	m := metrics.New()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	f := hosttest.New(t, doc, true, hostplugin.Options{NoClient: true, Observer: m})
	return &world{Fixture: f, t: t, m: m, reg: reg}
}

// page is a socket of a page of mode, its ready frame read.
func (w *world) page(mode string) *hosttest.Client {
	w.t.Helper()
	p := w.DialMode(w.t, mode)
	p.Expect(wire.TypeReady)
	return p
}

// value is the value of the series name{labels} (a histogram's count), or -1 when there is
// none.
func (w *world) value(name string, labels ...string) float64 {
	w.t.Helper()
	mfs, err := w.reg.Gather()
	if err != nil {
		w.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !hasLabels(m, labels) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return -1
}

func hasLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// want waits until name{labels} is v.
func (w *world) want(v float64, name string, labels ...string) {
	w.t.Helper()
	deadline := time.Now().Add(bound)
	for w.value(name, labels...) != v {
		if time.Now().After(deadline) {
			w.t.Fatalf("%s%v = %v, want %v", name, labels, w.value(name, labels...), v)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestTheMetricsPassTheLinterPromtoolRuns: promtool check metrics is promlint; every metric,
// before and after events, passes it.
func TestTheMetricsPassTheLinterPromtoolRuns(t *testing.T) {
	w := newWorld(t, `{}`)
	lint := func(when string) {
		problems, err := testutil.GatherAndLint(w.reg)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s: %s", when, p.Metric, p.Text)
		}
	}
	lint("at the start")
	p := w.page(wire.ModeShared)
	p.Send(`{"t":"report","downMs":2000,"attempts":2,"kinds":["closed","refused"]}`)
	p.Send(`{"t":"call","id":1,"name":"nobody"}`)
	p.Next()
	w.want(1, "lifeline_page_recovery_attempts")
	lint("after events")
}

// TestEverySeriesOfABoundedLabelExistsFromTheStart: an alert on increase() sees the first
// refusal of a kind only if its series was there before it, at 0.
func TestEverySeriesOfABoundedLabelExistsFromTheStart(t *testing.T) {
	w := newWorld(t, `{}`)
	for _, u := range hostplugin.Upgrades {
		w.want(0, "lifeline_upgrades_total", "outcome", string(u))
	}
	for _, k := range wire.ReportKinds {
		w.want(0, "lifeline_page_disconnected_seconds", "cause", k)
		w.want(0, "lifeline_page_recovery_failures_total", "kind", k)
	}
	for _, mode := range []string{wire.ModeShared, wire.ModeInPage, wire.ModeNative, "unknown"} {
		w.want(0, "lifeline_sessions_open", "mode", mode)
	}
	for _, code := range []string{"1000", "1001", "1006", "1009", "1012", "1013"} {
		w.want(0, "lifeline_sessions_closed_total", "code", code)
	}
	for _, why := range []string{"epoch", "behind", "ahead", "live"} {
		w.want(0, "lifeline_resets_total", "why", why)
	}
	w.want(1, "lifeline_host_ready")
}

func TestTheMetricsFollowWhatTheHostDoes(t *testing.T) {
	w := newWorld(t, `{"heartbeatMs":100}`)
	w.H.HandleCall("echo", func(_ context.Context, c *hostplugin.Call) (json.RawMessage, error) { return c.Data, nil })
	a, b := w.page(wire.ModeShared), w.page(wire.ModeInPage)
	w.want(2, "lifeline_upgrades_total", "outcome", "admitted")
	w.want(1, "lifeline_sessions_open", "mode", wire.ModeShared)
	w.want(1, "lifeline_sessions_ready", "mode", wire.ModeInPage)
	a.Send(`{"t":"sub","stream":"S"}`)
	r := a.Next()
	b.Send(fmt.Sprintf(`{"t":"sub","stream":"S","epoch":%q}`, r.Epoch)) // at 0 of the log's epoch: nothing missed
	w.want(1, "lifeline_subscriptions_total", "start", "fresh")
	w.want(1, "lifeline_subscriptions_total", "start", "cursor")
	for range 3 {
		if _, err := w.H.Publish(context.Background(), "S", json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	w.want(3, "lifeline_events_published_total")
	w.want(6, "lifeline_events_delivered_total")
	w.want(3, "lifeline_log_append_duration_seconds")
	a.Send(`{"t":"call","id":1,"name":"echo","data":7}`)
	for a.Next().T != wire.TypeReply {
	}
	w.want(1, "lifeline_calls_total", "name", "echo", "outcome", "ok")
	w.want(1, "lifeline_call_duration_seconds", "name", "echo")
	a.Send(`{"t":"call","id":2,"name":"made.up.name"}`)
	w.want(1, "lifeline_calls_total", "name", "", "outcome", "unknown")
	if n := w.value("lifeline_calls_total", "name", "made.up.name"); n != -1 {
		t.Fatalf("an unregistered call name is a label (%v): a page could grow the series without bound", n)
	}
	_ = b.Conn.Close(websocket.StatusNormalClosure, "")
	w.want(1, "lifeline_sessions_closed_total", "code", "1000")
	w.want(0, "lifeline_sessions_open", "mode", wire.ModeInPage)
	w.want(0, "lifeline_sessions_ready", "mode", wire.ModeInPage)
	w.want(1, "lifeline_session_duration_seconds")
	deadline := time.Now().Add(bound)
	for w.value("lifeline_heartbeats_total") < 1 { // a's, idle for 100 ms
		if time.Now().After(deadline) {
			t.Fatal("no heartbeat counted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	go w.H.Drain(context.Background(), "")
	for a.Next().T != wire.TypeGoAway {
	}
	w.want(1, "lifeline_goaways_total")
	w.want(0, "lifeline_host_ready")
	w.want(1, "lifeline_host_draining")
	_ = a.Conn.Close(websocket.StatusNormalClosure, "")
	w.want(1, "lifeline_drain_duration_seconds")
}

func TestAReportMovesThePageHistogramsAndABadOneMovesNothing(t *testing.T) {
	w := newWorld(t, `{}`)
	p := w.page(wire.ModeShared)
	const report = `{"t":"report","downMs":12400,"attempts":3,"kinds":["closed","refused","hidden"]}`
	p.Send(report)
	w.want(1, "lifeline_page_disconnected_seconds", "cause", "closed")
	w.want(1, "lifeline_page_recovery_attempts")
	w.want(1, "lifeline_page_recovery_failures_total", "kind", "refused")
	w.want(1, "lifeline_page_recovery_failures_total", "kind", "hidden")
	w.want(float64(len(report)), "lifeline_page_report_bytes_total")
	for _, bad := range []string{
		report, // a second one on the session
		`{"t":"report","downMs":5,"attempts":1,"kinds":["nonsense"]}`,
		`{"t":"report","downMs":5,"attempts":0,"kinds":["closed"]}`,
	} {
		p.Send(bad)
		if f := p.Next(); f.T != wire.TypeError {
			t.Fatalf("%s was answered %+v", bad, f)
		}
	}
	w.want(3, "lifeline_bad_frames_total")
	w.want(1, "lifeline_page_recovery_attempts")
	w.want(1, "lifeline_page_disconnected_seconds", "cause", "closed")
	w.want(float64(len(report)), "lifeline_page_report_bytes_total")

	// The histogram's buckets: 12.4 s is within 15, not 10.
	mfs, _ := w.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "lifeline_page_disconnected_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !hasLabels(m, []string{"cause", "closed"}) {
				continue
			}
			for _, bk := range m.Histogram.GetBucket() {
				want := uint64(0)
				if bk.GetUpperBound() >= 15 {
					want = 1
				}
				if bk.GetCumulativeCount() != want {
					t.Errorf("bucket le=%v holds %d, want %d", bk.GetUpperBound(), bk.GetCumulativeCount(), want)
				}
			}
		}
	}
}

func TestRefusalsAreCountedByOutcome(t *testing.T) {
	w := newWorld(t, `{"maxSessions":1}`)
	w.page(wire.ModeNative)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	url := "ws" + strings.TrimPrefix(w.Srv.URL, "http") + wire.DefaultPath
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, _, err := c.Read(ctx); err != nil {
			break
		}
	}
	w.want(1, "lifeline_upgrades_total", "outcome", "session_cap")
	w.want(1, "lifeline_sessions_open", "mode", wire.ModeNative)
	w.want(0, "lifeline_sessions_open", "mode", "unknown")
	resp, err := http.Get(w.Srv.URL + wire.DefaultPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	w.want(1, "lifeline_refusal_queries_total", "status", "426")
}

func TestSessionsAndBytesAreCountedByCarrier(t *testing.T) {
	w := newWorld(t, `{}`)
	a := w.page(wire.ModeShared)
	w.want(1, "lifeline_sessions_by_carrier", "carrier", wire.CarrierWebSocket)
	w.want(0, "lifeline_sessions_by_carrier", "carrier", wire.CarrierStream)
	resp, err := http.Get(w.Srv.URL + wire.DefaultPath + "?" + wire.CarrierParam + "=" + wire.CarrierStream)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512)
	if n, err := resp.Body.Read(buf); err != nil || !strings.Contains(string(buf[:n]), `"t":"ready"`) {
		t.Fatalf("the stream's first bytes: %q, %v", buf[:n], err)
	}
	w.want(1, "lifeline_sessions_by_carrier", "carrier", wire.CarrierStream)
	// Bytes are counted once the write returns, which may be after the page has read them.
	for _, carrier := range []string{wire.CarrierStream, wire.CarrierWebSocket} {
		deadline := time.Now().Add(bound)
		for w.value("lifeline_sent_bytes_total", "carrier", carrier) <= 0 {
			if time.Now().After(deadline) {
				t.Fatalf("sent bytes on carrier %s %v after %v, want its ready frame's", carrier, w.value("lifeline_sent_bytes_total", "carrier", carrier), bound)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	resp.Body.Close()
	w.want(0, "lifeline_sessions_by_carrier", "carrier", wire.CarrierStream)
	_ = a.Conn.Close(websocket.StatusNormalClosure, "")
	w.want(0, "lifeline_sessions_by_carrier", "carrier", wire.CarrierWebSocket)
}
