//go:build !js

package hub_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
	"github.com/lifeline-go/lifeline/wasm/internal/hub"
)

var quiet = slog.New(slog.DiscardHandler)

// host is a real Host plugin on loopback, the Host every hub test talks to.
type host struct {
	h   *hostplugin.Host
	srv *httptest.Server
}

func newHost(t *testing.T) *host {
	t.Helper()
	return newHostWith(t, &hostplugin.Options{Logger: quiet, Authorize: hostplugin.PublicStreams})
}

func newHostWith(t *testing.T, opts *hostplugin.Options) *host {
	t.Helper()
	h, err := hostplugin.New(hostplugin.DefaultConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	h.SetReady(true)
	srv := httptest.NewServer(h.Handler(http.NotFoundHandler()))
	t.Cleanup(func() { h.Close(); srv.Close() })
	return &host{h: h, srv: srv}
}

func (x *host) publish(t *testing.T, stream string, n int) {
	t.Helper()
	for range n {
		seq, err := x.h.Publish(context.Background(), stream, []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		_ = seq
	}
}

// tab records what a hub sends it.
type tab struct {
	mu       sync.Mutex
	statuses []hub.Status
	got      map[int][]gateway.Delivery
	ended    map[int]error
	sent     map[int]string       // call id → the epoch it was sent under
	sentOn   map[int]gateway.Sent // call id → all the hub said of its last write
	replies  map[int]reply
	presence map[int][]presenceReport
	changed  chan struct{}
}

// presenceReport is one Presence a tab was told.
type presenceReport struct {
	p     gateway.Presence
	first bool
}

// reply is how a tab's call ended.
type reply struct {
	data string
	err  error
}

func newClient() *tab {
	return &tab{got: map[int][]gateway.Delivery{}, ended: map[int]error{}, sent: map[int]string{}, sentOn: map[int]gateway.Sent{}, replies: map[int]reply{}, presence: map[int][]presenceReport{}, changed: make(chan struct{}, 1)}
}

func (c *tab) Sent(id int, on gateway.Sent) {
	c.do(func() { c.sent[id], c.sentOn[id] = on.Epoch, on })
}
func (c *tab) Replied(id int, data wire.RawJSON, err error) {
	c.do(func() { c.replies[id] = reply{string(data), err} })
}

func (c *tab) Status(s hub.Status) { c.do(func() { c.statuses = append(c.statuses, s) }) }
func (c *tab) Deliver(id int, d gateway.Delivery) {
	c.do(func() { c.got[id] = append(c.got[id], d) })
}
func (c *tab) Ended(id int, err error) { c.do(func() { c.ended[id] = err }) }
func (c *tab) Presence(id int, p gateway.Presence, first bool) {
	c.do(func() { c.presence[id] = append(c.presence[id], presenceReport{p, first}) })
}

func (c *tab) do(f func()) {
	c.mu.Lock()
	f()
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// wait returns once pred holds of the tab, or fails the test after 10 s.
func (c *tab) wait(t *testing.T, what string, pred func(*tab) bool) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		ok := pred(c)
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-c.changed:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (c *tab) state() string {
	if len(c.statuses) == 0 {
		return ""
	}
	s := c.statuses[len(c.statuses)-1]
	if s.Misconfigured != nil {
		return "misconfigured"
	}
	return s.State.String()
}

func (c *tab) deliveries(id int) []gateway.Delivery {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]gateway.Delivery(nil), c.got[id]...)
}

// placeable checks what a subscriber got: a baseline first, then events once each and in
// order, with resets only as explicit new starts. It returns the last seq.
func placeable(t *testing.T, who string, ds []gateway.Delivery) uint64 {
	t.Helper()
	if len(ds) == 0 || !ds[0].Reset {
		t.Fatalf("%s: the first delivery is not a baseline: %v", who, summary(ds))
	}
	last := ds[0].Seq
	for _, d := range ds[1:] {
		switch {
		case d.Reset:
			last = d.Seq
		case d.Seq != last+1:
			t.Fatalf("%s: seq %d after %d: %v", who, d.Seq, last, summary(ds))
		default:
			last = d.Seq
		}
	}
	return last
}

func summary(ds []gateway.Delivery) string {
	var b strings.Builder
	for _, d := range ds {
		if d.Reset {
			fmt.Fprintf(&b, "R%d ", d.Seq)
		} else {
			fmt.Fprintf(&b, "%d ", d.Seq)
		}
	}
	return b.String()
}

func hello(x *host) hub.In {
	return hub.In{T: hub.MsgHello, Bootstrap: `{}`, Href: x.srv.URL + "/page", Online: true}
}

func newHub(t *testing.T) *hub.Hub {
	h := hub.New(&hub.Options{Logger: quiet})
	t.Cleanup(func() { h.Close(nil) })
	return h
}

// helloTab attaches a new tab to h that has said hello to x.
func helloTab(h *hub.Hub, x *host) (*tab, *hub.Conn) {
	c := newClient()
	conn := h.Attach(c)
	conn.Handle(hello(x))
	return c, conn
}

// connectedTab is helloTab, once the tab is told it is connected.
func connectedTab(t *testing.T, h *hub.Hub, x *host) (*tab, *hub.Conn) {
	t.Helper()
	c, conn := helloTab(h, x)
	c.wait(t, "connected", func(c *tab) bool { return c.state() == "connected" })
	return c, conn
}

// subscribed subscribes the tab c (through conn) to stream as id, and waits for the
// subscription's baseline.
func subscribed(t *testing.T, c *tab, conn *hub.Conn, id int, stream string) {
	t.Helper()
	conn.Handle(hub.In{T: hub.MsgSubscribe, ID: id, Stream: stream})
	c.wait(t, fmt.Sprintf("the baseline of subscription %d to %s", id, stream), func(c *tab) bool { return len(c.got[id]) == 1 })
}

func TestTabsShareOneSessionAndOneSubscription(t *testing.T) {
	x := newHost(t)
	h := newHub(t)
	a, b := newClient(), newClient()
	ca, cb := h.Attach(a), h.Attach(b)
	ca.Handle(hello(x))
	a.wait(t, "a connected", func(c *tab) bool { return c.state() == "connected" })
	cb.Handle(hello(x))
	// A tab that says Hello to a running hub gets the current status at once.
	b.wait(t, "b told it is connected", func(c *tab) bool { return c.state() == "connected" })
	ca.Handle(hub.In{T: hub.MsgSubscribe, ID: 1, Stream: "ticks"})
	cb.Handle(hub.In{T: hub.MsgSubscribe, ID: 7, Stream: "ticks"})
	cb.Handle(hub.In{T: hub.MsgSubscribe, ID: 8, Stream: "ticks"}) // two subscribers in one tab
	a.wait(t, "a's baseline", func(c *tab) bool { return len(c.got[1]) > 0 })
	b.wait(t, "b's baselines", func(c *tab) bool { return len(c.got[7]) > 0 && len(c.got[8]) > 0 })
	x.publish(t, "ticks", 50)
	for _, w := range []struct {
		c  *tab
		id int
	}{{a, 1}, {b, 7}, {b, 8}} {
		w.c.wait(t, "50 events", func(c *tab) bool {
			ds := c.got[w.id]
			return len(ds) > 0 && ds[len(ds)-1].Seq == 50
		})
		if last := placeable(t, fmt.Sprint("sub ", w.id), w.c.deliveries(w.id)); last != 50 {
			t.Fatalf("sub %d ended at %d", w.id, last)
		}
	}
	if n := x.h.Sessions(); n != 1 {
		t.Fatalf("the Host holds %d sessions for two tabs, want 1", n)
	}
}

func TestALateSubscriberStartsFromABaselineWithoutDisturbingTheOthers(t *testing.T) {
	x := newHost(t)
	h := newHub(t)
	a, ca := helloTab(h, x)
	b, cb := helloTab(h, x)
	subscribed(t, a, ca, 1, "s")
	x.publish(t, "s", 30)
	a.wait(t, "30 events", func(c *tab) bool { return len(c.got[1]) == 31 })
	cb.Handle(hub.In{T: hub.MsgSubscribe, ID: 2, Stream: "s"})
	b.wait(t, "b's start", func(c *tab) bool { return len(c.got[2]) == 31 })
	x.publish(t, "s", 5)
	a.wait(t, "a's 35th", func(c *tab) bool { return len(c.got[1]) == 36 })
	b.wait(t, "b's 35th", func(c *tab) bool { return len(c.got[2]) == 36 })
	placeable(t, "a", a.deliveries(1))
	placeable(t, "b", b.deliveries(2))
	if n := countResets(a.deliveries(1)); n != 1 {
		t.Fatalf("a saw %d resets; a late joiner must not re-baseline the others", n)
	}
}

func TestALateSubscriberPastTheReplayGetsAFreshBaselineForEveryone(t *testing.T) {
	x := newHost(t)
	h := newHub(t)
	a, ca := helloTab(h, x)
	b, cb := helloTab(h, x)
	subscribed(t, a, ca, 1, "s")
	// In batches a page keeps up with: a burst beyond the Host's send queue would shed the
	// session (it comes back by cursor), which is another test.
	for sent := 0; sent < hub.MaxReplay+10; sent += 100 {
		n := min(100, hub.MaxReplay+10-sent)
		x.publish(t, "s", n)
		a.wait(t, "the batch", func(c *tab) bool { return len(c.got[1]) == 1+sent+n })
	}
	cb.Handle(hub.In{T: hub.MsgSubscribe, ID: 2, Stream: "s"})
	b.wait(t, "b's fresh baseline", func(c *tab) bool { return len(c.got[2]) > 0 })
	if ds := b.deliveries(2); !ds[0].Reset || ds[0].Seq != hub.MaxReplay+10 {
		t.Fatalf("b started with %v, want a fresh baseline at the head", summary(ds[:1]))
	}
	a.wait(t, "a's re-baseline", func(c *tab) bool { return countResets(c.got[1]) == 2 })
	x.publish(t, "s", 1)
	a.wait(t, "a's next", func(c *tab) bool { return c.got[1][len(c.got[1])-1].Seq == hub.MaxReplay+11 })
	b.wait(t, "b's next", func(c *tab) bool { return c.got[2][len(c.got[2])-1].Seq == hub.MaxReplay+11 })
	placeable(t, "a", a.deliveries(1))
	placeable(t, "b", b.deliveries(2))
}

func countResets(ds []gateway.Delivery) int {
	n := 0
	for _, d := range ds {
		if d.Reset {
			n++
		}
	}
	return n
}

func TestOneTabLeavingNeverEndsAnothersSubscription(t *testing.T) {
	x := newHost(t)
	h := newHub(t)
	a, ca := helloTab(h, x)
	b, cb := helloTab(h, x)
	ca.Handle(hub.In{T: hub.MsgSubscribe, ID: 1, Stream: "s"})
	cb.Handle(hub.In{T: hub.MsgSubscribe, ID: 1, Stream: "s"}) // ids are per tab
	a.wait(t, "a's baseline", func(c *tab) bool { return len(c.got[1]) == 1 })
	b.wait(t, "b's baseline", func(c *tab) bool { return len(c.got[1]) == 1 })
	ca.Handle(hub.In{T: hub.MsgUnsubscribe, ID: 1})
	hub.Sync(ca)
	x.publish(t, "s", 3)
	b.wait(t, "b's events", func(c *tab) bool { return len(c.got[1]) == 4 })
	ca.Detach()
	<-ca.Done()
	x.publish(t, "s", 3)
	b.wait(t, "b's events after a left", func(c *tab) bool { return len(c.got[1]) == 7 })
	placeable(t, "b", b.deliveries(1))
	if n := len(a.deliveries(1)); n != 1 {
		t.Fatalf("a got %d deliveries after unsubscribing, want only its baseline", n)
	}
	if h.Tabs() != 1 {
		t.Fatalf("%d tabs after a detached, want 1", h.Tabs())
	}
	// The last subscriber leaving ends the subscription on the wire: a new one starts fresh.
	cb.Handle(hub.In{T: hub.MsgUnsubscribe, ID: 1})
	subscribed(t, b, cb, 2, "s")
	if d := b.deliveries(2)[0]; !d.Reset || d.Seq != 6 {
		t.Fatalf("new subscription started with %v, want a fresh baseline at 6", summary([]gateway.Delivery{d}))
	}
}

func TestCommandsOfAnyTabActOnTheSharedConnection(t *testing.T) {
	x := newHost(t)
	h := newHub(t)
	a, ca := helloTab(h, x)
	b, cb := helloTab(h, x)
	a.wait(t, "connected", func(c *tab) bool { return c.state() == "connected" })
	accepted := x.h.Stats().Accepted
	cb.Handle(hub.In{T: hub.MsgCommand, Command: hub.CommandReconnect})
	a.wait(t, "a sees the new attempt", func(c *tab) bool {
		return c.state() == "connected" && c.statuses[len(c.statuses)-1].Attempt == 2
	})
	if got := x.h.Stats().Accepted; got != accepted+1 {
		t.Fatalf("the Host accepted %d sockets after Reconnect now, want %d", got, accepted+1)
	}
	cb.Handle(hub.In{T: hub.MsgOnline, Online: false})
	a.wait(t, "a offline", func(c *tab) bool { return c.state() == "offline" })
	cb.Handle(hub.In{T: hub.MsgOnline, Online: true})
	a.wait(t, "a back", func(c *tab) bool { return c.state() == "connected" })
	ca.Handle(hub.In{T: hub.MsgCommand, Command: hub.CommandStop})
	b.wait(t, "b stopped", func(c *tab) bool { return c.state() == "stopped" })
	ca.Handle(hub.In{T: hub.MsgCommand, Command: hub.CommandStart})
	b.wait(t, "b back", func(c *tab) bool { return c.state() == "connected" })
}

func TestAMisconfiguredBootstrapConnectsNothingAndSaysWhy(t *testing.T) {
	h := newHub(t)
	a := newClient()
	ca := h.Attach(a)
	ca.Handle(hub.In{T: hub.MsgHello, Bootstrap: `{"recovery":{"deadlineMs":0}}`, Href: "http://127.0.0.1:1/"})
	ca.Handle(hub.In{T: hub.MsgSubscribe, ID: 1, Stream: "s"})
	a.wait(t, "misconfigured", func(c *tab) bool { return c.state() == "misconfigured" })
	a.wait(t, "the subscription ended", func(c *tab) bool { return c.ended[1] != nil })
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, err := range []error{a.statuses[0].Misconfigured, a.ended[1]} {
		if !strings.Contains(err.Error(), "recovery.deadlineMs") || !strings.Contains(err.Error(), "got 0") {
			t.Fatalf("error %q does not name the field and the value", err)
		}
	}
	var ce *controller.ConfigError
	if !errors.As(a.statuses[0].Misconfigured, &ce) {
		t.Fatalf("misconfigured error %T is not a *controller.ConfigError", a.statuses[0].Misconfigured)
	}
}

func TestABadStreamNameEndsThatSubscriptionOnly(t *testing.T) {
	x := newHost(t)
	h := newHub(t)
	a, ca := helloTab(h, x)
	ca.Handle(hub.In{T: hub.MsgSubscribe, ID: 1, Stream: ""})
	ca.Handle(hub.In{T: hub.MsgSubscribe, ID: 2, Stream: "ok"})
	a.wait(t, "the bad one ended, the good one started", func(c *tab) bool { return c.ended[1] != nil && len(c.got[2]) == 1 })
}

func TestCloseEndsEverySubscription(t *testing.T) {
	x := newHost(t)
	h := hub.New(&hub.Options{Logger: quiet})
	a, ca := helloTab(h, x)
	subscribed(t, a, ca, 1, "s")
	cause := errors.New("test: worker closing")
	h.Close(cause)
	<-ca.Done()
	deadline := time.Now().Add(5 * time.Second)
	for x.h.Sessions() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := x.h.Sessions(); n != 0 {
		t.Fatalf("the Host still holds %d sessions after the hub closed", n)
	}
}

func TestSubscriptionsMadeBeforeHelloStartOnceTheHubIsBuilt(t *testing.T) {
	x := newHost(t)
	h := newHub(t)
	a := newClient()
	ca := h.Attach(a)
	ca.Handle(hub.In{T: hub.MsgSubscribe, ID: 1, Stream: "s"})
	ca.Handle(hub.In{T: hub.MsgSubscribe, ID: 2, Stream: "s"})
	ca.Handle(hub.In{T: hub.MsgUnsubscribe, ID: 2})
	ca.Handle(hello(x))
	a.wait(t, "the baseline of the early subscription", func(c *tab) bool { return len(c.got[1]) == 1 })
	x.publish(t, "s", 1)
	a.wait(t, "its event", func(c *tab) bool { return len(c.got[1]) == 2 })
	if n := len(a.deliveries(2)); n != 0 {
		t.Fatalf("a subscription removed before hello got %d deliveries", n)
	}
}

func TestAPageThatWokeUpProbesTheLink(t *testing.T) {
	x := newHost(t)
	h := newHub(t)
	a, ca := connectedTab(t, h, x)
	// Every event after which the link may be gone probes it; a live link answers, and
	// nothing changes.
	for _, ev := range []hub.Event{hub.EventVisible, hub.EventResume, hub.EventPageShow, hub.EventLate, hub.EventNetwork, hub.EventHidden, hub.EventFreeze, "bogus"} {
		ca.Handle(hub.In{T: hub.MsgLife, Event: ev})
	}
	ca.Handle(hub.In{T: hub.MsgOnline, Online: true})
	hub.Sync(ca)
	time.Sleep(gateway.DefaultProbeTimeout + 200*time.Millisecond) // past every probe's bound
	a.mu.Lock()
	defer a.mu.Unlock()
	if last := a.statuses[len(a.statuses)-1]; last.State != controller.Connected || last.Attempt != 1 {
		t.Fatalf("after the page's events: %v attempt %d, want the first connection still", last.State, last.Attempt)
	}
}

func TestAHubWithNoTabLeftIsIdleAfterItsLinger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		idle := make(chan time.Time, 4)
		h := hub.New(&hub.Options{Logger: quiet, OnIdle: func() { idle <- time.Now() }})
		a := h.Attach(newClient())
		a.Detach()
		synctest.Wait()
		t0 := time.Now()
		// The only tab reloads: it is back within the linger, and the hub stays.
		time.Sleep(hub.DefaultIdleAfter - time.Second)
		b := h.Attach(newClient())
		time.Sleep(time.Minute)
		synctest.Wait()
		if len(idle) != 0 {
			t.Fatalf("idle while a tab was attached")
		}
		b.Detach()
		synctest.Wait()
		t1 := time.Now()
		time.Sleep(hub.DefaultIdleAfter)
		synctest.Wait()
		select {
		case at := <-idle:
			if got := at.Sub(t1); got != hub.DefaultIdleAfter {
				t.Fatalf("idle %v after the last tab left, want %v", got, hub.DefaultIdleAfter)
			}
		default:
			t.Fatalf("not idle %v after the last tab left (first left at %v)", hub.DefaultIdleAfter, t0)
		}
		h.Close(nil)
	})
}

