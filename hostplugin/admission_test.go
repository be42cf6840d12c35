//go:build !js

package hostplugin_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
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

// The per-address rate, which comes before the session cap and the accept rate.

// Moments of the per-address tables: pd is the interval of their rate, 10 per second.
const pd = 100 * time.Millisecond

var (
	p1 = t0.Add(1 * pd)
	p2 = t0.Add(2 * pd)
	p9 = t0.Add(9 * pd)
)

const looper, other = "203.0.113.7", "198.51.100.9"

type socket struct {
	at   time.Time
	addr string
	ok   bool
	wait time.Duration // refused: how long the address must wait
}

func runPerIP(t *testing.T, p *hostplugin.PerIP, sockets []socket) {
	t.Helper()
	for i, s := range sockets {
		wait, ok := p.Allow(s.addr, s.at)
		if ok != s.ok || wait != s.wait {
			t.Errorf("step %d: Allow(%s, %s) = %v, %v; want %v, %v", i, s.addr, since(s.at), wait, ok, s.wait, s.ok)
		}
	}
}

func TestPerIPIsATokenBucketPerAddress(t *testing.T) {
	// 10 per second, burst 3.
	runPerIP(t, hostplugin.NewPerIP(10, 3), []socket{
		{at: t0, addr: looper, ok: true},
		{at: t0, addr: looper, ok: true},
		{at: t0, addr: looper, ok: true},
		{at: t0, addr: looper, wait: pd}, // over the burst
		{at: t0, addr: other, ok: true},  // another address has its own bucket
		{at: t0, addr: looper, wait: pd}, // a refusal took no token: still one interval
		{at: p1, addr: looper, ok: true}, // one token back
		{at: p1, addr: looper, wait: pd}, // and spent
		{at: p1.Add(pd / 2), addr: looper, wait: pd / 2},
		{at: p2, addr: looper, ok: true},
		{at: p9, addr: looper, ok: true}, // the bucket holds no more than its burst
		{at: p9, addr: looper, ok: true},
		{at: p9, addr: looper, ok: true},
		{at: p9, addr: looper, wait: pd},
		{at: p9, addr: "2001:db8::7", ok: true}, // IPv6 alike
		{at: p9, addr: "2001:db8::7", ok: true},
		{at: p9, addr: "2001:db8::7", ok: true},
		{at: p9, addr: "2001:db8::7", wait: pd},
	})
}

func TestPerIPForgetsAnAddressIdleForAMinute(t *testing.T) {
	p := hostplugin.NewPerIP(1, 1)
	runPerIP(t, p, []socket{
		{at: t0, addr: looper, ok: true},
		{at: t0, addr: other, ok: true},
		{at: t0.Add(30 * time.Second), addr: other, ok: true},
	})
	if n := p.Tracked(); n != 2 {
		t.Fatalf("%d addresses tracked, want 2", n)
	}
	// The sweep at t0+61s drops looper (idle 61 s), keeps other (31 s): looper's bucket was
	// full again long before, so forgetting it changes no answer.
	runPerIP(t, p, []socket{{at: t0.Add(61 * time.Second), addr: "192.0.2.1", ok: true}})
	if n := p.Tracked(); n != 2 {
		t.Errorf("%d addresses tracked after the sweep, want 2 (other and 192.0.2.1)", n)
	}
	runPerIP(t, p, []socket{
		{at: t0.Add(61 * time.Second), addr: looper, ok: true},
		{at: t0.Add(61 * time.Second), addr: looper, wait: time.Second},
	})
}

// upgradeFrom sends an upgrade request from remote, with X-Forwarded-For lines xff, straight
// to the Host's handler. The limiter answers before the upgrade, so no socket is needed; a
// request it lets through fails later (400: no lifeline.v1 offered).
func upgradeFrom(f *fixture, remote string, xff ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, f.H.Config().Endpoint(), nil)
	r.RemoteAddr = remote
	r.Header.Set("Connection", "Upgrade")
	r.Header.Set("Upgrade", "websocket")
	for _, v := range xff {
		r.Header.Add("X-Forwarded-For", v)
	}
	w := httptest.NewRecorder()
	endpointOnly(f.H).ServeHTTP(w, r)
	return w
}

