//go:build !js

package hostplugin_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// flushBound is the longest a change waits for its batch (hostplugin's presenceFlush).
const flushBound = hostplugin.PresenceFlush

// grace is the default grace window.
const grace = hostplugin.DefaultPresenceGrace

func TestAPageSeesWhoIsHereThenWhoJoinsAndWhoLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := presHost(t, quietHost, nil, nil)
		if !dialPres(t, h, "x").ready.HasPresence {
			t.Fatal("the ready frame of a Host with presence does not say so")
		}
		alice := dialPres(t, h, "alice")
		alice.sub("room.1", true)
		time.Sleep(flushBound)
		alice.expectWho("room.1", map[string]int{"alice": 1})

		bob := dialPres(t, h, "bob")
		start := time.Now()
		bob.sub("room.1", true)
		time.Sleep(flushBound)
		alice.expectWho("room.1", map[string]int{"alice": 1, "bob": 1})
		bob.expectWho("room.1", map[string]int{"alice": 1, "bob": 1})
		if ch := alice.changes["room.1"]; ch[len(ch)-1].at.Sub(start) > flushBound {
			t.Errorf("alice saw bob join %v after he subscribed, want within %v", ch[len(ch)-1].at.Sub(start), flushBound)
		}

		bob.close()
		gone := time.Now()
		time.Sleep(grace - time.Millisecond)
		alice.expectWho("room.1", map[string]int{"alice": 1, "bob": 1}) // still in his grace window
		time.Sleep(time.Millisecond + flushBound)
		alice.expectWho("room.1", map[string]int{"alice": 1})
		ch := alice.changes["room.1"]
		last := ch[len(ch)-1]
		if !slices.Equal(last.left, []string{"bob"}) || last.at.Sub(gone) < grace || last.at.Sub(gone) > grace+flushBound {
			t.Errorf("bob's leave: %+v, %v after his session ended; want him leaving in [%v, %v]", last, last.at.Sub(gone), grace, grace+flushBound)
		}
		if got := members(t, h, "room.1"); fmt.Sprint(got) != "map[alice:1]" {
			t.Errorf("Host.Members = %v, want alice", got)
		}
	})
}

// TestAPresenceFrameListsItsMembersInOrderOfID: the page checks a frame for an id named twice
// in one pass when the frame is in order (wire's namedTwice); the helper's reader fails any
// presence frame that is not, so this batch, made in the order of the joins and leaves, must
// be sorted by the Host.
func TestAPresenceFrameListsItsMembersInOrderOfID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := presHost(t, quietHost, nil, nil)
		watcher := dialPres(t, h, "w")
		watcher.sub("room.1", true)
		var pages []*ppage
		for _, who := range []string{"carol", "alice", "dave", "bob"} {
			p := dialPres(t, h, who)
			p.sub("room.1", false)
			pages = append(pages, p)
		}
		time.Sleep(flushBound)
		watcher.expectWho("room.1", map[string]int{"w": 1, "alice": 1, "bob": 1, "carol": 1, "dave": 1})
		for _, p := range []*ppage{pages[2], pages[0], pages[3]} { // dave, carol, bob
			p.close()
		}
		time.Sleep(grace + flushBound)
		watcher.expectWho("room.1", map[string]int{"w": 1, "alice": 1})
		ch := watcher.changes["room.1"]
		if last := ch[len(ch)-1]; !slices.Equal(last.left, []string{"bob", "carol", "dave"}) {
			t.Errorf("the leaves reached the page as %+v, want bob, carol and dave in one batch, in order", last)
		}
	})
}

func TestSessionsOfOneIdentityAreOneMemberWithACount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := presHost(t, quietHost, nil, nil)
		watcher := dialPres(t, h, "w")
		watcher.sub("room.1", true)
		tab1, tab2 := dialPres(t, h, "alice"), dialPres(t, h, "alice")
		tab1.sub("room.1", false)
		time.Sleep(flushBound)
		watcher.expectWho("room.1", map[string]int{"w": 1, "alice": 1})
		tab2.sub("room.1", false)
		time.Sleep(time.Second + flushBound) // a second session shows once it has held for a second
		watcher.expectWho("room.1", map[string]int{"w": 1, "alice": 2})
		if got := members(t, h, "room.1"); got["alice"] != 2 || len(got) != 2 {
			t.Errorf("Host.Members = %v, want alice with 2 and w", got)
		}
		tab1.close()
		time.Sleep(grace + flushBound)
		watcher.expectWho("room.1", map[string]int{"w": 1, "alice": 1})
		tab2.close()
		time.Sleep(grace + flushBound)
		watcher.expectWho("room.1", map[string]int{"w": 1})
	})
}

