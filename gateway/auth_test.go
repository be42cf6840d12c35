package gateway_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
	ts "github.com/lifeline-go/lifeline/internal/test/testserver"
)

// skipInNode skips a test of refused handshakes in Node: its WebSocket reports the error of a
// refused upgrade but never closes the socket, so coder/websocket's dial stays pending until
// the deadline, the dial never fails, and nothing probes. Browsers (the page's home) and
// native builds fail the dial at once.
func skipInNode(t *testing.T) {
	t.Helper()
	if isJS && inNode() {
		t.Skip("Node's WebSocket leaves a refused upgrade pending: the dial never fails, so there is no probe to test")
	}
}

func auth(t *testing.T, sc *ts.Scenario, host string, status int, reason, cookie string, noCORS bool) {
	t.Helper()
	do0(t, "auth "+host, func(ctx ctxT) error { return sc.Auth(ctx, host, status, reason, cookie, noCORS) })
}

// waitUnauthorized waits for the controller to show a refused credential.
func (r *rig) waitUnauthorized() controller.Status {
	r.t.Helper()
	return r.waitState("unauthorized", func(s controller.Status) bool { return s.State == controller.Unauthorized })
}

func TestARefusedCredentialIsUnauthorized(t *testing.T) {
	tests := []struct {
		name   string
		status int    // the Host's refusal; 0: it refuses nothing but fails the upgrade (503)
		reason string // its reason
		noCORS bool
		// unauthorized: whether the page sees the refusal, natively and in the browser.
		native, browser bool
	}{
		{name: "a 401 with the Host's reason", status: 401, reason: "sign in first", native: true, browser: true},
		{name: "a 403 with the Host's reason", status: 403, reason: "not for you", native: true, browser: true},
		{name: "a refusal without a reason", status: 401, native: true, browser: true},
		{name: "a refusal the page may not read (no CORS) is a dial failure in the browser",
			status: 401, reason: "sign in first", noCORS: true, native: true, browser: false},
		{name: "an upgrade refused with 503 is an outage, not a refusal", native: false, browser: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			skipInNode(t)
			sc := newScenario(t)
			cookie := fmt.Sprintf("ll_probe_%s=seen", sc.ID())
			handshake := pageCredential(t, cookie) // carried, and refused all the same
			if tt.status != 0 {
				auth(t, sc, "a", tt.status, tt.reason, "", tt.noCORS)
			} else {
				defaultScript(t, sc, "a", ts.Step{Reject: 503})
			}
			r := newRig(t, sc.URL("a"), fast(), &gateway.Options{Handshake: handshake})
			r.ctl.Start()
			want := tt.native
			if isJS {
				want = tt.browser
			}
			var st controller.Status
			if want {
				st = r.waitUnauthorized()
			} else {
				st = r.waitFailure()
			}
			if !errors.Is(st.Err, gateway.ErrDial) {
				t.Errorf("failure %v does not wrap gateway.ErrDial", st.Err)
			}
			var ue *gateway.UnauthorizedError
			switch {
			case want && (!errors.Is(st.Err, controller.ErrUnauthorized) || !errors.As(st.Err, &ue)):
				t.Fatalf("failure %v, want a *gateway.UnauthorizedError (controller.ErrUnauthorized)", st.Err)
			case want && (ue.Status != tt.status || ue.Reason != tt.reason):
				t.Fatalf("refusal %d %q, want %d %q", ue.Status, ue.Reason, tt.status, tt.reason)
			case want && tt.reason != "" && !strings.Contains(st.Err.Error(), tt.reason):
				t.Errorf("failure %q does not name the Host's reason %q", st.Err, tt.reason)
			case !want && errors.Is(st.Err, controller.ErrUnauthorized):
				t.Fatalf("failure %v is unauthorized, want a plain dial failure", st.Err)
			}

			hs := stats(t, sc).Hosts["a"]
			// In the browser the next attempt may have begun by now, with the query asked
			// before a WebSocket is dialed again after a failure (session.checkFirst): one
			// query more than the dials.
			ahead := 0
			if isJS {
				ahead = 1
			}
			switch {
			case !isJS && tt.status != 0 && len(hs.RefusalQueries) != 0:
				// The handshake's answer says a refusal all by itself natively.
				t.Errorf("native refusal queries %+v, want none", hs.RefusalQueries)
			case (isJS || tt.status == 0) && (len(hs.RefusalQueries) == 0 || len(hs.RefusalQueries) > hs.Dials+ahead):
				// A failed dial that is no refusal has the Host asked whether the path is to
				// blame (PROTOCOL.md §11.3), natively too.
				t.Errorf("%d refusal queries for %d dials, want one after each failed dial (and in the browser one before a redial)", len(hs.RefusalQueries), hs.Dials)
			}
			for _, p := range hs.RefusalQueries {
				// In the browser the test page is served from another port: the refusal query
				// is cross-origin for real, and carries the page's cookies all the same.
				if p.Method != "GET" || (isJS && p.Origin == "") || !strings.Contains(p.Cookie, cookie) {
					t.Errorf("refusal query %+v, want a GET with the page's cookie %q (cross-origin in the browser)", p, cookie)
				}
			}

			// The credential is good again: the page connects on its own.
			if tt.status != 0 {
				auth(t, sc, "a", 0, "", "", false)
			} else {
				defaultScript(t, sc, "a", readyServe...)
			}
			r.waitConnected()
		})
	}
}

