//go:build !js

package gateway_test

// Access that ends, against the real Host (hostplugin), in a bubble: a sign-out, a
// reauthentication, calls caught by an end, and the renewal of a credential that expires,
// each at exact moments on the bubble's clock.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/test/wstest"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// accessWorld is a Host in memory at a.invalid whose credential is the cookie "user", good
// while the user is signed in, for life from each time it is asked (0: no expiry).
type accessWorld struct {
	t        *testing.T
	h        *hostplugin.Host
	mu       sync.Mutex
	signedIn map[string]bool
	life     time.Duration
	// hook, when set, is called by Access before it answers (with the Authorization header):
	// a test makes a renewal slow, or fail.
	hook     func(bearer string) error
	asked    atomic.Int32 // Access calls
	upgrades atomic.Int32 // sockets asked for (not refusal queries, not renewals)
	// holdPolls, while set, keeps every answer to an HTTP carrier's poll from the page (it
	// waits until the page gives the poll up): a page that has not read the end's frames.
	holdPolls atomic.Bool
}

// heldWriter is a poll's answer that holds its writes while hold is set.
type heldWriter struct {
	http.ResponseWriter
	hold *atomic.Bool
	ctx  context.Context
}

func (h *heldWriter) held() bool {
	if !h.hold.Load() {
		return false
	}
	<-h.ctx.Done()
	return true
}

func (h *heldWriter) WriteHeader(code int) {
	if !h.held() {
		h.ResponseWriter.WriteHeader(code)
	}
}

func (h *heldWriter) Write(b []byte) (int, error) {
	if h.held() {
		return 0, h.ctx.Err()
	}
	return h.ResponseWriter.Write(b)
}

func newAccessWorld(t *testing.T, life time.Duration) *accessWorld {
	w := &accessWorld{t: t, signedIn: map[string]bool{"alice": true, "bob": true}, life: life}
	h, err := hostplugin.New(hostplugin.DefaultConfig(), &hostplugin.Options{
		Logger: quiet, Authorize: hostplugin.PublicStreams, NoClient: true, Access: w.access})
	if err != nil {
		t.Fatal(err)
	}
	h.HandleCall("hold", func(ctx context.Context, c *hostplugin.Call) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	h.SetReady(true)
	w.h = h
	handler := h.Handler(http.NotFoundHandler())
	gateway.UseHandshakeClient(t, wstest.Client(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			w.upgrades.Add(1)
		}
		if r.Method == http.MethodPost && !r.URL.Query().Has(wire.RenewParam) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			line, _, _ := bytes.Cut(body, []byte{'\n'})
			if env, err := wire.DecodeEnvelope(line); err == nil && env.T == wire.EnvelopePoll {
				rw = &heldWriter{ResponseWriter: rw, hold: &w.holdPolls, ctx: r.Context()}
			}
		}
		handler.ServeHTTP(rw, r)
	})))
	t.Cleanup(func() { _ = h.Close() })
	return w
}

func (w *accessWorld) access(r *http.Request) (hostplugin.Access, error) {
	w.asked.Add(1)
	w.mu.Lock()
	hook, life := w.hook, w.life
	w.mu.Unlock()
	bearer := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if hook != nil {
		if err := hook(bearer); err != nil {
			return hostplugin.Access{}, err
		}
	}
	user := bearer
	if c, err := r.Cookie("user"); err == nil && user == "" {
		user = c.Value
	}
	w.mu.Lock()
	ok := w.signedIn[user]
	w.mu.Unlock()
	if !ok {
		return hostplugin.Access{}, fmt.Errorf("%w: please sign in", hostplugin.ErrUnauthenticated)
	}
	acc := hostplugin.Access{Identity: user}
	if life > 0 {
		acc.Until = time.Now().Add(life)
	}
	return acc, nil
}

func (w *accessWorld) signOut(user string) {
	w.mu.Lock()
	w.signedIn[user] = false
	w.mu.Unlock()
}

func (w *accessWorld) signIn(user string) {
	w.mu.Lock()
	w.signedIn[user] = true
	w.mu.Unlock()
}

