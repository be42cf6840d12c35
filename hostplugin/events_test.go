//go:build !js

package hostplugin_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/gateway/wire"
	"github.com/lifeline-go/lifeline/hostplugin"
)

func TestEndpointRefusesClientsWithoutTheSubprotocol(t *testing.T) {
	f := newFixture(t, `{}`, true)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, f.wsURL(), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("dial without lifeline.v1: err %v, response %v; want 400", err, resp)
	}
	if got := f.h.Sessions(); got != 0 {
		t.Errorf("Sessions() = %d after a refused dial", got)
	}
}

func TestEndpointChecksTheOrigin(t *testing.T) {
	tests := []struct {
		name    string
		allowed string // allowedOrigins as JSON
		origin  string // "" = the page's own origin
		refused bool
	}{
		{name: "a same-origin page is admitted", allowed: `[]`},
		{name: "a cross-origin page is refused by default", allowed: `[]`, origin: "https://evil.example", refused: true},
		{name: "a listed origin is admitted", allowed: `["https://app.example.com"]`, origin: "https://app.example.com"},
		{name: "a listed origin with another scheme is refused", allowed: `["https://app.example.com"]`, origin: "http://app.example.com", refused: true},
		{name: "a host pattern admits its subdomains", allowed: `["*.example.com"]`, origin: "https://a.example.com"},
		{name: "a host pattern does not admit lookalikes", allowed: `["*.example.com"]`, origin: "https://example.com.evil.net", refused: true},
		{name: "an origin that is not a URL is refused", allowed: `["*"]`, origin: "null", refused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, `{"allowedOrigins":`+tt.allowed+`}`, true)
			origin := tt.origin
			if origin == "" {
				origin = f.srv.URL
			}
			c, err := f.tryDial(t, http.Header{"Origin": {origin}})
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			if !tt.refused {
				c.expect(wire.TypeReady)
				return
			}
			if code, reason := c.closed(); code != wire.CloseOrigin {
				t.Errorf("close %d %q, want %d", code, reason, wire.CloseOrigin)
			}
			waitFor(t, "the refusal to be logged", func() bool { return f.logs.Has("cross-origin", origin) })
			if got := f.h.Sessions(); got != 0 {
				t.Errorf("Sessions() = %d after a refusal", got)
			}
		})
	}
}

func TestReadinessGateHoldsEveryFrameUntilReady(t *testing.T) {
	f := newFixture(t, `{"heartbeatMs":15000}`, false)
	c := f.dial(t)
	waitFor(t, "the session to open", func() bool { return f.h.Sessions() == 1 })
	// Both answers are queued while the gate is closed; the ready frame must still come first.
	c.send(`{"t":"sub","stream":"s"}`)
	c.send(`not json`)
	waitFor(t, "both frames to be handled", func() bool { return f.logs.Has("bad client frame") })
	f.h.SetReady(true)
	ready := c.expect(wire.TypeReady)
	if ready.Session == "" || ready.HeartbeatMs != 15000 {
		t.Errorf("ready frame %+v, want a session id and heartbeatMs 15000", ready)
	}
	c.expect(wire.TypeReset)
	c.expect(wire.TypeError)
}

func TestReadyFramesCarryDistinctSessionIDs(t *testing.T) {
	f := newFixture(t, `{}`, true)
	a := f.dial(t).expect(wire.TypeReady)
	b := f.dial(t).expect(wire.TypeReady)
	if a.Session == b.Session {
		t.Errorf("two sessions share the id %q", a.Session)
	}
}

func TestIdleSessionsGetHeartbeats(t *testing.T) {
	f := newFixture(t, `{"heartbeatMs":100}`, true)
	c := f.dial(t)
	c.expect(wire.TypeReady)
	start := time.Now()
	c.expect(wire.TypeHeartbeat)
	c.expect(wire.TypeHeartbeat)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("two heartbeats within %v; want one per 100ms of silence", d)
	}
}

