//go:build !js

package gateway_test

// Reports against the real Host, in a bubble: what a page lived through reaches the Host it
// came back to, once, and only when that Host asks for reports.

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/test/wstest"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// reportsSeen is an Observer of the Hosts that keeps their reports and counts bad frames.
type reportsSeen struct {
	hostplugin.NopObserver
	mu      sync.Mutex
	reports []hostplugin.PageReport
	bad     int
}

func (o *reportsSeen) PageReport(r hostplugin.PageReport) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r.Kinds = slices.Clone(r.Kinds)
	o.reports = append(o.reports, r)
}

func (o *reportsSeen) BadFrame() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.bad++
}

func (o *reportsSeen) seen() ([]hostplugin.PageReport, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.reports), o.bad
}

// reportWorld is one Host name (a.invalid) whose Host a test replaces, every one observed.
type reportWorld struct {
	t   *testing.T
	obs *reportsSeen
	mu  sync.Mutex
	h   *hostplugin.Host
}

func newReportWorld(t *testing.T) *reportWorld {
	w := &reportWorld{t: t, obs: &reportsSeen{}}
	gateway.UseHandshakeClient(t, wstest.Client(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		h := w.h
		w.mu.Unlock()
		if h == nil {
			http.Error(rw, "no Host here", http.StatusServiceUnavailable)
			return
		}
		h.Handler(http.NotFoundHandler()).ServeHTTP(rw, r)
	})))
	return w
}

func (w *reportWorld) start(doc string) *hostplugin.Host {
	cfg, err := hostplugin.ParseConfig([]byte(doc))
	if err != nil {
		w.t.Fatal(err)
	}
	h, err := hostplugin.New(cfg, &hostplugin.Options{Logger: quiet, Authorize: hostplugin.PublicStreams, NoClient: true, Observer: w.obs})
	if err != nil {
		w.t.Fatal(err)
	}
	h.SetReady(true)
	w.mu.Lock()
	w.h = h
	w.mu.Unlock()
	w.t.Cleanup(func() { _ = h.Close() })
	return h
}

// page is a gateway driven by its own controller: the gateway observes the statuses, as in
// a page.
func reportingPage(t *testing.T) (*gateway.Gateway, *controller.Controller) {
	gw, err := gateway.New("ws://a.invalid/_lifeline/events", &gateway.Options{Logger: quiet, CloseGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := controller.New(gw, config(t, controller.Recovery{InitialDelayMs: new(100.0)}), &controller.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Stop(); gw.Close(nil) })
	return gw, ctl
}

// connected waits, on the bubble's clock, until ctl is connected.
func connected(t *testing.T, ctl *controller.Controller) {
	t.Helper()
	for range 1000 {
		synctest.Wait()
		if ctl.Status().State == controller.Connected {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("not connected after 10 s: %+v", ctl.Status())
}

func TestAPageReportsItsRecoveryToTheHostItCameBackTo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newReportWorld(t)
		a := w.start(`{}`)
		_, ctl := reportingPage(t)
		ctl.Start()
		connected(t, ctl)
		if r, _ := w.obs.seen(); len(r) != 0 {
			t.Fatalf("a first connection reported %+v", r)
		}
		a.Stop(context.Background(), 0) // 1012: the Host restarts
		w.start(`{}`)
		connected(t, ctl)
		synctest.Wait()
		reports, bad := w.obs.seen()
		if len(reports) != 1 || bad != 0 {
			t.Fatalf("reports %+v and %d bad frames after one outage, want one report", reports, bad)
		}
		r := reports[0]
		if r.Mode != wire.ModeNative || r.Attempts < 1 || r.Down <= 0 || len(r.Kinds) == 0 || r.Kinds[0] != wire.KindRestarting {
			t.Fatalf("report %+v, want a native page's report of its outage through a restart", r)
		}
		if b, _ := wire.Report(r.Down, r.Attempts, r.Kinds).Encode(); r.Bytes != len(b) {
			t.Fatalf("the report was %d bytes, its frame %d", r.Bytes, len(b))
		}
	})
}

func TestAPageSendsNoReportToAHostThatTakesNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newReportWorld(t)
		a := w.start(`{"reports":false}`)
		_, ctl := reportingPage(t)
		ctl.Start()
		connected(t, ctl)
		a.Stop(context.Background(), 0)
		w.start(`{"reports":false}`)
		connected(t, ctl)
		synctest.Wait()
		if reports, bad := w.obs.seen(); len(reports) != 0 || bad != 0 {
			t.Fatalf("reports %+v and %d bad frames: the page sent a report the Host did not ask for", reports, bad)
		}
	})
}
