//go:build !js

package hub_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/wasm/internal/hub"
)

// resumes checks what a tab got after asking to resume at seq after: every event past it once
// and in order up to want, and no baseline.
func resumes(t *testing.T, who string, ds []gateway.Delivery, after, want uint64) {
	t.Helper()
	last := after
	for _, d := range ds {
		if d.Reset || d.Seq != last+1 {
			t.Fatalf("%s resumed at %d and got %s, want %d to %d once each, no baseline", who, after, summary(ds), after+1, want)
		}
		last = d.Seq
	}
	if last != want {
		t.Fatalf("%s got %s, want up to %d", who, summary(ds), want)
	}
}

func last(ds []gateway.Delivery) uint64 {
	if len(ds) == 0 {
		return 0
	}
	return ds[len(ds)-1].Seq
}

// WebKit ends a SharedWorker when one of several windows closes; its tabs meet in a fresh hub,
// each with the cursor it had. None of them is given a baseline or misses an event: the first
// starts the wire at its cursor, one behind rewinds it (the others are not given again what they
// had), one ahead is given only what is past it.
func TestTabsOfAnEndedHubResumeByCursorInAFreshOne(t *testing.T) {
	x := newHost(t)
	h1 := hub.New(&hub.Options{Logger: quiet})
	a, ca := helloTab(h1, x)
	subscribed(t, a, ca, 1, "s")
	x.publish(t, "s", 10)
	a.wait(t, "10 events", func(c *tab) bool { return last(c.got[1]) == 10 })
	epoch := a.deliveries(1)[0].Epoch
	h1.Close(nil) // the worker ended
	for deadline := time.Now().Add(10 * time.Second); x.h.Sessions() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the Host still holds %d sessions after the hub ended", x.h.Sessions())
		}
	}
	x.publish(t, "s", 5) // 11..15 while no hub follows the stream

	h2 := newHub(t)
	from := func(seq uint64) hub.In {
		return hub.In{T: hub.MsgSubscribe, ID: 1, Stream: "s", Epoch: epoch, After: seq}
	}
	b, cb := helloTab(h2, x)
	cb.Handle(from(10))
	b.wait(t, "b's 15", func(c *tab) bool { return last(c.got[1]) == 15 })
	resumes(t, "b", b.deliveries(1), 10, 15)

	c, cc := helloTab(h2, x) // behind: it had missed 9 and 10 when the hub ended
	cc.Handle(from(8))
	c.wait(t, "c's 15", func(c *tab) bool { return last(c.got[1]) == 15 })
	d, cd := helloTab(h2, x) // ahead of the first
	cd.Handle(from(13))
	d.wait(t, "d's 15", func(c *tab) bool { return last(c.got[1]) == 15 })

	x.publish(t, "s", 3)
	for _, w := range []struct {
		who   string
		tab   *tab
		after uint64
	}{{"b", b, 10}, {"c", c, 8}, {"d", d, 13}} {
		w.tab.wait(t, w.who+"'s 18", func(c *tab) bool { return last(c.got[1]) == 18 })
		resumes(t, w.who, w.tab.deliveries(1), w.after, 18)
	}
	if n := x.h.Sessions(); n != 1 {
		t.Fatalf("the Host holds %d sessions, want the fresh hub's one", n)
	}

	// A tab that follows the stream afresh (a new page) is given a start of its own: a
	// resumed stream has no baseline to give, so the Host sends one, to every tab, which is an
	// explicit re-baseline, never a gap.
	e, ce := helloTab(h2, x)
	ce.Handle(hub.In{T: hub.MsgSubscribe, ID: 1, Stream: "s"})
	e.wait(t, "e's baseline", func(c *tab) bool { return len(c.got[1]) > 0 })
	x.publish(t, "s", 1)
	for _, w := range []*tab{b, c, d, e} {
		w.wait(t, "19", func(c *tab) bool { return last(c.got[1]) == 19 })
		ds := w.deliveries(1)
		if countResets(ds) != 1 {
			t.Fatalf("got %s, want one baseline: the fresh start", summary(ds))
		}
		i := 0
		for !ds[i].Reset {
			i++
		}
		placeable(t, "after the fresh start", ds[i:])
	}
}

// A cursor the Host can no longer serve (another log: the Host restarted meanwhile) is
// answered with a baseline; one that no Host gives is not sent on at all.
func TestACursorTheHostCannotServeStartsFromABaseline(t *testing.T) {
	x := newHost(t)
	h := newHub(t)
	a, ca := helloTab(h, x)
	x.publish(t, "s", 4)
	ca.Handle(hub.In{T: hub.MsgSubscribe, ID: 1, Stream: "s", Epoch: "a-log-of-before", After: 99})
	a.wait(t, "a's baseline", func(c *tab) bool { return len(c.got[1]) > 0 })
	if ds := a.deliveries(1); !ds[0].Reset || ds[0].Seq != 4 {
		t.Fatalf("a got %s, want a baseline at 4", summary(ds))
	}
	b, cb := helloTab(h, x)
	cb.Handle(hub.In{T: hub.MsgSubscribe, ID: 1, Stream: "t", Epoch: strings.Repeat("e", 257), After: 3})
	b.wait(t, "b's baseline", func(c *tab) bool { return len(c.got[1]) > 0 })
	if ds := b.deliveries(1); !ds[0].Reset {
		t.Fatalf("b got %s, want a baseline", summary(ds))
	}
}