// streamFixture is a Host with stream "s" holding events 1..5 in a ring of 3 (so 3, 4 and 5
// can be replayed) and a baseline naming the head.
func streamFixture(t *testing.T) (*fixture, string) {
	t.Helper()
	f := newFixture(t, `{"ringSize":3}`, true)
	f.h.SetBaseline("s", func(stream string, head hostplugin.Cursor) (json.RawMessage, error) {
		return json.RawMessage(fmt.Sprintf(`{"upTo":%d}`, head.Seq)), nil
	})
	for i := 1; i <= 5; i++ {
		publish(t, f.h, "s", fmt.Sprintf(`{"i":%d}`, i))
	}
	c := f.dial(t)
	c.expect(wire.TypeReady)
	c.send(`{"t":"sub","stream":"s"}`)
	return f, c.expect(wire.TypeReset).Epoch
}

func publish(t testing.TB, h *hostplugin.Host, stream, data string) uint64 {
	t.Helper()
	seq, err := h.Publish(context.Background(), stream, json.RawMessage(data))
	if err != nil {
		t.Fatalf("Publish(%s, %s): %v", stream, data, err)
	}
	return seq
}

func TestSubscriptionsReplayOrReset(t *testing.T) {
	tests := []struct {
		name   string
		sub    func(epoch string) string
		replay []uint64 // events replayed before the live one
		reset  bool     // a reset to seq 5 comes first
	}{
		{name: "a fresh subscription is reset to the head with the baseline",
			sub: func(string) string { return `{"t":"sub","stream":"s"}` }, reset: true},
		{name: "a cursor inside the ring replays what follows it",
			sub: func(e string) string { return `{"t":"sub","stream":"s","epoch":"` + e + `","after":3}` }, replay: []uint64{4, 5}},
		{name: "a cursor just before the oldest kept event replays the whole ring",
			sub: func(e string) string { return `{"t":"sub","stream":"s","epoch":"` + e + `","after":2}` }, replay: []uint64{3, 4, 5}},
		{name: "a cursor at the head replays nothing",
			sub: func(e string) string { return `{"t":"sub","stream":"s","epoch":"` + e + `","after":5}` }},
		{name: "a cursor older than the ring is reset",
			sub: func(e string) string { return `{"t":"sub","stream":"s","epoch":"` + e + `","after":1}` }, reset: true},
		{name: "a cursor from another epoch is reset",
			sub: func(string) string { return `{"t":"sub","stream":"s","epoch":"restarted","after":4}` }, reset: true},
		{name: "a cursor from the future is reset",
			sub: func(e string) string { return `{"t":"sub","stream":"s","epoch":"` + e + `","after":99}` }, reset: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, epoch := streamFixture(t)
			c := f.dial(t)
			c.expect(wire.TypeReady)
			c.send(tt.sub(epoch))
			if tt.reset {
				r := c.expect(wire.TypeReset)
				if r.Stream != "s" || r.Epoch != epoch || r.Seq != 5 || string(r.Baseline) != `{"upTo":5}` {
					t.Errorf("reset %+v (baseline %s), want stream s, epoch %s, seq 5, baseline {\"upTo\":5}", r, r.Baseline, epoch)
				}
			}
			for _, want := range tt.replay {
				ev := c.expect(wire.TypeEvent)
				if ev.Seq != want || string(ev.Data) != fmt.Sprintf(`{"i":%d}`, want) {
					t.Errorf("replayed %d %s, want %d", ev.Seq, ev.Data, want)
				}
			}
			publish(t, f.h, "s", `{"i":6}`)
			if ev := c.expect(wire.TypeEvent); ev.Seq != 6 || ev.Stream != "s" {
				t.Errorf("live event %+v, want seq 6 on s", ev)
			}
		})
	}
}

