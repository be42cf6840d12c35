//go:build !js

package gateway_test

// The HTTP carrier and the choice between carriers (PROTOCOL.md §11), against the real Host
// behind a middlebox (internal/test/pathproxy) that breaks WebSockets the ways real networks
// do, over loopback.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/test/pathproxy"
	ts "github.com/lifeline-go/lifeline/internal/test/testserver"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// realHost is the real Host over loopback, with a call that counts its runs by key.
type realHost struct {
	h    *hostplugin.Host
	srv  *httptest.Server
	mu   sync.Mutex
	runs map[string]int
}

func newRealHost(t *testing.T, doc string) *realHost {
	t.Helper()
	cfg, err := hostplugin.ParseConfig([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	h, err := hostplugin.New(cfg, &hostplugin.Options{Logger: quiet, Authorize: hostplugin.PublicStreams, NoClient: true})
	if err != nil {
		t.Fatal(err)
	}
	rh := &realHost{h: h, runs: map[string]int{}}
	h.HandleCall("count", func(_ context.Context, c *hostplugin.Call) (json.RawMessage, error) {
		rh.mu.Lock()
		defer rh.mu.Unlock()
		rh.runs[c.Key]++
		return json.RawMessage(fmt.Sprint(rh.runs[c.Key])), nil
	})
	h.SetReady(true)
	rh.srv = httptest.NewServer(h.Handler(http.NotFoundHandler()))
	t.Cleanup(func() {
		_ = h.Close()
		rh.srv.Close()
	})
	return rh
}

func (rh *realHost) publish(t *testing.T, stream string, n int) {
	t.Helper()
	for i := range n {
		if _, err := rh.h.Publish(context.Background(), stream, json.RawMessage(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
}

// path is a middlebox in front of a Host, and the events URL through it.
type path struct {
	*pathproxy.Proxy
	url string
}

func pathTo(t *testing.T, rh *realHost, mode pathproxy.Mode) *path {
	t.Helper()
	p, err := pathproxy.New(rh.srv.URL, mode)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(func() {
		p.Cut()
		srv.Close()
	})
	return &path{Proxy: p, url: "ws" + strings.TrimPrefix(srv.URL, "http") + wire.DefaultPath}
}

func TestAPathThatBlocksWebSocketsConnectsOverHTTPInTheSameAttempt(t *testing.T) {
	for _, mode := range []pathproxy.Mode{pathproxy.StripUpgrade, pathproxy.Refuse403, pathproxy.CloseAtOnce, pathproxy.Silent} {
		t.Run(mode.String(), func(t *testing.T) {
			rh := newRealHost(t, `{}`)
			p := pathTo(t, rh, mode)
			var cs carriers
			r := newRig(t, p.url, carrierRecovery(), &gateway.Options{FallbackAfter: 300 * time.Millisecond, OnCarrier: cs.on})
			rec := newRecorder()
			r.gw.Subscribe("s", rec.handle)
			start := time.Now()
			r.ctl.Start()
			st := r.waitConnected()
			took := time.Since(start)
			if st.Attempt != 1 {
				t.Errorf("connected at attempt %d, want the first: the fallback is within the attempt, not on the ladder", st.Attempt)
			}
			if got := cs.wait(t, wire.CarrierStream); !got.Blocked {
				t.Fatalf("carrier %+v, want the stream, blocked", got)
			}
			if p.Upgrades() != 1 {
				t.Errorf("%d upgrades through the path, want the one the attempt began with", p.Upgrades())
			}
			t.Logf("%s: connected over the stream %v after the start", mode, took.Round(time.Millisecond))
			rh.publish(t, "s", 5)
			checkStream(t, rec.waitSeq(t, 5))
			out, err := r.gw.Call(context.Background(), "count", nil, gateway.CallOptions{Key: "k1"})
			if err != nil || string(out) != "1" {
				t.Fatalf("a keyed call over the stream: %s, %v; want its first run", out, err)
			}
		})
	}
}

func TestAProxyThatHoldsTheStreamBackGetsLongPolls(t *testing.T) {
	rh := newRealHost(t, `{}`)
	p := pathTo(t, rh, pathproxy.Buffer)
	var cs carriers
	r := newRig(t, p.url, carrierRecovery(), &gateway.Options{FallbackAfter: 300 * time.Millisecond, OnCarrier: cs.on})
	rec := newRecorder()
	r.gw.Subscribe("s", rec.handle)
	r.ctl.Start()
	if st := r.waitConnected(); st.Attempt != 1 {
		t.Errorf("connected at attempt %d, want the first", st.Attempt)
	}
	if got := cs.wait(t, wire.CarrierPoll); !got.Blocked {
		t.Fatalf("carrier %+v, want long polls, blocked", got)
	}
	rh.publish(t, "s", 20)
	checkStream(t, rec.waitSeq(t, 20))
	r.gw.Probe()
	out, err := r.gw.Call(context.Background(), "count", nil, gateway.CallOptions{Key: "k"})
	if err != nil || string(out) != "1" {
		t.Fatalf("a call over long polls: %s, %v", out, err)
	}
}

func TestAHostThatIsDownIsNoBlockedPath(t *testing.T) {
	// The path answers for the Host that is gone: 502. That is an outage, on the ladder; the
	// page neither blames the network nor tries the HTTP carrier.
	rh := newRealHost(t, `{}`)
	p := pathTo(t, rh, pathproxy.Open)
	rh.srv.Close()
	var cs carriers
	r := newRig(t, p.url, carrierRecovery(), &gateway.Options{FallbackAfter: 100 * time.Millisecond, OnCarrier: cs.on})
	r.ctl.Start()
	for range 3 {
		st := r.waitFailure()
		if !errors.Is(st.Err, gateway.ErrDial) {
			t.Fatalf("failure %v, want a dial failure", st.Err)
		}
	}
	if got := cs.all(); len(got) != 0 {
		t.Fatalf("carriers %+v, want none", got)
	}
}

func TestAHostWithoutTheHTTPCarrierIsNeverAskedForIt(t *testing.T) {
	// An older Host answers the refusal query with a 426 that names no carrier: a page whose
	// WebSocket does not get through stays on the ladder rather than asking it for what it
	// has not got.
	sc := newScenario(t)
	defaultScript(t, sc, "a", ts.Step{Reject: 403})
	r := newRig(t, sc.URL("a"), carrierRecovery(), &gateway.Options{FallbackAfter: 100 * time.Millisecond})
	r.ctl.Start()
	r.waitFailure()
	r.waitFailure()
}

func TestANetworkRememberedAsBlockedStartsOnHTTP(t *testing.T) {
	rh := newRealHost(t, `{}`)
	p := pathTo(t, rh, pathproxy.Open)
	var cs carriers
	r := newRig(t, p.url, carrierRecovery(), &gateway.Options{Carrier: wire.CarrierStream, OnCarrier: cs.on, UpgradeAfter: time.Hour})
	r.ctl.Start()
	r.waitConnected()
	cs.wait(t, wire.CarrierStream)
	if p.Upgrades() != 0 {
		t.Fatalf("%d upgrades, want none: a remembered path starts on HTTP at once", p.Upgrades())
	}
	if _, err := gateway.New(p.url, &gateway.Options{Carrier: "pigeon"}); !errors.Is(err, gateway.ErrBadCarrier) || !strings.Contains(err.Error(), `"pigeon"`) {
		t.Fatalf("New with carrier pigeon: %v, want ErrBadCarrier naming it", err)
	}
}

func TestWhenThePathOpensThePageMovesBackToAWebSocketLosingNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the HTTP carrier's real upgrade schedule on four kinds of path: about 9 s (make test runs it)")
	}
	for _, mode := range []pathproxy.Mode{pathproxy.StripUpgrade, pathproxy.CloseAtOnce, pathproxy.Silent, pathproxy.Buffer} {
		t.Run(mode.String(), func(t *testing.T) { movesBack(t, mode) })
	}
}

func movesBack(t *testing.T, mode pathproxy.Mode) {
	rh := newRealHost(t, `{}`)
	p := pathTo(t, rh, mode)
	var cs carriers
	r := newRig(t, p.url, carrierRecovery(), &gateway.Options{FallbackAfter: 200 * time.Millisecond, UpgradeAfter: 100 * time.Millisecond, OnCarrier: cs.on})
	rec := newRecorder()
	r.gw.Subscribe("s", rec.handle)
	r.ctl.Start()
	r.waitConnected()
	if mode == pathproxy.Buffer {
		cs.wait(t, wire.CarrierPoll)
	} else {
		cs.wait(t, wire.CarrierStream)
	}
	// Events flow all along, and a call is in flight at the move.
	var stop atomic.Bool
	t.Cleanup(func() { stop.Store(true) })
	published := make(chan int, 1)
	go func() {
		n := 0
		for !stop.Load() {
			if _, err := rh.h.Publish(context.Background(), "s", json.RawMessage(fmt.Sprint(n))); err != nil {
				break
			}
			n++
			time.Sleep(2 * time.Millisecond)
		}
		published <- n
	}()
	// Probes fail while the path strips upgrades; then it opens.
	time.Sleep(500 * time.Millisecond)
	if got := cs.last(); got.Kind == wire.CarrierWebSocket {
		t.Fatalf("carrier %+v while the path still blocks WebSockets, want HTTP", got)
	}
	p.SetMode(pathproxy.Open)
	cs.wait(t, wire.CarrierWebSocket)
	time.Sleep(100 * time.Millisecond)
	stop.Store(true)
	n := <-published
	got := rec.waitSeq(t, uint64(n))
	if resets := checkStream(t, got); resets != 1 {
		t.Fatalf("%d resets across the move, want only the first: %s", resets, summary(got))
	}
	for _, s := range r.allStatuses()[1:] {
		if s.State != controller.Connected {
			t.Fatalf("status %v (err %v) during the move, want connected throughout", s.State, s.Err)
		}
	}
	out, err := r.gw.Call(context.Background(), "count", nil, gateway.CallOptions{Key: "after"})
	if err != nil || string(out) != "1" {
		t.Fatalf("a call after the move: %s, %v", out, err)
	}
}

func TestTheHTTPCarrierHoldsEveryPromiseOfTheSocket(t *testing.T) {
	rh := newRealHost(t, `{"heartbeatMs":200}`)
	p := pathTo(t, rh, pathproxy.Refuse403)
	r := newRig(t, p.url, carrierRecovery(), &gateway.Options{FallbackAfter: 200 * time.Millisecond, UpgradeAfter: time.Hour})
	rec := newRecorder()
	r.gw.Subscribe("s", rec.handle)
	r.ctl.Start()
	r.waitConnected()
	rh.publish(t, "s", 3)
	rec.waitSeq(t, 3)

	// A restart of the Host in place (an empty goaway): make-before-break, by cursor.
	go rh.h.Drain(context.Background(), "")
	st := r.waitState("a second session", func(s controller.Status) bool { return s.Attempt >= 2 && s.State == controller.Connected })
	_ = st
	// Heartbeats keep an idle session: nothing ends it over a second of silence.
	time.Sleep(time.Second)
	for _, s := range r.allStatuses() {
		if s.State == controller.Reconnecting {
			t.Fatalf("status %v (err %v): an idle HTTP session was lost", s.State, s.Err)
		}
	}
}

func TestTheWebSocketIsCheckedBeforeItIsDialedAgain(t *testing.T) {
	// After a failure the page asks the Host with a plain GET before it dials a WebSocket again
	// (a browser may hold WebSockets back after failures; natively a test turns it on): a Host
	// that answers 503 gets no upgrade at all, and the failure says the Host cannot be reached.
	gateway.CheckBeforeRedial(t)
	rh := newRealHost(t, `{}`)
	down := true
	var mu sync.Mutex
	var upgrades atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			upgrades.Add(1)
		}
		mu.Lock()
		d := down
		mu.Unlock()
		if d {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		rh.h.Handler(http.NotFoundHandler()).ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	r := newRig(t, "ws"+strings.TrimPrefix(front.URL, "http")+wire.DefaultPath, carrierRecovery(), nil)
	r.ctl.Start()
	r.waitFailure() // the first attempt dials: nothing failed before it
	st := r.waitFailure()
	if !strings.Contains(st.Err.Error(), "cannot be reached") {
		t.Fatalf("failure %v, want it to say the Host cannot be reached", st.Err)
	}
	r.waitFailure()
	if n := upgrades.Load(); n != 1 {
		t.Fatalf("%d upgrades, want only the first attempt's", n)
	}
	mu.Lock()
	down = false
	mu.Unlock()
	r.waitConnected()
}

func TestAPageThatWakesUpOnHTTPTriesAWebSocketAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out two real upgrade tries (1–2 s, then 2–4 s) before the probe: about 6 s (make test runs it)")
	}
	// The world may have changed while the page was not looking (another network, a machine
	// that slept): a page on the HTTP carrier that is told to probe its link tries a
	// WebSocket too, without waiting out its schedule.
	rh := newRealHost(t, `{}`)
	p := pathTo(t, rh, pathproxy.StripUpgrade)
	var cs carriers
	r := newRig(t, p.url, carrierRecovery(), &gateway.Options{FallbackAfter: 200 * time.Millisecond, UpgradeAfter: time.Second, OnCarrier: cs.on})
	r.ctl.Start()
	r.waitConnected()
	cs.wait(t, wire.CarrierStream)
	// Tries come on their schedule (1–2 s, then 2–4 s later, then 4–8 s): after the second the
	// next is 4 s away at least. A probe of the link brings it forward to 1 s after the last.
	deadline := time.Now().Add(bound)
	for p.Upgrades() < 3 { // the attempt's own, and two tries
		if time.Now().After(deadline) {
			t.Fatalf("%d upgrades through the path after %v, want the attempt's and two tries", p.Upgrades(), bound)
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.SetMode(pathproxy.Open)
	start := time.Now()
	r.gw.Probe()
	cs.wait(t, wire.CarrierWebSocket)
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Fatalf("back on a WebSocket %v after the probe, want within UpgradeAfter (1 s) and a handshake, not the schedule's 4 s", took)
	}
}

func TestACheckWithNoAnswerIsNoVerdictTheWebSocketIsDialed(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the real one-second check timeout, more than once: about 3 s (make test runs it)")
	}
	// The check before a redial goes on whatever connection the browser picks, and a pooled
	// one may have gone half-open: a query with no answer within a second decides nothing,
	// and the WebSocket is dialed all the same.
	gateway.CheckBeforeRedial(t)
	rh := newRealHost(t, `{}`)
	var fail atomic.Bool
	fail.Store(true)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			<-r.Context().Done() // a query is never answered
			return
		}
		if fail.Load() {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		rh.h.Handler(http.NotFoundHandler()).ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	r := newRig(t, "ws"+strings.TrimPrefix(front.URL, "http")+wire.DefaultPath, carrierRecovery(), nil)
	r.ctl.Start()
	r.waitFailure() // the first attempt dials at once, and fails
	fail.Store(false)
	start := time.Now()
	st := r.waitConnected()
	if took := time.Since(start); took > 3*time.Second || st.Attempt < 2 {
		t.Fatalf("connected at attempt %d, %v after the Host was back: want the check to give up after a second and dial", st.Attempt, took)
	}
}

func TestAnHTTPSessionDrainingToASuccessorFinishesItsCallsInFlight(t *testing.T) {
	// A Host that restarts hands its listening socket to its successor and drains: the page's
	// HTTP session keeps its stream on the old process, but every new request, its POSTs
	// included, reaches the successor, which does not know the session. The session goes on
	// draining all the same: its call in flight is answered on its stream, once, and the page
	// moves to the successor make-before-break.
	a, b := newRealHost(t, `{}`), newRealHost(t, `{}`)
	release, started := make(chan struct{}), make(chan struct{}, 1)
	a.h.HandleCall("slow", func(ctx context.Context, c *hostplugin.Call) (json.RawMessage, error) {
		started <- struct{}{}
		<-release
		return json.RawMessage(`"done on a"`), nil
	})
	var cur atomic.Pointer[realHost]
	cur.Store(a)
	var bPosts atomic.Int64 // POSTs the successor got
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := cur.Load()
		if h == b && r.Method == http.MethodPost {
			bPosts.Add(1)
		}
		h.h.Handler(http.NotFoundHandler()).ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	var cs carriers
	r := newRig(t, "ws"+strings.TrimPrefix(front.URL, "http")+wire.DefaultPath, carrierRecovery(),
		&gateway.Options{Carrier: wire.CarrierStream, UpgradeAfter: time.Hour, OnCarrier: cs.on})
	r.ctl.Start()
	r.waitConnected()
	cs.wait(t, wire.CarrierStream)
	done := make(chan error, 1)
	var out wire.RawJSON
	go func() {
		var err error
		out, err = r.gw.Call(context.Background(), "slow", nil, gateway.CallOptions{Key: "k"})
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(bound):
		t.Fatal("the call did not start on the first Host")
	}
	// The successor takes every new request from here on; its gate opens once the draining
	// session has sent what it still sends (a probe's ping), which it answers 404.
	b.h.SetReady(false)
	cur.Store(b)
	go a.h.Drain(context.Background(), "")
	deadline := time.Now().Add(bound)
	for b.h.Sessions() != 1 { // the page's next session, waiting at the gate
		if time.Now().After(deadline) {
			t.Fatal("no session of the page at the successor")
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.gw.Probe()
	for bPosts.Load() < 1 { // the draining session's ping (the next session, at the gate, sends nothing)
		if time.Now().After(deadline) {
			t.Fatal("no POST at the successor after the probe, want the draining session's ping")
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.h.SetReady(true)
	r.waitState("connected to the successor", func(s controller.Status) bool { return s.Attempt >= 2 && s.State == controller.Connected })
	close(release)
	select {
	case err := <-done:
		if err != nil || string(out) != `"done on a"` {
			t.Fatalf("the call in flight: %s, %v; want its reply from the first Host", out, err)
		}
	case <-time.After(bound):
		t.Fatal("the call in flight never settled")
	}
	for _, s := range r.allStatuses()[1:] {
		if s.State != controller.Connected {
			t.Fatalf("status %v (err %v) during the handover, want connected throughout", s.State, s.Err)
		}
	}
}

func TestAWebSocketThatIsMerelySlowIsNotSentToHTTP(t *testing.T) {
	// On a slow path a WebSocket's handshake takes a few round trips, the refusal query one:
	// the query's answer measures the round trip, and the WebSocket gets six of them before
	// the path is taken to hold it back. Here a round trip is 300 ms: the upgrade is answered
	// after three (900 ms), the query after one, FallbackAfter is half of one.
	const rtt = 300 * time.Millisecond
	rh := newRealHost(t, `{}`)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := rtt
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			d = 3 * rtt
		}
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
		rh.h.Handler(http.NotFoundHandler()).ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	var cs carriers
	r := newRig(t, "ws"+strings.TrimPrefix(front.URL, "http")+wire.DefaultPath, carrierRecovery(),
		&gateway.Options{FallbackAfter: rtt / 2, OnCarrier: cs.on})
	r.ctl.Start()
	r.waitConnected()
	if got := cs.wait(t, wire.CarrierWebSocket); got.Blocked {
		t.Fatalf("carrier %+v, want a WebSocket", got)
	}
}

func TestADialNothingAnsweredIsNoBlockedPath(t *testing.T) {
	// Connections reset while the Host still answers plain GETs (the end of a blip, a reset
	// storm at a proxy): a WebSocket dial nothing answered says the network failed, not that
	// it refuses WebSockets. The page stays on the ladder and comes back on a WebSocket.
	rh := newRealHost(t, `{}`)
	var resets atomic.Int64
	resets.Store(3)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") && resets.Add(-1) >= 0 {
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				if tc, ok := c.(*net.TCPConn); ok {
					_ = tc.SetLinger(0) // a reset, not a close
				}
				c.Close()
			}
			return
		}
		rh.h.Handler(http.NotFoundHandler()).ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	var cs carriers
	r := newRig(t, "ws"+strings.TrimPrefix(front.URL, "http")+wire.DefaultPath, carrierRecovery(), &gateway.Options{OnCarrier: cs.on})
	r.ctl.Start()
	st := r.waitConnected()
	if got := cs.wait(t, wire.CarrierWebSocket); got.Blocked || st.Attempt != 4 {
		t.Fatalf("carrier %+v at attempt %d, want a WebSocket at the 4th attempt (three resets on the ladder)", got, st.Attempt)
	}
}

func TestAPollingSessionDrainingToASuccessorStaysConnectedUntilTheNextIsMade(t *testing.T) {
	// As above, on long polls: once the restarting Host's successor takes every new request,
	// the draining session's next poll reaches a Host that does not know it (404). The page
	// must not show that as a lost connection while its next session is being made: the
	// old session holds, silent, until the new one replaces it (or the dead-link probe ends it).
	a, b := newRealHost(t, `{}`), newRealHost(t, `{}`)
	var cur atomic.Pointer[realHost]
	cur.Store(a)
	var bPosts atomic.Int64 // POSTs (polls) the successor answered
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := cur.Load()
		h.h.Handler(http.NotFoundHandler()).ServeHTTP(w, r)
		if h == b && r.Method == http.MethodPost {
			bPosts.Add(1) // answered
		}
	}))
	t.Cleanup(front.Close)
	var cs carriers
	r := newRig(t, "ws"+strings.TrimPrefix(front.URL, "http")+wire.DefaultPath, carrierRecovery(),
		&gateway.Options{Carrier: wire.CarrierPoll, UpgradeAfter: time.Hour, OnCarrier: cs.on})
	r.ctl.Start()
	r.waitConnected()
	cs.wait(t, wire.CarrierPoll)
	b.h.SetReady(false)
	cur.Store(b)
	go a.h.Drain(context.Background(), "")
	deadline := time.Now().Add(bound)
	for b.h.Sessions() != 1 || bPosts.Load() < 1 { // the next session at the gate; a poll of the old one, answered 404
		if time.Now().After(deadline) {
			t.Fatalf("at the successor: %d sessions, %d POSTs; want the next session waiting and a poll of the draining one", b.h.Sessions(), bPosts.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.h.SetReady(true)
	r.waitState("connected to the successor", func(s controller.Status) bool { return s.Attempt >= 2 && s.State == controller.Connected })
	for _, s := range r.allStatuses()[1:] {
		if s.State != controller.Connected {
			t.Fatalf("status %v (err %v) during the handover, want connected throughout", s.State, s.Err)
		}
	}
}
