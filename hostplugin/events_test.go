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
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
)

func TestEndpointRefusesClientsWithoutTheSubprotocol(t *testing.T) {
	f := newFixture(t, `{}`, true)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, f.WSURL(), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("dial without lifeline.v1: err %v, response %v; want 400", err, resp)
	}
	if got := f.H.Sessions(); got != 0 {
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
				origin = f.Srv.URL
			}
			c, err := f.TryDial(t, http.Header{"Origin": {origin}})
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			if !tt.refused {
				c.Expect(wire.TypeReady)
				return
			}
			// An error frame first, naming the origin, which does not fit a close reason: the
			// page's developer must see why it never connects.
			if e := c.Expect(wire.TypeError); !strings.Contains(e.Message, "origin not allowed") || !strings.Contains(e.Message, strconv.Quote(origin)) {
				t.Errorf("error frame %q, want the refusal naming the origin", e.Message)
			}
			if code, reason := c.Closed(); code != wire.CloseOrigin {
				t.Errorf("close %d %q, want %d", code, reason, wire.CloseOrigin)
			}
			waitFor(t, "the refusal to be logged", func() bool { return f.Logs.Has("cross-origin", origin) })
			if got := f.H.Sessions(); got != 0 {
				t.Errorf("Sessions() = %d after a refusal", got)
			}
		})
	}
}

func TestReadinessGateHoldsEveryFrameUntilReady(t *testing.T) {
	f := newFixture(t, `{"heartbeatMs":15000}`, false)
	c := f.Dial(t)
	waitFor(t, "the session to open", func() bool { return f.H.Sessions() == 1 })
	// Both answers are queued while the gate is closed; the ready frame must still come first.
	c.Send(`{"t":"sub","stream":"s"}`)
	c.Send(`not json`)
	waitFor(t, "both frames to be handled", func() bool { return f.Logs.Has("bad client frame") })
	f.H.SetReady(true)
	ready := c.Expect(wire.TypeReady)
	if ready.Session == "" || ready.HeartbeatMs != 15000 {
		t.Errorf("ready frame %+v, want a session id and heartbeatMs 15000", ready)
	}
	c.Expect(wire.TypeReset)
	c.Expect(wire.TypeError)
}

func TestReadyFramesCarryDistinctSessionIDs(t *testing.T) {
	f := newFixture(t, `{}`, true)
	a := f.Dial(t).Expect(wire.TypeReady)
	b := f.Dial(t).Expect(wire.TypeReady)
	if a.Session == b.Session {
		t.Errorf("two sessions share the id %q", a.Session)
	}
}

func TestIdleSessionsGetHeartbeats(t *testing.T) {
	f := newFixture(t, `{"heartbeatMs":100}`, true)
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	start := time.Now()
	c.Expect(wire.TypeHeartbeat)
	c.Expect(wire.TypeHeartbeat)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("two heartbeats within %v; want one per 100ms of silence", d)
	}
}

func publish(t testing.TB, h *hostplugin.Host, stream, data string) uint64 {
	t.Helper()
	seq, err := h.Publish(context.Background(), stream, json.RawMessage(data))
	if err != nil {
		t.Fatalf("Publish(%s, %s): %v", stream, data, err)
	}
	return seq
}

func TestASessionFollowsABoundedNumberOfStreams(t *testing.T) {
	f := newFixture(t, `{}`, true)
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	for i := range 65 {
		c.Send(fmt.Sprintf(`{"t":"sub","stream":"s%d"}`, i))
	}
	for range 64 {
		c.Expect(wire.TypeReset)
	}
	// Denied, with the limit as the reason: the page ends that one subscription visibly (an
	// error frame was only logged, and the subscription looked active), the others carry on.
	if d := c.Expect(wire.TypeDenied); d.Stream != "s64" || !strings.Contains(d.Reason, "at most 64") {
		t.Errorf("the 65th sub: %+v, want it denied with the stream limit", d)
	}
	publish(t, f.H, "s0", `1`)
	if ev := c.Expect(wire.TypeEvent); ev.Stream != "s0" || ev.Seq != 1 {
		t.Fatalf("after the denial: %+v, want s0's event", ev)
	}
}