func TestLiveEventsArriveOnceEachAndInOrderDuringReplay(t *testing.T) {
	f := newFixture(t, `{"ringSize":10000}`, true)
	c := f.dial(t)
	c.expect(wire.TypeReady)
	c.send(`{"t":"sub","stream":"s"}`)
	epoch := c.expect(wire.TypeReset).Epoch
	// A second page subscribes with a cursor while events keep being published.
	d := f.dial(t)
	d.expect(wire.TypeReady)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 500 {
			if _, err := f.h.Publish(context.Background(), "s", json.RawMessage(fmt.Sprint(i))); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	d.send(`{"t":"sub","stream":"s","epoch":"` + epoch + `","after":0}`)
	<-done
	for _, cl := range []*client{c, d} {
		for want := uint64(1); want <= 500; want++ {
			if ev := cl.expect(wire.TypeEvent); ev.Seq != want {
				t.Fatalf("event seq %d, want %d: a gap or a duplicate", ev.Seq, want)
			}
		}
	}
}

func TestUnsubStopsTheStream(t *testing.T) {
	f := newFixture(t, `{}`, true)
	c := f.dial(t)
	c.expect(wire.TypeReady)
	c.send(`{"t":"sub","stream":"a"}`)
	c.expect(wire.TypeReset)
	c.send(`{"t":"unsub","stream":"a"}`)
	c.send(`{"t":"unsub","stream":"never-subscribed"}`) // harmless
	c.send(`{"t":"sub","stream":"b"}`)
	c.expect(wire.TypeReset) // b's: the unsub before it has been handled
	publish(t, f.h, "a", `"for nobody"`)
	publish(t, f.h, "b", `"for c"`)
	if ev := c.expect(wire.TypeEvent); ev.Stream != "b" {
		t.Errorf("after unsub got %+v, want only stream b", ev)
	}
}

func TestASessionFollowsABoundedNumberOfStreams(t *testing.T) {
	f := newFixture(t, `{}`, true)
	c := f.dial(t)
	c.expect(wire.TypeReady)
	for i := range 65 {
		c.send(fmt.Sprintf(`{"t":"sub","stream":"s%d"}`, i))
	}
	for range 64 {
		c.expect(wire.TypeReset)
	}
	if e := c.expect(wire.TypeError); !strings.Contains(e.Message, "at most 64") {
		t.Errorf("error %q, want the stream limit", e.Message)
	}
}

func TestPublishRefusesBadInput(t *testing.T) {
	h, _ := newHost(t, `{}`)
	ctx := context.Background()
	tests := []struct {
		name   string
		stream string
		data   string
		want   error
	}{
		{"data that is not JSON is refused", "s", `{"a":`, hostplugin.ErrEventData},
		{"an empty stream name is refused", "", `1`, hostplugin.ErrStreamName},
		{"a stream name over the wire limit is refused", strings.Repeat("x", wire.MaxStreamName+1), `1`, hostplugin.ErrStreamName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := h.Publish(ctx, tt.stream, json.RawMessage(tt.data)); !errors.Is(err, tt.want) {
				t.Errorf("Publish(%q, %s) error = %v, want %v", truncated(tt.stream), tt.data, err, tt.want)
			}
		})
	}
	_ = h.Close()
	if _, err := h.Publish(ctx, "s", json.RawMessage(`1`)); !errors.Is(err, hostplugin.ErrClosed) {
		t.Errorf("Publish after Close error = %v, want ErrClosed", err)
	}
}

func truncated(s string) string {
	if len(s) > 16 {
		return s[:16] + "…"
	}
	return s
}

