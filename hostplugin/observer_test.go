//go:build !js

package hostplugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// seen is an Observer that writes down what it is told, one line an event, as "method args".
type seen struct {
	hostplugin.NopObserver
	mu      sync.Mutex
	lines   []string
	reports []hostplugin.PageReport
}

func (s *seen) add(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, fmt.Sprintf(format, args...))
}

func (s *seen) Upgrade(o hostplugin.Upgrade) { s.add("upgrade %s", o) }
func (s *seen) RefusalQuery(status int)      { s.add("query %d", status) }
func (s *seen) SessionOpened(mode string)    { s.add("opened %q", mode) }
func (s *seen) SessionReady(mode string)     { s.add("ready %q", mode) }
func (s *seen) SessionClosed(mode string, ready bool, code int, lived time.Duration) {
	s.add("closed %q ready=%v %d", mode, ready, code)
}
func (s *seen) Heartbeat()                             { s.add("heartbeat") }
func (s *seen) Probe()                                 { s.add("probe") }
func (s *seen) GoAway(n int)                           { s.add("goaway %d", n) }
func (s *seen) Subscribed(how hostplugin.CatchUp)      { s.add("subscribed %s", how) }
func (s *seen) Reset(n int)                            { s.add("reset %d", n) }
func (s *seen) Denied()                                { s.add("denied") }
func (s *seen) Delivered(n int)                        { s.add("delivered %d", n) }
func (s *seen) Shed()                                  { s.add("shed") }
func (s *seen) BadFrame()                              { s.add("bad frame") }
func (s *seen) Call(name, out string, _ time.Duration) { s.add("call %q %s", name, out) }
func (s *seen) Drained(_ time.Duration, forced int)    { s.add("drained %d", forced) }
func (s *seen) Stopped(_ time.Duration, n int)         { s.add("stopped %d", n) }
func (s *seen) Gate(open bool)                         { s.add("gate %v", open) }
func (s *seen) Draining()                              { s.add("draining") }
func (s *seen) Published(_ time.Duration, err error) {
	s.add("published %v", err == nil)
}
func (s *seen) PageReport(r hostplugin.PageReport) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.Kinds = slices.Clone(r.Kinds)
	s.reports = append(s.reports, r)
}

// count is how many lines are line.
func (s *seen) count(line string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.lines {
		if l == line {
			n++
		}
	}
	return n
}

func (s *seen) Reports() []hostplugin.PageReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reports)
}

func (s *seen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "; ")
}

// wantLine waits until the observer has been told line n times.
func (s *seen) wantLine(t *testing.T, line string, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d × %q (seen: %s)", n, line, s), func() bool { return s.count(line) >= n })
	if got := s.count(line); got != n {
		t.Fatalf("%d × %q, want %d (seen: %s)", got, line, n, s)
	}
}

func observed(t *testing.T, doc string, opts hostplugin.Options) (*fixture, *seen) {
	t.Helper()
	obs := &seen{}
	opts.Observer = obs
	return newFixtureWith(t, doc, true, opts), obs
}

func dialThrough(t *testing.T, f *fixture, header http.Header) error {
	t.Helper()
	c, err := f.TryDial(t, header)
	if err == nil {
		c.Closed()
	}
	return err
}

