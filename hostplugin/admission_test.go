//go:build !js

package hostplugin_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifeline-go/lifeline/gateway/wire"
	"github.com/lifeline-go/lifeline/hostplugin"
)

// Moments of the admission tables: d is the interval of their accept rate, 2 per second.
const d = 500 * time.Millisecond

var (
	t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 = t0.Add(1 * d)
	t2 = t0.Add(2 * d)
	t3 = t0.Add(3 * d)
	t4 = t0.Add(4 * d)
	t5 = t0.Add(5 * d)
	t6 = t0.Add(6 * d)
	t7 = t0.Add(7 * d)
)

// late is how late a held page's timer fires in the tables: enough to squeeze the next page
// closer than the rate allows, as a loaded machine did (the bench counted 6 in a 100 ms window
// under a 5-per-100 ms limit).
const late = 17 * time.Millisecond

// An admission step: a page arrives (Decide), a held page's timer fires (Arrive), a held page
// leaves (Leave), or a session ends (End).
type op int

const (
	arrive op = iota
	timer
	leave
	end
)

type step struct {
	at   time.Time
	op   op
	page int // timer, leave: the step at which the page was held

	want  string        // arrive: "admit", "hold" or "refuse"
	until time.Time     // arrive, hold: the page's slot
	retry time.Duration // arrive, refuse: the retry-after
	gap   time.Duration // timer: how much longer the page must wait; 0 = admitted
	taken int           // every step: sessions admitted or held afterwards
}

// since names a moment of the tables by its distance from t0.
func since(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return "t0+" + t.Sub(t0).String()
}

// run plays the steps against a fresh admission of 2 per second with the given burst and
// session cap, checking every answer.
func run(t *testing.T, burst, maxSessions int, steps []step) {
	t.Helper()
	a := hostplugin.NewAdmission(2, burst)
	held := map[int]hostplugin.Decision{}
	for i, s := range steps {
		switch s.op {
		case arrive:
			got := a.Decide(s.at, maxSessions)
			if got.Verdict != s.want || !got.Until.Equal(s.until) || got.Retry != s.retry {
				t.Errorf("step %d: Decide(%s, %d) = %s until %s retry %v, want %s until %s retry %v",
					i, since(s.at), maxSessions, got.Verdict, since(got.Until), got.Retry, s.want, since(s.until), s.retry)
			}
			if got.Verdict == "hold" {
				held[i] = got
			}
		case timer:
			if gap := a.Arrive(held[s.page], s.at); gap != s.gap {
				t.Errorf("step %d: Arrive(page of step %d, %s) = %v, want %v", i, s.page, since(s.at), gap, s.gap)
			}
		case leave:
			a.Leave(held[s.page], s.at)
		case end:
			a.End()
		}
		if got := a.Taken(); got != s.taken {
			t.Errorf("step %d: %d sessions taken, want %d", i, got, s.taken)
		}
	}
}

func TestAdmissionHoldsPagesNearTheirSlotAndSpreadsTheRest(t *testing.T) {
	// Burst 1: one page at once, four held for their slots a rate interval apart up to the
	// 2 s hold (t4 = HoldMax is still held), the rest refused with retry-afters an interval
	// apart after it; back at their retry-after, they are admitted at once.
	if t4.Sub(t0) != hostplugin.HoldMax {
		t.Fatalf("the table assumes HoldMax = 4 intervals, it is %v", hostplugin.HoldMax)
	}
	run(t, 1, 100, []step{
		{at: t0, op: arrive, want: "admit", taken: 1},
		{at: t0, op: arrive, want: "hold", until: t1, taken: 2},
		{at: t0, op: arrive, want: "hold", until: t2, taken: 3},
		{at: t0, op: arrive, want: "hold", until: t3, taken: 4},
		{at: t0, op: arrive, want: "hold", until: t4, taken: 5},
		{at: t0, op: arrive, want: "refuse", retry: 5 * d, taken: 5},
		{at: t0, op: arrive, want: "refuse", retry: 6 * d, taken: 5},
		{at: t0, op: arrive, want: "refuse", retry: 7 * d, taken: 5},
		{at: t1, op: timer, page: 1, gap: 0, taken: 5},
		{at: t2, op: timer, page: 2, gap: 0, taken: 5},
		{at: t3, op: timer, page: 3, gap: 0, taken: 5},
		{at: t4, op: timer, page: 4, gap: 0, taken: 5},
		{at: t5, op: arrive, want: "admit", taken: 6},
		{at: t6, op: arrive, want: "admit", taken: 7},
		{at: t7, op: arrive, want: "admit", taken: 8},
	})
}