// Everything a page lives through that is no one leaving: none of it may show.
func TestReconnectsAndMovesWithinTheGraceWindowShowNothing(t *testing.T) {
	tests := []struct {
		name string
		// move takes bob's session away and brings him back; it returns his new page
		move func(t *testing.T, h *hostplugin.Host, bob *ppage) *ppage
	}{
		{"a reconnect 9 s after the drop", func(t *testing.T, h *hostplugin.Host, bob *ppage) *ppage {
			bob.close()
			time.Sleep(9 * time.Second)
			again := dialPres(t, h, "bob")
			again.sub("room.1", true)
			return again
		}},
		{"a move make-before-break (a GOAWAY, a carrier change)", func(t *testing.T, h *hostplugin.Host, bob *ppage) *ppage {
			again := dialPres(t, h, "bob")
			again.sub("room.1", true)
			time.Sleep(300 * time.Millisecond)
			bob.close()
			return again
		}},
		{"a resubscription (unsub, then sub)", func(t *testing.T, h *hostplugin.Host, bob *ppage) *ppage {
			bob.send(`{"t":"unsub","stream":"room.1"}`)
			bob.sub("room.1", true)
			return bob
		}},
		{"a flapping link: five drops in ten seconds", func(t *testing.T, h *hostplugin.Host, bob *ppage) *ppage {
			for range 5 {
				bob.close()
				time.Sleep(1500 * time.Millisecond)
				bob = dialPres(t, h, "bob")
				bob.sub("room.1", true)
				time.Sleep(500 * time.Millisecond)
			}
			return bob
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, _ := presHost(t, quietHost, nil, nil)
				alice := dialPres(t, h, "alice")
				alice.sub("room.1", true)
				bob := dialPres(t, h, "bob")
				bob.sub("room.1", true)
				time.Sleep(flushBound)
				alice.expectWho("room.1", map[string]int{"alice": 1, "bob": 1})
				seen := len(alice.changes["room.1"])
				bob = tt.move(t, h, bob)
				time.Sleep(2 * grace)
				if ch := alice.changesSince("room.1", seen); len(ch) > 0 {
					t.Errorf("alice saw %+v: a move within the grace window must show nothing", ch)
				}
				bob.expectWho("room.1", map[string]int{"alice": 1, "bob": 1})
			})
		})
	}
}

func TestAPageThatComesBackCatchesUpByItsCursor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := presHost(t, quietHost, nil, nil)
		alice := dialPres(t, h, "alice")
		alice.sub("room.1", true)
		for _, who := range []string{"bob", "carol", "dave"} {
			dialPres(t, h, who).sub("room.1", false)
		}
		time.Sleep(flushBound)
		alice.expectWho("room.1", map[string]int{"alice": 1, "bob": 1, "carol": 1, "dave": 1})
		alice.close()
		cursor := alice.cursor["room.1"]
		erin := dialPres(t, h, "erin")
		erin.sub("room.1", false)
		time.Sleep(flushBound)

		back := dialPres(t, h, "alice")
		back.shows, back.cursor = alice.shows, alice.cursor // what the page held
		back.sub("room.1", true)
		time.Sleep(flushBound)
		back.pump()
		if back.frameN["room.1"] != 1 || back.changes["room.1"][0].snapshot {
			t.Fatalf("the page came back with cursor %+v and was sent %d frames (%+v): want one diff", cursor, back.frameN["room.1"], back.changes["room.1"])
		}
		back.expectWho("room.1", map[string]int{"alice": 1, "bob": 1, "carol": 1, "dave": 1, "erin": 1})

		// A cursor of another history (another Host, a Host restarted) gets a snapshot, which
		// the page applies as a diff: nothing it shows changes.
		other := dialPres(t, h, "alice")
		other.shows = back.shows
		other.cursor = map[string]hostplugin.Cursor{"room.1": {Epoch: "another", Seq: 9}}
		other.sub("room.1", true)
		time.Sleep(flushBound)
		other.pump()
		if ch := other.changes["room.1"]; len(ch) != 0 {
			t.Errorf("a page with a cursor of another history saw %+v; a snapshot it holds already changes nothing", ch)
		}
		if other.frameN["room.1"] != 1 {
			t.Errorf("%d frames for a snapshot of 5 members, want 1", other.frameN["room.1"])
		}
	})
}

func TestABurstOfAThousandJoinsReachesAPageInAFewFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := presHost(t, `{"heartbeatMs":600000,"acceptRate":1000000,"acceptBurst":1000000}`, nil,
			func(p *hostplugin.Presence) { p.MaxMembers = 2000 })
		watcher := dialPres(t, h, "w")
		watcher.sub("room.1", true)
		time.Sleep(flushBound)
		watcher.pump()
		before := watcher.frameN["room.1"]
		start := time.Now()
		for i := range 1000 {
			dialPres(t, h, fmt.Sprintf("user-%04d", i)).sub("room.1", false)
		}
		time.Sleep(flushBound)
		watcher.pump()
		if n := len(watcher.who("room.1")); n != 1001 {
			t.Fatalf("the page shows %d members, want 1001", n)
		}
		frames := watcher.frameN["room.1"] - before
		if frames > 3 {
			t.Errorf("1,000 joins within %v reached the page in %d frames, want at most 3", time.Since(start), frames)
		}
		t.Logf("1,000 joins: %d frames, %d bytes", frames, watcher.bytes["room.1"])
	})
}