// accessRig is a page of user on the world, checking the Host before each WebSocket it dials
// again, as the browser does.
func accessRig(t *testing.T, user string, o *gateway.Options) *rig {
	t.Helper()
	gateway.CheckBeforeRedial(t)
	if o == nil {
		o = &gateway.Options{}
	}
	o.Handshake.Header = http.Header{"Cookie": {"user=" + user}}
	return newRig(t, "ws://a.invalid/_lifeline/events", controller.Recovery{}, o)
}

func TestAPageWhoseAccessEndedShowsUnauthorizedWithTheReasonAndDialsNoSocketUntilSignedIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newAccessWorld(t, 0)
		r := accessRig(t, "alice", nil)
		sub := r.gw.Subscribe("news", func(gateway.Delivery) {})
		r.ctl.Start()
		r.waitConnected()
		upgrades := w.upgrades.Load()

		w.signOut("alice")
		start := time.Now()
		if _, err := w.h.EndSessions(context.Background(), "alice", hostplugin.EndOptions{Reason: "You signed out in another tab."}); err != nil {
			t.Fatal(err)
		}
		st := r.waitState("unauthorized", func(s controller.Status) bool { return s.State == controller.Unauthorized })
		var ae *gateway.AccessEndedError
		if !errors.As(st.Err, &ae) || ae.Reauth || gateway.Reason(st.Err) != "You signed out in another tab." || gateway.Kind(st.Err) != wire.KindUnauthorized {
			t.Fatalf("status %+v (reason %q), want unauthorized with the app's reason", st, gateway.Reason(st.Err))
		}
		if d := st.At.Sub(start); d != 0 {
			t.Fatalf("unauthorized %v after the end, want at once", d)
		}
		// The next attempt waits the top cap (jittered 50–100%), and asks the Host first: no
		// socket is dialed that Authenticate refuses.
		if wait := st.NextAttempt.Sub(st.At); wait < 5*time.Second || wait > 10*time.Second {
			t.Fatalf("next attempt in %v, want the top cap, 5–10 s", wait)
		}
		next := r.waitState("the next refusal", func(s controller.Status) bool { return s.State == controller.Unauthorized && s.Attempt > st.Attempt })
		if gateway.Reason(next.Err) != "hostplugin: unauthenticated: please sign in" {
			t.Fatalf("the next attempt: %v, want Authenticate's refusal", next.Err)
		}
		if n := w.upgrades.Load() - upgrades; n != 0 {
			t.Fatalf("%d sockets dialed while the credential was refused, want none", n)
		}
		if sub.Err() != nil {
			t.Fatalf("the subscription ended (%v): it waits for the page to be back", sub.Err())
		}
		w.signIn("alice")
		r.waitConnected()
		r.ctl.Stop()
	})
}

func TestAPageOnTheHTTPCarrierWhoseAccessEndedShowsUnauthorizedWithTheReason(t *testing.T) {
	for _, carrier := range []string{wire.CarrierStream, wire.CarrierPoll} {
		t.Run(carrier, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newAccessWorld(t, 0)
				r := accessRig(t, "alice", &gateway.Options{Carrier: carrier, UpgradeAfter: time.Hour})
				r.ctl.Start()
				r.waitConnected()
				w.signOut("alice")
				start := time.Now()
				if _, err := w.h.EndSessions(context.Background(), "alice", hostplugin.EndOptions{Reason: "You signed out."}); err != nil {
					t.Fatal(err)
				}
				st := r.waitState("unauthorized", func(s controller.Status) bool { return s.State == controller.Unauthorized })
				var ae *gateway.AccessEndedError
				if !errors.As(st.Err, &ae) || gateway.Reason(st.Err) != "You signed out." || !st.At.Equal(start) {
					t.Fatalf("status %+v at %v, want unauthorized with the app's reason at once", st, st.At.Sub(start))
				}
				r.ctl.Stop()
			})
		})
	}
}