func TestADeniedSubscriptionEndsWithTheHostsReasonAndTheOthersCarryOn(t *testing.T) {
	x := newHostWith(t, &hostplugin.Options{Logger: quiet, Authorize: func(_, stream string) error {
		if stream == "user.bob" {
			return errors.New("not yours: sign in as bob")
		}
		return nil
	}})
	h := newHub(t)
	a, ca := helloTab(h, x)
	ca.Handle(hub.In{T: hub.MsgSubscribe, ID: 1, Stream: "user.bob"})
	ca.Handle(hub.In{T: hub.MsgSubscribe, ID: 2, Stream: "ticks"})
	a.wait(t, "the denial and the other's baseline", func(c *tab) bool { return c.ended[1] != nil && len(c.got[2]) == 1 })
	a.mu.Lock()
	err := a.ended[1]
	a.mu.Unlock()
	var de *gateway.DeniedError
	if !errors.Is(err, gateway.ErrDenied) || !errors.As(err, &de) || de.Reason != "not yours: sign in as bob" || de.Stream != "user.bob" {
		t.Fatalf("ended with %v, want a *gateway.DeniedError of user.bob with the Host's reason", err)
	}
	x.publish(t, "ticks", 1)
	a.wait(t, "the other stream's event", func(c *tab) bool { return len(c.got[2]) == 2 })
}

