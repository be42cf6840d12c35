//go:build !js

package hostplugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// Subscriptions: the fan-out of one stream to the sessions that follow it, replays, resets
// and live events.

// streamFixture is a Host with stream "s" holding events 1..5 in a ring of 3 (so 3, 4 and 5
// can be replayed) and a baseline naming the head.
func streamFixture(t *testing.T) (*fixture, string) {
	t.Helper()
	f := newFixture(t, `{"ringSize":3}`, true)
	f.H.SetBaseline("s", func(stream string, head hostplugin.Cursor) (json.RawMessage, error) {
		return json.RawMessage(fmt.Sprintf(`{"upTo":%d}`, head.Seq)), nil
	})
	for i := 1; i <= 5; i++ {
		publish(t, f.H, "s", fmt.Sprintf(`{"i":%d}`, i))
	}
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	c.Send(`{"t":"sub","stream":"s"}`)
	return f, c.Expect(wire.TypeReset).Epoch
}

func TestSubscriptionsReplayOrReset(t *testing.T) {
	tests := []struct {
		name   string
		sub    func(epoch string) string
		replay []uint64 // events replayed before the live one
		reset  bool     // a reset to seq 5 comes first
	}{
		{name: "a fresh subscription is reset to the head with the baseline",
			sub: func(string) string { return `{"t":"sub","stream":"s"}` }, reset: true},
		{name: "a cursor inside the ring replays what follows it",
			sub: func(e string) string { return `{"t":"sub","stream":"s","epoch":"` + e + `","after":3}` }, replay: []uint64{4, 5}},
		{name: "a cursor just before the oldest kept event replays the whole ring",
			sub: func(e string) string { return `{"t":"sub","stream":"s","epoch":"` + e + `","after":2}` }, replay: []uint64{3, 4, 5}},
		{name: "a cursor at the head replays nothing",
			sub: func(e string) string { return `{"t":"sub","stream":"s","epoch":"` + e + `","after":5}` }},
		{name: "a cursor older than the ring is reset",
			sub: func(e string) string { return `{"t":"sub","stream":"s","epoch":"` + e + `","after":1}` }, reset: true},
		{name: "a cursor from another epoch is reset",
			sub: func(string) string { return `{"t":"sub","stream":"s","epoch":"restarted","after":4}` }, reset: true},
		{name: "a cursor from the future is reset",
			sub: func(e string) string { return `{"t":"sub","stream":"s","epoch":"` + e + `","after":99}` }, reset: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, epoch := streamFixture(t)
			c := f.Dial(t)
			c.Expect(wire.TypeReady)
			c.Send(tt.sub(epoch))
			if tt.reset {
				r := c.Expect(wire.TypeReset)
				if r.Stream != "s" || r.Epoch != epoch || r.Seq != 5 || string(r.Baseline) != `{"upTo":5}` {
					t.Errorf("reset %+v (baseline %s), want stream s, epoch %s, seq 5, baseline {\"upTo\":5}", r, r.Baseline, epoch)
				}
			}
			for _, want := range tt.replay {
				ev := c.Expect(wire.TypeEvent)
				if ev.Seq != want || string(ev.Data) != fmt.Sprintf(`{"i":%d}`, want) {
					t.Errorf("replayed %d %s, want %d", ev.Seq, ev.Data, want)
				}
			}
			publish(t, f.H, "s", `{"i":6}`)
			if ev := c.Expect(wire.TypeEvent); ev.Seq != 6 || ev.Stream != "s" {
				t.Errorf("live event %+v, want seq 6 on s", ev)
			}
		})
	}
}

