//go:build !js

package main

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.UnixMilli(1_800_000_000_000)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func TestPeakInCountsTheWorstSlidingWindow(t *testing.T) {
	for _, tc := range []struct {
		name string
		ms   []int
		want int
	}{
		{"no times make no peak", nil, 0},
		{"times 100 ms apart never share a window", []int{0, 100, 200}, 1},
		{"a window is half-open, so 0 and 99 share one", []int{0, 99, 100}, 2},
		{"a cluster anywhere is found", []int{0, 500, 510, 520, 530, 700}, 4},
		{"unsorted input is sorted first", []int{530, 0, 510, 500, 520}, 4},
	} {
		var ts []time.Time
		for _, m := range tc.ms {
			ts = append(ts, at(m))
		}
		if got := peakIn(ts, 100*time.Millisecond); got != tc.want {
			t.Errorf("%s: peakIn(%v) = %d, want %d", tc.name, tc.ms, got, tc.want)
		}
	}
}

func TestPctIsNearestRank(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		p    float64
		want float64
	}{{50, 5}, {99, 10}, {10, 1}, {100, 10}} {
		if got := pct(xs, tc.p); got != tc.want {
			t.Errorf("pct(1..10, %v) = %v, want %v", tc.p, got, tc.want)
		}
	}
}

func feed(f *fleet, lines ...string) {
	for _, l := range lines {
		f.line([]byte(l))
	}
}

func ev(ms, id int, event string) string {
	return fmt.Sprintf(`{"t":%d.250,"id":%d,"event":%q}`, t0.UnixMilli()+int64(ms), id, event)
}

func TestDownTimeAddsEveryGapWithinTheSpan(t *testing.T) {
	f := newFleet(3)
	feed(f,
		ev(0, 0, "connected"), ev(0, 1, "connected"), ev(0, 2, "connected"),
		// client 0: down 1000..1500 and 3000..3200
		ev(1000, 0, "disconnected"), ev(1500, 0, "connected"), ev(3000, 0, "disconnected"), ev(3200, 0, "connected"),
		// client 1: never down
		// client 2: down from 4000 to the end of the span (5000)
		ev(4000, 2, "disconnected"),
		"not json", `{"t":1,"event":"attempt"}`,
	)
	got := f.downTime(at(500), at(5000))
	want := []time.Duration{700 * time.Millisecond, 0, 1000*time.Millisecond - 250*time.Microsecond}
	for i := range want {
		if d := got[i] - want[i]; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("client %d down %v, want %v", i, got[i], want[i])
		}
	}
	if f.connectedNow() != 2 {
		t.Errorf("connectedNow = %d, want 2", f.connectedNow())
	}
	if f.bad != 1 {
		t.Errorf("bad lines = %d, want 1 (the JSON line without an id; other lines are ignored)", f.bad)
	}
}

func TestConnectedSinceAndCountIn(t *testing.T) {
	f := newFleet(2)
	feed(f, ev(0, 0, "attempt"), ev(10, 0, "connected"), ev(100, 0, "attempt"), ev(200, 0, "attempt"),
		ev(300, 0, "connected"), ev(150, 1, "attempt"))
	if c := f.countIn(evAttempt, at(50), at(250)); c[0] != 2 || c[1] != 1 {
		t.Errorf("attempts in [50, 250) = %v, want [2 1]", c)
	}
	first := f.connectedSince(at(50))
	if !first[0].Equal(at(300).Add(250*time.Microsecond)) || !first[1].IsZero() {
		t.Errorf("connectedSince(50) = %v, want client 0 at 300.25 ms and client 1 never", first)
	}
}