func TestEveryTabIsToldWhatCarriesTheSharedConnection(t *testing.T) {
	x := newHost(t)
	h := newHub(t)
	a, b := newClient(), newClient()
	ca, cb := h.Attach(a), h.Attach(b)
	ca.Handle(hello(x))
	cb.Handle(hello(x))
	for _, c := range []*tab{a, b} {
		c.wait(t, "connected on a WebSocket", func(c *tab) bool {
			return c.state() == "connected" && c.statuses[len(c.statuses)-1].Carrier.Kind == wire.CarrierWebSocket
		})
	}
	if s := a.statuses[len(a.statuses)-1]; s.Carrier.Blocked {
		t.Fatalf("status %+v: a WebSocket is not blocked", s.Carrier)
	}
	// The status that first says connected says what carries it: no indicator shows a
	// connection without its carrier, even for a moment.
	for _, c := range []*tab{a, b} {
		c.mu.Lock()
		connected := false
		for _, s := range c.statuses {
			connected = connected || s.Misconfigured == nil && s.State == controller.Connected
			if connected && s.Carrier.Kind == "" {
				c.mu.Unlock()
				t.Fatalf("a status %+v said connected without its carrier", s)
			}
			if !connected && s.Carrier.Kind != "" {
				// The carrier comes with the connected status, not in a status of its own
				// while the page is still connecting.
				c.mu.Unlock()
				t.Fatalf("a status %+v before the first connected named a carrier", s)
			}
		}
		c.mu.Unlock()
	}
}

func TestATabThatRemembersABlockedNetworkStartsTheHubOnHTTP(t *testing.T) {
	x := newHost(t)
	h := hub.New(&hub.Options{Logger: quiet, UpgradeAfter: time.Hour})
	t.Cleanup(func() { h.Close(nil) })
	a := newClient()
	in := hello(x)
	in.Carrier = wire.CarrierStream
	h.Attach(a).Handle(in)
	a.wait(t, "connected on the stream", func(c *tab) bool {
		return c.state() == "connected" && c.statuses[len(c.statuses)-1].Carrier == gateway.Carrier{Kind: wire.CarrierStream, Blocked: true}
	})
	// A carrier the hub does not know is no reason not to connect: it starts on a WebSocket.
	h2 := newHub(t)
	b := newClient()
	in.Carrier = "carrier-pigeon"
	h2.Attach(b).Handle(in)
	b.wait(t, "connected on a WebSocket", func(c *tab) bool {
		return c.state() == "connected" && c.statuses[len(c.statuses)-1].Carrier.Kind == wire.CarrierWebSocket
	})
}
