//go:build !js

package hostplugin_test

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifeline-go/lifeline/hostplugin"
)

// A fleet's presence, in a bubble: Hosts on a memBus.

// fleetBound is the longest a change on one Host takes to show on another's pages: the
// Host's delta batch (20 ms) and the other's flush.
const fleetBound = 20*time.Millisecond + flushBound

// heartbeat is the fleet's heartbeat (hostplugin's presenceHeartbeat).
const heartbeat = time.Second

// warmUp is how long a new Host of a fleet waits to know the fleet's members.
const warmUp = heartbeat + fleetBound

func TestPagesOnTwoHostsSeeEachOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := newMemBus()
		a, _ := presHost(t, quietHost, bus, nil)
		b, _ := presHost(t, quietHost, bus, nil)
		time.Sleep(warmUp)
		alice := dialPres(t, a, "alice")
		alice.sub("room.1", true)
		time.Sleep(flushBound)
		bob := dialPres(t, b, "bob")
		start := time.Now()
		bob.sub("room.1", true)
		time.Sleep(fleetBound)
		alice.expectWho("room.1", map[string]int{"alice": 1, "bob": 1})
		bob.expectWho("room.1", map[string]int{"alice": 1, "bob": 1})
		if ch := alice.changes["room.1"]; ch[len(ch)-1].at.Sub(start) > fleetBound {
			t.Errorf("alice, on another Host, saw bob %v after he subscribed; want within %v", ch[len(ch)-1].at.Sub(start), fleetBound)
		}
		// One identity on both Hosts is one member, counted across the fleet.
		bob2 := dialPres(t, a, "bob")
		bob2.sub("room.1", false)
		time.Sleep(time.Second + fleetBound)
		alice.expectWho("room.1", map[string]int{"alice": 1, "bob": 2})
		if got := members(t, b, "room.1"); got["bob"] != 2 || got["alice"] != 1 {
			t.Errorf("Host.Members on b = %v, want alice 1, bob 2", got)
		}
	})
}

func TestAHostThatDiesMakesItsMembersLeaveWithinTheGraceWindowAndAHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := newMemBus()
		a, _ := presHost(t, quietHost, bus, nil)
		b, _ := presHost(t, quietHost, bus, nil)
		time.Sleep(warmUp)
		alice := dialPres(t, a, "alice")
		alice.sub("room.1", true)
		bob := dialPres(t, b, "bob")
		bob.sub("room.1", true)
		time.Sleep(300 * time.Millisecond) // the kill falls between two heartbeats
		alice.expectWho("room.1", map[string]int{"alice": 1, "bob": 1})
		seen := len(alice.changes["room.1"])

		bus.setCut(hostID(bob), true, false) // SIGKILL: nothing more of it, and no goodbye
		death := time.Now()
		time.Sleep(grace + heartbeat + flushBound)
		ch := alice.changesSince("room.1", seen)
		if len(ch) != 1 || !slices.Equal(ch[0].left, []string{"bob"}) || len(ch[0].joined) > 0 {
			t.Fatalf("after b died alice saw %+v, want bob leaving once", ch)
		}
		if at := ch[0].at.Sub(death); at < grace-heartbeat || at > grace+heartbeat {
			t.Errorf("bob left %v after his Host died, want within the grace window and a heartbeat (%v ± %v)", at, grace, heartbeat)
		}
	})
}