func TestPerAddressRateRefusesASocketLoop(t *testing.T) {
	f := newFixture(t, `{"perIPRate":1,"perIPBurst":3}`, true)
	for i := range 3 {
		if w := upgradeFrom(f, looper+":40000"); w.Code == http.StatusTooManyRequests {
			t.Fatalf("socket %d within the burst refused with 429", i+1)
		}
	}
	w := upgradeFrom(f, looper+":40000")
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("socket 4 from one address: status %d, want 429", w.Code)
	}
	if ra := w.Header().Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After = %q, want 1 (second)", ra)
	}
	// The exact wait is in the body too: a browser page reads it through the refusal query
	// (the header of a cross-origin answer is kept from it).
	if r, err := wire.DecodeRefusal(w.Body.Bytes()); err != nil || r.Error != wire.RefusalRate || r.RetryAfterMs <= 0 || r.RetryAfterMs > 1000 {
		t.Errorf("429 body %q = %+v, %v; want a rate refusal with the wait to the next token (ms)", w.Body.String(), r, err)
	}
	if w := upgradeFrom(f, other+":40000"); w.Code == http.StatusTooManyRequests {
		t.Errorf("another address was refused: one looping client must not limit the others")
	}
	waitFor(t, "the refusal to be logged", func() bool { return f.Logs.Has("per-address rate", "addr="+looper) })
}

// TestPerAddressRateBehindTrustedProxies is the wiring of the trusted proxies (the rule's
// cases are in clientaddr_test.go): with burst 1, a second socket from the same client is
// refused and one from another client is not.
func TestPerAddressRateBehindTrustedProxies(t *testing.T) {
	tests := []struct {
		name    string
		config  string
		remote  string
		xff     [2]string // the X-Forwarded-For of the first socket, and of the second
		refused bool      // the second socket
	}{
		{name: "a local proxy's clients are limited one by one",
			remote: "127.0.0.1:5000", xff: [2]string{looper, looper}, refused: true},
		{name: "a local proxy's other client is not limited by the first",
			remote: "127.0.0.1:5000", xff: [2]string{looper, other}},
		{name: "a local proxy that names no client is not limited (one loopback address for many clients)",
			remote: "[::1]:5000"},
		{name: "an untrusted peer cannot pick its address with X-Forwarded-For",
			remote: looper + ":5000", xff: [2]string{"192.0.2.1", "192.0.2.2"}, refused: true},
		{name: "a configured proxy's clients are limited one by one",
			config: `"trustedProxies":["10.0.0.0/8"],`, remote: "10.1.2.3:5000", xff: [2]string{looper, looper}, refused: true},
		{name: "trusting no proxy limits loopback like any address",
			config: `"trustedProxies":[],`, remote: "127.0.0.1:5000", xff: [2]string{looper, other}, refused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, `{`+tt.config+`"perIPRate":1,"perIPBurst":1}`, true)
			var codes [2]int
			for i, xff := range tt.xff {
				var lines []string
				if xff != "" {
					lines = append(lines, xff)
				}
				codes[i] = upgradeFrom(f, tt.remote, lines...).Code
			}
			if codes[0] == http.StatusTooManyRequests {
				t.Fatalf("the first socket was refused with 429")
			}
			if refused := codes[1] == http.StatusTooManyRequests; refused != tt.refused {
				t.Errorf("second socket: status %d, want refused %v", codes[1], tt.refused)
			}
		})
	}
}