func TestAdmissionSpacesEveryPageFromTheLastActualAdmission(t *testing.T) {
	t.Run("a held page waits out a late one", func(t *testing.T) {
		run(t, 1, 100, []step{
			{at: t0, op: arrive, want: "admit", taken: 1},
			{at: t0, op: arrive, want: "hold", until: t1, taken: 2},
			{at: t0, op: arrive, want: "hold", until: t2, taken: 3},
			{at: t1.Add(late), op: timer, page: 1, gap: 0, taken: 3},
			{at: t2, op: timer, page: 2, gap: late, taken: 3},
			{at: t2.Add(late), op: timer, page: 2, gap: 0, taken: 3},
		})
	})
	t.Run("a page the bucket would admit at once is held after a late one", func(t *testing.T) {
		run(t, 1, 100, []step{
			{at: t0, op: arrive, want: "admit", taken: 1},
			{at: t0, op: arrive, want: "hold", until: t1, taken: 2},
			{at: t1.Add(late), op: timer, page: 1, gap: 0, taken: 2},
			{at: t2, op: arrive, want: "hold", until: t2.Add(late), taken: 3},
			{at: t2.Add(late), op: timer, page: 3, gap: 0, taken: 3},
			{at: t4, op: arrive, want: "admit", taken: 4},
		})
	})
	t.Run("above burst 1 the bucket alone decides", func(t *testing.T) {
		// Burst 3 promises 3 at once, not one per interval: no spacing.
		run(t, 3, 100, []step{
			{at: t0, op: arrive, want: "admit", taken: 1},
			{at: t0, op: arrive, want: "admit", taken: 2},
			{at: t0, op: arrive, want: "admit", taken: 3},
			{at: t0, op: arrive, want: "hold", until: t1, taken: 4},
			{at: t1.Add(late), op: timer, page: 3, gap: 0, taken: 4},
			{at: t2, op: arrive, want: "admit", taken: 5},
		})
	})
}

func TestAdmissionGivesBackTheSlotOfAPageThatLeaves(t *testing.T) {
	// Session cap 2: the held page counts against it while it waits.
	run(t, 1, 2, []step{
		{at: t0, op: arrive, want: "admit", taken: 1},
		{at: t0, op: arrive, want: "hold", until: t1, taken: 2},
		{at: t0, op: arrive, want: "refuse", retry: hostplugin.CapRetryFloor, taken: 2},
		{at: t0.Add(d / 5), op: leave, page: 1, taken: 1},
		{at: t0.Add(d / 5), op: arrive, want: "hold", until: t1, taken: 2},
	})
}

func TestSessionCapRefusalsAreSpreadAtTheRateAboveASecond(t *testing.T) {
	run(t, 1, 1, []step{
		{at: t0, op: arrive, want: "admit", taken: 1},
		{at: t0, op: arrive, want: "refuse", retry: time.Second, taken: 1},                  // next slot t0
		{at: t0, op: arrive, want: "refuse", retry: time.Second, taken: 1},                  // t1, floored
		{at: t0, op: arrive, want: "refuse", retry: time.Second, taken: 1},                  // t2
		{at: t0, op: arrive, want: "refuse", retry: 3 * d, taken: 1},                        // t3
		{at: t0, op: arrive, want: "refuse", retry: 4 * d, taken: 1},                        // t4
		{at: t1, op: end, taken: 0},                                                         // the session ends
		{at: t1, op: arrive, want: "admit", taken: 1},                                       // its slot is free
		{at: t1, op: arrive, want: "refuse", retry: 4 * d, taken: 1},                        // after t4: t5
		{at: t1.Add(time.Minute), op: arrive, want: "refuse", retry: time.Second, taken: 1}, // the tail has passed
	})
}

