//go:build !js

package hostplugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/test/wstest"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// restartEnd reads until the socket ends and returns the restart messages of the error frames
// it carried and the close status and reason. Other frames (events, heartbeats) are skipped.
func restartEnd(c *client) (msgs []string, code websocket.StatusCode, reason string) {
	c.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for {
		_, b, err := c.Conn.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				c.T.Fatalf("the socket did not close within %v", bound)
			}
			var ce websocket.CloseError
			if !errors.As(err, &ce) {
				c.T.Fatalf("the socket ended without a close frame: %v", err)
			}
			return msgs, ce.Code, ce.Reason
		}
		f, err := wire.DecodeHost(b)
		if err != nil {
			c.T.Fatalf("DecodeHost(%s): %v", b, err)
		}
		if f.T == wire.TypeError {
			msgs = append(msgs, f.Message)
		}
	}
}

// A Host stopping with no successor must not keep its pages (and its process) for
// drainTimeoutMs: every page gets the restart message it can read, then 1012, at once.
func TestStopClosesEverySessionAtOnceWith1012(t *testing.T) {
	const n = 50
	// A drain would hold these sessions for a minute: nobody would take them.
	f := newFixture(t, `{"drainTimeoutMs":60000}`, true)
	clients := make([]*client, n)
	for i := range clients {
		clients[i] = f.Dial(t)
		clients[i].Expect(wire.TypeReady)
		clients[i].Send(`{"t":"sub","stream":"ticks"}`)
		clients[i].Expect(wire.TypeReset)
	}
	waitFor(t, "every session registered", func() bool { return f.H.Sessions() == n })
	// Events keep flowing while the Host stops: the restart message must still come first
	// among what the page reads at the end, and the close right after it.
	pubCtx, stopPub := context.WithCancel(context.Background())
	pubDone := make(chan struct{})
	go func() {
		defer close(pubDone)
		for i := 0; pubCtx.Err() == nil; i++ {
			_, _ = f.H.Publish(pubCtx, "ticks", fmt.Appendf(nil, `{"i":%d}`, i))
			time.Sleep(time.Millisecond)
		}
	}()
	defer func() { stopPub(); <-pubDone }()

	type end struct {
		msgs   []string
		code   websocket.StatusCode
		reason string
	}
	ends := make([]end, n)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			var e end
			e.msgs, e.code, e.reason = restartEnd(c)
			ends[i] = e
		})
	}

	start := time.Now()
	stopped := make(chan int, 1)
	go func() { stopped <- f.H.Stop(context.Background(), 250*time.Millisecond) }()
	var closed int
	select {
	case closed = <-stopped:
	case <-time.After(bound):
		t.Fatalf("Stop did not return within %v (drainTimeoutMs is 60 s)", bound)
	}
	took := time.Since(start)
	wg.Wait()
	t.Logf("Stop closed %d sessions in %v", closed, took)

	if closed != n {
		t.Errorf("Stop closed %d sessions, want %d", closed, n)
	}
	want := "service-restart retry-after=250"
	for i, e := range ends {
		if e.code != wire.CloseServiceRestart || e.reason != want {
			t.Errorf("page %d: closed with %d %q, want %d %q", i, e.code, e.reason, wire.CloseServiceRestart, want)
		}
		if len(e.msgs) != 1 || e.msgs[0] != want {
			t.Errorf("page %d: error frames %q before the close, want exactly [%q]", i, e.msgs, want)
		}
	}
	waitFor(t, "no session left", func() bool { return f.H.Sessions() == 0 })
	if st := f.H.Stats(); !st.Draining {
		t.Errorf("Stats after Stop: %+v, want draining (health then says 503)", st)
	}
	if !f.Logs.Has("stopped with no successor", "sessions=50") {
		t.Errorf("no log of the stop:\n%s", f.Logs)
	}
}

func TestStopAnswersLaterSocketsWithTheRestartAnd1012(t *testing.T) {
	f := newFixture(t, `{}`, true)
	f.H.Stop(context.Background(), 0)
	c := f.Dial(t) // the listener is still open here: a socket that raced the stop
	msgs, code, reason := restartEnd(c)
	if code != wire.CloseServiceRestart || reason != "service-restart" || len(msgs) != 1 || msgs[0] != "service-restart" {
		t.Errorf("a socket after Stop got error frames %q and close %d %q, want [service-restart] then %d service-restart",
			msgs, code, reason, wire.CloseServiceRestart)
	}
	if f.H.Sessions() != 0 {
		t.Errorf("a socket after Stop became a session")
	}
}

