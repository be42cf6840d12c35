//go:build !js

package fault_test

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifeline-go/lifeline/internal/fault"
)

func TestParseReadsEveryModeAndRoundTrips(t *testing.T) {
	tests := []struct {
		in   string
		want fault.Fault
	}{
		{"up", fault.Fault{}},
		{"refuse", fault.Fault{Mode: fault.Refuse}},
		{"stall-open", fault.Fault{Mode: fault.StallOpen}},
		{"stall-ready", fault.Fault{Mode: fault.StallReady}},
		{"flap=250", fault.Fault{Mode: fault.Flap, After: 250 * time.Millisecond}},
		{"drain=wss://b.example/_lifeline/events", fault.Fault{Mode: fault.Drain, URI: "wss://b.example/_lifeline/events"}},
		{"drain=", fault.Fault{Mode: fault.Drain}},
		{"overload=3000", fault.Fault{Mode: fault.Overload, After: 3 * time.Second}},
		{"outage", fault.Fault{Mode: fault.Outage}},
	}
	for _, tt := range tests {
		got, err := fault.Parse(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		if got.String() != tt.in {
			t.Errorf("Parse(%q).String() = %q", tt.in, got.String())
		}
	}
	for _, bad := range []string{"", "down", "flap", "flap=x", "flap=-1", "overload=", "refuse=1", "up=1"} {
		if _, err := fault.Parse(bad); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("Parse(%q) error = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestPanel(t *testing.T) {
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
	in := fault.New(nil)
	panel := in.Panel()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in.Set(fault.Fault{})
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
			if tt.wantStatus != 200 && in.Fault() != (fault.Fault{}) {
				t.Errorf("a refused request changed the mode to %v", in.Fault())
			}
		})
	}
}

// Hold returns at once unless the mode is stall-open, and then when the mode changes or the
// Host ends.
func TestHoldWaitsOutStallOpenOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := fault.New(nil)
		done := make(chan struct{})
		if f, ok := in.Hold(t.Context(), done); !ok || f != (fault.Fault{}) {
			t.Fatalf("Hold while up = %v, %v; want up, true", f, ok)
		}
		in.Set(fault.Fault{Mode: fault.StallOpen})
		type result struct {
			f  fault.Fault
			ok bool
		}
		held := make(chan result, 1)
		hold := func() {
			f, ok := in.Hold(t.Context(), done)
			held <- result{f, ok}
		}
		go hold()
		synctest.Wait()
		select {
		case r := <-held:
			t.Fatalf("Hold under stall-open returned %+v", r)
		default:
		}
		in.Set(fault.Fault{Mode: fault.StallOpen}) // a change to the same mode holds on
		synctest.Wait()
		if len(held) != 0 {
			t.Fatalf("Hold returned %+v when stall-open was set again", <-held)
		}
		in.Set(fault.Fault{Mode: fault.Refuse})
		if r := <-held; r.f.Mode != fault.Refuse || !r.ok {
			t.Errorf("the released Hold returned %+v, want refuse, true", r)
		}

		in.Set(fault.Fault{Mode: fault.StallOpen})
		go hold()
		synctest.Wait()
		close(done)
		if r := <-held; r.ok {
			t.Errorf("Hold of a Host that closed returned %+v, want false", r)
		}
	})
}
