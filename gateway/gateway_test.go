package gateway_test

// The gateway over real sockets against the scriptable test Host, one failure shape each.
// Natively the Host runs in-process, and the tests that wait on timers (deadlines,
// heartbeats, probes, retry-after, backoff) run in a synctest bubble against a Host of their
// own in memory (inBubble); under js/wasm all of them need LIFELINE_TEST_SERVER.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
	ts "github.com/lifeline-go/lifeline/internal/test/testserver"
	"github.com/lifeline-go/lifeline/internal/wire"
)

const isJS = runtime.GOOS == "js"

// settleBound is how long Run may take to return after its context ended, on a slow,
// shared, race-instrumented machine. The design figure is "at once" (force close).
const settleBound = 300 * time.Millisecond

func script(t *testing.T, sc *ts.Scenario, host string, sessions ...[]ts.Step) {
	t.Helper()
	do0(t, "script "+host, func(ctx ctxT) error { return sc.Script(ctx, host, sessions...) })
}

func defaultScript(t *testing.T, sc *ts.Scenario, host string, steps ...ts.Step) {
	t.Helper()
	do0(t, "default script "+host, func(ctx ctxT) error { return sc.Default(ctx, host, steps...) })
}

func publish(t *testing.T, sc *ts.Scenario, stream string, n int) uint64 {
	t.Helper()
	return do(t, "publish", func(ctx ctxT) (uint64, error) { return sc.Publish(ctx, stream, n) })
}

var (
	readyServe = []ts.Step{{Ready: true}, {Serve: true}}
	hold       = []ts.Step{{Hold: true}}
)

// checkSettled fails unless every Run whose context ended returned within settleBound.
func checkSettled(t *testing.T, runs []runRecord) {
	t.Helper()
	for i, r := range runs {
		if r.cancelled.IsZero() {
			continue
		}
		if d := r.returned.Sub(r.cancelled); d > settleBound {
			t.Errorf("Run %d returned %v after its context ended (err %v), want within %v", i+1, d, r.err, settleBound)
		}
	}
}

func TestNeverOpensEndsAtTheDeadline(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		sc := newScenario(t)
		script(t, sc, "a", hold)
		defaultScript(t, sc, "a", hold...)
		r := newRig(t, sc.URL("a"), fast(), nil)
		start := time.Now()
		r.ctl.Start()
		st := r.waitFailure()
		if !errors.Is(st.Err, controller.ErrDeadline) {
			t.Fatalf("first failure = %v, want the deadline", st.Err)
		}
		runs := r.waitRuns(1)
		if took := runs[0].returned.Sub(start); took > 400*time.Millisecond+settleBound {
			t.Errorf("Run returned %v after Start, want at the 400ms deadline", took)
		}
		checkSettled(t, runs)
		r.ctl.Stop() // settles every Run: the list is final
		checkNoSessionGoroutines(t)
		all := r.waitRuns(1)
		if isJS {
			// The browser cannot abort a connecting WebSocket: the upgrade stays held until the
			// Host answers, and the socket is closed as soon as it opens.
			do0(t, "release", func(ctx ctxT) error { return sc.Release(ctx, "a") })
		}
		waitHost(t, sc, "a", "held", "==", 0)
		// Stop may cut the last attempt short before its request reached the Host.
		if s := waitHost(t, sc, "a", "live", "==", 0); s.Dials > len(all) || s.Dials < len(all)-1 {
			t.Errorf("the Host saw %d upgrade requests for %d attempts, want one each", s.Dials, len(all))
		}
	})
}

func TestOpenWithoutReadyEndsAtTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []ts.Step
	}{
		{"a Host that reads but never says ready", nil},
		{"a Host that neither reads nor writes", []ts.Step{{Deaf: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				sc := newScenario(t)
				defaultScript(t, sc, "a", tc.steps...)
				r := newRig(t, sc.URL("a"), fast(), nil)
				r.ctl.Start()
				st := r.waitFailure()
				if !errors.Is(st.Err, controller.ErrDeadline) {
					t.Fatalf("failure = %v, want the deadline", st.Err)
				}
				checkSettled(t, r.waitRuns(1))
				r.ctl.Stop()
				checkNoSessionGoroutines(t)
				all := r.waitRuns(1)
				checkSettled(t, all)
				if len(tc.steps) == 0 {
					waitHost(t, sc, "a", "live", "==", 0)
				}
				// Stop may cut the last attempt short before its socket opened.
				if s := stats(t, sc).Hosts["a"]; s.Dials > len(all) || s.Accepted > len(all) || s.Dials < len(all)-1 {
					t.Errorf("%d upgrade requests and %d sockets for %d attempts, want one each", s.Dials, s.Accepted, len(all))
				}
			})
		})
	}
}

