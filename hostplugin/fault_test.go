//go:build lifeline_faults && !js

package hostplugin_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/fault"
	"github.com/lifeline-go/lifeline/internal/hosthook"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// The fault modes, in a build with -tags lifeline_faults (as cmd/host -faults has them).

var injectorCases = []faultCase{{"fault injector up", func(t testing.TB, h *hostplugin.Host) { installFaults(t, h) }}}

// faultFixture is a fixture whose Host has fault modes, as cmd/host -faults gives it.
type faultFixture struct {
	*fixture
	faults *fault.Injector
}

func newFaultFixture(t testing.TB) *faultFixture {
	t.Helper()
	f := newFixture(t, `{}`, true)
	return &faultFixture{fixture: f, faults: installFaults(t, f.H)}
}

// installFaults gives h fault modes, or fails the test.
func installFaults(t testing.TB, h *hostplugin.Host) *fault.Injector {
	t.Helper()
	in, err := hosthook.InstallFaults(h)
	if err != nil {
		t.Fatalf("hosthook.InstallFaults: %v", err)
	}
	return in
}

func TestFaultRefuseAnswers503(t *testing.T) {
	f := newFaultFixture(t)
	f.faults.Set(fault.Fault{Mode: fault.Refuse})
	_, err := f.TryDial(t, nil)
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("dial under refuse: %v, want a 503", err)
	}
}

func TestFaultStallOpenHoldsTheUpgradeUntilTheModeChanges(t *testing.T) {
	f := newFaultFixture(t)
	f.faults.Set(fault.Fault{Mode: fault.StallOpen})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if c, _, err := websocket.Dial(ctx, f.WSURL(), &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}}); err == nil {
		_ = c.CloseNow()
		t.Fatal("the upgrade completed under stall-open")
	}
	result := make(chan error, 1)
	go func() {
		c, err := f.TryDial(t, nil)
		if err == nil {
			_, _, err = c.Conn.Read(context.Background())
		}
		result <- err
	}()
	f.faults.Set(fault.Fault{})
	select {
	case err := <-result:
		if err != nil {
			t.Errorf("after up, the held dial got %v", err)
		}
	case <-time.After(bound):
		t.Fatal("the held upgrade was not released")
	}
}