func TestAStreamOverItsCapListsTheFirstAndCountsEveryone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, logs := presHost(t, quietHost, nil, func(p *hostplugin.Presence) { p.MaxMembers = 3 })
		var pages []*ppage
		for _, who := range []string{"a", "b", "c", "d", "e"} {
			p := dialPres(t, h, who)
			p.sub("room.1", true)
			pages = append(pages, p)
			time.Sleep(flushBound)
		}
		late := dialPres(t, h, "f")
		late.sub("room.1", true)
		time.Sleep(flushBound)
		late.expectWho("room.1", map[string]int{"a": 1, "b": 1, "c": 1})
		if late.total["room.1"] != 6 || late.limit["room.1"] != 3 {
			t.Errorf("the page was told total %d, limit %d; want 6, 3", late.total["room.1"], late.limit["room.1"])
		}
		if !logs.Has("over Presence.MaxMembers", "MaxMembers=3") {
			t.Errorf("the Host did not say the stream is over its cap:\n%s", logs)
		}
		pages[1].close() // b leaves: the oldest waiting, d, takes his place
		time.Sleep(grace + flushBound)
		late.expectWho("room.1", map[string]int{"a": 1, "c": 1, "d": 1})
		if late.total["room.1"] != 5 {
			t.Errorf("total %d, want 5", late.total["room.1"])
		}
		if got := members(t, h, "room.1"); len(got) != 5 {
			t.Errorf("Host.Members lists %d, want every member (5)", len(got))
		}
	})
}

func TestBadMetadataJoinsWithoutItAndTellsThatPageAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, logs := presHost(t, quietHost, nil, func(p *hostplugin.Presence) {
			p.MaxMetaBytes = 64
			p.Meta = func(id string) (json.RawMessage, error) {
				switch id {
				case "big":
					return json.RawMessage(`"` + strings.Repeat("x", 100) + `"`), nil
				case "broken":
					return json.RawMessage(`{"name":`), nil
				case "failing":
					return nil, errors.New("no profile")
				case "panicking":
					panic("boom")
				}
				return json.RawMessage(`{"name":"` + strings.ToUpper(id) + `"}`), nil
			}
		})
		alice := dialPres(t, h, "alice")
		alice.sub("room.1", true)
		bad := map[string]string{
			"big":       "its metadata is 102 bytes, over Presence.MaxMetaBytes (64)",
			"broken":    "its metadata is not one JSON value",
			"failing":   "no profile",
			"panicking": "Presence.Meta panicked",
		}
		pages := map[string]*ppage{}
		for who := range bad {
			pages[who] = dialPres(t, h, who)
			pages[who].sub("room.1", true)
		}
		time.Sleep(flushBound)
		alice.pump()
		for who, why := range bad {
			m, ok := alice.shows["room.1"][who]
			if !ok || m.Meta != nil {
				t.Errorf("alice shows %s as %+v (listed %v), want a member without metadata", who, m, ok)
			}
			p := pages[who]
			p.pump()
			if len(p.errs) != 1 || !strings.Contains(p.errs[0], why) || !strings.Contains(p.errs[0], "joins without metadata") {
				t.Errorf("%s's page was told %q, want one error saying %q", who, p.errs, why)
			}
		}
		if m := alice.shows["room.1"]["alice"]; string(m.Meta) != `{"name":"ALICE"}` || len(alice.errs) != 0 {
			t.Errorf("alice (good metadata) shows herself as %+v and was told %q", m, alice.errs)
		}
		if !logs.Has("Presence.Meta") {
			t.Errorf("the Host logged nothing of the bad metadata:\n%s", logs)
		}
	})
}

func TestAStreamWithoutPresenceSaysSoAndAPageThatDoesNotAskGetsNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := presHost(t, quietHost, nil, nil)
		p := dialPres(t, h, "alice")
		p.sub("news", true)
		time.Sleep(flushBound)
		p.pump()
		if got := p.refused["news"]; !strings.Contains(got, `stream "news" carries no presence`) {
			t.Errorf("a page asking for presence of a stream without it was told %q", got)
		}
		// An older page never asks: it gets no presence frame on a stream that carries it,
		// though it is a member.
		old := dialPres(t, h, "old")
		old.sub("room.1", false)
		time.Sleep(time.Second)
		old.pump()
		if old.frameN["room.1"] != 0 {
			t.Errorf("a page that did not ask was sent %d presence frames", old.frameN["room.1"])
		}
		if got := members(t, h, "room.1"); got["old"] != 1 {
			t.Errorf("Host.Members = %v: the page that did not ask is a member all the same", got)
		}
		if _, err := h.Members(t.Context(), "news"); !errors.Is(err, hostplugin.ErrNoPresence) {
			t.Errorf("Members of a stream without presence: %v, want ErrNoPresence", err)
		}
	})
}