func TestAPageWhosePOSTIsRefusedForAnEndedAccessIsToldTheSame(t *testing.T) {
	// The page has not read the end's frames (its polls are held on the way), and sends a
	// call: the Host refuses the POST with the end's words, runs nothing of it, and the page
	// shows unauthorized with the app's reason, as if it had read them.
	synctest.Test(t, func(t *testing.T) {
		w := newAccessWorld(t, 0)
		var ran atomic.Int32
		w.h.HandleCall("count", func(context.Context, *hostplugin.Call) (json.RawMessage, error) {
			ran.Add(1)
			return json.RawMessage(`1`), nil
		})
		r := accessRig(t, "alice", &gateway.Options{Carrier: wire.CarrierPoll, UpgradeAfter: time.Hour})
		r.ctl.Start()
		connected := r.waitConnected()
		w.holdPolls.Store(true)
		w.signOut("alice")
		if _, err := w.h.EndSessions(context.Background(), "alice", hostplugin.EndOptions{Reason: "You signed out."}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if st := r.ctl.Status(); st.State != controller.Connected || st.Attempt != connected.Attempt {
			t.Fatalf("before the call: %+v, want the page still unaware of the end", st)
		}
		start := time.Now()
		call := startCall(r.gw, "count", `1`, gateway.CallOptions{})
		st := r.waitState("unauthorized", func(s controller.Status) bool { return s.State == controller.Unauthorized })
		var ae *gateway.AccessEndedError
		if !errors.As(st.Err, &ae) || ae.Reauth || gateway.Reason(st.Err) != "You signed out." || !st.At.Equal(start) {
			t.Fatalf("status %+v at %v, want unauthorized with the app's reason at the refusal", st, st.At.Sub(start))
		}
		if _, ce := call.result(t); ce == nil {
			t.Fatal("the call in the refused POST got a reply")
		}
		w.holdPolls.Store(false)
		r.ctl.Stop()
		synctest.Wait()
		if n := ran.Load(); n != 0 {
			t.Fatalf("the call ran %d times after the session's access ended", n)
		}
	})
}

func TestAnEndedSubscriptionIsDeniedWithTheReasonAndTheRestCarriesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newAccessWorld(t, 0)
		r := accessRig(t, "alice", nil)
		var mu sync.Mutex
		got := map[string]int{}
		count := func(d gateway.Delivery) {
			if !d.Reset {
				mu.Lock()
				got[d.Stream]++
				mu.Unlock()
			}
		}
		team := r.gw.Subscribe("team", count)
		own := r.gw.Subscribe("own", count)
		r.ctl.Start()
		connected := r.waitConnected()
		synctest.Wait() // both subscribed at the Host
		if n, err := w.h.EndSubscription(context.Background(), "alice", "team", "You left the team."); err != nil || n != 1 {
			t.Fatalf("EndSubscription = %d, %v; want the page's one session", n, err)
		}
		synctest.Wait()
		var de *gateway.DeniedError
		if err := team.Err(); !errors.As(err, &de) || de.Reason != "You left the team." {
			t.Fatalf("the ended stream's Err = %v, want denied with the app's reason", err)
		}
		for _, s := range []string{"team", "own"} {
			if _, err := w.h.Publish(context.Background(), s, json.RawMessage(`1`)); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if got["team"] != 0 || got["own"] != 1 || own.Err() != nil {
			t.Fatalf("after the end: %v events, own's Err %v; want own's one event and none of team's", got, own.Err())
		}
		if st := r.ctl.Status(); st.State != controller.Connected || st.Attempt != connected.Attempt {
			t.Fatalf("after the end: %+v, want the same session connected", st)
		}
		r.ctl.Stop()
	})
}

