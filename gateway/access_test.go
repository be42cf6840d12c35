package gateway_test

// Access that ends, in every build (natively in a bubble, in Node and in Chromium against the
// test Host): the Host's end of a session's access in the words every page reads (an error
// frame, then close 4401), a reauthentication, and the page's renewals of a credential that
// expires.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
	ts "github.com/lifeline-go/lifeline/internal/test/testserver"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// endSession is a session the Host ends after ms: its error frame, then its close.
func endSession(ms int64, reason string, reauth bool) []ts.Step {
	msg := wire.AccessEndedReason(reason, reauth)
	frame, _ := wire.HostFrame{T: wire.TypeError, Message: msg}.Encode()
	return []ts.Step{{Ready: true}, {Serve: true}, {SleepMs: ms}, {Send: string(frame)}, {Close: wire.CloseAccessEnded, Reason: msg}}
}

// quick is a ladder whose top cap comes soon: an unauthorized page's next try within 300 ms.
func quick() controller.Recovery {
	return controller.Recovery{InitialDelayMs: new(20.0), MaxDelayMs: new(300.0), StableAfterMs: new(0.0)}
}

func TestAnEndOfAccessIsUnauthorizedWithTheReasonAndDialsNoSocketTheHostRefuses(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		browserChecks(t)
		sc := newScenario(t)
		script(t, sc, "a", endSession(300, "You signed out in another tab.", false))
		r := newRig(t, sc.URL("a"), quick(), nil)
		r.ctl.Start()
		r.waitConnected()
		auth(t, sc, "a", 401, "please sign in", "", false) // the credential is gone with the sign-out
		st := r.waitUnauthorized()
		var ae *gateway.AccessEndedError
		if !errors.As(st.Err, &ae) || ae.Reauth || gateway.Reason(st.Err) != "You signed out in another tab." {
			t.Fatalf("status %+v, want unauthorized with the Host's reason", st)
		}
		if !errors.Is(st.Err, controller.ErrUnauthorized) || gateway.Kind(st.Err) != wire.KindUnauthorized {
			t.Fatalf("failure %v is not unauthorized", st.Err)
		}
		next := r.waitState("the next try", func(s controller.Status) bool { return s.State == controller.Unauthorized && s.Attempt > st.Attempt })
		if gateway.Reason(next.Err) != "please sign in" {
			t.Fatalf("the next try: %v, want the Host's refusal of the credential", next.Err)
		}
		// The try asked the Host first (the refusal query) and dialed no socket it refuses.
		hs := stats(t, sc).Hosts["a"]
		if hs.Dials != 1 || len(hs.RefusalQueries) == 0 {
			t.Fatalf("%d dials, %d refusal queries: want the first dial only, then queries", hs.Dials, len(hs.RefusalQueries))
		}
		auth(t, sc, "a", 0, "", "", false) // signed in again
		r.waitConnected()
		r.ctl.Stop()
	})
}

func TestAnEndWithReauthConnectsAgainAtOnce(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		sc := newScenario(t)
		script(t, sc, "a", endSession(200, "Your role changed.", true))
		r := newRig(t, sc.URL("a"), controller.Recovery{}, nil) // the default ladder: any wait would show
		r.ctl.Start()
		first := r.waitConnected()
		again := r.waitState("connected again", func(s controller.Status) bool {
			return s.State == controller.Connected && s.Attempt > first.Attempt
		})
		hs := waitHost(t, sc, "a", "accepted", "==", 2)
		if gap := hs.DialMs[1] - hs.DialMs[0]; gap < 200 || gap > 200+bound.Milliseconds()/2 {
			t.Fatalf("the second dial %d ms after the first, want right after the end at 200 ms", gap)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, s := range r.statuses {
			if s.State == controller.Unauthorized || s.State == controller.Reconnecting {
				t.Fatalf("status %v on the way back: a reauthentication waits for nothing (%v)", s.State, s.Err)
			}
		}
		if again.Failures != 0 {
			t.Fatalf("failures %d, want the ladder untouched", again.Failures)
		}
	})
}

func TestThePageRenewsItsAccessBeforeItExpiresWithItsToken(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		sc := newScenario(t)
		script(t, sc, "a", []ts.Step{{Ready: true, ExpiresMs: 1000}, {Serve: true}})
		r := newRig(t, sc.URL("a"), fast(), &gateway.Options{RenewToken: func(context.Context) (string, error) {
			return "tok", nil
		}})
		r.ctl.Start()
		first := r.waitConnected()
		hs := waitHost(t, sc, "a", "renewals", ">=", 2)
		for _, rn := range hs.Renewals[:2] {
			if rn.Status != 200 || rn.Token != "tok" || rn.Secret == "" || rn.Session == "" {
				t.Fatalf("renewal %+v, want the session, its secret and the token, answered 200", rn)
			}
		}
		// A renewal the Host refuses is the last: the session then ends at its expiry, by the
		// Host's hand, not the page's.
		auth(t, sc, "a", 401, "revoked", "", false)
		hs = waitHost(t, sc, "a", "renewals", ">=", 3)
		time.Sleep(1500 * time.Millisecond)
		if again := stats(t, sc).Hosts["a"]; len(again.Renewals) != len(hs.Renewals) || hs.Renewals[len(hs.Renewals)-1].Status != 401 {
			t.Fatalf("renewals %+v, want none after the refusal (401)", again.Renewals)
		}
		if st := r.ctl.Status(); st.State != controller.Connected || st.Attempt != first.Attempt {
			t.Fatalf("%+v: the page ended its session itself; the Host ends it", st)
		}
		r.ctl.Stop()
	})
}