func TestStopClosesSessionsStillWaitingForTheGate(t *testing.T) {
	f := newFixture(t, `{}`, false)
	c := f.Dial(t)
	waitFor(t, "the session registered", func() bool { return f.H.Sessions() == 1 })
	go f.H.Stop(context.Background(), 0)
	_, b, err := c.Conn.Read(t.Context())
	if err != nil {
		t.Fatalf("reading the first frame: %v", err)
	}
	if fr, err := wire.DecodeHost(b); err != nil || fr.T != wire.TypeError || fr.Message != "service-restart" {
		t.Fatalf("first frame %s (%v), want the restart error frame and no ready", b, err)
	}
	if code, _ := c.Closed(); code != wire.CloseServiceRestart {
		t.Errorf("close %d, want %d", code, wire.CloseServiceRestart)
	}
	// The gate opening afterwards must not resurrect it.
	f.H.SetReady(true)
	waitFor(t, "no session left", func() bool { return f.H.Sessions() == 0 })
}

// A page that never answers the close must not hold Stop past its context: the process
// would stay for each dead peer's close handshake.
func TestStopReturnsAtItsContextWhileAPeerIgnoresTheClose(t *testing.T) {
	f := newFixture(t, `{}`, true)
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// The client reads nothing until Stop has returned, so the close handshake cannot have
	// completed: Stop returning proves it did not wait for it.
	if n := f.H.Stop(ctx, 0); n != 1 {
		t.Errorf("Stop closed %d sessions, want 1", n)
	}
	msgs, code, _ := restartEnd(c)
	if code != wire.CloseServiceRestart || len(msgs) != 1 {
		t.Errorf("after Stop returned the page read %q and close %d, want the restart and %d", msgs, code, wire.CloseServiceRestart)
	}
}

// Drain keeps its meaning after a Stop was added: a Host with somewhere to send its pages
// still tells them where, and closes only those that stay (1001, not 1012).
func TestDrainToASuccessorStillSendsGoAwayNotTheRestart(t *testing.T) {
	f := newFixture(t, `{"drainTimeoutMs":200}`, true)
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	go f.H.Drain(context.Background(), "")
	if g := c.Expect(wire.TypeGoAway); g.URI != "" {
		t.Errorf("goaway uri %q, want the same place", g.URI)
	}
	msgs, code, _ := restartEnd(c)
	if code != wire.CloseDrained || len(msgs) != 0 {
		t.Errorf("a page that stayed through the drain got %q and close %d, want no restart and %d", msgs, code, wire.CloseDrained)
	}
}

func TestDrainSendsGoAwayThenClosesWhoeverStays(t *testing.T) {
	f := newFixture(t, `{"drainTimeoutMs":300}`, true)
	leaver, stayer := f.Dial(t), f.Dial(t)
	leaver.Expect(wire.TypeReady)
	stayer.Expect(wire.TypeReady)

	closed := make(chan int, 1)
	go func() { closed <- f.H.Drain(context.Background(), "wss://next.example/_lifeline/events") }()

	for _, c := range []*client{leaver, stayer} {
		if g := c.Expect(wire.TypeGoAway); g.URI != "wss://next.example/_lifeline/events" {
			t.Errorf("goaway uri %q", g.URI)
		}
	}
	_ = leaver.Conn.Close(websocket.StatusNormalClosure, "moved")
	if code, _ := stayer.Closed(); code != wire.CloseDrained {
		t.Errorf("the page that stayed was closed with %d, want %d", code, wire.CloseDrained)
	}
	select {
	case n := <-closed:
		if n != 1 {
			t.Errorf("Drain closed %d sessions, want 1 (the other left)", n)
		}
	case <-time.After(bound):
		t.Fatal("Drain did not return")
	}
	// A page arriving after the drain is sent away at once.
	late := f.Dial(t)
	if g := late.Expect(wire.TypeGoAway); g.URI != "wss://next.example/_lifeline/events" {
		t.Errorf("late goaway uri %q", g.URI)
	}
	if code, _ := late.Closed(); code != wire.CloseDrained {
		t.Errorf("late page closed with %d, want %d", code, wire.CloseDrained)
	}
	waitFor(t, "every session to end", func() bool { return f.H.Sessions() == 0 })
}