// TestNothingOverMaxEventBytesReachesAPage: an event in a shared log too big for this Host
// (appended by a Host configured otherwise) and a baseline too big are never sent: either
// would end every page's session at its read limit, and again at each resume by cursor. The
// followers are reset past the event instead (never a silent gap), and the reset carries no
// baseline.
func TestNothingOverMaxEventBytesReachesAPage(t *testing.T) {
	ring := hostplugin.NewRing(16)
	f := newFixtureWith(t, `{"maxEventBytes":16}`, true, hostplugin.Options{Log: ring})
	f.H.SetBaseline("s", func(string, hostplugin.Cursor) (json.RawMessage, error) {
		return json.RawMessage(`"` + strings.Repeat("b", 16) + `"`), nil
	})
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	c.Send(`{"t":"sub","stream":"s"}`)
	if r := c.Expect(wire.TypeReset); r.Seq != 0 || r.Baseline != nil {
		t.Fatalf("first frame %+v (baseline %s), want a reset to 0 without the oversized baseline", r, r.Baseline)
	}
	if _, err := ring.Append(context.Background(), "s", json.RawMessage(`"`+strings.Repeat("x", 16)+`"`)); err != nil {
		t.Fatal(err)
	}
	publish(t, f.H, "s", `2`)
	if r := c.Expect(wire.TypeReset); r.Seq != 2 {
		t.Fatalf("after the oversized event 1: %+v, want a reset past it, to 2", r)
	}
	publish(t, f.H, "s", `3`)
	if ev := c.Expect(wire.TypeEvent); ev.Seq != 3 {
		t.Fatalf("then %+v, want event 3", ev)
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
		{"data over maxEventBytes is refused", "s", `"` + strings.Repeat("x", hostplugin.DefaultMaxEventBytes-1) + `"`, hostplugin.ErrEventTooBig},
		{"data of maxEventBytes is taken", "s", `"` + strings.Repeat("x", hostplugin.DefaultMaxEventBytes-2) + `"`, nil},
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
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ := websocket.MessageText
			if tt.bin {
				typ = websocket.MessageBinary
			}
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			if err := c.Conn.Write(ctx, typ, []byte(tt.frame)); err != nil {
				t.Fatal(err)
			}
			if e := c.Expect(wire.TypeError); !strings.Contains(e.Message, tt.want) {
				t.Errorf("error message %q, want it to contain %q", e.Message, tt.want)
			}
		})
	}
	// Still a working session.
	c.Send(`{"t":"sub","stream":"s"}`)
	c.Expect(wire.TypeReset)
	if !f.Logs.Has("bad client frame") {
		t.Errorf("bad frames were not logged; logs:\n%s", f.Logs)
	}
}

func TestTooManyBadFramesCloseTheSession(t *testing.T) {
	f := newFixture(t, `{}`, true)
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	for range 17 {
		c.Send(`garbage`)
	}
	if code, _ := c.Closed(); code != websocket.StatusProtocolError {
		t.Errorf("close %d, want %d", code, websocket.StatusProtocolError)
	}
	waitFor(t, "the session to end", func() bool { return f.H.Sessions() == 0 })
}

func TestOversizedFramesCloseWith1009(t *testing.T) {
	f := newFixture(t, `{"maxFrameBytes":512}`, true)
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	c.Send(`{"t":"sub","stream":"` + strings.Repeat("x", 600) + `"}`)
	if code, _ := c.Closed(); code != wire.CloseTooBig {
		t.Errorf("close %d, want %d", code, wire.CloseTooBig)
	}
	waitFor(t, "the session to end", func() bool { return f.H.Sessions() == 0 })
	waitFor(t, "the 1009 to be logged", func() bool { return f.Logs.Has("read limit") })
}