func TestSessionCapClosesWith1013AndARetryAfter(t *testing.T) {
	f := newFixture(t, `{"maxSessions":1}`, true)
	first := f.Dial(t)
	first.Expect(wire.TypeReady)
	second := f.Dial(t)
	// The retry-after comes first as a frame, which every page reads (refuseOverloaded).
	frame := second.Expect(wire.TypeError)
	code, reason := second.Closed()
	d, ok := wire.ParseRetryAfter(reason)
	if code != wire.CloseOverloaded || !ok || d < time.Second {
		t.Errorf("over the cap: close %d %q, want %d with retry-after >= 1s", code, reason, wire.CloseOverloaded)
	}
	if frame.Message != reason {
		t.Errorf("error frame %q, want the close reason %q", frame.Message, reason)
	}
	waitFor(t, "the refusal to be logged", func() bool { return f.Logs.Has("session cap") })
	// A slot frees when a session ends.
	_ = first.Conn.Close(websocket.StatusNormalClosure, "")
	waitFor(t, "the slot to free", func() bool { return f.H.Sessions() == 0 })
	f.Dial(t).Expect(wire.TypeReady)
}

// TestAcceptRateHoldsAnUpgradeOrRefusesItWith1013 is the wiring of the accept rate (its
// moments are in admission_test.go): a held upgrade becomes a ready session, a page beyond
// the hold gets the error frame and 1013 with its retry-after, and a held page that leaves
// frees its socket.
func TestAcceptRateHoldsAnUpgradeOrRefusesItWith1013(t *testing.T) {
	// 1 per second, burst 1: the first page at once, the next two held (~1 s, ~2 s), the
	// fourth refused (~3 s).
	f := newFixture(t, `{"acceptRate":1,"acceptBurst":1}`, true)
	f.Dial(t).Expect(wire.TypeReady)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type outcome struct {
		ready bool
		retry time.Duration
		err   error
	}
	results := make(chan outcome, 3)
	for range 3 {
		go func() {
			conn, _, err := websocket.Dial(ctx, f.WSURL(), &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
			if err != nil {
				results <- outcome{err: err} // the held page the test sends away
				return
			}
			t.Cleanup(func() { _ = conn.CloseNow() }) // a ready session stays open
			_, b, err := conn.Read(ctx)
			if err != nil {
				results <- outcome{err: err}
				return
			}
			fr, _ := wire.DecodeHost(b)
			if fr.T == wire.TypeReady {
				results <- outcome{ready: true}
				return
			}
			_, _, err = conn.Read(ctx)
			code, reason := websocket.CloseStatus(err), ""
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				reason = ce.Reason
			}
			d, ok := wire.ParseRetryAfter(reason)
			if fr.T != wire.TypeError || fr.Message != reason || code != wire.CloseOverloaded || !ok {
				t.Errorf("refused page: frame %+v then close %d %q, want an error frame and 1013 with the same retry-after", fr, code, reason)
			}
			results <- outcome{retry: d}
		}()
	}
	next := func() outcome {
		t.Helper()
		select {
		case o := <-results:
			return o
		case <-time.After(bound):
			t.Fatalf("no page answered within %v", bound)
			return outcome{}
		}
	}
	// The refusal comes at once, the first held page's ready about a second later.
	var refused, ready bool
	for !refused || !ready {
		switch o := next(); {
		case o.err != nil:
			t.Fatalf("a page failed before the held one was sent away: %v", o.err)
		case o.ready:
			ready = true
		default:
			refused = true
			if o.retry <= hostplugin.HoldMax {
				t.Errorf("a page refused with retry-after %v: within HoldMax (%v) it should have been held", o.retry, hostplugin.HoldMax)
			}
		}
	}
	// The refused page's handler returns once its close handshake ends.
	waitFor(t, "two sessions and one held upgrade", func() bool { return f.H.Stats().Open == 3 })
	cancel() // the page still held leaves
	if o := next(); o.err == nil {
		t.Errorf("the page held for ~2 s answered %+v before it left", o)
	}
	waitFor(t, "the held upgrade to be let go", func() bool { return f.H.Stats().Open == 2 })
	waitFor(t, "the refusal to be logged", func() bool { return f.Logs.Has("accept rate") })
}