func TestDrainReturnsAsSoonAsEveryPageHasLeft(t *testing.T) {
	f := newFixture(t, `{"drainTimeoutMs":60000}`, true)
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	closed := make(chan int, 1)
	go func() { closed <- f.H.Drain(context.Background(), "") }()
	if g := c.Expect(wire.TypeGoAway); g.URI != "" {
		t.Errorf("goaway uri %q, want empty (come back here)", g.URI)
	}
	_ = c.Conn.Close(websocket.StatusNormalClosure, "bye")
	select {
	case n := <-closed:
		if n != 0 {
			t.Errorf("Drain closed %d sessions, want 0", n)
		}
	case <-time.After(bound):
		t.Fatal("Drain waited for its timeout although every page had left")
	}
}

func TestDrainClosesSessionsStillWaitingForTheGate(t *testing.T) {
	f := newFixture(t, `{}`, false)
	c := f.Dial(t)
	waitFor(t, "the session to open", func() bool { return f.H.Sessions() == 1 })
	go f.H.Drain(context.Background(), "")
	c.Expect(wire.TypeGoAway)
	if code, _ := c.Closed(); code != wire.CloseDrained {
		t.Errorf("close %d, want %d", code, wire.CloseDrained)
	}
}

// bubbleServer serves h's events endpoint with a real http.Server over an in-memory listener,
// for a synctest bubble: the server's own Shutdown is what the test sees. It returns the
// server, a client that reaches it, and the channel Serve's error comes on.
func bubbleServer(t *testing.T, h *hostplugin.Host) (*http.Server, *http.Client, <-chan error) {
	t.Helper()
	ln := wstest.NewListener()
	srv := &http.Server{Handler: endpointOnly(h)}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	client := ln.Client()
	t.Cleanup(func() {
		client.CloseIdleConnections()
		_ = srv.Close()
	})
	return srv, client, served
}

// bubbleDial opens a page's socket through client, and returns it with what it reads until
// its end: the restart messages of its error frames, its goaways and its close.
func bubbleDial(t *testing.T, client *http.Client) (*websocket.Conn, <-chan pageEnd) {
	t.Helper()
	conn, _, err := websocket.Dial(t.Context(), "ws://host.invalid"+wire.DefaultPath, &websocket.DialOptions{
		Subprotocols: []string{wire.Subprotocol}, HTTPClient: client})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	ended := make(chan pageEnd, 1)
	go func() {
		var e pageEnd
		for {
			_, b, err := conn.Read(context.Background())
			if err != nil {
				e.code = websocket.CloseStatus(err)
				ended <- e
				return
			}
			f, err := wire.DecodeHost(b)
			if err != nil {
				t.Errorf("DecodeHost(%s): %v", b, err)
				continue
			}
			e.frames = append(e.frames, f.T)
			if f.T == wire.TypeError {
				e.restarts = append(e.restarts, f.Message)
			}
			e.seen = append(e.seen, time.Now())
		}
	}()
	return conn, ended
}

// pageEnd is what a page read of its session: the type of every frame (and when), the
// restart messages of its error frames, and its close code.
type pageEnd struct {
	frames   []string
	seen     []time.Time
	restarts []string
	code     websocket.StatusCode
}

