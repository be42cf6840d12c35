//go:build !js

package hostplugin_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/gateway/wire"
	"github.com/lifeline-go/lifeline/hostplugin"
)

func TestParseFaultReadsEveryModeAndRoundTrips(t *testing.T) {
	tests := []struct {
		in   string
		want hostplugin.Fault
	}{
		{"up", hostplugin.Fault{}},
		{"refuse", hostplugin.Fault{Mode: hostplugin.FaultRefuse}},
		{"stall-open", hostplugin.Fault{Mode: hostplugin.FaultStallOpen}},
		{"stall-ready", hostplugin.Fault{Mode: hostplugin.FaultStallReady}},
		{"flap=250", hostplugin.Fault{Mode: hostplugin.FaultFlap, After: 250 * time.Millisecond}},
		{"drain=wss://b.example/_lifeline/events", hostplugin.Fault{Mode: hostplugin.FaultDrain, URI: "wss://b.example/_lifeline/events"}},
		{"drain=", hostplugin.Fault{Mode: hostplugin.FaultDrain}},
		{"overload=3000", hostplugin.Fault{Mode: hostplugin.FaultOverload, After: 3 * time.Second}},
		{"outage", hostplugin.Fault{Mode: hostplugin.FaultOutage}},
	}
	for _, tt := range tests {
		got, err := hostplugin.ParseFault(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseFault(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		if got.String() != tt.in {
			t.Errorf("ParseFault(%q).String() = %q", tt.in, got.String())
		}
	}
	for _, bad := range []string{"", "down", "flap", "flap=x", "flap=-1", "overload=", "refuse=1", "up=1"} {
		if _, err := hostplugin.ParseFault(bad); !errors.Is(err, hostplugin.ErrFault) {
			t.Errorf("ParseFault(%q) error = %v, want ErrFault", bad, err)
		}
	}
}

func TestFaultRefuseAnswers503(t *testing.T) {
	f := newFixture(t, `{}`, true)
	f.h.SetFault(hostplugin.Fault{Mode: hostplugin.FaultRefuse})
	_, err := f.tryDial(t, nil)
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("dial under refuse: %v, want a 503", err)
	}
}

func TestFaultStallOpenHoldsTheUpgradeUntilTheModeChanges(t *testing.T) {
	f := newFixture(t, `{}`, true)
	f.h.SetFault(hostplugin.Fault{Mode: hostplugin.FaultStallOpen})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if c, _, err := websocket.Dial(ctx, f.wsURL(), &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}}); err == nil {
		_ = c.CloseNow()
		t.Fatal("the upgrade completed under stall-open")
	}
	result := make(chan error, 1)
	go func() {
		c, err := f.tryDial(t, nil)
		if err == nil {
			_, _, err = c.conn.Read(context.Background())
		}
		result <- err
	}()
	f.h.SetFault(hostplugin.Fault{})
	select {
	case err := <-result:
		if err != nil {
			t.Errorf("after up, the held dial got %v", err)
		}
	case <-time.After(bound):
		t.Fatal("the held upgrade was not released")
	}
}

func TestFaultStallReadyOpensSocketsThatNeverGetReady(t *testing.T) {
	f := newFixture(t, `{}`, true)
	f.h.SetFault(hostplugin.Fault{Mode: hostplugin.FaultStallReady})
	stalled := f.dial(t)
	waitFor(t, "the session to open", func() bool { return f.h.Sessions() == 1 })
	stalled.send(`bad`) // its error frame is held with everything else
	waitFor(t, "the frame to be handled", func() bool { return f.logs.has("bad client frame") })

	f.h.SetFault(hostplugin.Fault{})
	f.dial(t).expect(wire.TypeReady) // a socket opened after the mode gets its ready frame
	// The stalled one still has none: when the Host drains, goaway is its first frame.
	go f.h.Drain(context.Background(), "")
	stalled.expect(wire.TypeGoAway)
}

func TestFaultFlapDropsSessionsAfterReady(t *testing.T) {
	f := newFixture(t, `{}`, true)
	early := f.dial(t)
	early.expect(wire.TypeReady)
	f.h.SetFault(hostplugin.Fault{Mode: hostplugin.FaultFlap, After: 50 * time.Millisecond})
	late := f.dial(t)
	late.expect(wire.TypeReady)
	for name, c := range map[string]*client{"a session open before the mode": early, "a new session": late} {
		if code, _ := c.closed(); code != -1 {
			t.Errorf("%s: close status %d, want an abrupt drop (-1, no close frame)", name, code)
		}
	}
}

func TestLeavingFlapCancelsPendingDrops(t *testing.T) {
	f := newFixture(t, `{}`, true)
	c := f.dial(t)
	c.expect(wire.TypeReady)
	f.h.SetFault(hostplugin.Fault{Mode: hostplugin.FaultFlap, After: 200 * time.Millisecond})
	f.h.SetFault(hostplugin.Fault{})
	// Past the drop that was scheduled, the session must still be open: nothing to read, no close.
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	if _, b, err := c.conn.Read(ctx); ctx.Err() == nil {
		t.Fatalf("after flap ended the session read %s / %v, want it quietly open", b, err)
	}
}

func TestFaultDrainSendsEveryPageToTheURI(t *testing.T) {
	f := newFixture(t, `{}`, true)
	early := f.dial(t)
	early.expect(wire.TypeReady)
	f.h.SetFault(hostplugin.Fault{Mode: hostplugin.FaultDrain, URI: "wss://b.example/ev"})
	if g := early.expect(wire.TypeGoAway); g.URI != "wss://b.example/ev" {
		t.Errorf("goaway uri %q", g.URI)
	}
	late := f.dial(t)
	late.expect(wire.TypeReady) // ready first, so a page can migrate here before moving on
	if g := late.expect(wire.TypeGoAway); g.URI != "wss://b.example/ev" {
		t.Errorf("goaway uri %q", g.URI)
	}
}