func TestTheObserverIsToldWhatBecameOfEveryUpgrade(t *testing.T) {
	authn := func(r *http.Request) (string, error) {
		switch r.Header.Get("X-Who") {
		case "nobody":
			return "", hostplugin.ErrUnauthenticated
		case "banned":
			return "", hostplugin.ErrForbidden
		case "bug":
			panic("a broken hook")
		}
		return "someone", nil
	}
	f, obs := observed(t, `{"maxSessions":1,"trustedProxies":[],"perIPRate":1,"perIPBurst":8}`, hostplugin.Options{Authenticate: authn})
	page := f.Dial(t)
	page.Expect(wire.TypeReady)
	obs.wantLine(t, "upgrade admitted", 1)

	for _, tc := range []struct {
		name, who, origin string
		want              hostplugin.Upgrade
	}{
		{"a foreign origin", "", "https://evil.example", hostplugin.UpgradeOrigin},
		{"no credential", "nobody", "", hostplugin.UpgradeUnauthenticated},
		{"a refused credential", "banned", "", hostplugin.UpgradeForbidden},
		{"a hook that panics", "bug", "", hostplugin.UpgradeAuthError},
		{"a page over the session cap", "", "", hostplugin.UpgradeSessionCap},
	} {
		h := http.Header{}
		if tc.who != "" {
			h.Set("X-Who", tc.who)
		}
		if tc.origin != "" {
			h.Set("Origin", tc.origin)
		}
		_ = dialThrough(t, f, h)
		obs.wantLine(t, "upgrade "+string(tc.want), 1)
	}
	// No lifeline.v1: not a page.
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if c, _, err := websocket.Dial(ctx, f.WSURL(), nil); err == nil {
		_ = c.CloseNow()
		t.Fatal("a socket without the subprotocol was accepted")
	}
	obs.wantLine(t, "upgrade bad_request", 1)
	// The refusal query of a refused credential, then the per-address rate (8 sockets and a
	// query spent its burst).
	resp, _ := refusalQuery(t, f, http.MethodGet, http.Header{"X-Who": {"nobody"}})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("refusal query answered %d", resp.StatusCode)
	}
	obs.wantLine(t, "query 401", 1)
	_ = dialThrough(t, f, nil)
	obs.wantLine(t, "upgrade address_rate", 1)
	if resp, _ := refusalQuery(t, f, http.MethodGet, nil); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("refusal query over the rate answered %d", resp.StatusCode)
	}
	obs.wantLine(t, "query 429", 1)
	if n := obs.count("upgrade admitted"); n != 1 {
		t.Fatalf("%d upgrades admitted, want 1 (seen: %s)", n, obs)
	}
}

func TestTheObserverFollowsASessionFromOpenToClose(t *testing.T) {
	f, obs := observed(t, `{"heartbeatMs":100}`, hostplugin.Options{})
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	obs.wantLine(t, `opened ""`, 1) // the test's client names no mode
	obs.wantLine(t, `ready ""`, 1)
	c.Expect(wire.TypeHeartbeat) // idle for a heartbeat
	c.Send(`{"t":"ping"}`)
	c.Expect(wire.TypeHeartbeat)
	c.Send(`{"t":"unknown"}`)
	c.Expect(wire.TypeError)
	_ = c.Conn.Close(websocket.StatusNormalClosure, "bye")
	obs.wantLine(t, `closed "" ready=true 1000`, 1)
	obs.wantLine(t, "probe", 1)
	obs.wantLine(t, "bad frame", 1)
	if obs.count("heartbeat") < 1 {
		t.Fatalf("no heartbeat counted (seen: %s)", obs)
	}
}

func TestTheCloseCodeIsTheHostsElseThePagesElseAbnormal(t *testing.T) {
	f, obs := observed(t, `{"maxFrameBytes":512}`, hostplugin.Options{})
	big := f.Dial(t)
	big.Expect(wire.TypeReady)
	big.Send(`{"t":"sub","stream":"` + strings.Repeat("s", 600) + `"}`)
	obs.wantLine(t, `closed "" ready=true 1009`, 1)

	dropped := f.Dial(t)
	dropped.Expect(wire.TypeReady)
	_ = dropped.Conn.CloseNow()
	obs.wantLine(t, `closed "" ready=true 1006`, 1)

	bad := f.Dial(t)
	bad.Expect(wire.TypeReady)
	for range 17 {
		bad.Send(`{"t":"nonsense"}`)
	}
	if code, _ := bad.Closed(); code != websocket.StatusProtocolError {
		t.Fatalf("17 bad frames closed the session with %d", code)
	}
	obs.wantLine(t, `closed "" ready=true 1002`, 1)

	drained := f.Dial(t)
	drained.Expect(wire.TypeReady)
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	go f.H.Drain(ctx, "") // at once past its context: whoever stays is closed with 1001
	drained.Expect(wire.TypeGoAway)
	if code, _ := drained.Closed(); code != wire.CloseDrained {
		t.Fatalf("a page that stayed was closed with %d", code)
	}
	obs.wantLine(t, `closed "" ready=true 1001`, 1)
	obs.wantLine(t, "draining", 1)
	obs.wantLine(t, "goaway 1", 1)
	obs.wantLine(t, "drained 1", 1)
	_ = dialThrough(t, f, nil) // a late socket is turned away with the goaway
	obs.wantLine(t, "upgrade draining", 1)
	obs.wantLine(t, "goaway 1", 2)
}