// TestOneSocketPerAttempt: five attempts that connect and drop, then a sixth whose upgrade the
// Host holds, so that the count is read while nothing is in flight. Stopping while the next
// attempt may or may not have dialled (what this test did before) leaves the sixth dial to a
// race with Stop.
func TestOneSocketPerAttempt(t *testing.T) {
	sc := newScenario(t)
	cycle := []ts.Step{{Ready: true}, {Serve: true}, {SleepMs: 20}, {Drop: true}}
	script(t, sc, "a", cycle, cycle, cycle, cycle, cycle)
	defaultScript(t, sc, "a", hold...)
	rec := fast()
	rec.DeadlineMs = new(float64(bound.Milliseconds())) // the held sixth attempt outlasts the test
	r := newRig(t, sc.URL("a"), rec, nil)
	r.ctl.Start()
	for range 5 {
		r.waitConnected()
		r.waitFailure()
	}
	// The sixth attempt's upgrade is at the Host: six requests, five sockets, no more.
	if got := waitHost(t, sc, "a", "held", "==", 1); got.Dials != 6 || got.Accepted != 5 {
		t.Fatalf("with the sixth upgrade held: %d upgrade requests and %d sockets, want 6 and 5", got.Dials, got.Accepted)
	}
	r.ctl.Stop()
	if isJS {
		// The browser cannot abort a connecting WebSocket (TestNeverOpensEndsAtTheDeadline).
		do0(t, "release", func(ctx ctxT) error { return sc.Release(ctx, "a") })
	}
	waitHost(t, sc, "a", "held", "==", 0)
	runs := r.waitRuns(6)
	got := waitHost(t, sc, "a", "live", "==", 0)
	if len(runs) != 6 || got.Dials != 6 {
		t.Fatalf("%d attempts made %d upgrade requests, want 6 and 6", len(runs), got.Dials)
	}
	if !isJS && got.Accepted != 5 {
		t.Fatalf("the held upgrade was accepted after Stop cancelled it: %d sockets, want 5", got.Accepted)
	}
}