func TestFaultOverloadClosesWithTheGivenRetryAfter(t *testing.T) {
	f := newFixture(t, `{}`, true)
	f.h.SetFault(hostplugin.Fault{Mode: hostplugin.FaultOverload, After: 1500 * time.Millisecond})
	code, reason := f.dial(t).closed()
	if code != wire.CloseOverloaded || reason != "retry-after=1500" {
		t.Errorf("close %d %q, want 1013 retry-after=1500", code, reason)
	}
}

func TestFaultPanel(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		target     string
		body       string
		remote     string
		origin     string
		wantStatus int
		wantBody   string
	}{
		{name: "GET shows the mode", method: "GET", target: "/", wantStatus: 200, wantBody: "up\n"},
		{name: "POST sets the mode from the body", method: "POST", target: "/", body: "flap=100", wantStatus: 200, wantBody: "flap=100\n"},
		{name: "POST sets the mode from the query", method: "POST", target: "/?mode=stall-ready", wantStatus: 200, wantBody: "stall-ready\n"},
		{name: "POST reads a form body", method: "POST", target: "/", body: "mode=drain%3Dwss%3A%2F%2Fb.example%2Fev", wantStatus: 200, wantBody: "drain=wss://b.example/ev\n"},
		{name: "an unknown mode is refused", method: "POST", target: "/?mode=explode", wantStatus: 400},
		{name: "a client beyond loopback is refused", method: "GET", target: "/", remote: "203.0.113.7:4000", wantStatus: 403},
		{name: "a cross-origin page is refused", method: "POST", target: "/?mode=refuse", origin: "https://evil.example", wantStatus: 403},
		{name: "other methods are refused", method: "DELETE", target: "/", wantStatus: 405},
	}
	h, _ := newHost(t, `{}`)
	panel := h.FaultPanel()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.SetFault(hostplugin.Fault{})
			req := httptest.NewRequest(tt.method, tt.target, strings.NewReader(tt.body))
			req.RemoteAddr = "127.0.0.1:5555"
			if tt.remote != "" {
				req.RemoteAddr = tt.remote
			}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			rec := httptest.NewRecorder()
			panel.ServeHTTP(rec, req)
			body, _ := io.ReadAll(rec.Body)
			if rec.Code != tt.wantStatus || (tt.wantBody != "" && string(body) != tt.wantBody) {
				t.Errorf("%s %s: %d %q, want %d %q", tt.method, tt.target, rec.Code, body, tt.wantStatus, tt.wantBody)
			}
			if tt.wantStatus != 200 && h.Fault() != (hostplugin.Fault{}) {
				t.Errorf("a refused request changed the mode to %v", h.Fault())
			}
		})
	}
}

func TestFaultPanelOverTheWire(t *testing.T) {
	h, _ := newHost(t, `{}`)
	srv := httptest.NewServer(h.FaultPanel())
	defer srv.Close()
	resp, err := http.Post(srv.URL+"?mode=overload%3D2000", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := h.Fault(); got.Mode != hostplugin.FaultOverload || got.After != 2*time.Second {
		t.Errorf("mode after POST = %v", got)
	}
}

func TestFaultOutageDropsSessionsAndRefusesNewOnesUntilUp(t *testing.T) {
	f := newFixture(t, `{}`, true)
	c := f.dial(t)
	c.expect(wire.TypeReady)
	c.send(`{"t":"sub","stream":"s"}`)
	epoch := c.expect(wire.TypeReset).Epoch
	publish(t, f.h, "s", `1`)
	c.expect(wire.TypeEvent)

	f.h.SetFault(hostplugin.Fault{Mode: hostplugin.FaultOutage})
	if code, _ := c.closed(); code != -1 {
		t.Errorf("close status %d, want an abrupt drop", code)
	}
	if _, err := f.tryDial(t, nil); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("dial during the outage: %v, want a 503", err)
	}
	publish(t, f.h, "s", `2`) // published while the page was away

	f.h.SetFault(hostplugin.Fault{})
	back := f.dial(t)
	back.expect(wire.TypeReady)
	back.send(`{"t":"sub","stream":"s","epoch":"` + epoch + `","after":1}`)
	if ev := back.expect(wire.TypeEvent); ev.Seq != 2 {
		t.Errorf("after the outage the page got %+v, want the missed event 2", ev)
	}
}

func TestStatsCountSocketsAtTheEndpoint(t *testing.T) {
	f := newFixture(t, `{}`, true)
	f.h.SetFault(hostplugin.Fault{Mode: hostplugin.FaultStallOpen})
	dialed := make(chan error, 1)
	go func() {
		_, err := f.tryDial(t, nil)
		dialed <- err
	}()
	waitFor(t, "the held upgrade to count", func() bool {
		s := f.h.Stats()
		return s.Accepted == 1 && s.Open == 1 && s.Sessions == 0
	})
	f.h.SetFault(hostplugin.Fault{})
	waitFor(t, "the released upgrade to become a session", func() bool {
		s := f.h.Stats()
		return s.Accepted == 1 && s.Open == 1 && s.Sessions == 1 && s.Ready && s.Fault == "up"
	})
	if err := <-dialed; err != nil {
		t.Errorf("the released dial failed: %v", err)
	}
}
