package gateway_test

// Presence as the page keeps it, without a socket: snapshots, batches, the cursor across a
// reconnect, gaps, holds, refusals, and frames after access ended. These run everywhere, also
// under js/wasm; presence_notjs_test.go runs the page against the real Host.

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifeline-go/lifeline/gateway"
	ts "github.com/lifeline-go/lifeline/internal/test/testserver"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// presenceRec records what a presence callback is told.
type presenceRec struct {
	mu      sync.Mutex
	got     []gateway.Presence
	changed chan struct{}
}

func newPresenceRec() *presenceRec { return &presenceRec{changed: make(chan struct{})} }

func (r *presenceRec) fn(p gateway.Presence) {
	r.mu.Lock()
	r.got = append(r.got, p)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

func (r *presenceRec) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// wait waits until the callback has been called n times, and returns the nth call.
func (r *presenceRec) wait(t *testing.T, n int) gateway.Presence {
	t.Helper()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		got, ch := r.got, r.changed
		r.mu.Unlock()
		if len(got) >= n {
			return got[n-1]
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("waiting for presence report %d: not within %v; got %d: %v", n, bound, len(got), got)
		}
	}
}

// show is a report in short: members id×count (meta), total/limit, +joined ~updated -left.
func show(p gateway.Presence) string {
	var b strings.Builder
	if p.Reason != "" {
		return "refused: " + p.Reason
	}
	for i, m := range p.Members {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s×%d", m.ID, m.Count)
		if m.Meta != nil {
			b.WriteString(string(m.Meta))
		}
	}
	fmt.Fprintf(&b, " | %d", p.Total)
	if p.Limit != 0 {
		fmt.Fprintf(&b, "/%d beyond %d", p.Limit, p.Beyond())
	}
	for _, m := range p.Joined {
		b.WriteString(" +" + m.ID)
	}
	for _, m := range p.Updated {
		b.WriteString(" ~" + m.ID)
	}
	for _, id := range p.Left {
		b.WriteString(" -" + id)
	}
	return b.String()
}

func wantShow(t *testing.T, p gateway.Presence, want string) {
	t.Helper()
	if got := show(p); got != want {
		t.Fatalf("presence = %q, want %q", got, want)
	}
}