func TestAHostWithoutPresenceSaysNothingOfIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, err := hostplugin.New(mustConfig(t, quietHost), &hostplugin.Options{Authorize: hostplugin.PublicStreams, NoClient: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Close() })
		h.SetReady(true)
		p := dialPres(t, h, "alice")
		if p.ready.HasPresence {
			t.Error("the ready frame of a Host without presence says it has some")
		}
		p.sub("room.1", true)
		time.Sleep(time.Second)
		p.pump()
		if p.frameN["room.1"] != 0 || len(p.errs) != 0 {
			t.Errorf("a Host without presence sent %d presence frames and errors %q", p.frameN["room.1"], p.errs)
		}
		if _, err := h.Members(t.Context(), "room.1"); !errors.Is(err, hostplugin.ErrNoPresence) {
			t.Errorf("Members: %v, want ErrNoPresence", err)
		}
	})
}

// A lone Host restarted with a handoff cannot know who is still on the way to it: its
// snapshots hold what they do not list for the rest of the grace window.
func TestANewLoneHostsSnapshotsHoldWhatTheyDoNotListForTheRestOfTheWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := presHost(t, quietHost, nil, nil)
		time.Sleep(4 * time.Second)
		p := dialPres(t, h, "alice")
		p.sub("room.1", true)
		synctest.Wait()
		time.Sleep(flushBound)
		synctest.Wait()
		var snap wire.HostFrame
		for f := p.next(); f.T != ""; f = p.next() {
			if f.T == wire.TypePresence {
				snap = f
			}
		}
		if !snap.Snapshot || snap.HoldMs != (grace-4*time.Second-flushBound).Milliseconds() {
			t.Errorf("a snapshot %v after the Host started holds %d ms, want %d", 4*time.Second+flushBound, snap.HoldMs, (grace - 4*time.Second - flushBound).Milliseconds())
		}
		time.Sleep(grace)
		late := dialPres(t, h, "bob")
		late.sub("room.1", true)
		time.Sleep(flushBound)
		synctest.Wait()
		for f := late.next(); f.T != ""; f = late.next() {
			if f.T == wire.TypePresence && f.HoldMs != 0 {
				t.Errorf("a Host up for longer than its grace window holds for %d ms", f.HoldMs)
			}
		}
	})
}

func TestPresenceOptionsAreCheckedNamingFieldAndValue(t *testing.T) {
	tests := []struct {
		name string
		p    hostplugin.Presence
		want string
	}{
		{"streams are required", hostplugin.Presence{}, "Options.Presence.Streams is nil"},
		{"a negative cap is refused", hostplugin.Presence{Streams: roomStreams, MaxMembers: -1}, "MaxMembers must be in 0..100000 (0: 1000), got -1"},
		{"a cap over the bound is refused", hostplugin.Presence{Streams: roomStreams, MaxMembers: 100001}, "got 100001"},
		{"metadata over 16 KiB is refused", hostplugin.Presence{Streams: roomStreams, MaxMetaBytes: 16385}, "MaxMetaBytes must be in 0..16384 (0: 1024), got 16385"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := hostplugin.New(hostplugin.DefaultConfig(), &hostplugin.Options{Authorize: hostplugin.PublicStreams, NoClient: true, Presence: &tt.p})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "hostplugin: ") {
				t.Errorf("New: %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// A presence grace window of 0 shows a leave at the next flush: the window is the config's.
func TestTheGraceWindowIsTheConfigs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := presHost(t, `{"heartbeatMs":600000,"presenceGraceMs":2500}`, nil, nil)
		alice := dialPres(t, h, "alice")
		alice.sub("room.1", true)
		bob := dialPres(t, h, "bob")
		bob.sub("room.1", false)
		time.Sleep(flushBound)
		bob.close()
		gone := time.Now()
		time.Sleep(2500*time.Millisecond + flushBound)
		alice.expectWho("room.1", map[string]int{"alice": 1})
		ch := alice.changes["room.1"]
		if at := ch[len(ch)-1].at.Sub(gone); at < 2500*time.Millisecond || at > 2500*time.Millisecond+flushBound {
			t.Errorf("bob left %v after his session, want within [2.5 s, 2.5 s + %v]", at, flushBound)
		}
	})
}