// A browser that cannot end an upgrade it gave up on (Firefox) leaves it held under stall-open:
// the page's next dial ends it, so the Host holds one per page, not one per attempt.
func TestFaultStallOpenHoldsOneUpgradePerPage(t *testing.T) {
	f := newFaultFixture(t)
	f.faults.Set(fault.Fault{Mode: fault.StallOpen})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	answers := make(chan *http.Response, 3)
	for i := range 3 {
		go func() {
			c, resp, err := websocket.Dial(ctx, f.WSURL()+"?"+wire.DialerParam+"=page-1", &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
			if err == nil {
				c.CloseNow()
			}
			answers <- resp
		}()
		waitFor(t, fmt.Sprintf("attempt %d at the Host", i+1), func() bool { return f.H.Stats().Accepted == uint64(i+1) })
		// Each attempt is held until the next one comes: never more than one open.
		waitFor(t, fmt.Sprintf("one held upgrade after attempt %d", i+1), func() bool { return f.H.Stats().Open == 1 })
	}
	for range 2 {
		select {
		case resp := <-answers:
			if resp == nil || resp.StatusCode != http.StatusConflict {
				t.Errorf("a replaced upgrade was answered %v, want 409", resp)
			}
		case <-ctx.Done():
			t.Fatal("a replaced upgrade was not answered")
		}
	}
	f.faults.Set(fault.Fault{}) // the last one goes on
	select {
	case resp := <-answers:
		if resp == nil || resp.StatusCode != http.StatusSwitchingProtocols {
			t.Errorf("the newest upgrade, released, was answered %v, want 101", resp)
		}
	case <-ctx.Done():
		t.Fatal("the newest upgrade was not released")
	}
}

func TestFaultStallReadyOpensSocketsThatNeverGetReady(t *testing.T) {
	f := newFaultFixture(t)
	f.faults.Set(fault.Fault{Mode: fault.StallReady})
	stalled := f.Dial(t)
	waitFor(t, "the session to open", func() bool { return f.H.Sessions() == 1 })
	stalled.Send(`bad`) // its error frame is held with everything else
	waitFor(t, "the frame to be handled", func() bool { return f.Logs.Has("bad client frame") })

	f.faults.Set(fault.Fault{})
	f.Dial(t).Expect(wire.TypeReady) // a socket opened after the mode gets its ready frame
	// The stalled one still has none: when the Host drains, goaway is its first frame.
	go f.H.Drain(context.Background(), "")
	stalled.Expect(wire.TypeGoAway)
}

func TestFaultFlapDropsSessionsAfterReady(t *testing.T) {
	f := newFaultFixture(t)
	early := f.Dial(t)
	early.Expect(wire.TypeReady)
	f.faults.Set(fault.Fault{Mode: fault.Flap, After: 50 * time.Millisecond})
	late := f.Dial(t)
	late.Expect(wire.TypeReady)
	for name, c := range map[string]*client{"a session open before the mode": early, "a new session": late} {
		if code, _ := c.Closed(); code != -1 {
			t.Errorf("%s: close status %d, want an abrupt drop (-1, no close frame)", name, code)
		}
	}
}

func TestLeavingFlapCancelsPendingDrops(t *testing.T) {
	f := newFaultFixture(t)
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	f.faults.Set(fault.Fault{Mode: fault.Flap, After: 200 * time.Millisecond})
	f.faults.Set(fault.Fault{})
	// Past the drop that was scheduled, the session must still be open: nothing to read, no close.
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	if _, b, err := c.Conn.Read(ctx); ctx.Err() == nil {
		t.Fatalf("after flap ended the session read %s / %v, want it quietly open", b, err)
	}
}

func TestFaultDrainSendsEveryPageToTheURI(t *testing.T) {
	f := newFaultFixture(t)
	early := f.Dial(t)
	early.Expect(wire.TypeReady)
	f.faults.Set(fault.Fault{Mode: fault.Drain, URI: "wss://b.example/ev"})
	if g := early.Expect(wire.TypeGoAway); g.URI != "wss://b.example/ev" {
		t.Errorf("goaway uri %q", g.URI)
	}
	late := f.Dial(t)
	late.Expect(wire.TypeReady) // ready first, so a page can migrate here before moving on
	if g := late.Expect(wire.TypeGoAway); g.URI != "wss://b.example/ev" {
		t.Errorf("goaway uri %q", g.URI)
	}
}

func TestFaultOverloadClosesWithTheGivenRetryAfter(t *testing.T) {
	f := newFaultFixture(t)
	f.faults.Set(fault.Fault{Mode: fault.Overload, After: 1500 * time.Millisecond})
	code, reason := f.Dial(t).Closed()
	if code != wire.CloseOverloaded || reason != "retry-after=1500" {
		t.Errorf("close %d %q, want 1013 retry-after=1500", code, reason)
	}
}

func TestFaultPanelOverTheWire(t *testing.T) {
	h, _ := newHost(t, `{}`)
	in := installFaults(t, h)
	srv := httptest.NewServer(in.Panel())
	defer srv.Close()
	resp, err := http.Post(srv.URL+"?mode=overload%3D2000", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := in.Fault(); got.Mode != fault.Overload || got.After != 2*time.Second {
		t.Errorf("mode after POST = %v", got)
	}
}

func TestFaultOutageDropsSessionsAndRefusesNewOnesUntilUp(t *testing.T) {
	f := newFaultFixture(t)
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	c.Send(`{"t":"sub","stream":"s"}`)
	epoch := c.Expect(wire.TypeReset).Epoch
	publish(t, f.H, "s", `1`)
	c.Expect(wire.TypeEvent)

	f.faults.Set(fault.Fault{Mode: fault.Outage})
	if code, _ := c.Closed(); code != -1 {
		t.Errorf("close status %d, want an abrupt drop", code)
	}
	if _, err := f.TryDial(t, nil); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("dial during the outage: %v, want a 503", err)
	}
	publish(t, f.H, "s", `2`) // published while the page was away

	f.faults.Set(fault.Fault{})
	back := f.Dial(t)
	back.Expect(wire.TypeReady)
	back.Send(`{"t":"sub","stream":"s","epoch":"` + epoch + `","after":1}`)
	if ev := back.Expect(wire.TypeEvent); ev.Seq != 2 {
		t.Errorf("after the outage the page got %+v, want the missed event 2", ev)
	}
}

func TestStatsCountSocketsAtTheEndpoint(t *testing.T) {
	f := newFaultFixture(t)
	f.faults.Set(fault.Fault{Mode: fault.StallOpen})
	dialed := make(chan error, 1)
	go func() {
		_, err := f.TryDial(t, nil)
		dialed <- err
	}()
	waitFor(t, "the held upgrade to count", func() bool {
		s := f.H.Stats()
		return s.Accepted == 1 && s.Open == 1 && s.Sessions == 0
	})
	f.faults.Set(fault.Fault{})
	waitFor(t, "the released upgrade to become a session", func() bool {
		s := f.H.Stats()
		return s.Accepted == 1 && s.Open == 1 && s.Sessions == 1 && s.Ready && f.faults.Fault().String() == "up"
	})
	if err := <-dialed; err != nil {
		t.Errorf("the released dial failed: %v", err)
	}
}

func TestFaultInstallTakesOneInjectorPerHost(t *testing.T) {
	h, _ := newHost(t, `{}`)
	installFaults(t, h)
	if _, err := hosthook.InstallFaults(h); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("a second InstallFaults = %v, want an error saying the Host has one already", err)
	}
	if _, err := hosthook.InstallFaults(http.NotFoundHandler()); err == nil || !strings.Contains(err.Error(), "http.HandlerFunc") {
		t.Errorf("InstallFaults of a handler = %v, want an error naming the type seen", err)
	}
	var nilHost *hostplugin.Host
	if _, err := hosthook.InstallFaults(nilHost); err == nil {
		t.Error("InstallFaults of a nil *Host succeeded")
	}
}
