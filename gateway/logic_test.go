package gateway_test

// Stream logic without a socket: dedupe, resets, the collapse of pending actions, handler
// isolation. These run everywhere, also under js/wasm without a test Host.

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/internal/wire"
)

func newGateway(t *testing.T, opts *gateway.Options) *gateway.Gateway {
	t.Helper()
	if opts == nil {
		opts = &gateway.Options{}
	}
	opts.Logger = quiet
	gw, err := gateway.New("ws://host.test/_lifeline/events", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close(nil) })
	return gw
}

func feed(t *testing.T, s *gateway.TestSession, frames ...string) {
	t.Helper()
	for _, f := range frames {
		if err := s.Feed(f); err != nil {
			t.Fatalf("Feed(%s) = %v", f, err)
		}
	}
}

func event(stream string, seq uint64) string {
	return fmt.Sprintf(`{"t":"event","stream":%q,"seq":%d,"data":{"v":%d}}`, stream, seq, seq)
}

func reset(stream, epoch string, seq uint64) string {
	return fmt.Sprintf(`{"t":"reset","stream":%q,"epoch":%q,"seq":%d,"baseline":{"v":%d}}`, stream, epoch, seq, seq)
}

func frames(fs []wire.PageFrame) string {
	var parts []string
	for _, f := range fs {
		s := f.T + " " + f.Stream
		if f.Epoch != "" {
			s += fmt.Sprintf(" %s@%d", f.Epoch, f.After)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func wantFrames(t *testing.T, got []wire.PageFrame, want string) {
	t.Helper()
	if g := frames(got); g != want {
		t.Fatalf("frames sent = [%s], want [%s]", g, want)
	}
}

func TestReplayOverlapIsDeliveredOnce(t *testing.T) {
	gw := newGateway(t, nil)
	rec := newRecorder()
	sub := gw.Subscribe("s", rec.handle)

	s1 := gateway.NewTestSession(t, gw)
	wantFrames(t, s1.Reconcile(), "sub s")
	feed(t, s1, reset("s", "E", 0), event("s", 1), event("s", 2), event("s", 3))
	s1.End()

	s2 := gateway.NewTestSession(t, gw)
	wantFrames(t, s2.Reconcile(), "sub s E@3")
	// A Host may replay from before the cursor: 2 and 3 were delivered already.
	feed(t, s2, event("s", 2), event("s", 3), event("s", 4), event("s", 5))
	got := rec.waitSeq(t, 5)
	if checkStream(t, got); len(got) != 6 {
		t.Fatalf("delivered %s, want R0 1 2 3 4 5", summary(got))
	}
	if d := gateway.Dups(sub); d != 2 {
		t.Errorf("Dups = %d, want 2", d)
	}
}

func TestEventsBeforeTheFirstResetAreDropped(t *testing.T) {
	gw := newGateway(t, nil)
	rec := newRecorder()
	gw.Subscribe("s", rec.handle)
	s := gateway.NewTestSession(t, gw)
	s.Reconcile()
	// Late events of an earlier subscription on the same socket carry no usable cursor.
	feed(t, s, event("s", 7), reset("s", "E", 9), event("s", 10))
	got := rec.waitSeq(t, 10)
	if summary(got) != "R9 10" {
		t.Fatalf("delivered %s, want R9 10", summary(got))
	}
}

func TestResetRules(t *testing.T) {
	gw := newGateway(t, nil)
	rec := newRecorder()
	gw.Subscribe("s", rec.handle)
	s := gateway.NewTestSession(t, gw)
	s.Reconcile()
	feed(t, s,
		reset("s", "E", 5), event("s", 6), event("s", 7),
		reset("s", "E", 6), // same log, older than delivered: dropped
		event("s", 8),
		reset("s", "E", 20), // same log, ahead (the cursor was too old): applied
		event("s", 21),
		reset("s", "F", 0), // another log: applied whatever its seq
		event("s", 1),
	)
	got := rec.waitFor(t, "event F/1", func(ds []gateway.Delivery) bool {
		return len(ds) > 0 && ds[len(ds)-1].Epoch == "F" && ds[len(ds)-1].Seq == 1
	})
	if want := "R5 6 7 8 R20 21 R0 1"; summary(got) != want {
		t.Fatalf("delivered %s, want %s", summary(got), want)
	}
	if got[len(got)-2].Epoch != "F" || string(got[len(got)-2].Baseline) != `{"v":0}` {
		t.Fatalf("reset = %+v, want epoch F with baseline {\"v\":0}", got[len(got)-2])
	}
}

func TestSeqGapIsAProtocolError(t *testing.T) {
	gw := newGateway(t, nil)
	gw.Subscribe("s", func(gateway.Delivery) {})
	s := gateway.NewTestSession(t, gw)
	s.Reconcile()
	feed(t, s, reset("s", "E", 1), event("s", 2))
	err := s.Feed(event("s", 4))
	if !errors.Is(err, gateway.ErrProtocol) || !strings.Contains(err.Error(), "from seq 2 to 4") {
		t.Fatalf("Feed(gap) = %v, want ErrProtocol naming seq 2 and 4", err)
	}
}

func TestCancelledSessionNoLongerDelivers(t *testing.T) {
	gw := newGateway(t, nil)
	rec := newRecorder()
	gw.Subscribe("s", rec.handle)
	old := gateway.NewTestSession(t, gw)
	old.Reconcile()
	feed(t, old, reset("s", "E", 0), event("s", 1))
	old.End() // replaced: its frames in flight must not race the successor
	feed(t, old, event("s", 2))
	s := gateway.NewTestSession(t, gw)
	wantFrames(t, s.Reconcile(), "sub s E@1")
	feed(t, s, event("s", 2))
	if got := rec.waitSeq(t, 2); summary(got) != "R0 1 2" {
		t.Fatalf("delivered %s, want R0 1 2", summary(got))
	}
}

func TestStormCollapsesToOneActionPerStream(t *testing.T) {
	gw := newGateway(t, nil)
	const calls, streams = 60000, 10
	var wg sync.WaitGroup
	for k := range streams {
		wg.Go(func() {
			name := fmt.Sprintf("s%d", k)
			var sub *gateway.Subscription
			for i := range calls / streams {
				if i%2 == 0 {
					sub = gw.Subscribe(name, func(gateway.Delivery) {})
				} else {
					sub.Unsubscribe()
				}
			}
			// The last request on every stream is a Subscribe.
			gw.Subscribe(name, func(gateway.Delivery) {})
		})
	}
	wg.Wait()
	p := gateway.Pending(gw)
	if len(p) != streams {
		t.Fatalf("pending actions = %v, want one sub for each of %d streams", p, streams)
	}
	s := gateway.NewTestSession(t, gw)
	got := s.Reconcile()
	if len(got) != streams {
		t.Fatalf("recovery sends %d frames [%s], want %d subs", len(got), frames(got), streams)
	}
	for _, f := range got {
		if f.T != wire.TypeSub || f.Epoch != "" {
			t.Fatalf("recovery frame %+v, want a fresh sub", f)
		}
	}
	wantFrames(t, s.Reconcile(), "")
}

func TestCallsWhileConnectedCollapseToo(t *testing.T) {
	gw := newGateway(t, nil)
	s := gateway.NewTestSession(t, gw)
	a := gw.Subscribe("a", func(gateway.Delivery) {})
	wantFrames(t, s.Reconcile(), "sub a")
	feed(t, s, reset("a", "E", 3))
	for range 1000 {
		a.Unsubscribe()
		a = gw.Subscribe("a", func(gateway.Delivery) {})
	}
	gw.Subscribe("b", func(gateway.Delivery) {}).Unsubscribe()
	// a was replaced: the Host must start it over from a baseline; b never reaches the wire.
	wantFrames(t, s.Reconcile(), "unsub a, sub a")
	a.Unsubscribe()
	wantFrames(t, s.Reconcile(), "unsub a")
	wantFrames(t, s.Reconcile(), "")
}

func TestSubscribeReplacesAndValidates(t *testing.T) {
	gw := newGateway(t, nil)
	first := gw.Subscribe("s", func(gateway.Delivery) {})
	second := gw.Subscribe("s", func(gateway.Delivery) {})
	waitClosed(t, "the replaced subscription's end", first.Done())
	if !errors.Is(first.Err(), gateway.ErrReplaced) || second.Err() != nil {
		t.Fatalf("after a second Subscribe: first.Err = %v, second.Err = %v; want ErrReplaced, nil", first.Err(), second.Err())
	}
	for _, tc := range []struct {
		name, stream string
		handler      func(gateway.Delivery)
		want         error
	}{
		{"an empty stream name is refused", "", func(gateway.Delivery) {}, gateway.ErrBadStream},
		{"a stream name over 256 bytes is refused", strings.Repeat("x", 257), func(gateway.Delivery) {}, gateway.ErrBadStream},
		{"a nil handler is refused", "ok", nil, gateway.ErrNilHandler},
	} {
		sub := gw.Subscribe(tc.stream, tc.handler)
		select {
		case <-sub.Done():
		default:
			t.Fatalf("%s: subscription still active", tc.name)
		}
		if !errors.Is(sub.Err(), tc.want) {
			t.Errorf("%s: Err = %v, want %v", tc.name, sub.Err(), tc.want)
		}
	}
}

func TestCloseEndsEverySubscriptionWithTheCause(t *testing.T) {
	gw := newGateway(t, nil)
	subs := []*gateway.Subscription{
		gw.Subscribe("a", func(gateway.Delivery) {}),
		gw.Subscribe("b", func(gateway.Delivery) {}),
	}
	cause := errors.New("page unloading")
	gw.Close(cause)
	gw.Close(errors.New("a later cause is ignored"))
	for _, s := range subs {
		waitClosed(t, s.Stream()+" ended by Close", s.Done())
		if s.Err() != cause {
			t.Errorf("%s: Err = %v, want %v", s.Stream(), s.Err(), cause)
		}
	}
	late := gw.Subscribe("c", func(gateway.Delivery) {})
	waitClosed(t, "the end of a subscription made after Close", late.Done())
	if late.Err() != cause {
		t.Errorf("Subscribe after Close: Err = %v, want %v", late.Err(), cause)
	}
	if len(gateway.Pending(gw)) != 0 {
		t.Errorf("Pending after Close = %v, want none", gateway.Pending(gw))
	}
}

func TestPanickingHandlerIsContained(t *testing.T) {
	gw := newGateway(t, nil)
	rec := newRecorder()
	gw.Subscribe("s", func(d gateway.Delivery) {
		rec.handle(d)
		if d.Seq%2 == 1 {
			panic(fmt.Sprintf("handler bug at %d", d.Seq))
		}
	})
	s := gateway.NewTestSession(t, gw)
	s.Reconcile()
	feed(t, s, reset("s", "E", 0))
	for i := uint64(1); i <= 6; i++ {
		feed(t, s, event("s", i))
	}
	if got := rec.waitSeq(t, 6); summary(got) != "R0 1 2 3 4 5 6" {
		t.Fatalf("delivered %s, want every delivery despite the panics", summary(got))
	}
}

func TestBlockedHandlerStallsOnlyItsStreamThenResyncs(t *testing.T) {
	// In a bubble: "the handler has returned and the gateway has noticed" is synctest.Wait,
	// not a poll.
	synctest.Test(t, func(t *testing.T) {
		const queue = 64
		gw := newGateway(t, &gateway.Options{QueueLen: queue})
		entered, release := make(chan struct{}, 1), make(chan struct{})
		slow := newRecorder()
		gw.Subscribe("slow", func(d gateway.Delivery) {
			slow.handle(d)
			if d.Seq == 1 && !d.Reset {
				entered <- struct{}{}
				<-release
			}
		})
		fast := newRecorder()
		gw.Subscribe("fast", fast.handle)
		s := gateway.NewTestSession(t, gw)
		wantFrames(t, s.Reconcile(), "sub fast, sub slow")
		feed(t, s, reset("slow", "E", 0), reset("fast", "E", 0), event("slow", 1))
		select {
		case <-entered:
		case <-time.After(bound):
			t.Fatal("the slow handler never ran")
		}
		for i := uint64(2); i <= 200; i++ {
			feed(t, s, event("slow", i))
			if i <= 50 {
				feed(t, s, event("fast", i-1))
			}
		}
		if got := fast.waitSeq(t, 49); checkStream(t, got) != 1 {
			t.Fatalf("fast stream: %s", summary(got))
		}
		// Overflowed while stuck: nothing is asked of the Host until the handler returns.
		wantFrames(t, s.Reconcile(), "")
		close(release)
		// Back: a fresh baseline is requested and the stream goes on from it.
		synctest.Wait()
		wantFrames(t, s.Reconcile(), "unsub slow, sub slow")
		feed(t, s, event("slow", 201), reset("slow", "E", 201), event("slow", 202))
		all := slow.waitSeq(t, 202)
		if resets := checkStream(t, all); resets != 2 || len(all) != queue+4 {
			t.Fatalf("slow stream delivered %s, want R0, 1 to %d (the event in the handler and the queue of %d), R201, 202",
				summary(all), queue+1, queue)
		}
	})
}

func TestDoneWaitsForTheRunningHandler(t *testing.T) {
	gw := newGateway(t, nil)
	entered, release := make(chan struct{}), make(chan struct{})
	sub := gw.Subscribe("s", func(gateway.Delivery) {
		close(entered)
		<-release
	})
	s := gateway.NewTestSession(t, gw)
	s.Reconcile()
	feed(t, s, reset("s", "E", 0))
	waitClosed(t, "the handler", entered)
	sub.Unsubscribe()
	select {
	case <-sub.Done():
		t.Fatal("Done closed while the handler was still running")
	default:
	}
	close(release)
	select {
	case <-sub.Done():
	case <-time.After(bound):
		t.Fatal("Done not closed after the handler returned")
	}
	if !errors.Is(sub.Err(), gateway.ErrUnsubscribed) {
		t.Fatalf("Err = %v, want ErrUnsubscribed", sub.Err())
	}
}

func TestErrorFrameIsNotFatal(t *testing.T) {
	gw := newGateway(t, nil)
	s := gateway.NewTestSession(t, gw)
	feed(t, s, `{"t":"error","message":"bad sub"}`, `{"t":"hb"}`)
}

func TestResolveGoAway(t *testing.T) {
	const base = "ws://a.test:8080/s/1/a/_lifeline/events?x=1"
	for _, tc := range []struct{ name, uri, want, err string }{
		{"an empty uri stays empty: come back here", "", "", ""},
		{"an absolute ws uri is kept", "ws://b.test/_lifeline/events", "ws://b.test/_lifeline/events", ""},
		{"https means wss", "https://b.test/_lifeline/events", "wss://b.test/_lifeline/events", ""},
		{"a root-relative path keeps the host", "/other/_lifeline/events", "ws://a.test:8080/other/_lifeline/events", ""},
		{"a relative path resolves against the current URL", "../../b/_lifeline/events", "ws://a.test:8080/s/1/b/_lifeline/events", ""},
		{"a scheme-relative uri keeps the scheme", "//b.test:9/_lifeline/events", "ws://b.test:9/_lifeline/events", ""},
		{"the current URL itself means come back here", base, "", ""},
		{"a fragment is dropped", "ws://b.test/e#frag", "ws://b.test/e", ""},
		{"another scheme is a protocol error", "ftp://b.test/x", "", `scheme must be ws, wss, http or https, got "ftp"`},
		{"an unparsable uri is a protocol error", "ws://b.test/%zz", "", "invalid URL escape"},
	} {
		got, err := gateway.ResolveGoAway(base, tc.uri)
		switch {
		case tc.err != "" && (err == nil || !errors.Is(err, gateway.ErrProtocol) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: ResolveGoAway(%q) error = %v, want ErrProtocol containing %q", tc.name, tc.uri, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%s: ResolveGoAway(%q) = %q, %v; want %q", tc.name, tc.uri, got, err, tc.want)
		}
	}
}

func TestNewChecksTheURL(t *testing.T) {
	for _, tc := range []struct{ name, url, want, err string }{
		{"ws is kept", "ws://h/_lifeline/events", "ws://h/_lifeline/events", ""},
		{"http becomes ws", "http://h:1/_lifeline/events", "ws://h:1/_lifeline/events", ""},
		{"https becomes wss", "https://h/_lifeline/events", "wss://h/_lifeline/events", ""},
		{"a relative URL is refused", "/_lifeline/events", "", `got ""`},
		{"a URL without a host is refused", "ws:///_lifeline/events", "", "no host"},
		{"another scheme is refused", "file:///x", "", `got "file"`},
	} {
		gw, err := gateway.New(tc.url, nil)
		switch {
		case tc.err != "" && (!errors.Is(err, gateway.ErrBadURL) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: New(%q) error = %v, want ErrBadURL containing %q", tc.name, tc.url, err, tc.err)
		case tc.err == "" && (err != nil || gw.URL() != tc.want):
			t.Errorf("%s: New(%q) = %v, %v; want URL %q", tc.name, tc.url, gw, err, tc.want)
		}
	}
}

func TestDeniedSubscriptionEndsAloneAndIsNeverRetried(t *testing.T) {
	gw := newGateway(t, nil)
	mine, theirs := newRecorder(), newRecorder()
	gw.Subscribe("mine", mine.handle)
	secret := gw.Subscribe("theirs", theirs.handle)
	s1 := gateway.NewTestSession(t, gw)
	wantFrames(t, s1.Reconcile(), "sub mine, sub theirs")
	feed(t, s1, reset("mine", "E", 0), `{"t":"denied","stream":"theirs","reason":"not your stream"}`, event("mine", 1))
	waitClosed(t, "the denied subscription's end", secret.Done())
	var de *gateway.DeniedError
	if !errors.Is(secret.Err(), gateway.ErrDenied) || !errors.As(secret.Err(), &de) || de.Reason != "not your stream" {
		t.Fatalf("denied subscription Err = %v, want ErrDenied with the Host's reason", secret.Err())
	}
	if got := summary(mine.waitSeq(t, 1)); got != "R0 1" {
		t.Fatalf("the other stream delivered %s, want it to carry on", got)
	}
	// Neither this session nor the next one asks for it again.
	wantFrames(t, s1.Reconcile(), "")
	s1.End()
	s2 := gateway.NewTestSession(t, gw)
	wantFrames(t, s2.Reconcile(), "sub mine E@1")
	// A later denial for a stream that was unsubscribed meanwhile changes nothing.
	again := gw.Subscribe("theirs", theirs.handle)
	wantFrames(t, s2.Reconcile(), "sub theirs")
	again.Unsubscribe()
	feed(t, s2, `{"t":"denied","stream":"theirs"}`)
	if !errors.Is(again.Err(), gateway.ErrUnsubscribed) {
		t.Fatalf("a late denial replaced the unsubscribe: %v", again.Err())
	}
}

func TestResyncAsksForAFreshBaseline(t *testing.T) {
	gw := newGateway(t, nil)
	rec := newRecorder()
	sub := gw.Subscribe("s", rec.handle)
	s := gateway.NewTestSession(t, gw)
	wantFrames(t, s.Reconcile(), "sub s")
	feed(t, s, reset("s", "E", 0), event("s", 1), event("s", 2))
	rec.waitSeq(t, 2)
	sub.Resync()
	wantFrames(t, s.Reconcile(), "unsub s, sub s")
	// Events of the older sub still in flight are dropped; the fresh reset starts over.
	feed(t, s, event("s", 3), reset("s", "E", 5), event("s", 6))
	if got := summary(rec.waitSeq(t, 6)); got != "R0 1 2 R5 6" {
		t.Fatalf("delivered %s, want the fresh baseline and nothing of the older sub", got)
	}
	sub.Unsubscribe()
	sub.Resync() // ended: nothing to do
	wantFrames(t, s.Reconcile(), "unsub s")
}

func TestSubscribeFromACursorResumesWithoutABaseline(t *testing.T) {
	gw := newGateway(t, nil)
	rec := newRecorder()
	sub := gw.SubscribeWith("s", rec.handle, gateway.SubscribeOptions{From: gateway.Cursor{Epoch: "E", Seq: 7}})
	if c := gateway.CursorOf(sub); c != (gateway.Cursor{Epoch: "E", Seq: 7}) {
		t.Fatalf("cursor = %+v, want E@7 before any session", c)
	}
	s := gateway.NewTestSession(t, gw)
	wantFrames(t, s.Reconcile(), "sub s E@7")
	// What the reader had (7 and before) is dropped; the events after it come as they are.
	feed(t, s, event("s", 6), event("s", 7), event("s", 8), event("s", 9))
	if got := summary(rec.waitSeq(t, 9)); got != "8 9" {
		t.Fatalf("delivered %s, want 8 9: the events after the cursor, no baseline", got)
	}
	// A Host that can no longer replay answers with a reset, delivered as one.
	s.End()
	s2 := gateway.NewTestSession(t, gw)
	wantFrames(t, s2.Reconcile(), "sub s E@9")
	feed(t, s2, reset("s", "F", 40), event("s", 41))
	if got := summary(rec.waitSeq(t, 41)); got != "8 9 R40 41" {
		t.Fatalf("delivered %s, want 8 9 R40 41", got)
	}
}

func TestRewindDeliversAgainFromAnEarlierPointOfTheSameLog(t *testing.T) {
	gw := newGateway(t, nil)
	rec := newRecorder()
	sub := gw.Subscribe("s", rec.handle)
	s := gateway.NewTestSession(t, gw)
	wantFrames(t, s.Reconcile(), "sub s")
	feed(t, s, reset("s", "E", 0), event("s", 1), event("s", 2), event("s", 3))
	rec.waitSeq(t, 3)
	for _, c := range []gateway.Cursor{{Epoch: "F", Seq: 1}, {Epoch: "E", Seq: 3}, {Epoch: "E", Seq: 5}, {}} {
		sub.Rewind(c) // another log, not behind: nothing to do
		wantFrames(t, s.Reconcile(), "")
	}
	sub.Rewind(gateway.Cursor{Epoch: "E", Seq: 1})
	if c := gateway.CursorOf(sub); c != (gateway.Cursor{Epoch: "E", Seq: 1}) {
		t.Fatalf("cursor = %+v, want E@1", c)
	}
	wantFrames(t, s.Reconcile(), "unsub s, sub s E@1")
	// A frame of the older sub still in flight is dropped; the replay comes again, once.
	feed(t, s, event("s", 4), event("s", 2), event("s", 3), event("s", 4))
	if got := summary(rec.waitFor(t, "the replay", func(ds []gateway.Delivery) bool { return len(ds) == 7 })); got != "R0 1 2 3 2 3 4" {
		t.Fatalf("delivered %s, want R0 1 2 3 then 2 3 4 again from the rewound cursor", got)
	}
	sub.Unsubscribe()
	sub.Rewind(gateway.Cursor{Epoch: "E", Seq: 0}) // ended: nothing to do
	wantFrames(t, s.Reconcile(), "unsub s")
}