func TestReauthenticateReconnectsAtOnceThroughAuthenticate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newAccessWorld(t, 0)
		r := accessRig(t, "alice", nil)
		var got []gateway.Delivery
		var mu sync.Mutex
		r.gw.Subscribe("news", func(d gateway.Delivery) { mu.Lock(); got = append(got, d); mu.Unlock() })
		r.ctl.Start()
		first := r.waitConnected()
		synctest.Wait() // subscribed
		if _, err := w.h.Publish(context.Background(), "news", json.RawMessage(`1`)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		asked := w.asked.Load()
		start := time.Now()
		if _, err := w.h.EndSessions(context.Background(), "alice", hostplugin.EndOptions{Reason: "Your role changed.", Reauthenticate: true}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if st := r.ctl.Status(); st.State != controller.Connected || st.Attempt <= first.Attempt || time.Since(start) != 0 {
			t.Fatalf("%v after the end: %+v, want connected on a new session at once", time.Since(start), st)
		}
		if w.asked.Load() == asked || w.h.Sessions() != 1 {
			t.Fatalf("the Host has %d sessions, Authenticate asked %d times since: want the new session, through Authenticate",
				w.h.Sessions(), w.asked.Load()-asked)
		}
		r.mu.Lock()
		for _, s := range r.statuses {
			if s.State == controller.Unauthorized || s.State == controller.Reconnecting {
				t.Errorf("status %v on the way: a reauthentication is no failure", s.State)
			}
		}
		r.mu.Unlock()
		if _, err := w.h.Publish(context.Background(), "news", json.RawMessage(`2`)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		mu.Lock()
		if len(got) != 3 || !got[0].Reset || string(got[1].Data) != "1" || string(got[2].Data) != "2" {
			t.Errorf("deliveries %+v, want the reset, 1 and 2: resumed by cursor", got)
		}
		mu.Unlock()

		// One whose credential no longer passes is refused on its new attempt.
		w.signOut("alice")
		if _, err := w.h.EndSessions(context.Background(), "alice", hostplugin.EndOptions{Reason: "Sign in again.", Reauthenticate: true}); err != nil {
			t.Fatal(err)
		}
		st := r.waitState("unauthorized", func(s controller.Status) bool { return s.State == controller.Unauthorized })
		if gateway.Reason(st.Err) != "hostplugin: unauthenticated: please sign in" {
			t.Fatalf("status %+v, want Authenticate's refusal", st)
		}
		r.ctl.Stop()
	})
}

func TestCallsOfASessionWhoseAccessEndedAreNeverSentToTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newAccessWorld(t, 0)
		r := accessRig(t, "alice", &gateway.Options{CallsInFlight: 2})
		r.ctl.Start()
		r.waitConnected()
		running := startCall(r.gw, "hold", `1`, gateway.CallOptions{Key: "k1"})
		synctest.Wait() // running on the Host
		waiting := startCall(r.gw, "hold", `2`, gateway.CallOptions{})
		synctest.Wait() // sent, waiting on the Host behind the first
		queued := startCall(r.gw, "hold", `3`, gateway.CallOptions{Key: "k3"})
		synctest.Wait() // queued on the page: two are in flight already
		w.signOut("alice")
		if _, err := w.h.EndSessions(context.Background(), "alice", hostplugin.EndOptions{Reason: "revoked"}); err != nil {
			t.Fatal(err)
		}
		wantKind(t, running, gateway.CallInterrupted, true)
		if ce := wantKind(t, waiting, gateway.CallAccessEnded, true); ce.Code != wire.CodeAccessEnded {
			t.Fatalf("the call the Host had not started: %+v, want its code access-ended", ce)
		}
		wantKind(t, queued, gateway.CallAccessEnded, false)
		r.ctl.Stop()
	})
}

func TestAPageRenewsItsAccessBeforeItExpiresAndKeepsItsSession(t *testing.T) {
	for _, token := range []bool{false, true} {
		t.Run(fmt.Sprintf("token=%v", token), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newAccessWorld(t, 10*time.Second)
				o := &gateway.Options{}
				user := "alice"
				if token {
					user = "nobody" // the cookie names no one: the token the page's code hands over does
					o.RenewToken = func(context.Context) (string, error) { return "alice", nil }
					w.hook = func(bearer string) error { return nil }
				}
				r := accessRig(t, user, o)
				if token {
					// The first session comes in on the token too (a native page may set its header).
					r = accessRig(t, "alice", o)
				}
				r.ctl.Start()
				first := r.waitConnected()
				asked := w.asked.Load()
				time.Sleep(time.Minute)
				synctest.Wait()
				if st := r.ctl.Status(); st.State != controller.Connected || st.Attempt != first.Attempt {
					t.Fatalf("after a minute: %+v, want the first session still connected", st)
				}
				// 70–80% of 10 s each: 6 to 8 renewals in a minute.
				if n := w.asked.Load() - asked; n < 6 || n > 9 {
					t.Fatalf("%d renewals in a minute, want one every 7–8 s", n)
				}
				r.ctl.Stop()
			})
		})
	}
}