func TestASessionsModeIsTheOneItsURLNames(t *testing.T) {
	f, obs := observed(t, `{}`, hostplugin.Options{})
	for _, query := range []string{"shared", "in-page", "native", "something+else", ""} {
		if query != "" {
			query = "?" + wire.ModeParam + "=" + query
		}
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		conn, _, err := websocket.Dial(ctx, f.WSURL()+query, &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		c := &client{T: t, Conn: conn}
		c.Expect(wire.TypeReady)
		_ = conn.Close(websocket.StatusNormalClosure, "")
		waitFor(t, "the session to close", func() bool { return f.H.Sessions() == 0 })
	}
	for mode, n := range map[string]int{wire.ModeShared: 1, wire.ModeInPage: 1, wire.ModeNative: 1, "": 2} {
		obs.wantLine(t, fmt.Sprintf("opened %q", mode), n)
		obs.wantLine(t, fmt.Sprintf("ready %q", mode), n)
		obs.wantLine(t, fmt.Sprintf("closed %q ready=true 1000", mode), n)
	}
}

func TestTheObserverCountsSubscriptionsByHowTheyCaughtUpAndWhatWasDelivered(t *testing.T) {
	authz := func(_, stream string) error {
		if stream == "secret" {
			return errors.New("not yours")
		}
		return nil
	}
	f, obs := observed(t, `{"ringSize":2}`, hostplugin.Options{Authorize: authz})
	a, b := f.Dial(t), f.Dial(t)
	a.Expect(wire.TypeReady)
	b.Expect(wire.TypeReady)
	a.Send(`{"t":"sub","stream":"S"}`)
	r := a.Expect(wire.TypeReset)
	b.Send(`{"t":"sub","stream":"S"}`)
	b.Expect(wire.TypeReset)
	obs.wantLine(t, "subscribed fresh", 2)
	if _, err := f.H.Publish(context.Background(), "S", json.RawMessage(`1`)); err != nil {
		t.Fatal(err)
	}
	a.Expect(wire.TypeEvent)
	b.Expect(wire.TypeEvent)
	obs.wantLine(t, "published true", 1)
	obs.wantLine(t, "delivered 2", 1)
	if _, err := f.H.Publish(context.Background(), "", json.RawMessage(`1`)); err == nil {
		t.Fatal("a stream without a name was published to")
	}

	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	for _, tc := range []struct{ sub, want string }{
		{fmt.Sprintf(`{"t":"sub","stream":"S","epoch":%q,"after":%d}`, r.Epoch, r.Seq), "cursor"},
		{`{"t":"sub","stream":"S","epoch":"another","after":1}`, "epoch"},
		{fmt.Sprintf(`{"t":"sub","stream":"S","epoch":%q,"after":99}`, r.Epoch), "ahead"},
	} {
		c.Send(tc.sub)
		obs.wantLine(t, "subscribed "+tc.want, 1)
	}
	for range 3 {
		if _, err := f.H.Publish(context.Background(), "S", json.RawMessage(`2`)); err != nil {
			t.Fatal(err)
		}
	}
	c.Send(fmt.Sprintf(`{"t":"sub","stream":"S","epoch":%q,"after":%d}`, r.Epoch, r.Seq)) // a ring of 2 no longer holds seq 1
	obs.wantLine(t, "subscribed behind", 1)
	c.Send(`{"t":"sub","stream":"secret"}`)
	for c.Next().T != wire.TypeDenied { // past what its subscriptions were sent
	}
	obs.wantLine(t, "denied", 1)
	// Published 1 + 3, none failed; nothing but Publish publishes.
	obs.wantLine(t, "published true", 4)
	if n := obs.count("published false"); n != 0 {
		t.Fatalf("%d failed publishes, want 0: a refused name never reaches the log", n)
	}
}

func TestTheObserverIsToldOfASessionShed(t *testing.T) {
	obs := &seen{}
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{Observer: obs})
	hostplugin.SetMaxQueue(f.H, 2)
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	c.Send(`{"t":"sub","stream":"S"}`)
	c.Expect(wire.TypeReset)
	// The page reads nothing more: a burst fills its queue.
	for range 200 {
		_, _ = f.H.Publish(context.Background(), "S", json.RawMessage(`"`+strings.Repeat("x", 4000)+`"`))
	}
	obs.wantLine(t, "shed", 1)
}