func TestLiveEventsArriveOnceEachAndInOrderDuringReplay(t *testing.T) {
	f := newFixture(t, `{"ringSize":10000}`, true)
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	c.Send(`{"t":"sub","stream":"s"}`)
	epoch := c.Expect(wire.TypeReset).Epoch
	// A second page subscribes with a cursor while events keep being published.
	d := f.Dial(t)
	d.Expect(wire.TypeReady)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 500 {
			if _, err := f.H.Publish(context.Background(), "s", json.RawMessage(fmt.Sprint(i))); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	d.Send(`{"t":"sub","stream":"s","epoch":"` + epoch + `","after":0}`)
	<-done
	for _, cl := range []*client{c, d} {
		for want := uint64(1); want <= 500; want++ {
			if ev := cl.Expect(wire.TypeEvent); ev.Seq != want {
				t.Fatalf("event seq %d, want %d: a gap or a duplicate", ev.Seq, want)
			}
		}
	}
}

func TestUnsubStopsTheStream(t *testing.T) {
	f := newFixture(t, `{}`, true)
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	c.Send(`{"t":"sub","stream":"a"}`)
	c.Expect(wire.TypeReset)
	c.Send(`{"t":"unsub","stream":"a"}`)
	c.Send(`{"t":"unsub","stream":"never-subscribed"}`) // harmless
	c.Send(`{"t":"sub","stream":"b"}`)
	c.Expect(wire.TypeReset) // b's: the unsub before it has been handled
	publish(t, f.H, "a", `"for nobody"`)
	publish(t, f.H, "b", `"for c"`)
	if ev := c.Expect(wire.TypeEvent); ev.Stream != "b" {
		t.Errorf("after unsub got %+v, want only stream b", ev)
	}
}

// TestSubscriptionChurnDuringPublishingNeitherDeadlocksNorSkips drives every lock of the
// stream path at once: pages join, leave and rejoin with cursors while events are published
// and the stream's fan-out is made and removed again. Like a page, each client drops repeats by
// seq; a gap without a reset fails.
func TestSubscriptionChurnDuringPublishingNeitherDeadlocksNorSkips(t *testing.T) {
	f := newFixture(t, `{"ringSize":64}`, true)
	f.H.SetBaseline("s", func(_ string, head hostplugin.Cursor) (json.RawMessage, error) {
		return json.RawMessage(fmt.Sprint(head.Seq)), nil
	})
	stop := make(chan struct{})
	published := make(chan struct{})
	go func() {
		defer close(published)
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := f.H.Publish(context.Background(), "s", json.RawMessage(`1`)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	const pages = 8
	errs := make(chan error, pages)
	for range pages {
		c := f.Dial(t)
		go func() { errs <- churn(c.Conn) }()
	}
	for range pages {
		select {
		case err := <-errs:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(4 * bound):
			t.Fatal("subscribers stuck: a deadlock on the stream path")
		}
	}
	close(stop)
	<-published
}

// churn subscribes, reads a few frames, unsubscribes and resubscribes from its cursor, twenty
// times, and reports a gap or a failure.
func churn(conn *websocket.Conn) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*bound)
	defer cancel()
	read := func() (wire.HostFrame, error) {
		_, b, err := conn.Read(ctx)
		if err != nil {
			return wire.HostFrame{}, err
		}
		return wire.DecodeHost(b)
	}
	send := func(s string) error { return conn.Write(ctx, websocket.MessageText, []byte(s)) }
	if fr, err := read(); err != nil || fr.T != wire.TypeReady {
		return fmt.Errorf("first frame %+v, %v", fr, err)
	}
	var cur hostplugin.Cursor
	for range 20 {
		sub := `{"t":"sub","stream":"s"}`
		if cur.Epoch != "" {
			sub = fmt.Sprintf(`{"t":"sub","stream":"s","epoch":%q,"after":%d}`, cur.Epoch, cur.Seq)
		}
		if err := send(sub); err != nil {
			return err
		}
		for range 5 {
			fr, err := read()
			if err != nil {
				return err
			}
			switch {
			case fr.T == wire.TypeReset:
				cur = hostplugin.Cursor{Epoch: fr.Epoch, Seq: fr.Seq}
			case fr.T == wire.TypeEvent && fr.Seq <= cur.Seq:
				// a repeat, from the subscription before the unsub: dropped
			case fr.T == wire.TypeEvent && fr.Seq == cur.Seq+1:
				cur.Seq = fr.Seq
			case fr.T == wire.TypeEvent:
				return fmt.Errorf("event %d after cursor %d: a gap without a reset", fr.Seq, cur.Seq)
			}
		}
		if err := send(`{"t":"unsub","stream":"s"}`); err != nil {
			return err
		}
	}
	return nil
}

// slowFollowLog is a Ring whose Follow of one stream blocks until release is closed, as a log
// shared over a network does while it makes round trips.
type slowFollowLog struct {
	*hostplugin.Ring
	slow    string
	entered chan struct{} // closed when the slow Follow has begun
	release chan struct{}
}

func (l *slowFollowLog) Follow(stream string, fn func(hostplugin.Event)) func() {
	if stream == l.slow {
		close(l.entered)
		<-l.release
	}
	return l.Ring.Follow(stream, fn)
}

// The log's Follow is called under no lock another session needs: while the Follow of one
// stream waits on its log, another session subscribes to another stream and is served at once;
// the session that made the slow Follow gets its reset once the Follow returns.
func TestASlowFollowHoldsUpNoOtherStream(t *testing.T) {
	log := &slowFollowLog{Ring: hostplugin.NewRing(16), slow: "slow", entered: make(chan struct{}), release: make(chan struct{})}
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{Log: log})
	released := false
	release := func() {
		if !released {
			released = true
			close(log.release)
		}
	}
	t.Cleanup(release) // before the fixture's: its sessions end only once the Follow returns

	slow := f.Dial(t)
	slow.Expect(wire.TypeReady)
	slow.Send(`{"t":"sub","stream":"slow"}`)
	select {
	case <-log.entered:
	case <-time.After(bound):
		t.Fatalf("the Follow of stream slow did not begin within %v", bound)
	}

	other := f.Dial(t)
	other.Expect(wire.TypeReady)
	other.Send(`{"t":"sub","stream":"other"}`)
	if r := other.Expect(wire.TypeReset); r.Stream != "other" {
		t.Fatalf("the other session got %+v, want its reset of stream other", r)
	}

	release()
	if r := slow.Expect(wire.TypeReset); r.Stream != "slow" {
		t.Fatalf("after the Follow returned the first session got %+v, want its reset of stream slow", r)
	}
}