func TestMalformedFramesGetAnErrorFrameAndTheSessionGoesOn(t *testing.T) {
	tests := []struct {
		name  string
		frame string
		bin   bool
		want  string // part of the error message
	}{
		{name: "text that is not JSON", frame: `hello`, want: "bad frame"},
		{name: "an unknown type", frame: `{"t":"launch"}`, want: `unknown type "launch"`},
		{name: "a missing type", frame: `{"stream":"s"}`, want: `missing type`},
		{name: "a sub without a stream", frame: `{"t":"sub"}`, want: "bad stream name: must be 1..256 bytes, got 0"},
		{name: "a sub with a cursor but no epoch", frame: `{"t":"sub","stream":"s","after":3}`, want: "without an epoch"},
		{name: "a stream name over the limit", frame: `{"t":"sub","stream":"` + strings.Repeat("x", 300) + `"}`, want: "bad stream name: must be 1..256 bytes, got 300"},
		{name: "two frames in one message", frame: `{"t":"unsub","stream":"s"}{"t":"unsub","stream":"s"}`, want: "trailing data"},
		{name: "a binary message", frame: `{"t":"sub","stream":"s"}`, bin: true, want: "binary frames"},
	}
	f := newFixture(t, `{}`, true)
	c := f.dial(t)
	c.expect(wire.TypeReady)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ := websocket.MessageText
			if tt.bin {
				typ = websocket.MessageBinary
			}
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			if err := c.conn.Write(ctx, typ, []byte(tt.frame)); err != nil {
				t.Fatal(err)
			}
			if e := c.expect(wire.TypeError); !strings.Contains(e.Message, tt.want) {
				t.Errorf("error message %q, want it to contain %q", e.Message, tt.want)
			}
		})
	}
	// Still a working session.
	c.send(`{"t":"sub","stream":"s"}`)
	c.expect(wire.TypeReset)
	if !f.logs.Has("bad client frame") {
		t.Errorf("bad frames were not logged; logs:\n%s", f.logs)
	}
}

func TestTooManyBadFramesCloseTheSession(t *testing.T) {
	f := newFixture(t, `{}`, true)
	c := f.dial(t)
	c.expect(wire.TypeReady)
	for range 17 {
		c.send(`garbage`)
	}
	if code, _ := c.closed(); code != websocket.StatusProtocolError {
		t.Errorf("close %d, want %d", code, websocket.StatusProtocolError)
	}
	waitFor(t, "the session to end", func() bool { return f.h.Sessions() == 0 })
}