func TestTheDialCarriesThePagesCredential(t *testing.T) {
	skipInNode(t)
	sc := newScenario(t)
	cookie := fmt.Sprintf("ll_user_%s=alice", sc.ID())
	auth(t, sc, "a", 401, "sign in first", cookie, false)

	stranger := newRig(t, sc.URL("a"), fast(), nil)
	stranger.ctl.Start()
	if st := stranger.waitUnauthorized(); !errors.Is(st.Err, controller.ErrUnauthorized) {
		t.Fatalf("a page without the cookie: %v, want unauthorized", st.Err)
	}
	stranger.ctl.Stop()

	r := newRig(t, sc.URL("a"), fast(), &gateway.Options{Handshake: pageCredential(t, cookie)})
	r.ctl.Start()
	r.waitConnected()
	if st := waitHost(t, sc, "a", "accepted", "==", 1); st.Refused == 0 {
		t.Errorf("stats %+v: the stranger was never refused", st)
	}
}

// TestATooManySocketsRefusalIsBusyWithItsWait: a 429 (the Host's per-address rate) is an
// overload with the Host's wait, which the controller honours as it honours a 1013's: from
// the body's retryAfterMs (what a browser page can read, through the refusal query), else
// the Retry-After header's seconds (native), else the ladder alone.
func TestATooManySocketsRefusalIsBusyWithItsWait(t *testing.T) {
	for _, tc := range []struct {
		name, header, body string
		want               time.Duration // 0: no RetryAfterError
	}{
		{"the body's wait", "2", `{"error":"too many sockets","retryAfterMs":1500}`, 1500 * time.Millisecond},
		{"the header's seconds, without a body", "3", ``, 3 * time.Second},
		{"the header's seconds, with another proxy's body", "1", `<html>429</html>`, time.Second},
		{"no wait at all", "", ``, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := gateway.RefusedBy(429, tc.header, []byte(tc.body))
			if !errors.Is(err, gateway.ErrOverloaded) {
				t.Fatalf("RefusedBy(429) = %v, want ErrOverloaded", err)
			}
			var ra *controller.RetryAfterError
			switch {
			case tc.want == 0 && errors.As(err, &ra):
				t.Fatalf("RefusedBy(429) = %v, want no wait", err)
			case tc.want != 0 && (!errors.As(err, &ra) || ra.After != tc.want):
				t.Fatalf("RefusedBy(429) = %v, want a RetryAfterError of %v", err, tc.want)
			}
		})
	}
	if err := gateway.RefusedBy(503, "5", nil); err != nil {
		t.Fatalf("RefusedBy(503) = %v, want nil: only the statuses the Host refuses with are read", err)
	}
}
