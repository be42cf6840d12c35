//go:build !js

package hostplugin_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/gateway/wire"
)

// restartEnd reads until the socket ends and returns the restart messages of the error frames
// it carried and the close status and reason. Other frames (events, heartbeats) are skipped.
func (c *client) restartEnd() (msgs []string, code websocket.StatusCode, reason string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for {
		_, b, err := c.conn.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				c.t.Fatalf("the socket did not close within %v", bound)
			}
			var ce websocket.CloseError
			if !errors.As(err, &ce) {
				c.t.Fatalf("the socket ended without a close frame: %v", err)
			}
			return msgs, ce.Code, ce.Reason
		}
		f, err := wire.DecodeHost(b)
		if err != nil {
			c.t.Fatalf("DecodeHost(%s): %v", b, err)
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
		clients[i] = f.dial(t)
		clients[i].expect(wire.TypeReady)
		clients[i].send(`{"t":"sub","stream":"ticks"}`)
		clients[i].expect(wire.TypeReset)
	}
	waitFor(t, "every session registered", func() bool { return f.h.Sessions() == n })
	// Events keep flowing while the Host stops: the restart message must still come first
	// among what the page reads at the end, and the close right after it.
	pubCtx, stopPub := context.WithCancel(context.Background())
	pubDone := make(chan struct{})
	go func() {
		defer close(pubDone)
		for i := 0; pubCtx.Err() == nil; i++ {
			_, _ = f.h.Publish(pubCtx, "ticks", fmt.Appendf(nil, `{"i":%d}`, i))
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
			e.msgs, e.code, e.reason = c.restartEnd()
			ends[i] = e
		})
	}

	start := time.Now()
	stopped := make(chan int, 1)
	go func() { stopped <- f.h.Stop(context.Background(), 250*time.Millisecond) }()
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
	waitFor(t, "no session left", func() bool { return f.h.Sessions() == 0 })
	if st := f.h.Stats(); !st.Draining {
		t.Errorf("Stats after Stop: %+v, want draining (health then says 503)", st)
	}
	if !f.logs.Has("stopped with no successor", "sessions=50") {
		t.Errorf("no log of the stop:\n%s", f.logs)
	}
}

func TestStopAnswersLaterSocketsWithTheRestartAnd1012(t *testing.T) {
	f := newFixture(t, `{}`, true)
	f.h.Stop(context.Background(), 0)
	c := f.dial(t) // the listener is still open here: a socket that raced the stop
	msgs, code, reason := c.restartEnd()
	if code != wire.CloseServiceRestart || reason != "service-restart" || len(msgs) != 1 || msgs[0] != "service-restart" {
		t.Errorf("a socket after Stop got error frames %q and close %d %q, want [service-restart] then %d service-restart",
			msgs, code, reason, wire.CloseServiceRestart)
	}
	if f.h.Sessions() != 0 {
		t.Errorf("a socket after Stop became a session")
	}
}

func TestStopClosesSessionsStillWaitingForTheGate(t *testing.T) {
	f := newFixture(t, `{}`, false)
	c := f.dial(t)
	waitFor(t, "the session registered", func() bool { return f.h.Sessions() == 1 })
	go f.h.Stop(context.Background(), 0)
	_, b, err := c.conn.Read(t.Context())
	if err != nil {
		t.Fatalf("reading the first frame: %v", err)
	}
	if fr, err := wire.DecodeHost(b); err != nil || fr.T != wire.TypeError || fr.Message != "service-restart" {
		t.Fatalf("first frame %s (%v), want the restart error frame and no ready", b, err)
	}
	if code, _ := c.closed(); code != wire.CloseServiceRestart {
		t.Errorf("close %d, want %d", code, wire.CloseServiceRestart)
	}
	// The gate opening afterwards must not resurrect it.
	f.h.SetReady(true)
	waitFor(t, "no session left", func() bool { return f.h.Sessions() == 0 })
}