func TestOversizedFramesCloseWith1009(t *testing.T) {
	f := newFixture(t, `{"maxFrameBytes":512}`, true)
	c := f.dial(t)
	c.expect(wire.TypeReady)
	c.send(`{"t":"sub","stream":"` + strings.Repeat("x", 600) + `"}`)
	if code, _ := c.closed(); code != wire.CloseTooBig {
		t.Errorf("close %d, want %d", code, wire.CloseTooBig)
	}
	waitFor(t, "the session to end", func() bool { return f.h.Sessions() == 0 })
	waitFor(t, "the 1009 to be logged", func() bool { return f.logs.Has("read limit") })
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

func TestSessionCapClosesWith1013AndARetryAfter(t *testing.T) {
	f := newFixture(t, `{"maxSessions":1}`, true)
	first := f.dial(t)
	first.expect(wire.TypeReady)
	second := f.dial(t)
	// The retry-after comes first as a frame: a browser page cannot read close codes.
	frame := second.expect(wire.TypeError)
	code, reason := second.closed()
	d, ok := wire.ParseRetryAfter(reason)
	if code != wire.CloseOverloaded || !ok || d < time.Second {
		t.Errorf("over the cap: close %d %q, want %d with retry-after >= 1s", code, reason, wire.CloseOverloaded)
	}
	if frame.Message != reason {
		t.Errorf("error frame %q, want the close reason %q", frame.Message, reason)
	}
	waitFor(t, "the refusal to be logged", func() bool { return f.logs.Has("session cap") })
	// A slot frees when a session ends.
	_ = first.conn.Close(websocket.StatusNormalClosure, "")
	waitFor(t, "the slot to free", func() bool { return f.h.Sessions() == 0 })
	f.dial(t).expect(wire.TypeReady)
}

// TestAcceptRateHoldsAnUpgradeOrRefusesItWith1013 is the wiring of the accept rate (its
// moments are in admission_test.go): a held upgrade becomes a ready session, a page beyond
// the hold gets the error frame and 1013 with its retry-after, and a held page that leaves
// frees its socket.
func TestAcceptRateHoldsAnUpgradeOrRefusesItWith1013(t *testing.T) {
	// 1 per second, burst 1: the first page at once, the next two held (~1 s, ~2 s), the
	// fourth refused (~3 s).
	f := newFixture(t, `{"acceptRate":1,"acceptBurst":1}`, true)
	f.dial(t).expect(wire.TypeReady)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type outcome struct {
		ready bool
		retry time.Duration
		err   error
	}
	results := make(chan outcome, 3)
	for range 3 {
		go func() {
			conn, _, err := websocket.Dial(ctx, f.wsURL(), &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
			if err != nil {
				results <- outcome{err: err} // the held page the test sends away
				return
			}
			t.Cleanup(func() { _ = conn.CloseNow() }) // a ready session stays open
			_, b, err := conn.Read(ctx)
			if err != nil {
				results <- outcome{err: err}
				return
			}
			fr, _ := wire.DecodeServer(b)
			if fr.T == wire.TypeReady {
				results <- outcome{ready: true}
				return
			}
			_, _, err = conn.Read(ctx)
			code, reason := websocket.CloseStatus(err), ""
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				reason = ce.Reason
			}
			d, ok := wire.ParseRetryAfter(reason)
			if fr.T != wire.TypeError || fr.Message != reason || code != wire.CloseOverloaded || !ok {
				t.Errorf("refused page: frame %+v then close %d %q, want an error frame and 1013 with the same retry-after", fr, code, reason)
			}
			results <- outcome{retry: d}
		}()
	}
	next := func() outcome {
		t.Helper()
		select {
		case o := <-results:
			return o
		case <-time.After(bound):
			t.Fatalf("no page answered within %v", bound)
			return outcome{}
		}
	}
	// The refusal comes at once, the first held page's ready about a second later.
	var refused, ready bool
	for !refused || !ready {
		switch o := next(); {
		case o.err != nil:
			t.Fatalf("a page failed before the held one was sent away: %v", o.err)
		case o.ready:
			ready = true
		default:
			refused = true
			if o.retry <= hostplugin.HoldMax {
				t.Errorf("a page refused with retry-after %v: within HoldMax (%v) it should have been held", o.retry, hostplugin.HoldMax)
			}
		}
	}
	// The refused page's handler returns once its close handshake ends.
	waitFor(t, "two sessions and one held upgrade", func() bool { return f.h.Stats().Open == 3 })
	cancel() // the page still held leaves
	if o := next(); o.err == nil {
		t.Errorf("the page held for ~2 s answered %+v before it left", o)
	}
	waitFor(t, "the held upgrade to be let go", func() bool { return f.h.Stats().Open == 2 })
	waitFor(t, "the refusal to be logged", func() bool { return f.logs.Has("accept rate") })
}

func TestSlowReadersAreShedWithoutBlockingPublish(t *testing.T) {
	f := newFixture(t, `{"ringSize":1}`, true)
	hostplugin.SetMaxQueue(f.h, 8)
	// A page with a small receive buffer: what the kernel holds for it is a few frames, not
	// the megabytes loopback autotuning would grow to, so shedding takes a bounded amount of
	// work however slow the machine is.
	dialer := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return errors.Join(err, serr)
	}}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, f.wsURL(), &websocket.DialOptions{
		Subprotocols: []string{wire.Subprotocol},
		HTTPClient:   &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	c := &client{t: t, conn: conn}
	c.expect(wire.TypeReady)
	c.send(`{"t":"sub","stream":"big"}`)
	c.expect(wire.TypeReset)
	// The page stops reading. Publish must not block on it; its queue overflows instead.
	data := json.RawMessage(`"` + strings.Repeat("x", 16<<10) + `"`)
	// Each event is 16 KiB: the page's buffer, the Host's send buffer and a queue of 8 hold a
	// few hundred at most (182 here). The shed is decided, and logged, inside Publish.
	n := 0
	for !f.logs.Has("reads too slowly") {
		if n == 2000 {
			t.Fatalf("the slow page was not shed after %d events", n)
		}
		if _, err := f.h.Publish(context.Background(), "big", data); err != nil {
			t.Fatal(err)
		}
		n++
	}
	t.Logf("shed after %d events", n)
	waitFor(t, "the shed session to end", func() bool { return f.h.Sessions() == 0 })
}