// subFrames shows sub frames with their presence asks: "sub s +P@3" (cursor), "sub s +P".
func subFrames(fs []wire.PageFrame) string {
	var parts []string
	for _, f := range fs {
		s := f.T + " " + f.Stream
		if f.Epoch != "" {
			s += fmt.Sprintf(" %s@%d", f.Epoch, f.After)
		}
		if f.Presence {
			s += " +P"
			if f.PresenceEpoch != "" {
				s += fmt.Sprintf("%s@%d", f.PresenceEpoch, f.PresenceAfter)
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func wantSubs(t *testing.T, got []wire.PageFrame, want string) {
	t.Helper()
	if g := subFrames(got); g != want {
		t.Fatalf("frames sent = [%s], want [%s]", g, want)
	}
}

func pframe(stream, epoch string, from, seq uint64, extra string) string {
	if from == 0 && strings.Contains(extra, `"snapshot":true`) {
		return fmt.Sprintf(`{"t":"presence","stream":%q,"epoch":%q,"seq":%d%s}`, stream, epoch, seq, extra)
	}
	return fmt.Sprintf(`{"t":"presence","stream":%q,"epoch":%q,"seq":%d,"from":%d%s}`, stream, epoch, seq, from, extra)
}

func TestPresenceSnapshotThenBatches(t *testing.T) {
	gw := newGateway(t, nil)
	rec := newPresenceRec()
	gw.SubscribeWith("room", newRecorder().handle, gateway.SubscribeOptions{Presence: rec.fn})
	s := gateway.NewTestSession(t, gw).WithPresence()
	wantSubs(t, s.Reconcile(), "sub room +P")

	// A snapshot in two frames of one batch: nothing is told before its last frame.
	feed(t, s, pframe("room", "P", 0, 3, `,"snapshot":true,"more":true,"total":2,"members":[{"id":"alice","count":2,"meta":{"n":"A"}}]`))
	time.Sleep(10 * time.Millisecond)
	if n := rec.count(); n != 0 {
		t.Fatalf("told %d times of half a batch, want 0", n)
	}
	feed(t, s, pframe("room", "P", 0, 3, `,"snapshot":true,"total":2,"members":[{"id":"bob","count":1}]`))
	wantShow(t, rec.wait(t, 1), `alice×2{"n":"A"} bob×1 | 2 +alice +bob`)

	// A batch: carol joins, alice has one session less, bob leaves.
	feed(t, s, pframe("room", "P", 3, 4, `,"total":2,"members":[{"id":"alice","count":1,"meta":{"n":"A"}},{"id":"carol","count":1}],"left":["bob"]`))
	wantShow(t, rec.wait(t, 2), `alice×1{"n":"A"} carol×1 | 2 +carol ~alice -bob`)

	// Over the cap: the Host counts more than it lists.
	feed(t, s, pframe("room", "P", 4, 5, `,"total":5000,"limit":2`))
	p := rec.wait(t, 3)
	wantShow(t, p, `alice×1{"n":"A"} carol×1 | 5000/2 beyond 4998`)
}

// A reconnect asks from the cursor; the Host that holds the batches since sends only them,
// and the page is told only what changed, never a leave and a join of the same member.
func TestPresenceCatchesUpByCursorAfterAReconnect(t *testing.T) {
	gw := newGateway(t, nil)
	rec := newPresenceRec()
	gw.SubscribeWith("room", newRecorder().handle, gateway.SubscribeOptions{Presence: rec.fn})
	s1 := gateway.NewTestSession(t, gw).WithPresence()
	wantSubs(t, s1.Reconcile(), "sub room +P")
	feed(t, s1, reset("room", "E", 0),
		pframe("room", "P", 0, 7, `,"snapshot":true,"total":2,"members":[{"id":"alice","count":1},{"id":"bob","count":1}]`))
	rec.wait(t, 1)
	s1.End()

	s2 := gateway.NewTestSession(t, gw).WithPresence()
	wantSubs(t, s2.Reconcile(), "sub room E@0 +PP@7")
	// A batch the page had (a replay) changes nothing; the one after it applies.
	feed(t, s2,
		pframe("room", "P", 6, 7, `,"total":2,"members":[{"id":"bob","count":1}]`),
		pframe("room", "P", 7, 9, `,"total":2,"members":[{"id":"carol","count":1}],"left":["bob"]`))
	wantShow(t, rec.wait(t, 2), "alice×1 carol×1 | 2 +carol -bob")
	s2.End()

	// A Host that cannot reach the cursor sends a snapshot: what it says the page knew
	// already is no news, and the callback is not called for it.
	s3 := gateway.NewTestSession(t, gw).WithPresence()
	wantSubs(t, s3.Reconcile(), "sub room E@0 +PP@9")
	feed(t, s3, pframe("room", "Q", 0, 1, `,"snapshot":true,"total":2,"members":[{"id":"alice","count":1},{"id":"carol","count":1}]`),
		pframe("room", "Q", 1, 2, `,"total":3,"members":[{"id":"dan","count":1}]`))
	wantShow(t, rec.wait(t, 3), "alice×1 carol×1 dan×1 | 3 +dan")
	if n := rec.count(); n != 3 {
		t.Fatalf("told %d times, want 3 (the snapshot that changed nothing told nothing)", n)
	}
}

// A batch that does not follow the cursor means the page missed some: it asks afresh.
func TestPresenceGapAsksForAFreshSnapshot(t *testing.T) {
	gw := newGateway(t, nil)
	rec := newPresenceRec()
	gw.SubscribeWith("room", newRecorder().handle, gateway.SubscribeOptions{Presence: rec.fn})
	s := gateway.NewTestSession(t, gw).WithPresence()
	wantSubs(t, s.Reconcile(), "sub room +P")
	feed(t, s, reset("room", "E", 0),
		pframe("room", "P", 0, 2, `,"snapshot":true,"total":1,"members":[{"id":"alice","count":1}]`),
		pframe("room", "P", 3, 4, `,"total":2,"members":[{"id":"bob","count":1}]`))
	rec.wait(t, 1)
	wantSubs(t, s.Reconcile(), "unsub room, sub room E@0 +P")
	// Frames of the older sub still in flight are dropped; the snapshot applies.
	feed(t, s, pframe("room", "P", 4, 5, `,"total":3,"members":[{"id":"carol","count":1}]`),
		pframe("room", "P", 0, 5, `,"snapshot":true,"total":2,"members":[{"id":"alice","count":1},{"id":"bob","count":1}]`))
	wantShow(t, rec.wait(t, 2), "alice×1 bob×1 | 2 +bob")
}

// A snapshot that holds keeps the members it does not list for its hold: a Host restarted
// with a handoff shows no one leaving who comes back to it within the window.
func TestPresenceSnapshotHoldKeepsUnlistedMembers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := newGateway(t, nil)
		rec := newPresenceRec()
		gw.SubscribeWith("room", newRecorder().handle, gateway.SubscribeOptions{Presence: rec.fn})
		s1 := gateway.NewTestSession(t, gw).WithPresence()
		s1.Reconcile()
		feed(t, s1, pframe("room", "P", 0, 1, `,"snapshot":true,"total":3,"members":[{"id":"alice","count":1},{"id":"bob","count":1},{"id":"carol","count":1}]`))
		rec.wait(t, 1)
		s1.End()

		// The restarted Host knows only alice yet: bob and carol are held for 5 s.
		s2 := gateway.NewTestSession(t, gw).WithPresence()
		s2.Reconcile()
		feed(t, s2, pframe("room", "R", 0, 1, `,"snapshot":true,"total":1,"hold":5000,"members":[{"id":"alice","count":1}]`))
		synctest.Wait()
		if n := rec.count(); n != 1 {
			t.Fatalf("told %d times, want 1: the held snapshot changes nothing", n)
		}
		time.Sleep(2 * time.Second)
		feed(t, s2, pframe("room", "R", 1, 2, `,"total":2,"members":[{"id":"bob","count":2}]`))
		wantShow(t, rec.wait(t, 2), "alice×1 bob×2 carol×1 | 3 ~bob")
		time.Sleep(3*time.Second - time.Millisecond)
		synctest.Wait()
		if n := rec.count(); n != 2 {
			t.Fatalf("carol left before her hold ended (%d reports)", n)
		}
		time.Sleep(time.Millisecond)
		wantShow(t, rec.wait(t, 3), "alice×1 bob×2 | 2 -carol")
	})
}

// Presence frames for a stream whose access ended (denied, unsubscribed) are dropped.
func TestPresenceAfterAccessEndedIsDropped(t *testing.T) {
	gw := newGateway(t, nil)
	rec := newPresenceRec()
	sub := gw.SubscribeWith("room", newRecorder().handle, gateway.SubscribeOptions{Presence: rec.fn})
	s := gateway.NewTestSession(t, gw).WithPresence()
	s.Reconcile()
	feed(t, s, pframe("room", "P", 0, 1, `,"snapshot":true,"total":1,"members":[{"id":"alice","count":1}]`))
	rec.wait(t, 1)
	feed(t, s, `{"t":"denied","stream":"room","reason":"access ended"}`,
		pframe("room", "P", 1, 2, `,"total":2,"members":[{"id":"mallory","count":1}]`))
	waitClosed(t, "the denied subscription's end", sub.Done())
	time.Sleep(10 * time.Millisecond)
	if n := rec.count(); n != 1 {
		t.Fatalf("told %d times, want 1: presence after the denial reached the page", n)
	}

	rec2 := newPresenceRec()
	other := gw.SubscribeWith("lobby", newRecorder().handle, gateway.SubscribeOptions{Presence: rec2.fn})
	wantSubs(t, s.Reconcile(), "sub lobby +P")
	other.Unsubscribe()
	feed(t, s, pframe("lobby", "P", 0, 1, `,"snapshot":true,"total":1,"members":[{"id":"alice","count":1}]`))
	time.Sleep(10 * time.Millisecond)
	if n := rec2.count(); n != 0 {
		t.Fatalf("told %d times after Unsubscribe, want 0", n)
	}
}

// A Host that refuses presence for a stream, or carries none, says so; events go on.
func TestPresenceRefusedAndAHostWithout(t *testing.T) {
	gw := newGateway(t, nil)
	rec := newPresenceRec()
	ev := newRecorder()
	gw.SubscribeWith("room", ev.handle, gateway.SubscribeOptions{Presence: rec.fn})
	old := gateway.NewTestSession(t, gw) // its ready frame says nothing of presence
	wantSubs(t, old.Reconcile(), "sub room")
	wantShow(t, rec.wait(t, 1), "refused: the host carries no presence")
	old.End()

	s := gateway.NewTestSession(t, gw).WithPresence()
	wantSubs(t, s.Reconcile(), "sub room +P")
	feed(t, s, reset("room", "E", 0), `{"t":"presence","stream":"room","reason":"stream \"room\" carries no presence"}`, event("room", 1))
	wantShow(t, rec.wait(t, 2), `refused: stream "room" carries no presence`)
	if got := summary(ev.waitSeq(t, 1)); got != "R0 1" {
		t.Fatalf("events = %s, want them to go on", got)
	}
}

// WatchPresence on a subscription already on the wire subscribes it again from its cursor.
func TestWatchPresenceLater(t *testing.T) {
	gw := newGateway(t, nil)
	ev := newRecorder()
	sub := gw.Subscribe("room", ev.handle)
	s := gateway.NewTestSession(t, gw).WithPresence()
	wantSubs(t, s.Reconcile(), "sub room")
	feed(t, s, reset("room", "E", 0), event("room", 1))
	ev.waitSeq(t, 1)
	rec := newPresenceRec()
	sub.WatchPresence(rec.fn)
	wantSubs(t, s.Reconcile(), "unsub room, sub room E@1 +P")
	feed(t, s, event("room", 2), pframe("room", "P", 0, 1, `,"snapshot":true,"total":1,"members":[{"id":"alice","count":1}]`))
	wantShow(t, rec.wait(t, 1), "alice×1 | 1 +alice")
	if got := summary(ev.waitSeq(t, 2)); got != "R0 1 2" {
		t.Fatalf("events = %s, want none lost or repeated", got)
	}
}

// A callback that panics is contained: the next change is told all the same.
func TestPresenceCallbackPanicIsContained(t *testing.T) {
	gw := newGateway(t, nil)
	rec := newPresenceRec()
	calls := 0
	first := make(chan struct{})
	gw.SubscribeWith("room", newRecorder().handle, gateway.SubscribeOptions{Presence: func(p gateway.Presence) {
		calls++
		if calls == 1 {
			close(first)
			panic("embedder bug")
		}
		rec.fn(p)
	}})
	s := gateway.NewTestSession(t, gw).WithPresence()
	s.Reconcile()
	feed(t, s, pframe("room", "P", 0, 1, `,"snapshot":true,"total":1,"members":[{"id":"alice","count":1}]`))
	waitClosed(t, "the first call", first)
	feed(t, s, pframe("room", "P", 1, 2, `,"total":2,"members":[{"id":"bob","count":1}]`))
	wantShow(t, rec.wait(t, 1), "alice×1 bob×1 | 2 +bob")
}

// Over a socket (the scriptable test Host: in a bubble natively, the browser's WebSocket under
// js/wasm): a Host that carries presence lists the members; the page's link drops; the next
// session asks from the cursor, and the Host's diff from it is applied with nothing else told.
func TestPresenceOverASocketResumesByCursor(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		sc := newScenario(t)
		ready := ts.Step{Send: `{"t":"ready","session":"s","heartbeatMs":1000,"presence":true}`}
		script(t, sc, "a",
			[]ts.Step{ready, {Serve: true}, {SleepMs: 300},
				{Send: pframe("room", "P", 0, 4, `,"snapshot":true,"total":2,"members":[{"id":"alice","count":1},{"id":"bob","count":1,"meta":{"n":"B"}}]`)},
				{SleepMs: 300}, {Drop: true}},
			[]ts.Step{ready, {Serve: true}, {SleepMs: 300},
				{Send: pframe("room", "P", 4, 6, `,"total":2,"members":[{"id":"carol","count":1}],"left":["alice"]`)}},
		)
		r := newRig(t, sc.URL("a"), fast(), nil)
		rec := newPresenceRec()
		r.gw.SubscribeWith("room", newRecorder().handle, gateway.SubscribeOptions{Presence: rec.fn})
		r.ctl.Start()
		wantShow(t, rec.wait(t, 1), `alice×1 bob×1{"n":"B"} | 2 +alice +bob`)
		wantShow(t, rec.wait(t, 2), `bob×1{"n":"B"} carol×1 | 2 +carol -alice`)
		var subs []string
		for _, f := range stats(t, sc).Hosts["a"].Received {
			if f.T == wire.TypeSub {
				subs = append(subs, subFrames([]wire.PageFrame{f}))
			}
		}
		if got := strings.Join(subs, ", "); !strings.HasPrefix(got, "sub room +P, sub room") || !strings.HasSuffix(got, "+PP@4") {
			t.Fatalf("the page subscribed %s, want presence asked, then asked again from its cursor P@4", got)
		}
		r.ctl.Stop()
	})
}