func TestSlowReadersAreShedWithoutBlockingPublish(t *testing.T) {
	f := newFixture(t, `{"ringSize":1}`, true)
	hostplugin.SetMaxQueue(f.H, 8)
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
	conn, _, err := websocket.Dial(ctx, f.WSURL(), &websocket.DialOptions{
		Subprotocols: []string{wire.Subprotocol},
		HTTPClient:   &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	c := &client{T: t, Conn: conn}
	c.Expect(wire.TypeReady)
	c.Send(`{"t":"sub","stream":"big"}`)
	c.Expect(wire.TypeReset)
	// The page stops reading. Publish must not block on it; its queue overflows instead.
	data := json.RawMessage(`"` + strings.Repeat("x", 16<<10) + `"`)
	// Each event is 16 KiB: the page's buffer, the Host's send buffer and a queue of 8 hold a
	// few hundred at most (182 here). The shed is decided, and logged, inside Publish.
	n := 0
	for !f.Logs.Has("reads too slowly") {
		if n == 2000 {
			t.Fatalf("the slow page was not shed after %d events", n)
		}
		if _, err := f.H.Publish(context.Background(), "big", data); err != nil {
			t.Fatal(err)
		}
		n++
	}
	t.Logf("shed after %d events", n)
	waitFor(t, "the shed session to end", func() bool { return f.H.Sessions() == 0 })
}

func TestSessionsEndWhenPagesLeave(t *testing.T) {
	f := newFixture(t, `{}`, true)
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	c.Send(`{"t":"sub","stream":"s"}`)
	c.Expect(wire.TypeReset)
	if got := f.H.Sessions(); got != 1 {
		t.Fatalf("Sessions() = %d, want 1", got)
	}
	_ = c.Conn.CloseNow() // abrupt, like a closed laptop lid on a live link
	waitFor(t, "the session to end", func() bool { return f.H.Sessions() == 0 })
	publish(t, f.H, "s", `1`) // the stream has no follower left; nothing blocks
}

// TestFramesSentRightBehindTheHandshakeAreKept: a client may pipeline its first frame with
// the upgrade request; the Host's small buffers must not lose it.
func TestFramesSentRightBehindTheHandshakeAreKept(t *testing.T) {
	f := newFixture(t, `{}`, true)
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.Srv.URL, "http://"))
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
	req := "GET " + f.H.Config().Endpoint() + " HTTP/1.1\r\nHost: " + conn.RemoteAddr().String() + "\r\n" +
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
		fr, err := wire.DecodeHost(body)
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
	old := f.WSURL()
	if err := f.H.Apply(mustConfig(t, `{"endpoint":"/ws/v2"}`)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(f.WSURL(), "/ws/v2") {
		t.Fatalf("the config's endpoint is %s", f.H.Config().Endpoint())
	}
	f.Dial(t).Expect(wire.TypeReady) // the new endpoint
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	c, _, err := websocket.Dial(ctx, old, &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
	if err != nil {
		t.Fatalf("a page loaded before the reload cannot reach %s: %v", old, err)
	}
	defer c.CloseNow()
	(&client{T: t, Conn: c}).Expect(wire.TypeReady)
}

// A middleware around Handler reaches the endpoint through its own ResponseWriter: one that
// keeps http.Hijacker reachable (here by Unwrap, as http.ResponseController reads it) lets
// sockets open.
func TestEndpointWorksBehindAWrapperThatUnwraps(t *testing.T) {
	h, _ := newHost(t, `{}`)
	h.SetReady(true)
	inner := endpointOnly(h)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(unwrapper{w}, r)
	}))
	defer srv.Close()
	f := &fixture{H: h, Srv: srv}
	f.Dial(t).Expect(wire.TypeReady)
}

// unwrapper is a middleware's ResponseWriter that implements nothing but Unwrap.
type unwrapper struct{ http.ResponseWriter }

func (u unwrapper) Unwrap() http.ResponseWriter { return u.ResponseWriter }

func TestAPingIsAnsweredAtOnceWithAHeartbeat(t *testing.T) {
	// A heartbeat of ten minutes: only the ping can explain an hb within the test.
	f := newFixture(t, `{"heartbeatMs":600000}`, true)
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	for range 3 {
		c.Send(`{"t":"ping"}`)
		c.Expect(wire.TypeHeartbeat)
	}
	c.Send(`{"t":"ping","stream":"s"}`) // a malformed ping is a bad frame, not a liveness probe
	if fr := c.Next(); fr.T != wire.TypeError {
		t.Fatalf("answer to a malformed ping: %+v, want an error frame", fr)
	}
}