func TestSessionsEndWhenPagesLeave(t *testing.T) {
	f := newFixture(t, `{}`, true)
	c := f.dial(t)
	c.expect(wire.TypeReady)
	c.send(`{"t":"sub","stream":"s"}`)
	c.expect(wire.TypeReset)
	if got := f.h.Sessions(); got != 1 {
		t.Fatalf("Sessions() = %d, want 1", got)
	}
	_ = c.conn.CloseNow() // abrupt, like a closed laptop lid on a live link
	waitFor(t, "the session to end", func() bool { return f.h.Sessions() == 0 })
	publish(t, f.h, "s", `1`) // the stream has no follower left; nothing blocks
}

// TestFramesSentRightBehindTheHandshakeAreKept: a client may pipeline its first frame with
// the upgrade request; the Host's small buffers must not lose it.
func TestFramesSentRightBehindTheHandshakeAreKept(t *testing.T) {
	f := newFixture(t, `{}`, true)
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(bound))
	payload := []byte(`{"t":"sub","stream":"s"}`)
	mask := [4]byte{1, 2, 3, 4}
	frame := append([]byte{0x81, 0x80 | byte(len(payload))}, mask[:]...)
	for i, c := range payload {
		frame = append(frame, c^mask[i%4])
	}
	req := "GET " + f.h.Config().Endpoint() + " HTTP/1.1\r\nHost: " + conn.RemoteAddr().String() + "\r\n" +
		"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: lifeline.v1\r\n\r\n"
	if _, err := conn.Write(append([]byte(req), frame...)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v, %v", resp, err)
	}
	var types []string
	for range 2 {
		var hdr [2]byte
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			t.Fatalf("reading a frame: %v", err)
		}
		n := int(hdr[1] & 0x7f)
		if n == 126 {
			var ext [2]byte
			_, _ = io.ReadFull(br, ext[:])
			n = int(ext[0])<<8 | int(ext[1])
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			t.Fatal(err)
		}
		fr, err := wire.DecodeServer(body)
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, fr.T)
	}
	if strings.Join(types, ",") != "ready,reset" {
		t.Errorf("frames %v, want ready then the reset answering the pipelined sub", types)
	}
}