func TestProtocolErrorsFailTheAttempt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []ts.Step
		want  string
	}{
		{"a heartbeat before ready", []ts.Step{{Send: `{"t":"hb"}`}}, `expected a ready frame first, got "hb"`},
		{"an event before ready", []ts.Step{{Send: `{"t":"event","stream":"s","seq":1,"data":1}`}}, `expected a ready frame first, got "event"`},
		{"a ready without a session", []ts.Step{{Send: `{"t":"ready","heartbeatMs":1000}`}}, "ready without a session"},
		{"a ready with heartbeat 0", []ts.Step{{Send: `{"t":"ready","session":"x"}`}}, "heartbeatMs must be in 100..600000, got 0"},
		{"a ready with a heartbeat of a day", []ts.Step{{Send: `{"t":"ready","session":"x","heartbeatMs":86400000}`}}, "got 86400000"},
		{"text that is not JSON", []ts.Step{{Send: `ready!`}}, "invalid character"},
		{"an unknown frame type", []ts.Step{{Send: `{"t":"hello"}`}}, `unknown type "hello"`},
		{"a binary message", []ts.Step{{SendBinary: "\x00\x01"}}, "a binary message of 2 bytes"},
		{"a second ready", []ts.Step{{Ready: true}, {Send: `{"t":"ready","session":"y","heartbeatMs":1000}`}}, "a second ready frame"},
		{"a goaway to another scheme", []ts.Step{{Ready: true}, {GoAway: new("ftp://elsewhere/")}}, `got "ftp"`},
		{"no agreement on the subprotocol", []ts.Step{{NoSubprotocol: true}, {Ready: true}}, `subprotocol "lifeline.v1", got ""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := newScenario(t)
			defaultScript(t, sc, "a", tc.steps...)
			r := newRig(t, sc.URL("a"), fast(), nil)
			r.ctl.Start()
			st := r.waitFailure()
			if isJS && tc.steps[0].NoSubprotocol {
				// The browser itself fails such a handshake before the page sees a socket
				// (and Node 20 never reports that failure to the library, so the attempt
				// ends at the deadline): any failure will do.
				return
			}
			if !errors.Is(st.Err, gateway.ErrProtocol) || !strings.Contains(st.Err.Error(), tc.want) {
				t.Fatalf("failure = %v, want ErrProtocol containing %q", st.Err, tc.want)
			}
			r.ctl.Stop()
			waitHost(t, sc, "a", "live", "==", 0)
		})
	}
}

// TestAFrameOverTheReadLimitEndsTheSession: natively the library closes with 1009; a browser
// has the whole frame by then and may not send 1009, so the page closes with 1000. Either way
// the attempt fails with the same protocol error, and the page connects again.
func TestAFrameOverTheReadLimitEndsTheSession(t *testing.T) {
	sc := newScenario(t)
	big := `{"t":"error","message":"` + strings.Repeat("x", 600) + `"}`
	script(t, sc, "a", []ts.Step{{Ready: true}, {Send: big}, {Serve: true}})
	r := newRig(t, sc.URL("a"), fast(), &gateway.Options{ReadLimit: 512})
	r.ctl.Start()
	r.waitConnected()
	st := r.waitFailure()
	if !errors.Is(st.Err, gateway.ErrProtocol) || !strings.Contains(st.Err.Error(), "read limit of 512 bytes") {
		t.Fatalf("failure = %v, want ErrProtocol naming the read limit of 512 bytes", st.Err)
	}
	r.waitConnected()
}

func TestDropsAndClosesReconnect(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  ts.Step
		want error
	}{
		{"a dropped TCP connection", ts.Step{Drop: true}, gateway.ErrSessionClosed},
		{"a drained session (1001)", ts.Step{Close: wire.CloseDrained, Reason: "drained"}, gateway.ErrSessionClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := newScenario(t)
			script(t, sc, "a", []ts.Step{{Ready: true}, {Serve: true}, {SleepMs: 30}, tc.end})
			r := newRig(t, sc.URL("a"), fast(), nil)
			rec := newRecorder()
			r.gw.Subscribe("s", rec.handle)
			r.ctl.Start()
			r.waitConnected()
			st := r.waitFailure()
			if !errors.Is(st.Err, tc.want) {
				t.Fatalf("failure = %v, want %v", st.Err, tc.want)
			}
			if tc.end.Close != 0 && !strings.Contains(st.Err.Error(), "1001") {
				t.Errorf("failure = %v, want it to name the close code 1001", st.Err)
			}
			r.waitConnected()
			rec.waitFor(t, "the subscription on both sessions", func(ds []gateway.Delivery) bool { return len(ds) >= 1 })
			waitHost(t, sc, "a", "subs", "==", 2)
		})
	}
}

func TestSilentLinkIsDeclaredDead(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []ts.Step
	}{
		{"a Host that stops sending", []ts.Step{{Ready: true, HeartbeatMs: 100}, {Serve: true}, {Silent: true}}},
		{"a half-open link", []ts.Step{{Ready: true, HeartbeatMs: 100}, {Deaf: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				sc := newScenario(t)
				script(t, sc, "a", tc.steps)
				r := newRig(t, sc.URL("a"), fast(), nil)
				r.ctl.Start()
				r.waitConnected()
				connected := time.Now()
				st := r.waitFailure()
				dead := time.Since(connected)
				if !errors.Is(st.Err, gateway.ErrLinkDead) {
					t.Fatalf("failure = %v, want ErrLinkDead", st.Err)
				}
				// 2.5 × 100 ms after the last frame (the ready frame, just before connected).
				if dead < 200*time.Millisecond || dead > 250*time.Millisecond+settleBound {
					t.Errorf("declared dead %v after connecting, want about 250ms", dead)
				}
				runs := r.waitRuns(1)
				if runs[0].returned.Sub(connected) > 250*time.Millisecond+settleBound {
					t.Errorf("Run returned %v after connecting, want about 250ms", runs[0].returned.Sub(connected))
				}
				r.waitConnected()
				r.ctl.Stop()
				checkNoSessionGoroutines(t)
			})
		})
	}
}

func TestHeartbeatsKeepTheLinkAlive(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		sc := newScenario(t)
		// Heartbeats every 400 ms for 1.6 s, then silence: the watchdog (1 s) must hold off while
		// they flow and fire once they stop. (At the 100 ms floor the watchdog leaves 150 ms of
		// slack, which a loaded machine's scheduler eats: the test would then measure the machine.)
		script(t, sc, "a", []ts.Step{{Ready: true, HeartbeatMs: 400}, {Serve: true}, {SleepMs: 1600}, {Silent: true}})
		r := newRig(t, sc.URL("a"), fast(), nil)
		r.ctl.Start()
		r.waitConnected()
		connected := time.Now()
		st := r.waitFailure()
		if alive := time.Since(connected); !errors.Is(st.Err, gateway.ErrLinkDead) || alive < 1600*time.Millisecond {
			t.Fatalf("failure %v after %v, want ErrLinkDead after the 1.6s of heartbeats", st.Err, alive)
		}
	})
}

func TestOverloadHonoursRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []ts.Step
		want  time.Duration
	}{
		{"a 1013 close with retry-after", []ts.Step{{Close: wire.CloseOverloaded, Reason: "retry-after=300"}}, 300 * time.Millisecond},
		{"an error frame then a 1013 close", []ts.Step{{Send: `{"t":"error","message":"retry-after=300"}`}, {Close: wire.CloseOverloaded, Reason: "retry-after=300"}}, 300 * time.Millisecond},
		{"a retry-after above the cap", []ts.Step{{Send: `{"t":"error","message":"retry-after=999999"}`}, {Close: wire.CloseOverloaded, Reason: "retry-after=999999"}}, wire.MaxRetryAfter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				sc := newScenario(t)
				script(t, sc, "a", tc.steps)
				r := newRig(t, sc.URL("a"), fast(), nil)
				r.ctl.Start()
				st := r.waitFailure()
				var ra *controller.RetryAfterError
				if !errors.As(st.Err, &ra) || ra.After != tc.want || !errors.Is(st.Err, gateway.ErrOverloaded) {
					t.Fatalf("failure = %v, want a RetryAfterError of %v wrapping ErrOverloaded", st.Err, tc.want)
				}
				if tc.want > time.Second {
					return
				}
				if wait := time.Until(st.NextAttempt); wait < tc.want-50*time.Millisecond {
					t.Errorf("next attempt in %v, want at least %v", wait, tc.want)
				}
				r.waitConnected()
				s := stats(t, sc).Hosts["a"]
				if gap := time.Duration(s.DialMs[1]-s.DialMs[0]) * time.Millisecond; gap < tc.want {
					t.Errorf("redialled %v after the 1013, want at least %v", gap, tc.want)
				}
			})
		})
	}
}

func TestStreamSurvivesReconnectFromItsCursor(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		sc := newScenario(t)
		script(t, sc, "a", []ts.Step{{Ready: true}, {Serve: true}})
		r := newRig(t, sc.URL("a"), controller.Recovery{
			DeadlineMs: new(1000.0), InitialDelayMs: new(100.0), StableAfterMs: new(0.0),
		}, nil)
		rec := newRecorder()
		r.gw.Subscribe("s", rec.handle)
		publish(t, sc, "s", 5)
		r.ctl.Start()
		rec.waitSeq(t, 5)
		publish(t, sc, "s", 3)
		rec.waitSeq(t, 8)
		do0(t, "kick", func(ctx ctxT) error { return sc.Kick(ctx, "a", 0, "") })
		r.waitFailure()
		publish(t, sc, "s", 4) // during the outage
		r.waitConnected()
		got := rec.waitSeq(t, 12)
		if resets := checkStream(t, got); resets != 1 || len(got) != 8 {
			t.Fatalf("delivered %s, want R5 (the baseline) then 6 to 12 once each", summary(got))
		}
		subs := waitHost(t, sc, "a", "subs", "==", 2).Received
		if last := subs[len(subs)-1]; last.Epoch == "" || last.After != 8 {
			t.Fatalf("the second generation sent %+v, want a sub with the epoch and after=8", last)
		}
	})
}

func TestResetWhenTheCursorIsTooOldOrTheLogChanged(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		sc := newScenario(t)
		do0(t, "ring", func(ctx ctxT) error { return sc.Ring(ctx, 5) })
		r := newRig(t, sc.URL("a"), controller.Recovery{
			DeadlineMs: new(1000.0), InitialDelayMs: new(100.0), StableAfterMs: new(0.0),
		}, nil)
		rec := newRecorder()
		r.gw.Subscribe("s", rec.handle)
		r.ctl.Start()
		rec.waitFor(t, "the first baseline", func(ds []gateway.Delivery) bool { return len(ds) == 1 })
		publish(t, sc, "s", 3)
		rec.waitSeq(t, 3)
		do0(t, "kick", func(ctx ctxT) error { return sc.Kick(ctx, "a", 0, "") })
		r.waitFailure()
		publish(t, sc, "s", 20) // the ring keeps 19..23: the cursor 3 is too old
		r.waitConnected()
		got := rec.waitSeq(t, 23)
		if summary(got) != "R0 1 2 3 R23" {
			t.Fatalf("delivered %s, want R0 1 2 3 R23", summary(got))
		}
		epoch := do(t, "new epoch", func(ctx ctxT) (string, error) { return sc.NewEpoch(ctx, "s") })
		publish(t, sc, "s", 2)
		got = rec.waitFor(t, "the new log", func(ds []gateway.Delivery) bool {
			return len(ds) > 0 && ds[len(ds)-1].Epoch == epoch && ds[len(ds)-1].Seq == 2
		})
		if summary(got) != "R0 1 2 3 R23 R0 1 2" {
			t.Fatalf("delivered %s, want R0 1 2 3 R23 R0 1 2", summary(got))
		}
	})
}

func TestExactlyOnceAcross100ForcedReconnects(t *testing.T) {
	sc := newScenario(t)
	r := newRig(t, sc.URL("a"), controller.Recovery{
		DeadlineMs: new(2000.0), InitialDelayMs: new(1.0), MaxDelayMs: new(5.0), StableAfterMs: new(0.0),
	}, nil)
	rec := newRecorder()
	r.gw.Subscribe("s", rec.handle)
	r.ctl.Start()
	r.waitConnected()
	do(t, "pump", func(ctx ctxT) (uint64, error) { return sc.Pump(ctx, "s", time.Millisecond) })
	const reconnects = 100
	for i := range reconnects {
		before := rec.all()
		rec.waitFor(t, "an event on this generation", func(ds []gateway.Delivery) bool { return len(ds) > len(before) })
		if i%2 == 0 {
			do0(t, "kick", func(ctx ctxT) error { return sc.Kick(ctx, "a", 0, "") })
			r.waitFailure()
		} else {
			r.ctl.ReconnectNow()
		}
		r.waitConnected()
	}
	last := do(t, "stop pump", func(ctx ctxT) (uint64, error) { return sc.Pump(ctx, "s", 0) })
	got := rec.waitSeq(t, last)
	if resets := checkStream(t, got); resets != 1 {
		t.Fatalf("%d resets, want only the first one: %s", resets, summary(got))
	}
	s := waitHost(t, sc, "a", "subs", ">=", reconnects+1)
	t.Logf("%d events exactly once across %d reconnects (%d sockets)", last, reconnects, s.Accepted)
	if s.Accepted < reconnects+1 {
		t.Fatalf("%d sockets, want at least %d", s.Accepted, reconnects+1)
	}
}

func TestStormDuringAnOutageSendsOneSubPerStream(t *testing.T) {
	sc := newScenario(t)
	defaultScript(t, sc, "a", ts.Step{Reject: 503})
	r := newRig(t, sc.URL("a"), controller.Recovery{
		DeadlineMs: new(1000.0), InitialDelayMs: new(20.0), MaxDelayMs: new(50.0), StableAfterMs: new(0.0),
	}, nil)
	r.ctl.Start()
	if st := r.waitFailure(); !errors.Is(st.Err, gateway.ErrDial) {
		t.Fatalf("failure = %v, want ErrDial (the upgrade was refused with 503)", st.Err)
	}
	const calls, streams = 60000, 10
	subs := make([]*gateway.Subscription, streams)
	for i := range calls {
		k := i % streams
		if (i/streams)%2 == 0 {
			subs[k] = r.gw.Subscribe(fmt.Sprintf("s%d", k), func(gateway.Delivery) {})
		} else {
			subs[k].Unsubscribe()
		}
	}
	for k := range streams {
		subs[k] = r.gw.Subscribe(fmt.Sprintf("s%d", k), func(gateway.Delivery) {})
	}
	if p := gateway.Pending(r.gw); len(p) != streams {
		t.Fatalf("pending actions after the storm = %v, want one per stream", p)
	}
	defaultScript(t, sc, "a", readyServe...)
	r.waitConnected()
	got := waitHost(t, sc, "a", "subs", "==", streams)
	if len(got.Received) != streams {
		t.Fatalf("the Host received %d frames, want exactly %d subs: %+v", len(got.Received), streams, got.Received)
	}
}

func TestCloseEndsSubscriptions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, sc *ts.Scenario, r *rig)
	}{
		{"while connected", func(t *testing.T, sc *ts.Scenario, r *rig) {
			r.ctl.Start()
			r.waitConnected()
			waitHost(t, sc, "a", "subs", "==", 2)
		}},
		{"during an outage", func(t *testing.T, sc *ts.Scenario, r *rig) {
			defaultScript(t, sc, "a", ts.Step{Reject: 503})
			r.ctl.Start()
			r.waitFailure()
		}},
		{"during the resubscribe handshake", func(t *testing.T, sc *ts.Scenario, r *rig) {
			defaultScript(t, sc, "a", ts.Step{Ready: true}) // never answers the subs
			r.ctl.Start()
			r.waitConnected()
			waitHost(t, sc, "a", "subs", "==", 2)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := newScenario(t)
			r := newRig(t, sc.URL("a"), fast(), nil)
			subs := []*gateway.Subscription{
				r.gw.Subscribe("x", func(gateway.Delivery) {}),
				r.gw.Subscribe("y", func(gateway.Delivery) {}),
			}
			tc.setup(t, sc, r)
			cause := errors.New("page hidden")
			r.gw.Close(cause) // the controller still runs: Close alone must end everything
			checkNoSessionGoroutines(t)
			for _, s := range subs {
				waitClosed(t, s.Stream()+" ended by Close", s.Done())
				if s.Err() != cause {
					t.Errorf("%s: Err = %v, want %v", s.Stream(), s.Err(), cause)
				}
			}
			waitHost(t, sc, "a", "live", "==", 0)
			r.ctl.Stop()
		})
	}
}

func TestDialCompletingDuringCloseLeavesNoSocket(t *testing.T) {
	for i := range 6 {
		t.Run(fmt.Sprintf("release %d", i), func(t *testing.T) {
			sc := newScenario(t)
			defaultScript(t, sc, "a", ts.Step{Hold: true}, ts.Step{Ready: true}, ts.Step{Serve: true})
			r := newRig(t, sc.URL("a"), controller.Recovery{DeadlineMs: new(5000.0)}, nil)
			sub := r.gw.Subscribe("s", func(gateway.Delivery) {})
			r.ctl.Start()
			waitHost(t, sc, "a", "held", "==", 1)
			// The upgrade completes while Close runs: before, at once, or just after it.
			released := make(chan struct{})
			go func() {
				defer close(released)
				if i%3 == 2 {
					time.Sleep(time.Duration(i) * time.Millisecond)
				}
				ctx, cancel := context.WithTimeout(t.Context(), bound)
				defer cancel()
				sc.Release(ctx, "a")
			}()
			if i%3 == 0 {
				waitClosed(t, "the release", released)
			}
			r.gw.Close(nil)
			checkNoSessionGoroutines(t)
			waitClosed(t, "the release", released)
			waitClosed(t, "the subscription's end", sub.Done())
			if !errors.Is(sub.Err(), gateway.ErrClosed) {
				t.Errorf("Err = %v, want ErrClosed", sub.Err())
			}
			r.ctl.Stop()
			waitHost(t, sc, "a", "held", "==", 0)
			waitHost(t, sc, "a", "live", "==", 0)
		})
	}
}

func TestHandlerFaultsDoNotTouchTheConnection(t *testing.T) {
	sc := newScenario(t)
	r := newRig(t, sc.URL("a"), fast(), &gateway.Options{QueueLen: 32})
	r.gw.Subscribe("panics", func(gateway.Delivery) { panic("handler bug") })
	release := make(chan struct{})
	defer close(release)
	r.gw.Subscribe("blocks", func(gateway.Delivery) { <-release })
	rec := newRecorder()
	r.gw.Subscribe("ok", rec.handle)
	r.ctl.Start()
	r.waitConnected()
	waitHost(t, sc, "a", "subs", "==", 3)
	for i := range 10 {
		publish(t, sc, "panics", 10)
		publish(t, sc, "blocks", 10) // overflows its queue of 32 on the 4th round
		publish(t, sc, "ok", 10)
		rec.waitSeq(t, uint64(10*(i+1)))
	}
	if got := rec.all(); checkStream(t, got) != 1 {
		t.Fatalf("ok stream: %s", summary(got))
	}
	if s := stats(t, sc).Hosts["a"]; s.Dials != 1 {
		t.Fatalf("%d dials: a handler fault touched the connection", s.Dials)
	}
}

func TestAProbeFindsAHalfOpenLinkInTwoSecondsNotTheWatchdogs37(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		sc := newScenario(t)
		// Default heartbeat (15 s: the watchdog would wait 37.5 s); the link goes silent at once.
		script(t, sc, "a", []ts.Step{{Ready: true}, {Serve: true}, {Silent: true}})
		r := newRig(t, sc.URL("a"), fast(), &gateway.Options{ProbeTimeout: 500 * time.Millisecond})
		r.ctl.Start()
		r.waitConnected()
		probed := time.Now()
		r.gw.Probe()
		r.gw.Probe() // folded into the first
		st := r.waitFailure()
		took := time.Since(probed)
		if !errors.Is(st.Err, gateway.ErrLinkDead) || !strings.Contains(st.Err.Error(), "probe") {
			t.Fatalf("failure %v, want ErrLinkDead from the probe", st.Err)
		}
		if took < 500*time.Millisecond || took > 500*time.Millisecond+settleBound {
			t.Fatalf("declared dead %v after the probe, want about its 500ms", took)
		}
		pings := pingsReceived(t, sc, "a")
		if pings != 1 {
			t.Fatalf("the Host received %d pings, want 1 (two probes fold into one)", pings)
		}
	})
}

// A probe asked for while a session is still in its handshake is sent once the session is
// ready, not dropped: the controller reports the connection from inside the session's Ready,
// a moment before the session marks itself ready, and a page that woke in that moment (a
// fresh-clone run of the test above did) would otherwise wait for the watchdog.
func TestAProbeDuringTheHandshakeIsSentOnceReady(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		sc := newScenario(t)
		script(t, sc, "a", []ts.Step{{Hold: true}, {Ready: true}, {Serve: true}, {Silent: true}})
		r := newRig(t, sc.URL("a"), fast(), &gateway.Options{ProbeTimeout: 500 * time.Millisecond})
		r.ctl.Start()
		waitHost(t, sc, "a", "held", "==", 1)
		r.gw.Probe() // the session is dialling: its upgrade is held
		do(t, "release", func(ctx ctxT) (struct{}, error) { return struct{}{}, sc.Release(ctx, "a") })
		r.waitConnected()
		st := r.waitFailure()
		if !errors.Is(st.Err, gateway.ErrLinkDead) || !strings.Contains(st.Err.Error(), "probe") {
			t.Fatalf("failure %v, want ErrLinkDead from the probe asked for during the handshake", st.Err)
		}
		pings := pingsReceived(t, sc, "a")
		if pings != 1 {
			t.Fatalf("the Host received %d pings, want 1", pings)
		}
	})
}

func TestAProbeAfterAMissedHeartbeatWaitsHalfAsLong(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		// A page that wakes from a freeze longer than the heartbeat: a heartbeat is already
		// missing, so the probe only confirms it (the promise: connected again within 3 s of
		// the resume, of which the probe's bound is 2 s).
		sc := newScenario(t)
		script(t, sc, "a", []ts.Step{{Ready: true, HeartbeatMs: 2000}, {Serve: true}, {Silent: true}})
		r := newRig(t, sc.URL("a"), fast(), &gateway.Options{ProbeTimeout: time.Second})
		r.ctl.Start()
		r.waitConnected()
		// Silent since ready: past 2 s + the 1 s slack a heartbeat is missing; the watchdog's
		// 2.5 × 2 s is 1.7 s away when the probe goes, its halved bound 0.5 s.
		time.Sleep(3300 * time.Millisecond)
		probed := time.Now()
		r.gw.Probe()
		st := r.waitFailure()
		took := time.Since(probed)
		if !errors.Is(st.Err, gateway.ErrLinkDead) {
			t.Fatalf("failure %v, want ErrLinkDead", st.Err)
		}
		if !strings.Contains(st.Err.Error(), "probe within 500ms") || took > 500*time.Millisecond+settleBound {
			t.Fatalf("declared dead %v after the probe (%v), want half its 1s bound", took, st.Err)
		}
	})
}

func TestAProbeOnAHealthyLinkChangesNothing(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		sc := newScenario(t)
		r := newRig(t, sc.URL("a"), fast(), &gateway.Options{ProbeTimeout: 300 * time.Millisecond})
		r.ctl.Start()
		r.waitConnected()
		for range 5 {
			r.gw.Probe()
			time.Sleep(400 * time.Millisecond) // past the probe's bound: an unanswered one would have ended it
		}
		if s := r.ctl.Status(); s.State != controller.Connected || s.Attempt != 1 {
			t.Fatalf("after five probes: %v attempt %d, want still the first connection", s.State, s.Attempt)
		}
		checkStayedConnected(t, r)
	})
}

func TestAnOlderHostThatDoesNotKnowPingKeepsThePage(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		sc := newScenario(t)
		script(t, sc, "a", []ts.Step{{Ready: true}, {NoPing: true}, {Serve: true}})
		r := newRig(t, sc.URL("a"), fast(), &gateway.Options{ProbeTimeout: 300 * time.Millisecond})
		r.ctl.Start()
		r.waitConnected()
		for range 4 {
			r.gw.Probe()
			time.Sleep(400 * time.Millisecond)
		}
		if s := r.ctl.Status(); s.State != controller.Connected || s.Attempt != 1 {
			t.Fatalf("with an older Host: %v attempt %d, want still connected", s.State, s.Attempt)
		}
		pings := pingsReceived(t, sc, "a")
		if pings != 1 {
			t.Fatalf("the older Host received %d pings, want 1: its error answer proves the link, and no more are sent", pings)
		}
	})
}

// TestARefusalTheCloseFrameSaidTooIsNotRepeated: a Host whose close frame says what its error
// frame said (a 1013's retry-after) is quoted once: the indicator's title is read by a person.
func TestARefusalTheCloseFrameSaidTooIsNotRepeated(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		said := wire.RetryAfterReason(4 * time.Second)
		sc := newScenario(t)
		script(t, sc, "a", []ts.Step{{Send: `{"t":"error","message":` + strconv.Quote(said) + `}`}, {Close: wire.CloseOverloaded, Reason: said}})
		r := newRig(t, sc.URL("a"), fast(), nil)
		r.ctl.Start()
		st := r.waitFailure()
		if n := strings.Count(st.Err.Error(), said); n != 1 {
			t.Fatalf("failure %q says %q %d times, want once", st.Err, said, n)
		}
	})
}

// TestARefusalBeforeReadySaysWhatTheHostSaid: a Host that ends a socket before its ready frame
// says why in an error frame (an origin it does not allow, 1008; overloaded, 1013), whose
// sentence does not fit a close reason (123 bytes): the attempt's failure carries those words,
// so that the status a developer reads names the cause, in every build.
func TestARefusalBeforeReadySaysWhatTheHostSaid(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		said := `origin not allowed: "https://evil.example" is not this Host's and not in allowedOrigins`
		sc := newScenario(t)
		script(t, sc, "a", []ts.Step{{Send: `{"t":"error","message":` + strconv.Quote(said) + `}`}, {Close: wire.CloseOrigin, Reason: "origin not allowed"}})
		r := newRig(t, sc.URL("a"), fast(), nil)
		r.ctl.Start()
		st := r.waitFailure()
		if !strings.Contains(st.Err.Error(), said) {
			t.Fatalf("failure %q does not carry what the Host said (%q)", st.Err, said)
		}
	})
}