func TestMovesBetweenHostsShowNothing(t *testing.T) {
	tests := []struct {
		name string
		move func(t *testing.T, to *hostplugin.Host, bob *ppage) *ppage
	}{
		{"make-before-break (a GOAWAY to another Host)", func(t *testing.T, to *hostplugin.Host, bob *ppage) *ppage {
			next := dialPres(t, to, "bob")
			next.shows, next.cursor = bob.shows, bob.cursor
			next.sub("room.1", true)
			time.Sleep(200 * time.Millisecond)
			bob.close()
			return next
		}},
		{"break-before-make, 8 s apart (its Host gone, a reconnect elsewhere)", func(t *testing.T, to *hostplugin.Host, bob *ppage) *ppage {
			bob.close()
			time.Sleep(8 * time.Second)
			next := dialPres(t, to, "bob")
			next.shows, next.cursor = bob.shows, bob.cursor
			next.sub("room.1", true)
			return next
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				bus := newMemBus()
				a, _ := presHost(t, quietHost, bus, nil)
				b, _ := presHost(t, quietHost, bus, nil)
				time.Sleep(warmUp)
				alice := dialPres(t, a, "alice")
				alice.sub("room.1", true)
				carol := dialPres(t, b, "carol")
				carol.sub("room.1", true)
				bob := dialPres(t, b, "bob")
				bob.sub("room.1", true)
				time.Sleep(fleetBound)
				want := map[string]int{"alice": 1, "bob": 1, "carol": 1}
				alice.expectWho("room.1", want)
				bob.expectWho("room.1", want)
				carol.expectWho("room.1", want)
				seenA, seenC := len(alice.changes["room.1"]), len(carol.changes["room.1"])
				bob = tt.move(t, a, bob)
				time.Sleep(2 * grace)
				for _, p := range []struct {
					page *ppage
					seen int
				}{{alice, seenA}, {carol, seenC}, {bob, len(bob.changes["room.1"])}} {
					if ch := p.page.changesSince("room.1", p.seen); len(ch) > 0 {
						t.Errorf("%s saw %+v while bob moved", p.page.user, ch)
					}
				}
				bob.expectWho("room.1", want)
			})
		})
	}
}

// A rolling restart: each Host in turn hands its pages to a successor (which starts, then
// takes them make-before-break) and leaves. Nobody leaves or joins, on any page.
func TestARollingRestartShowsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := newMemBus()
		hosts := []*hostplugin.Host{}
		for range 3 {
			h, _ := presHost(t, quietHost, bus, nil)
			hosts = append(hosts, h)
		}
		time.Sleep(warmUp)
		users := []string{"ann", "ben", "cat", "dan", "eve", "fay"}
		pages := make([]*ppage, len(users))
		for i, u := range users {
			pages[i] = dialPres(t, hosts[i%3], u)
			pages[i].sub("room.1", true)
		}
		time.Sleep(fleetBound)
		want := map[string]int{}
		for _, u := range users {
			want[u] = 1
		}
		seen := make([]int, len(pages))
		for i, p := range pages {
			p.expectWho("room.1", want)
			seen[i] = len(p.changes["room.1"])
		}
		for i := range hosts {
			next, _ := presHost(t, quietHost, bus, nil)
			time.Sleep(200 * time.Millisecond) // its start, then the old one's drain
			for j, p := range pages {
				if j%3 != i {
					continue
				}
				moved := dialPres(t, next, p.user)
				moved.shows, moved.cursor, moved.changes = p.shows, p.cursor, p.changes
				moved.sub("room.1", true)
				time.Sleep(50 * time.Millisecond)
				p.close()
				pages[j] = moved
			}
			_ = hosts[i].Close()
			time.Sleep(3 * time.Second)
		}
		time.Sleep(2 * grace)
		for i, p := range pages {
			if ch := p.changesSince("room.1", seen[i]); len(ch) > 0 {
				t.Errorf("%s saw %+v through a rolling restart", p.user, ch)
			}
			p.expectWho("room.1", want)
		}
	})
}

// A NATS node lost, or a leader election: a Host cut off from the fleet for seconds, knowing
// it (its link is down) or not (messages lost on the way), makes no one leave.
func TestALostLinkThatComesBackMakesNoOneLeave(t *testing.T) {
	tests := []struct {
		name string
		cut  func(bus *memBus, id string)
		back func(bus *memBus, id string)
		for_ time.Duration
	}{
		{"a link down for 8 s that its Host sees", func(bus *memBus, id string) { bus.setCut(id, true, true) },
			func(bus *memBus, id string) { bus.setCut(id, false, false) }, 8 * time.Second},
		{"messages lost both ways for 2 s, unseen", func(bus *memBus, id string) {
			bus.setLost(func(from, to string) bool { return from == id || to == id })
		}, func(bus *memBus, id string) { bus.setLost(nil) }, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				bus := newMemBus()
				a, _ := presHost(t, quietHost, bus, nil)
				b, _ := presHost(t, quietHost, bus, nil)
				time.Sleep(warmUp)
				alice := dialPres(t, a, "alice")
				alice.sub("room.1", true)
				bob := dialPres(t, b, "bob")
				bob.sub("room.1", true)
				time.Sleep(fleetBound)
				alice.expectWho("room.1", map[string]int{"alice": 1, "bob": 1})
				bob.expectWho("room.1", map[string]int{"alice": 1, "bob": 1})
				seenA, seenB := len(alice.changes["room.1"]), len(bob.changes["room.1"])

				tt.cut(bus, hostID(alice))
				time.Sleep(tt.for_ / 2)
				carol := dialPres(t, a, "carol") // joins while the link is out
				carol.sub("room.1", false)
				time.Sleep(tt.for_ / 2)
				tt.back(bus, hostID(alice))
				time.Sleep(2 * grace)

				want := map[string]int{"alice": 1, "bob": 1, "carol": 1}
				alice.expectWho("room.1", want)
				bob.expectWho("room.1", want)
				for _, p := range []struct {
					page *ppage
					seen int
				}{{alice, seenA}, {bob, seenB}} {
					for _, ch := range p.page.changesSince("room.1", p.seen) {
						if len(ch.left) > 0 || len(ch.updated) > 0 || !slices.Equal(ch.joined, []string{"carol"}) {
							t.Errorf("%s saw %+v: only carol joining may show", p.page.user, ch)
						}
					}
				}
			})
		})
	}
}