// A page that never answers the close must not hold Stop past its context: the process
// would stay for each dead peer's close handshake.
func TestStopReturnsAtItsContextWhileAPeerIgnoresTheClose(t *testing.T) {
	f := newFixture(t, `{}`, true)
	c := f.dial(t)
	c.expect(wire.TypeReady)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// The client reads nothing until Stop has returned, so the close handshake cannot have
	// completed: Stop returning proves it did not wait for it.
	if n := f.h.Stop(ctx, 0); n != 1 {
		t.Errorf("Stop closed %d sessions, want 1", n)
	}
	msgs, code, _ := c.restartEnd()
	if code != wire.CloseServiceRestart || len(msgs) != 1 {
		t.Errorf("after Stop returned the page read %q and close %d, want the restart and %d", msgs, code, wire.CloseServiceRestart)
	}
}

// Drain keeps its meaning after a Stop was added: a Host with somewhere to send its pages
// still tells them where, and closes only those that stay (1001, not 1012).
func TestDrainToASuccessorStillSendsGoAwayNotTheRestart(t *testing.T) {
	f := newFixture(t, `{"drainTimeoutMs":200}`, true)
	c := f.dial(t)
	c.expect(wire.TypeReady)
	go f.h.Drain(context.Background(), "")
	if g := c.expect(wire.TypeGoAway); g.URI != "" {
		t.Errorf("goaway uri %q, want the same place", g.URI)
	}
	msgs, code, _ := c.restartEnd()
	if code != wire.CloseDrained || len(msgs) != 0 {
		t.Errorf("a page that stayed through the drain got %q and close %d, want no restart and %d", msgs, code, wire.CloseDrained)
	}
}

func TestDrainSendsGoAwayThenClosesWhoeverStays(t *testing.T) {
	f := newFixture(t, `{"drainTimeoutMs":300}`, true)
	leaver, stayer := f.dial(t), f.dial(t)
	leaver.expect(wire.TypeReady)
	stayer.expect(wire.TypeReady)

	closed := make(chan int, 1)
	go func() { closed <- f.h.Drain(context.Background(), "wss://next.example/_lifeline/events") }()

	for _, c := range []*client{leaver, stayer} {
		if g := c.expect(wire.TypeGoAway); g.URI != "wss://next.example/_lifeline/events" {
			t.Errorf("goaway uri %q", g.URI)
		}
	}
	_ = leaver.conn.Close(websocket.StatusNormalClosure, "moved")
	if code, _ := stayer.closed(); code != wire.CloseDrained {
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
	late := f.dial(t)
	if g := late.expect(wire.TypeGoAway); g.URI != "wss://next.example/_lifeline/events" {
		t.Errorf("late goaway uri %q", g.URI)
	}
	if code, _ := late.closed(); code != wire.CloseDrained {
		t.Errorf("late page closed with %d, want %d", code, wire.CloseDrained)
	}
	waitFor(t, "every session to end", func() bool { return f.h.Sessions() == 0 })
}

func TestDrainReturnsAsSoonAsEveryPageHasLeft(t *testing.T) {
	f := newFixture(t, `{"drainTimeoutMs":60000}`, true)
	c := f.dial(t)
	c.expect(wire.TypeReady)
	closed := make(chan int, 1)
	go func() { closed <- f.h.Drain(context.Background(), "") }()
	if g := c.expect(wire.TypeGoAway); g.URI != "" {
		t.Errorf("goaway uri %q, want empty (come back here)", g.URI)
	}
	_ = c.conn.Close(websocket.StatusNormalClosure, "bye")
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
	c := f.dial(t)
	waitFor(t, "the session to open", func() bool { return f.h.Sessions() == 1 })
	go f.h.Drain(context.Background(), "")
	c.expect(wire.TypeGoAway)
	if code, _ := c.closed(); code != wire.CloseDrained {
		t.Errorf("close %d, want %d", code, wire.CloseDrained)
	}
}