// Every dial of a gateway names its dialer, the same on each (the Host ends a handshake of
// the dialer when the next one comes: a browser cannot always end one it gave up on), and
// no two gateways share one.
func TestEveryDialOfAGatewayNamesItsDialer(t *testing.T) {
	dialer := func(g *gateway.Gateway) string {
		u := gateway.DialURL(g)
		_, q, _ := strings.Cut(u, "?")
		for kv := range strings.SplitSeq(q, "&") {
			if id, ok := strings.CutPrefix(kv, wire.DialerParam+"="); ok {
				if err := wire.CheckDialer(id); err != nil {
					t.Fatalf("%s: %v", u, err)
				}
				return id
			}
		}
		t.Fatalf("%s names no %s", u, wire.DialerParam)
		return ""
	}
	seen := map[string]bool{}
	for range 100 {
		g, err := gateway.New("wss://example.com/_lifeline/events?x=1", &gateway.Options{Mode: wire.ModeInPage})
		if err != nil {
			t.Fatal(err)
		}
		id := dialer(g)
		if again := dialer(g); again != id {
			t.Fatalf("one gateway dials as %q, then as %q", id, again)
		}
		if seen[id] {
			t.Fatalf("two gateways dial as %q", id)
		}
		seen[id] = true
		want := "wss://example.com/_lifeline/events?x=1&" + wire.ModeParam + "=" + wire.ModeInPage + "&" + wire.DialerParam + "=" + id
		if got := gateway.DialURL(g); got != want {
			t.Fatalf("dials %s, want %s", got, want)
		}
		g.Close(nil)
	}
}