func TestReloadKeepsServingTheEndpointsOfOlderPages(t *testing.T) {
	f := newFixture(t, `{}`, true)
	old := f.wsURL()
	if err := f.h.Apply(mustConfig(t, `{"endpoint":"/ws/v2"}`)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(f.wsURL(), "/ws/v2") {
		t.Fatalf("the config's endpoint is %s", f.h.Config().Endpoint())
	}
	f.dial(t).expect(wire.TypeReady) // the new endpoint
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	c, _, err := websocket.Dial(ctx, old, &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
	if err != nil {
		t.Fatalf("a page loaded before the reload cannot reach %s: %v", old, err)
	}
	defer c.CloseNow()
	(&client{t: t, conn: c}).expect(wire.TypeReady)
}

func TestEndpointWorksBehindTheInjectionMiddleware(t *testing.T) {
	h, _ := newHost(t, `{}`)
	h.SetReady(true)
	srv := httptest.NewServer(h.Inject(h)) // the endpoint itself wrapped: Hijack must get through
	defer srv.Close()
	f := &fixture{h: h, srv: srv}
	f.dial(t).expect(wire.TypeReady)
}

// TestSubscriptionChurnDuringPublishingNeitherDeadlocksNorSkips drives every lock of the
// stream path at once: pages join, leave and rejoin with cursors while events are published
// and the stream's hub is made and removed again. Like a page, each client drops repeats by
// seq; a gap without a reset fails.
func TestSubscriptionChurnDuringPublishingNeitherDeadlocksNorSkips(t *testing.T) {
	f := newFixture(t, `{"ringSize":64}`, true)
	f.h.SetBaseline("s", func(_ string, head hostplugin.Cursor) (json.RawMessage, error) {
		return json.RawMessage(fmt.Sprint(head.Seq)), nil
	})
	stop := make(chan struct{})
	published := make(chan struct{})
	go func() {
		defer close(published)
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := f.h.Publish(context.Background(), "s", json.RawMessage(`1`)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	const pages = 8
	errs := make(chan error, pages)
	for range pages {
		c := f.dial(t)
		go func() { errs <- churn(c.conn) }()
	}
	for range pages {
		select {
		case err := <-errs:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(4 * bound):
			t.Fatal("subscribers stuck: a deadlock on the stream path")
		}
	}
	close(stop)
	<-published
}

// churn subscribes, reads a few frames, unsubscribes and resubscribes from its cursor, twenty
// times, and reports a gap or a failure.
func churn(conn *websocket.Conn) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*bound)
	defer cancel()
	read := func() (wire.ServerFrame, error) {
		_, b, err := conn.Read(ctx)
		if err != nil {
			return wire.ServerFrame{}, err
		}
		return wire.DecodeServer(b)
	}
	send := func(s string) error { return conn.Write(ctx, websocket.MessageText, []byte(s)) }
	if fr, err := read(); err != nil || fr.T != wire.TypeReady {
		return fmt.Errorf("first frame %+v, %v", fr, err)
	}
	var cur hostplugin.Cursor
	for range 20 {
		sub := `{"t":"sub","stream":"s"}`
		if cur.Epoch != "" {
			sub = fmt.Sprintf(`{"t":"sub","stream":"s","epoch":%q,"after":%d}`, cur.Epoch, cur.Seq)
		}
		if err := send(sub); err != nil {
			return err
		}
		for range 5 {
			fr, err := read()
			if err != nil {
				return err
			}
			switch {
			case fr.T == wire.TypeReset:
				cur = hostplugin.Cursor{Epoch: fr.Epoch, Seq: fr.Seq}
			case fr.T == wire.TypeEvent && fr.Seq <= cur.Seq:
				// a repeat, from the subscription before the unsub: dropped
			case fr.T == wire.TypeEvent && fr.Seq == cur.Seq+1:
				cur.Seq = fr.Seq
			case fr.T == wire.TypeEvent:
				return fmt.Errorf("event %d after cursor %d: a gap without a reset", fr.Seq, cur.Seq)
			}
		}
		if err := send(`{"t":"unsub","stream":"s"}`); err != nil {
			return err
		}
	}
	return nil
}

func TestAPingIsAnsweredAtOnceWithAHeartbeat(t *testing.T) {
	// A heartbeat of ten minutes: only the ping can explain an hb within the test.
	f := newFixture(t, `{"heartbeatMs":600000}`, true)
	c := f.dial(t)
	c.expect(wire.TypeReady)
	for range 3 {
		c.send(`{"t":"ping"}`)
		c.expect(wire.TypeHeartbeat)
	}
	c.send(`{"t":"ping","stream":"s"}`) // a malformed probe is a bad frame, not a probe
	if fr := c.next(); fr.T != wire.TypeError {
		t.Fatalf("answer to a malformed ping: %+v, want an error frame", fr)
	}
}