func TestTheObserverCountsCallsByNameAndOutcome(t *testing.T) {
	f, obs := observed(t, `{"callRate":1,"callBurst":2}`, hostplugin.Options{})
	f.H.HandleCall("echo", func(_ context.Context, c *hostplugin.Call) (json.RawMessage, error) { return c.Data, nil })
	f.H.HandleCall("fail", func(context.Context, *hostplugin.Call) (json.RawMessage, error) { return nil, errors.New("no") })
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	c.Send(`{"t":"call","id":1,"name":"echo","data":1}`)
	c.Expect(wire.TypeReply)
	c.Send(`{"t":"call","id":2,"name":"fail"}`)
	c.Expect(wire.TypeReply)
	c.Send(`{"t":"call","id":3,"name":"echo"}`) // over the burst
	c.Expect(wire.TypeReply)
	c.Send(`{"t":"call","id":4,"name":"nobody.has.this"}`)
	c.Expect(wire.TypeReply)
	c.Send(`{"t":"call","id":5,"name":"bad name"}`)
	c.Expect(wire.TypeReply)
	for _, line := range []string{`call "echo" ok`, `call "fail" app`, `call "echo" busy`, `call "" unknown`, `call "" bad-request`} {
		obs.wantLine(t, line, 1)
	}
}

func TestReadinessFailsBeforeTheFirstGoAwayIsSent(t *testing.T) {
	f, obs := observed(t, `{}`, hostplugin.Options{})
	ready := httpGet(t, f.Srv.URL+"/ready", f.H.ReadinessHandler())
	if ready.status != http.StatusOK || ready.body != `{"ready":true}` {
		t.Fatalf("readiness of a ready Host: %d %s", ready.status, ready.body)
	}
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	go f.H.Drain(context.Background(), "")
	c.Expect(wire.TypeGoAway)
	// The page has its goaway: a balancer asking now must already be told to stop.
	got := httpGet(t, f.Srv.URL+"/ready", f.H.ReadinessHandler())
	if got.status != http.StatusServiceUnavailable || !strings.Contains(got.body, "draining") {
		t.Fatalf("readiness once a goaway is out: %d %s", got.status, got.body)
	}
	if !errors.Is(f.H.Readiness(), hostplugin.ErrDraining) {
		t.Fatalf("Readiness() = %v, want ErrDraining", f.H.Readiness())
	}
	live := httpGet(t, f.Srv.URL+"/live", f.H.LivenessHandler())
	if live.status != http.StatusOK || live.body != `{"live":true}` {
		t.Fatalf("liveness of a draining Host: %d %s", live.status, live.body)
	}
	obs.wantLine(t, "gate true", 1)
	obs.wantLine(t, "draining", 1)
}

// brokenLog is a Ring whose CheckLog says what the test sets.
type brokenLog struct {
	*hostplugin.Ring
	mu  sync.Mutex
	err error
}

func (b *brokenLog) CheckLog() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

func TestReadinessFollowsTheGateAndTheLog(t *testing.T) {
	log := &brokenLog{Ring: hostplugin.NewRing(8)}
	h, err := hostplugin.New(hostplugin.DefaultConfig(), &hostplugin.Options{Authorize: hostplugin.PublicStreams, Log: log, NoClient: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Readiness(); !errors.Is(err, hostplugin.ErrGateClosed) {
		t.Fatalf("a new Host: Readiness() = %v, want ErrGateClosed", err)
	}
	h.SetReady(true)
	if err := h.Readiness(); err != nil {
		t.Fatalf("an open gate: Readiness() = %v", err)
	}
	log.mu.Lock()
	log.err = errors.New("no NATS server")
	log.mu.Unlock()
	err = h.Readiness()
	if !errors.Is(err, hostplugin.ErrLogUnavailable) || !strings.Contains(err.Error(), "no NATS server") {
		t.Fatalf("a log that cannot serve: Readiness() = %v", err)
	}
	got := httpGet(t, "http://h/ready", h.ReadinessHandler())
	if got.status != http.StatusServiceUnavailable || !strings.Contains(got.body, "no NATS server") {
		t.Fatalf("the handler with a log that cannot serve: %d %s", got.status, got.body)
	}
	_ = h.Close()
	if err := h.Readiness(); !errors.Is(err, hostplugin.ErrClosed) {
		t.Fatalf("a closed Host: Readiness() = %v, want ErrClosed", err)
	}
}

type answer struct {
	status int
	body   string
}

func httpGet(t *testing.T, url string, h http.Handler) answer {
	t.Helper()
	rec := httptest.NewRecorder()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.ServeHTTP(rec, req)
	if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("%s: Cache-Control %q, want no-store", url, cc)
	}
	return answer{rec.Code, strings.TrimSpace(rec.Body.String())}
}
