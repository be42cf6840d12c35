//go:build !js

package main

import (
	"math"
	"slices"
	"testing"
	"time"
)

// The resume of every sample below is at 100 000 ms.
const resumed = 100_000

func ptr(x float64) *float64 { return &x }

func TestAnalyseFreezeReadsWhatEachPageDidAfterTheResume(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    freezeSample
		want freezeOutcome
	}{
		{
			name: "in-page Lifeline: the probe on resume finds the dead link, then a new attempt connects",
			s: freezeSample{Kind: kLifeline, ResumedAt: resumed, Before: freezeBefore{State: "connected", Attempt: 1},
				Events: []freezeEvent{
					{T: 40_000, At: 40_000, State: "connected", Attempt: 1}, // before the resume: not read
					{T: 102_010, At: 102_010, State: "reconnecting", Attempt: 1, Error: "gateway: link silent for 2.5 × heartbeat: no answer to a liveness probe within 2s"},
					{T: 102_300, At: 102_300, State: "connecting", Attempt: 2},
					{T: 102_450, At: 102_450, State: "connected", Attempt: 2},
				}},
			want: freezeOutcome{Connected: true, ToConnected: 2450, Noticed: true, ToNoticed: 2010, Cause: "probe unanswered", HubEarly: math.NaN(), PingDue: math.NaN()},
		},
		{
			name: "shared Lifeline: the worker's watchdog fired during the freeze, the page hears it all on resuming",
			s: freezeSample{Kind: kLifeline, ResumedAt: resumed, Before: freezeBefore{State: "connected", Attempt: 1},
				Events: []freezeEvent{
					{T: 100_005, At: 77_500, State: "reconnecting", Attempt: 1, Error: "gateway: link silent for 2.5 × heartbeat: no frame for 37.5s (heartbeat 15s)"},
					{T: 100_006, At: 78_000, State: "connecting", Attempt: 2},
					{T: 100_007, At: 78_100, State: "connected", Attempt: 2},
				}},
			want: freezeOutcome{Connected: true, ToConnected: 7, Noticed: true, ToNoticed: 5, Cause: "watchdog", HubEarly: 22_500, PingDue: math.NaN()},
		},
		{
			name: "Lifeline that never left connected believed the dead link; a connected on the old attempt is not a reconnect",
			s: freezeSample{Kind: kLifeline, ResumedAt: resumed, Before: freezeBefore{State: "connected", Attempt: 3},
				Events: []freezeEvent{{T: 100_500, State: "connected", Attempt: 3}}},
			want: freezeOutcome{ToConnected: math.NaN(), ToNoticed: math.NaN(), HubEarly: math.NaN(), PingDue: math.NaN()},
		},
		{
			name: "socket.io: its ping timer runs out after the resume, then its reconnection delay; events past the bound are not read",
			s: freezeSample{Kind: kSIO, ResumedAt: resumed, Before: freezeBefore{ConnectedAt: 50_000, LastPing: ptr(75_000)},
				Events: []freezeEvent{
					{T: 120_001, Ev: "disconnect", Reason: "ping timeout"},
					{T: 121_000, Ev: "reconnect_attempt"},
					{T: 141_000, Ev: "reconnect_error", Reason: "timeout"},
					{T: 143_000, Ev: "reconnect_attempt"},
					{T: 143_100, Ev: "connect"},
					{T: 230_000, Ev: "disconnect", Reason: "transport close"},
				}},
			want: freezeOutcome{Connected: true, ToConnected: 43_100, Noticed: true, ToNoticed: 20_001, Cause: "ping timeout", Failed: []string{"timeout"}, HubEarly: math.NaN(), PingDue: 20_000},
		},
		{
			name: "socket.io with no connect after its disconnect within the bound; no ping yet, so its timer runs from the connect, with the engine's own timers where it has them",
			s: freezeSample{Kind: kSIO, ResumedAt: resumed, Before: freezeBefore{ConnectedAt: 54_000, PingInterval: 20_000, PingTimeout: 21_000},
				Events: []freezeEvent{{T: 100_020, Ev: "disconnect", Reason: "ping timeout"}, {T: 221_000, Ev: "connect"}}},
			want: freezeOutcome{ToConnected: math.NaN(), Noticed: true, ToNoticed: 20, Cause: "ping timeout", HubEarly: math.NaN(), PingDue: -5000},
		},
	} {
		got := analyseFreeze(tc.s, 2*time.Minute)
		if !sameOutcome(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// sameOutcome is == with NaN equal to NaN.
func sameOutcome(a, b freezeOutcome) bool {
	eq := func(x, y float64) bool { return x == y || (math.IsNaN(x) && math.IsNaN(y)) }
	return a.Connected == b.Connected && a.Noticed == b.Noticed && a.Cause == b.Cause && slices.Equal(a.Failed, b.Failed) &&
		eq(a.ToConnected, b.ToConnected) && eq(a.ToNoticed, b.ToNoticed) && eq(a.HubEarly, b.HubEarly) && eq(a.PingDue, b.PingDue)
}

func TestFreezeRowsGroupByPageAndFreezeAndCountWhatNeverHappened(t *testing.T) {
	lifeline := func(freeze, noticed, connected float64) freezeSample {
		return freezeSample{Name: "Lifeline in-page", Kind: kLifeline, FreezeMs: freeze, ResumedAt: resumed, Before: freezeBefore{Attempt: 1},
			Events: []freezeEvent{
				{T: resumed + noticed, State: "reconnecting", Attempt: 1, Error: "no answer to a liveness probe within 2s"},
				{T: resumed + connected, State: "connected", Attempt: 2},
			}}
	}
	believer := freezeSample{Name: "socket.io-client", Kind: kSIO, FreezeMs: 20_000, ResumedAt: resumed,
		Before: freezeBefore{ConnectedAt: 60_000, LastPing: ptr(79_000)}}
	late := freezeSample{Name: "socket.io-client", Kind: kSIO, FreezeMs: 60_000, ResumedAt: resumed, Before: freezeBefore{ConnectedAt: 39_000},
		Events: []freezeEvent{{T: 100_010, Ev: "disconnect", Reason: "ping timeout"}, {T: 121_000, Ev: "reconnect_error", Reason: "timeout"}, {T: 122_500, Ev: "connect"}}}
	got := freezeRows([]freezeSample{
		lifeline(60_000, 2000, 2400), believer, late, lifeline(60_000, 2100, 3100), lifeline(20_000, 2000, 2500), lifeline(60_000, 2050, 2600),
	}, 2*time.Minute)
	want := [][]string{
		{"Lifeline in-page", "60.00 s", "3", "2.60 s", "3.10 s", "3/3", "2.05 s", "2.10 s", "probe unanswered ×3"},
		{"socket.io-client", "20.00 s", "1", "– (1 never)", "–", "0/1", "–", "–", "believed connected for the whole 120 s ×1; its ping timer was due 24.00 s to 24.00 s after the resume"},
		{"socket.io-client", "60.00 s", "1", "22.50 s", "22.50 s", "1/1", "0.01 s", "0.01 s", "ping timeout ×1; then reconnect attempts failed (timeout ×1; at most 1 in a sample); its ping timer was overdue at the resume (by 16.00 s to 16.00 s)"},
		{"Lifeline in-page", "20.00 s", "1", "2.50 s", "2.50 s", "1/1", "2.00 s", "2.00 s", "probe unanswered ×1"},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("freezeRows:\n got %q\nwant %q", got, want)
	}
}