func TestARenewalTheHostRefusesEndsTheSessionAtItsExpiryNeverLater(t *testing.T) {
	// A table of moments: the credential holds 10 s from the connect; the page renews at
	// 7–8 s, and the Host's Authenticate answers after delay, with refuse. The session ends
	// at 10 s whatever the answer, unless a good one was applied before it.
	tests := []struct {
		name    string
		delay   time.Duration // from the renewal's arrival to Authenticate's answer
		refuse  bool
		ends    bool // the session ends at 10 s
		renewed bool
	}{
		{name: "refused at once: it ends at the expiry", refuse: true, ends: true},
		{name: "a good answer a moment before the expiry: renewed", delay: 0, ends: false, renewed: true},
		{name: "a good answer at the very instant of the expiry: too late, it ends then", delay: time.Hour, ends: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newAccessWorld(t, 10*time.Second)
				r := accessRig(t, "alice", nil)
				r.ctl.Start()
				first := r.waitConnected()
				expiry := first.At.Add(10 * time.Second)
				w.mu.Lock()
				w.hook = func(string) error {
					if tt.delay == time.Hour {
						time.Sleep(time.Until(expiry)) // answered as the expiry fires
					} else if tt.delay > 0 {
						time.Sleep(tt.delay)
					}
					if tt.refuse {
						return fmt.Errorf("%w: the sign-in was revoked", hostplugin.ErrUnauthenticated)
					}
					return nil
				}
				w.mu.Unlock()
				if tt.ends {
					time.Sleep(11 * time.Second)
					synctest.Wait()
					st, ok := r.first(func(s controller.Status) bool { return s.At.After(first.At) })
					if !ok || st.State != controller.Unauthorized || !st.At.Equal(expiry) || gateway.Reason(st.Err) != "your sign-in has expired" {
						t.Fatalf("first status after connected: %+v at %v, want unauthorized at the expiry with its reason", st, st.At.Sub(first.At))
					}
				} else {
					time.Sleep(15 * time.Second)
					synctest.Wait()
					if st := r.ctl.Status(); st.State != controller.Connected || st.Attempt != first.Attempt {
						t.Fatalf("after the first expiry: %+v, want the session renewed", st)
					}
				}
				r.ctl.Stop()
			})
		})
	}
}

func TestARenewalThatFailsOnTheWayIsTriedAgainWhileThereIsTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newAccessWorld(t, 10*time.Second)
		var renewals atomic.Int32
		w.hook = func(string) error {
			if renewals.Add(1) == 2 { // the first renewal (the connect is the first call)
				panic("the session store is down") // a 500: no verdict on the credential
			}
			return nil
		}
		r := accessRig(t, "alice", nil)
		r.ctl.Start()
		first := r.waitConnected()
		time.Sleep(25 * time.Second)
		synctest.Wait()
		if st := r.ctl.Status(); st.State != controller.Connected || st.Attempt != first.Attempt {
			t.Fatalf("%+v, want the session kept by the second try", st)
		}
		if renewals.Load() < 3 {
			t.Fatalf("%d Access calls, want the failed renewal tried again", renewals.Load())
		}
		r.ctl.Stop()
	})
}

// first returns the first status recorded that satisfies pred.
func (r *rig) first(pred func(controller.Status) bool) (controller.Status, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.statuses {
		if pred(s) {
			return s, true
		}
	}
	return controller.Status{}, false
}