func TestANewHostKnowsTheFleetBeforeItShowsAPageAnything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := newMemBus()
		a, _ := presHost(t, quietHost, bus, nil)
		for _, u := range []string{"ann", "ben", "cat"} {
			dialPres(t, a, u).sub("room.1", false)
		}
		time.Sleep(warmUp)
		c, _ := presHost(t, quietHost, bus, nil)
		p := dialPres(t, c, "dan")
		p.sub("room.1", true)
		time.Sleep(warmUp)
		p.pump()
		if ch := p.changes["room.1"]; len(ch) != 1 || len(ch[0].joined) != 4 {
			t.Errorf("a page of a new Host saw %+v, want one snapshot of all four", ch)
		}
	})
}

func TestAHostThatLeavesSaysSoAndItsMembersLeaveAGraceWindowLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := newMemBus()
		a, _ := presHost(t, quietHost, bus, nil)
		b, _ := presHost(t, quietHost, bus, nil)
		time.Sleep(warmUp)
		alice := dialPres(t, a, "alice")
		alice.sub("room.1", true)
		dialPres(t, b, "bob").sub("room.1", false)
		time.Sleep(fleetBound)
		alice.expectWho("room.1", map[string]int{"alice": 1, "bob": 1})
		_ = b.Close()
		closed := time.Now()
		time.Sleep(grace + fleetBound)
		alice.expectWho("room.1", map[string]int{"alice": 1})
		ch := alice.changes["room.1"]
		if at := ch[len(ch)-1].at.Sub(closed); at < grace || at > grace+fleetBound {
			t.Errorf("bob left %v after his Host closed, want within [%v, %v]", at, grace, grace+fleetBound)
		}
	})
}

// A Host that knows it is cut off (its link down) for longer than the grace window cannot hear
// the others: that says nothing of them, so its pages keep showing them. (The others cannot
// tell it from a dead Host: on theirs, its members leave, and come back with it.)
func TestAHostCutOffKeepsShowingTheOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := newMemBus()
		a, _ := presHost(t, quietHost, bus, nil)
		b, _ := presHost(t, quietHost, bus, nil)
		time.Sleep(warmUp)
		alice := dialPres(t, a, "alice")
		alice.sub("room.1", true)
		bob := dialPres(t, b, "bob")
		bob.sub("room.1", true)
		time.Sleep(fleetBound)
		alice.expectWho("room.1", map[string]int{"alice": 1, "bob": 1})
		bob.expectWho("room.1", map[string]int{"alice": 1, "bob": 1})
		seen := len(alice.changes["room.1"])
		bus.setCut(hostID(alice), true, true)
		time.Sleep(2 * grace)
		alice.expectWho("room.1", map[string]int{"alice": 1, "bob": 1})
		if ch := alice.changesSince("room.1", seen); len(ch) > 0 {
			t.Errorf("alice, on the Host cut off, saw %+v", ch)
		}
		bob.expectWho("room.1", map[string]int{"bob": 1})
		bus.setCut(hostID(alice), false, false)
		time.Sleep(heartbeat + fleetBound)
		bob.expectWho("room.1", map[string]int{"alice": 1, "bob": 1})
		alice.expectWho("room.1", map[string]int{"alice": 1, "bob": 1})
	})
}