func TestRefusalsBeyondTheLongestRetryAfterGetARandomOneInItsUpperHalf(t *testing.T) {
	// 1 per second: the page at t0 is admitted, the next two held (1 s, 2 s), then each is
	// refused a second after the one before, until the slots pass wire.MaxRetryAfter.
	a := hostplugin.NewAdmission(1, 1)
	for i := range 3 {
		if got := a.Decide(t0, 1000); got.Verdict == "refuse" {
			t.Fatalf("page %d: Decide = %+v, want admitted or held", i, got)
		}
	}
	last := wire.MaxRetryAfter / time.Second
	for s := time.Duration(3); s <= last; s++ {
		if got := a.Decide(t0, 1000); got.Verdict != "refuse" || got.Retry != s*time.Second {
			t.Fatalf("Decide = %s retry %v, want refuse retry %v", got.Verdict, got.Retry, s*time.Second)
		}
	}
	half := wire.MaxRetryAfter / 2
	seen := map[time.Duration]bool{}
	for range 100 {
		got := a.Decide(t0, 1000)
		if got.Verdict != "refuse" || got.Retry < half || got.Retry >= wire.MaxRetryAfter {
			t.Fatalf("Decide = %s retry %v, want refuse retry in [%v, %v)", got.Verdict, got.Retry, half, wire.MaxRetryAfter)
		}
		seen[got.Retry] = true
	}
	if len(seen) < 50 {
		t.Errorf("100 full-backlog retry-afters took %d values: not spread", len(seen))
	}
	// Those pages took no slot: the backlog still ends at MaxRetryAfter, so a page the
	// session cap (3, the pages taken) refuses 1.5 s before that end is told to come back
	// one interval after that end: 2.5 s.
	at := t0.Add(wire.MaxRetryAfter - 1500*time.Millisecond)
	if got := a.Decide(at, 3); got.Verdict != "refuse" || got.Retry != 2500*time.Millisecond {
		t.Errorf("after the backlog: Decide(%s, 3) = %s retry %v, want refuse retry 2.5s", since(at), got.Verdict, got.Retry)
	}
}

// The hold path on real timers, in a synctest bubble: exact virtual time.

func TestHeldPagesAreAdmittedAtTheirSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := hostplugin.NewAdmission(2, 1)
		start := time.Now()
		type outcome struct {
			at    time.Duration // admitted: when
			retry time.Duration // refused: the retry-after
		}
		results := make(chan outcome, 8)
		for range 8 {
			go func() {
				retry, ok := a.Admit(t.Context(), time.Now(), 100)
				if ok {
					results <- outcome{at: time.Since(start)}
				} else {
					results <- outcome{retry: retry}
				}
			}()
		}
		var admitted, refused []time.Duration
		for range 8 {
			o := <-results
			if o.retry == 0 {
				admitted = append(admitted, o.at)
			} else {
				refused = append(refused, o.retry)
			}
		}
		slices.Sort(admitted)
		slices.Sort(refused)
		want := []time.Duration{0, d, 2 * d, 3 * d, 4 * d}
		if !slices.Equal(admitted, want) {
			t.Errorf("admitted at %v, want %v: one at once, four held for their slots", admitted, want)
		}
		if want := []time.Duration{5 * d, 6 * d, 7 * d}; !slices.Equal(refused, want) {
			t.Errorf("refused with retry-afters %v, want %v: beyond HoldMax, a slot apart", refused, want)
		}
	})
}

func TestAHeldPageThatLeavesGivesBackItsSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := hostplugin.NewAdmission(2, 1)
		start := time.Now()
		if _, ok := a.Admit(t.Context(), start, 2); !ok {
			t.Fatal("the first page was not admitted at once")
		}
		ctx, cancel := context.WithCancel(t.Context())
		left := make(chan time.Duration)
		go func() {
			if _, ok := a.Admit(ctx, time.Now(), 2); ok {
				t.Error("a page that left while held was admitted")
			}
			left <- time.Since(start)
		}()
		time.Sleep(d / 5)
		synctest.Wait()
		if got := a.Taken(); got != 2 {
			t.Fatalf("%d sessions taken while one page is held, want 2", got)
		}
		cancel()
		if at := <-left; at != d/5 {
			t.Errorf("the held page returned at %v, want %v, when it left", at, d/5)
		}
		if got := a.Taken(); got != 1 {
			t.Errorf("%d sessions taken after the held page left, want 1", got)
		}
		// The next page gets the slot back: held until it, not refused by the cap.
		if _, ok := a.Admit(t.Context(), time.Now(), 2); !ok || time.Since(start) != d {
			t.Errorf("the next page: admitted %v at %v, want admitted at %v", ok, time.Since(start), d)
		}
	})
}

func TestAHeldPageWaitsOutTheSpacingOfALateOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := hostplugin.NewAdmission(2, 1)
		start := time.Now()
		if _, ok := a.Admit(t.Context(), start, 100); !ok {
			t.Fatal("the first page was not admitted at once")
		}
		// The test plays the second page, so that its timer can fire late.
		first := a.Decide(start, 100)
		admitted := make(chan time.Duration)
		go func() {
			_, ok := a.Admit(t.Context(), time.Now(), 100) // held until start+2d
			if !ok {
				t.Error("the third page was refused")
			}
			admitted <- time.Since(start)
		}()
		time.Sleep(d + late)
		if gap := a.Arrive(first, time.Now()); gap != 0 {
			t.Fatalf("the late page must still wait %v", gap)
		}
		if at := <-admitted; at != 2*d+late {
			t.Errorf("the third page was admitted at %v, want %v: a full interval after the late one", at, 2*d+late)
		}
	})
}