// bubbleHost is a Host made in the bubble (its timers on the fake clock), ready, with no
// client, closed with the test.
func bubbleHost(t *testing.T, doc string) *hostplugin.Host {
	t.Helper()
	h, err := hostplugin.New(mustConfig(t, doc), &hostplugin.Options{
		Logger: slog.New(&logs{}), Authorize: hostplugin.PublicStreams, NoClient: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	h.SetReady(true)
	return h
}

// One call stops a Host, in the order that answers every page: the sessions are told the
// Host restarts while the server still accepts, the Host closes (letting go of an upgrade it
// holds for its slot), and only then does the server shut down, which would otherwise wait
// for that held upgrade.
func TestShutdownStopsTheSessionsThenClosesTheHostThenTheServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// One session a second, a burst of one: a second page is held a second for its slot.
		h := bubbleHost(t, `{"acceptRate":1,"acceptBurst":1}`)
		srv, client, served := bubbleServer(t, h)
		_, ended := bubbleDial(t, client)
		heldDial := make(chan error, 1)
		go func() {
			c, _, err := websocket.Dial(t.Context(), "ws://host.invalid"+wire.DefaultPath, &websocket.DialOptions{
				Subprotocols: []string{wire.Subprotocol}, HTTPClient: client})
			if err == nil {
				_ = c.CloseNow()
			}
			heldDial <- err
		}()
		synctest.Wait()
		if n := h.Sessions(); n != 1 {
			t.Fatalf("%d sessions before the shutdown, want 1 (the second page held for its slot)", n)
		}

		start := time.Now()
		if err := h.Shutdown(t.Context(), srv); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if took := time.Since(start); took >= time.Second {
			t.Errorf("Shutdown took %v: it waited for the held page's slot (1 s), so the server shut down before the Host closed", took)
		}
		e := <-ended
		if e.code != wire.CloseServiceRestart || !slices.Equal(e.restarts, []string{"service-restart"}) {
			t.Errorf("the page read error frames %q and close %d, want [service-restart] and %d", e.restarts, e.code, wire.CloseServiceRestart)
		}
		if err := <-heldDial; err == nil {
			t.Errorf("the held page became a session of a Host that shut down")
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
		}
		if _, err := h.Publish(t.Context(), "s", json.RawMessage(`1`)); !errors.Is(err, hostplugin.ErrClosed) {
			t.Errorf("Publish after Shutdown: %v, want ErrClosed", err)
		}
		if err := h.Shutdown(t.Context(), srv); err != nil {
			t.Errorf("a second Shutdown: %v, want nil", err)
		}
	})
}

// After a Drain (a successor or the other Hosts of a fleet take the pages), Shutdown lets
// the drain end as it would: the page that stays is closed at drainTimeoutMs with 1001,
// never told the Host restarts.
func TestShutdownAfterADrainWaitsForItAndSendsNoRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := bubbleHost(t, `{"drainTimeoutMs":1000}`)
		srv, client, _ := bubbleServer(t, h)
		_, ended := bubbleDial(t, client)
		synctest.Wait()
		start := time.Now()
		go h.Drain(context.Background(), "")
		synctest.Wait() // the goaway is out; the page stays
		if err := h.Shutdown(t.Context(), srv); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if took := time.Since(start); took != time.Second {
			t.Errorf("Shutdown returned %v after the Drain began, want when it ended (drainTimeoutMs, 1s)", took)
		}
		e := <-ended
		if e.code != wire.CloseDrained || len(e.restarts) != 0 || !slices.Contains(e.frames, wire.TypeGoAway) {
			t.Errorf("the page read %q (restarts %q) and close %d, want a goaway, no restart and %d", e.frames, e.restarts, e.code, wire.CloseDrained)
		}
	})
}

// A page that never answers the close does not hold Shutdown past its context: the rest is
// done without waiting, and the context's error says the close handshakes were cut short.
// (Over loopback: in a bubble, the Host's writer would wait on its lock for a pipe nobody
// reads, which stops the fake clock.)
func TestShutdownReturnsAtItsContextWhileAPeerIgnoresTheClose(t *testing.T) {
	f := newFixture(t, `{}`, true)
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// The client reads nothing until Shutdown has returned, so the close handshake cannot
	// have completed: Shutdown returning proves it did not wait for it.
	returned := make(chan error, 1)
	go func() { returned <- f.H.Shutdown(ctx, f.Srv.Config) }()
	select {
	case err := <-returned:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Shutdown = %v, want the context's error", err)
		}
	case <-time.After(bound):
		t.Fatalf("Shutdown did not return within %v of a context that had ended", bound)
	}
	msgs, code, _ := restartEnd(c)
	if code != wire.CloseServiceRestart || len(msgs) != 1 {
		t.Errorf("after Shutdown returned the page read %q and close %d, want the restart and %d", msgs, code, wire.CloseServiceRestart)
	}
	if resp, err := http.Get(f.Srv.URL); err == nil {
		resp.Body.Close()
		t.Errorf("the server answered %s after Shutdown: it was not shut down", resp.Status)
	}
}
