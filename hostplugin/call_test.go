//go:build !js

package hostplugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// ledger counts the runs of a handler per key, the way the chaos soak checks "never twice".
type ledger struct {
	mu   sync.Mutex
	runs map[string]int
}

func (l *ledger) count(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runs[key]
}

// handler records each run of its call (by data) and replies with what it got.
func (l *ledger) handler(ctx context.Context, c *hostplugin.Call) (json.RawMessage, error) {
	l.mu.Lock()
	if l.runs == nil {
		l.runs = map[string]int{}
	}
	l.runs[c.Key+"|"+string(c.Data)]++
	n := l.runs[c.Key+"|"+string(c.Data)]
	l.mu.Unlock()
	return json.RawMessage(fmt.Sprintf(`{"who":%q,"data":%s,"run":%d}`, c.Identity, c.Data, n)), nil
}

// callFixture is a Host with the handlers tests call, and users by their "user" header.
func callFixture(t *testing.T, doc string) (*fixture, *ledger) {
	t.Helper()
	f := newFixtureWith(t, doc, true, hostplugin.Options{
		Authenticate: func(r *http.Request) (string, error) { return r.Header.Get("User"), nil },
	})
	l := &ledger{}
	f.H.HandleCall("echo", l.handler)
	f.H.HandleCall("fail", func(context.Context, *hostplugin.Call) (json.RawMessage, error) {
		return nil, errors.New("no such room\nsecret detail on the second line")
	})
	f.H.HandleCall("panic", func(context.Context, *hostplugin.Call) (json.RawMessage, error) { panic("boom: a secret") })
	return f, l
}

func dialUser(t *testing.T, f *fixture, user string) *client {
	t.Helper()
	c, err := f.TryDial(t, http.Header{"User": {user}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAReadyFrameNamesTheDedupStoreItsWindowAndTheReadLimit(t *testing.T) {
	f, _ := callFixture(t, `{"maxFrameBytes":8192,"callDedupMs":90000}`)
	r := f.Dial(t).Expect(wire.TypeReady)
	if r.Dedup == "" || r.DedupMs != 90000 || r.MaxFrameBytes != 8192 {
		t.Fatalf("ready %+v, want the dedup store's epoch, its window 90000 ms and maxFrameBytes 8192", r)
	}
	if r2 := f.Dial(t).Expect(wire.TypeReady); r2.Dedup != r.Dedup {
		t.Fatalf("two sessions of one Host name two dedup stores: %q, %q", r.Dedup, r2.Dedup)
	}
}

// The ready frame tags the session's identity (who): one tag for every session of an
// identity, another for another identity, and the identity itself not in it. The page sends
// a keyed call again only to a session of the tag it was first sent under.
func TestAReadyFrameTagsTheIdentityWithoutNamingIt(t *testing.T) {
	f, _ := callFixture(t, `{}`)
	tag := func(user string) string {
		r := dialUser(t, f, user).Expect(wire.TypeReady)
		if r.Who == "" || strings.Contains(r.Who, user) {
			t.Fatalf("%s's ready frame tags the identity %q, want a tag that does not name it", user, r.Who)
		}
		return r.Who
	}
	alice, again, bob := tag("alice@example.com"), tag("alice@example.com"), tag("bob@example.com")
	if alice != again || alice == bob {
		t.Fatalf("tags: alice %q and %q, bob %q; want alice's alike and bob's another", alice, again, bob)
	}
}

func TestACallRunsItsHandlerWithTheIdentityAndGetsItsReply(t *testing.T) {
	f, _ := callFixture(t, `{}`)
	c := dialUser(t, f, "alice")
	c.Expect(wire.TypeReady)
	c.Send(`{"t":"call","id":1,"name":"echo","data":{"text":"hi"}}`)
	r := c.Expect(wire.TypeReply)
	if r.ID != 1 || r.Code != "" || string(r.Data) != `{"who":"alice","data":{"text":"hi"},"run":1}` {
		t.Fatalf("reply %+v (data %s), want the handler's reply to call 1", r, r.Data)
	}
	c.Send(`{"t":"call","id":2,"name":"echo"}`) // no data: null
	if r := c.Expect(wire.TypeReply); r.ID != 2 || string(r.Data) != `{"who":"alice","data":null,"run":1}` {
		t.Fatalf("reply %+v (data %s), want call 2 with null data", r, r.Data)
	}
}

func TestCallFailuresAreRepliesAndTheSessionLivesOn(t *testing.T) {
	f, l := callFixture(t, `{}`)
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	for _, tc := range []struct {
		frame, code, msg string
	}{
		{`{"t":"call","id":1,"name":"nope"}`, wire.CodeUnknown, `no handler for the call "nope"`},
		{`{"t":"call","id":2,"name":"fail"}`, wire.CodeApp, "no such room"},
		{`{"t":"call","id":3,"name":"panic"}`, wire.CodeInternal, "internal error"},
		{`{"t":"call","id":4,"name":"bad name!"}`, wire.CodeBadRequest, "bad call name"},
		{`{"t":"call","id":5,"name":"echo","key":""}`, "", ""},
	} {
		c.Send(tc.frame)
		r := c.Expect(wire.TypeReply)
		if r.Code != tc.code || !strings.Contains(r.Error, tc.msg) {
			t.Errorf("%s: reply %+v, want code %q with %q", tc.frame, r, tc.code, tc.msg)
		}
		if strings.Contains(r.Error, "secret") {
			t.Errorf("%s: reply %+v shows the page more than the error's first line", tc.frame, r)
		}
	}
	if n := l.count("|null"); n != 1 {
		t.Fatalf("echo ran %d times, want 1: no failure ends the session", n)
	}
	if !f.Logs.Has("panicked", "boom") {
		t.Errorf("the handler's panic was not logged with its text")
	}
}

// Every call frame with a readable id gets a reply to that id, whatever else is wrong with it:
// a name or key of the wrong JSON type, a member given twice, anything after the frame. So
// every call a page makes settles. A frame that names no id gets an error frame.
func TestEveryCallFrameWithAReadableIDGetsAReplyToIt(t *testing.T) {
	f, l := callFixture(t, `{}`)
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	for _, tc := range []struct {
		frame string
		id    uint64
	}{
		{`{"t":"call","id":1,"name":5}`, 1},
		{`{"t":"call","id":2,"name":{"n":"echo"}}`, 2},
		{`{"t":"call","id":3,"name":"echo","key":7}`, 3},
		{`{"t":"call","id":4,"name":"echo","key":{"k":1}}`, 4},
		{`{"key":["k"],"name":null,"id":5,"t":"call"}`, 5},
		{`{"t":"call","id":6,"name":"echo","name":"echo"}`, 6},
		{`{"t":"call","id":7,"name":"echo"} {}`, 7},
	} {
		c.Send(tc.frame)
		if r := c.Expect(wire.TypeReply); r.ID != tc.id || r.Code != wire.CodeBadRequest {
			t.Errorf("%s: %+v, want a bad-request reply to call %d", tc.frame, r, tc.id)
		}
	}
	c.Send(`{"t":"call","id":"8","name":"echo"}`) // an id of the wrong type is no id
	if r := c.Expect(wire.TypeError); !strings.Contains(r.Message, "id must be a number") {
		t.Errorf("a call frame with no readable id: %+v, want an error frame", r)
	}
	if l.count("|null") != 0 {
		t.Errorf("a bad call frame ran its handler")
	}
	c.Send(`{"t":"call","id":9,"name":"echo","data":1}`)
	if r := c.Expect(wire.TypeReply); r.ID != 9 || string(r.Data) == "" {
		t.Errorf("after the bad frames: %+v, want call 9's reply: the session lives on", r)
	}
}

func TestAKeyedCallRunsOncePerIdentityAndKeyAndAReSendGetsTheFirstOutcome(t *testing.T) {
	f, l := callFixture(t, `{}`)
	a := dialUser(t, f, "alice")
	a.Expect(wire.TypeReady)
	a.Send(`{"t":"call","id":1,"name":"echo","data":1,"key":"k"}`)
	first := a.Expect(wire.TypeReply)
	// The page came back on another session (after an outage) and sends it again, under
	// another id: the first outcome, and no second run.
	a2 := dialUser(t, f, "alice")
	a2.Expect(wire.TypeReady)
	a2.Send(`{"t":"call","id":1,"name":"echo","data":1,"key":"k"}`)
	again := a2.Expect(wire.TypeReply)
	if string(again.Data) != string(first.Data) || l.count("k|1") != 1 {
		t.Fatalf("re-send: %s after %s, %d runs; want the first outcome and one run", again.Data, first.Data, l.count("k|1"))
	}
	// Another identity's key is another key.
	b := dialUser(t, f, "bob")
	b.Expect(wire.TypeReady)
	b.Send(`{"t":"call","id":1,"name":"echo","data":1,"key":"k"}`)
	if r := b.Expect(wire.TypeReply); !strings.Contains(string(r.Data), `"who":"bob"`) || l.count("k|1") != 2 {
		t.Fatalf("bob's call with alice's key: %s, %d runs; want bob's own run", r.Data, l.count("k|1"))
	}
	// Failures are outcomes too: a re-send of a failed keyed call gets the same failure.
	a.Send(`{"t":"call","id":2,"name":"fail","key":"f"}`)
	a.Send(`{"t":"call","id":3,"name":"fail","key":"f"}`)
	if r1, r2 := a.Expect(wire.TypeReply), a.Expect(wire.TypeReply); r1.Code != wire.CodeApp || r2.Code != r1.Code || r2.Error != r1.Error {
		t.Fatalf("a failed keyed call sent twice: %+v then %+v, want the same failure", r1, r2)
	}
}

func TestTheSameKeyFromTwoTabsAtOnceRunsOnceAndBothGetItsOutcome(t *testing.T) {
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{})
	var runs atomic.Int32
	entered, release := make(chan struct{}), make(chan struct{})
	f.H.HandleCall("slow", func(context.Context, *hostplugin.Call) (json.RawMessage, error) {
		runs.Add(1)
		entered <- struct{}{}
		<-release
		return json.RawMessage(`"done"`), nil
	})
	a, b := f.Dial(t), f.Dial(t)
	a.Expect(wire.TypeReady)
	b.Expect(wire.TypeReady)
	a.Send(`{"t":"call","id":1,"name":"slow","key":"same"}`)
	<-entered
	b.Send(`{"t":"call","id":1,"name":"slow","key":"same"}`)
	close(release)
	ra, rb := a.Expect(wire.TypeReply), b.Expect(wire.TypeReply)
	if string(ra.Data) != `"done"` || string(rb.Data) != `"done"` || runs.Load() != 1 {
		t.Fatalf("replies %s and %s after %d runs, want one run and its outcome for both", ra.Data, rb.Data, runs.Load())
	}
}

func TestASessionsCallsRunOneAtATimeInTheOrderSent(t *testing.T) {
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{})
	var mu sync.Mutex
	var order []string
	running := atomic.Int32{}
	f.H.HandleCall("step", func(_ context.Context, c *hostplugin.Call) (json.RawMessage, error) {
		if running.Add(1) != 1 {
			t.Errorf("two calls of one session ran at once")
		}
		defer running.Add(-1)
		time.Sleep(time.Millisecond) // long enough for a second run to overlap, were it let
		mu.Lock()
		order = append(order, string(c.Data))
		mu.Unlock()
		return nil, nil
	})
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	for i := 1; i <= 20; i++ {
		c.Send(fmt.Sprintf(`{"t":"call","id":%d,"name":"step","data":%d}`, i, i))
	}
	for i := 1; i <= 20; i++ {
		if r := c.Expect(wire.TypeReply); r.ID != uint64(i) || string(r.Data) != "null" {
			t.Fatalf("reply %d: %+v, want the replies in order", i, r)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(order, ","); got != "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20" {
		t.Fatalf("ran in the order %s, want the order sent", got)
	}
}

func TestCallsOverTheSessionsRateAreBusyWithAWaitAndTheSessionLives(t *testing.T) {
	f, l := callFixture(t, `{"callRate":1,"callBurst":2}`)
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	for i := 1; i <= 3; i++ {
		c.Send(fmt.Sprintf(`{"t":"call","id":%d,"name":"echo","data":%d}`, i, i))
	}
	var busy []wire.HostFrame
	for range 3 {
		if r := c.Expect(wire.TypeReply); r.Code == wire.CodeBusy {
			busy = append(busy, r)
		}
	}
	if len(busy) != 1 || busy[0].ID != 3 || busy[0].RetryAfterMs <= 0 || busy[0].RetryAfterMs > 1000 {
		t.Fatalf("busy replies %+v, want call 3 refused with the wait to the next token", busy)
	}
	if l.count("|3") != 0 {
		t.Fatalf("the refused call ran")
	}
	c.Send(`{"t":"ping"}`)
	c.Expect(wire.TypeHeartbeat) // the session lives on
}

func TestAHandlersContextOutlivesThePageAndItsKeyedOutcomeIsKept(t *testing.T) {
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{})
	var runs atomic.Int32
	entered, release, finished := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	f.H.HandleCall("save", func(ctx context.Context, c *hostplugin.Call) (json.RawMessage, error) {
		runs.Add(1)
		close(entered)
		<-release
		finished <- ctx.Err()
		return json.RawMessage(`"saved"`), nil
	})
	a := f.Dial(t)
	a.Expect(wire.TypeReady)
	a.Send(`{"t":"call","id":1,"name":"save","key":"doc-1"}`)
	<-entered
	_ = a.Conn.CloseNow() // the page's link dropped mid-call
	waitFor(t, "the session to end", func() bool { return f.H.Sessions() == 0 })
	close(release)
	if err := <-finished; err != nil {
		t.Fatalf("the handler's context ended with the page: %v", err)
	}
	b := f.Dial(t)
	b.Expect(wire.TypeReady)
	b.Send(`{"t":"call","id":1,"name":"save","key":"doc-1"}`)
	if r := b.Expect(wire.TypeReply); string(r.Data) != `"saved"` || runs.Load() != 1 {
		t.Fatalf("the re-send after the drop: %+v after %d runs, want the first outcome", r, runs.Load())
	}
}

// A re-send of a keyed call whose first run is still going waits for that run; a run that
// outlasts the re-send's own call timeout (its handler ignores its context) is still running,
// so the re-send is answered timeout ("it may still run, at most once"), never busy ("it did
// not run"). Once the run ends, a re-send gets its outcome, and it ran once.
func TestAReSendWhileTheFirstRunIsStillGoingIsATimeoutNeverBusy(t *testing.T) {
	f := newFixtureWith(t, `{"callTimeoutMs":100}`, true, hostplugin.Options{})
	var runs atomic.Int32
	entered, gate := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	f.H.HandleCall("overrun", func(context.Context, *hostplugin.Call) (json.RawMessage, error) {
		runs.Add(1)
		close(entered)
		<-gate // past the call timeout: it ignores its context
		return json.RawMessage(`"done"`), nil
	})
	a := f.Dial(t)
	a.Expect(wire.TypeReady)
	a.Send(`{"t":"call","id":1,"name":"overrun","key":"k"}`)
	<-entered
	b := f.Dial(t) // the page, back after a reconnect, sends it again
	b.Expect(wire.TypeReady)
	b.Send(`{"t":"call","id":1,"name":"overrun","key":"k"}`)
	if r := b.Expect(wire.TypeReply); r.Code != wire.CodeTimeout || !strings.Contains(r.Error, "still running") {
		t.Fatalf("a re-send while the first run is still going, past its call timeout: %+v, want timeout saying it is still running (busy says it did not run)", r)
	}
	if f.Logs.Has("refused as busy") {
		t.Errorf("the Host logged the running call as one the store cannot say about")
	}
	release()
	if r := a.Expect(wire.TypeReply); string(r.Data) != `"done"` {
		t.Fatalf("the first run's own page: %+v, want its reply", r)
	}
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	c.Send(`{"t":"call","id":1,"name":"overrun","key":"k"}`)
	if r := c.Expect(wire.TypeReply); string(r.Data) != `"done"` || runs.Load() != 1 {
		t.Fatalf("a re-send after the run ended: %+v after %d runs, want the first outcome and one run", r, runs.Load())
	}
}

// The store's side of it: a Do whose context ends while the first run of its key is still
// going says so (ErrCallRunning), and a later Do gets that run's outcome.
func TestTheMemoryStoreSaysARunIsStillGoingWhenAWaitersContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := hostplugin.NewMemoryCallStore(time.Minute, 0)
		gate := make(chan struct{})
		release := sync.OnceFunc(func() { close(gate) })
		defer release() // a failure must not leave the run blocked in the bubble
		first := make(chan hostplugin.CallOutcome, 1)
		go func() {
			out, _ := s.Do(t.Context(), "u", "k", func() hostplugin.CallOutcome {
				<-gate
				return hostplugin.CallOutcome{Reply: json.RawMessage(`"first"`)}
			})
			first <- out
		}()
		synctest.Wait()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		ran := false
		again := func() hostplugin.CallOutcome { ran = true; return hostplugin.CallOutcome{} }
		if out, err := s.Do(ctx, "u", "k", again); !errors.Is(err, hostplugin.ErrCallRunning) || ran {
			t.Fatalf("a waiter at its deadline: %+v, %v (ran %v); want ErrCallRunning and no run", out, err, ran)
		}
		release()
		<-first
		if out, err := s.Do(t.Context(), "u", "k", again); err != nil || string(out.Reply) != `"first"` || ran {
			t.Fatalf("after the run: %+v, %v (ran %v); want its outcome", out, err, ran)
		}
	})
}

func TestAReplyThePageCouldNotTakeIsAnInternalError(t *testing.T) {
	f := newFixtureWith(t, `{"maxEventBytes":16}`, true, hostplugin.Options{})
	f.H.HandleCall("big", func(context.Context, *hostplugin.Call) (json.RawMessage, error) {
		return json.RawMessage(`"` + strings.Repeat("x", 16) + `"`), nil
	})
	f.H.HandleCall("broken", func(context.Context, *hostplugin.Call) (json.RawMessage, error) {
		return json.RawMessage(`{"a":`), nil
	})
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	c.Send(`{"t":"call","id":1,"name":"big"}`)
	c.Send(`{"t":"call","id":2,"name":"broken"}`)
	for id := uint64(1); id <= 2; id++ {
		if r := c.Expect(wire.TypeReply); r.ID != id || r.Code != wire.CodeInternal {
			t.Fatalf("reply %+v, want call %d answered internal", r, id)
		}
	}
}

func TestAHandlerPastTheCallTimeoutIsATimeout(t *testing.T) {
	f := newFixtureWith(t, `{"callTimeoutMs":20}`, true, hostplugin.Options{})
	f.H.HandleCall("stuck", func(ctx context.Context, _ *hostplugin.Call) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	c.Send(`{"t":"call","id":1,"name":"stuck"}`)
	if r := c.Expect(wire.TypeReply); r.Code != wire.CodeTimeout {
		t.Fatalf("reply %+v, want timeout", r)
	}
}

func TestHandleCallRefusesWhatItCannotServe(t *testing.T) {
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{})
	ok := func(context.Context, *hostplugin.Call) (json.RawMessage, error) { return nil, nil }
	f.H.HandleCall("a", ok)
	for _, tc := range []struct {
		name, want string
		fn         hostplugin.CallHandler
	}{
		{"a", "registered for this name already", ok},
		{"b c", "bad call name", ok},
		{"", "bad call name", ok},
		{"d", "nil handler", nil},
	} {
		func() {
			defer func() {
				if p := fmt.Sprint(recover()); !strings.Contains(p, tc.want) {
					t.Errorf("HandleCall(%q) panicked with %q, want %q", tc.name, p, tc.want)
				}
			}()
			f.H.HandleCall(tc.name, tc.fn)
		}()
	}
}

func TestTheMemoryStoreForgetsAfterItsWindowAndRefusesWhenFull(t *testing.T) {
	s := hostplugin.NewMemoryCallStore(time.Hour, 1)
	ctx := context.Background()
	run := func() hostplugin.CallOutcome { return hostplugin.CallOutcome{Reply: json.RawMessage(`1`)} }
	if _, err := s.Do(ctx, "u", "k1", run); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Do(ctx, "u", "k2", run); !errors.Is(err, hostplugin.ErrCallStoreFull) {
		t.Fatalf("a second key in a store of one: %v, want ErrCallStoreFull (never a run without its guarantee)", err)
	}
	synctest.Test(t, func(t *testing.T) {
		short := hostplugin.NewMemoryCallStore(time.Minute, 1)
		if _, err := short.Do(ctx, "u", "k1", run); err != nil {
			t.Fatal(err)
		}
		ran := false
		again := func() hostplugin.CallOutcome { ran = true; return run() }
		time.Sleep(time.Minute - time.Nanosecond)
		if _, err := short.Do(ctx, "u", "k1", again); err != nil || ran {
			t.Fatalf("within the window: %v, ran %v; want the first outcome", err, ran)
		}
		time.Sleep(time.Nanosecond)
		if _, err := short.Do(ctx, "u", "k1", again); err != nil || !ran {
			t.Fatalf("after the window: %v, ran %v; want the key run again", err, ran)
		}
		if s.Epoch() == short.Epoch() {
			t.Fatalf("two stores share the epoch %q", s.Epoch())
		}
	})
}

// switchingStore is a store whose epoch the test changes, as a shared bucket made again.
type switchingStore struct {
	*hostplugin.MemoryCallStore
	epoch atomic.Value
}

func (s *switchingStore) Epoch() string { return s.epoch.Load().(string) }

func TestAKeyedCallOnASessionWhoseStoreChangedIsInterruptedNotRun(t *testing.T) {
	store := &switchingStore{MemoryCallStore: hostplugin.NewMemoryCallStore(time.Minute, 0)}
	store.epoch.Store("first")
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{Calls: store})
	l := &ledger{}
	f.H.HandleCall("echo", l.handler)
	c := f.Dial(t)
	if r := c.Expect(wire.TypeReady); r.Dedup != "first" {
		t.Fatalf("ready %+v, want the store's epoch", r)
	}
	store.epoch.Store("second") // the bucket was made again under this session
	c.Send(`{"t":"call","id":1,"name":"echo","data":1,"key":"k"}`)
	if r := c.Expect(wire.TypeReply); r.Code != wire.CodeInterrupted || l.count("k|1") != 0 {
		t.Fatalf("reply %+v after %d runs, want interrupted and no run: the page may be re-sending what the old store ran", r, l.count("k|1"))
	}
	c.Send(`{"t":"call","id":2,"name":"echo","data":2}`) // unkeyed calls are not the store's
	if r := c.Expect(wire.TypeReply); r.Code != "" {
		t.Fatalf("an unkeyed call: %+v, want its reply", r)
	}
	if r := f.Dial(t).Expect(wire.TypeReady); r.Dedup != "second" {
		t.Fatalf("a new session's ready %+v, want the new epoch", r)
	}
}

// A page that left a session with calls in flight fences it from its next session: the Host
// answers which of them started (the highest id), and none of that session's calls starts
// afterwards, however late it reaches the Host or however long it waited there. The page is
// told only then, so nothing it is told can be made untrue.
func TestAFencedSessionStartsNoMoreCallsAndTheFenceSaysWhichStarted(t *testing.T) {
	f, l := callFixture(t, `{}`)
	entered, gate := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	f.H.HandleCall("slow", func(context.Context, *hostplugin.Call) (json.RawMessage, error) {
		close(entered)
		<-gate
		return json.RawMessage(`"slow"`), nil
	})
	old := f.Dial(t) // the Host still thinks this page is here: a half-open link
	x := old.Expect(wire.TypeReady).Session
	old.Send(`{"t":"call","id":1,"name":"slow"}`)
	<-entered
	old.Send(`{"t":"call","id":2,"name":"echo","data":"behind"}`) // waits behind call 1

	now := f.Dial(t)
	now.Expect(wire.TypeReady)
	now.Send(`{"t":"fence","session":"` + x + `"}`)
	if r := now.Expect(wire.TypeFenced); r.Session != x || r.Started != 1 {
		t.Fatalf("the fence: %+v, want session %q fenced with call 1 started", r, x)
	}
	release() // call 1 ends; call 2 must not start
	if r := old.Expect(wire.TypeReply); r.ID != 1 {
		t.Fatalf("the old session: %+v, want call 1's reply", r)
	}
	old.Send(`{"t":"call","id":3,"name":"echo","data":"late"}`) // a frame that reaches the Host late
	waitFor(t, "the Host to refuse the fenced session's next call", func() bool { return f.Logs.Has("fenced it") })
	old.Send(`{"t":"ping"}`)
	old.Expect(wire.TypeHeartbeat) // the reader has taken call 3, which never starts
	if n, m := l.count(`|"behind"`), l.count(`|"late"`); n != 0 || m != 0 {
		t.Fatalf("after the fence the old session ran call 2 %d times and call 3 %d times, want neither", n, m)
	}
	// A fence of a session none of whose calls started, and a fence answered again, say so.
	now.Send(`{"t":"fence","session":"0123456789abcdef01234567"}`)
	if r := now.Expect(wire.TypeFenced); r.Started != 0 {
		t.Fatalf("a fence of a session no call of which started: %+v, want started 0", r)
	}
	now.Send(`{"t":"fence","session":"` + x + `"}`)
	if r := now.Expect(wire.TypeFenced); r.Started != 1 {
		t.Fatalf("the same fence again: %+v, want started 1", r)
	}
	now.Send(`{"t":"call","id":1,"name":"echo","data":"on"}`)
	if r := now.Expect(wire.TypeReply); r.ID != 1 || r.Code != "" {
		t.Fatalf("a call on the page's session after its fences: %+v, want its reply", r)
	}
}

func TestASessionCannotFenceItself(t *testing.T) {
	f, _ := callFixture(t, `{}`)
	c := f.Dial(t)
	x := c.Expect(wire.TypeReady).Session
	c.Send(`{"t":"fence","session":"` + x + `"}`)
	if r := c.Expect(wire.TypeError); !strings.Contains(r.Message, "cannot fence itself") {
		t.Fatalf("a session fencing itself: %+v, want an error frame", r)
	}
	c.Send(`{"t":"call","id":1,"name":"echo"}`)
	if r := c.Expect(wire.TypeReply); r.Code != "" {
		t.Fatalf("a call after it: %+v, want its reply: the session is not fenced", r)
	}
}

// The memory store's records of sessions, as moments: Start records the highest id started,
// Fence stops every later Start and says that id; a record is kept for the window from its
// last write, a fenced one for an hour at least; a full store refuses new sessions.
func TestTheMemoryStoreFencesASession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := hostplugin.NewMemoryCallStore(time.Minute, 2)
		t0 := time.Now()
		at := func(d time.Duration) { time.Sleep(time.Until(t0.Add(d))) }
		for _, m := range []struct {
			at      time.Duration
			op      string // "start x 3" or "fence x"
			started uint64
			err     error
		}{
			{0, "start a 1", 0, nil},
			{0, "start a 3", 0, nil},
			{0, "fence a", 3, nil},
			{0, "start a 4", 0, hostplugin.ErrSessionFenced},
			{0, "fence a", 3, nil},
			{0, "fence b", 0, nil}, // none of its calls started
			{0, "start b 1", 0, hostplugin.ErrSessionFenced},
			{0, "start c 1", 0, hostplugin.ErrCallStoreFull},                // two records kept already
			{59 * time.Minute, "start a 5", 0, hostplugin.ErrSessionFenced}, // late: and the fence holds an hour from now
			{time.Hour, "start c 1", 0, nil},                                // b is gone: room again
			{time.Hour, "start a 6", 0, hostplugin.ErrSessionFenced},
			{time.Hour + time.Minute - time.Nanosecond, "fence c", 1, nil},
			{time.Hour + 2*time.Minute, "fence c", 1, nil}, // the fence kept it
			{2 * time.Hour, "start a 9", 0, nil},           // an hour after the last late call: over
			{2*time.Hour + time.Minute - time.Nanosecond, "fence a", 9, nil},
			{4 * time.Hour, "fence a", 0, nil}, // long after: a record of its own
		} {
			at(m.at)
			var started uint64
			var err error
			var who string
			var id uint64
			if _, e := fmt.Sscanf(m.op, "start %s %d", &who, &id); e == nil {
				err = s.Start(ctx, who, id)
			} else {
				fmt.Sscanf(m.op, "fence %s", &who)
				started, err = s.Fence(ctx, who)
			}
			if !errors.Is(err, m.err) || (m.err == nil && err != nil) || started != m.started {
				t.Errorf("at %v, %s: %d, %v; want %d, %v", m.at, m.op, started, err, m.started, m.err)
			}
		}
	})
}

// A session on the HTTP carrier keeps the same call rules: a page that left it (a stream the
// Host still holds, a POST still on its way) fences it from its next session, itself on the
// HTTP carrier, and no call of it starts after that, not even one whose POST arrives late.
func TestAFenceStopsTheCallsOfAnHTTPSessionToo(t *testing.T) {
	f, l := callFixture(t, `{}`)
	entered, gate := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	f.H.HandleCall("slow", func(context.Context, *hostplugin.Call) (json.RawMessage, error) {
		close(entered)
		<-gate
		return json.RawMessage(`"slow"`), nil
	})
	old := dialHTTP(f, t, false) // a stream the Host still holds: the page has left it
	x := old.ready.Session
	old.send(`{"t":"call","id":1,"name":"slow"}`)
	<-entered
	old.send(`{"t":"call","id":2,"name":"echo","data":"behind"}`) // waits behind call 1

	now := dialHTTP(f, t, true)
	now.send(`{"t":"fence","session":"` + x + `"}`)
	if r := now.expect(wire.TypeFenced); r.Session != x || r.Started != 1 {
		t.Fatalf("the fence over the HTTP carrier: %+v, want session %q fenced with call 1 started", r, x)
	}
	release() // call 1 ends; call 2 must not start
	if r := old.expect(wire.TypeReply); r.ID != 1 {
		t.Fatalf("the old session: %+v, want call 1's reply", r)
	}
	waitFor(t, "the Host to refuse the fenced session's next call", func() bool { return f.Logs.Has("fenced it") })
	old.send(`{"t":"call","id":3,"name":"echo","data":"late"}`, `{"t":"ping"}`) // a POST that arrives late
	old.expect(wire.TypeHeartbeat)                                              // the session has taken call 3, which never starts
	if n, m := l.count(`|"behind"`), l.count(`|"late"`); n != 0 || m != 0 {
		t.Fatalf("after the fence the old HTTP session ran call 2 %d times and call 3 %d times, want neither", n, m)
	}
	now.send(`{"t":"call","id":1,"name":"echo","data":"on"}`)
	if r := now.expect(wire.TypeReply); r.ID != 1 || r.Code != "" {
		t.Fatalf("a call on the page's session after its fence: %+v, want its reply", r)
	}
}

// A page fences only sessions of its own identity: a session id is no secret, and a fence
// from another identity stops nothing (and says nothing started). The page's own next
// session, of the same identity, fences it.
func TestOnlyThePagesOwnIdentityFencesItsSession(t *testing.T) {
	f, l := callFixture(t, `{}`)
	entered, gate := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	f.H.HandleCall("slow", func(context.Context, *hostplugin.Call) (json.RawMessage, error) {
		close(entered)
		<-gate
		return json.RawMessage(`"slow"`), nil
	})
	alice := dialUser(t, f, "alice")
	x := alice.Expect(wire.TypeReady).Session
	alice.Send(`{"t":"call","id":1,"name":"slow"}`)
	<-entered
	alice.Send(`{"t":"call","id":2,"name":"echo","data":"behind"}`)

	mallory := dialUser(t, f, "mallory")
	mallory.Expect(wire.TypeReady)
	mallory.Send(`{"t":"fence","session":"` + x + `"}`)
	if r := mallory.Expect(wire.TypeFenced); r.Started != 0 {
		t.Fatalf("another identity's fence: %+v, want nothing said started", r)
	}
	release()
	if r := alice.Expect(wire.TypeReply); r.ID != 1 {
		t.Fatalf("alice's session: %+v, want call 1's reply", r)
	}
	if r := alice.Expect(wire.TypeReply); r.ID != 2 || r.Code != "" || l.count(`|"behind"`) != 1 {
		t.Fatalf("alice's call 2 after another identity's fence: %+v, %d runs; want its reply, run once", r, l.count(`|"behind"`))
	}
	again := dialUser(t, f, "alice")
	again.Expect(wire.TypeReady)
	again.Send(`{"t":"fence","session":"` + x + `"}`)
	if r := again.Expect(wire.TypeFenced); r.Started != 2 {
		t.Fatalf("alice's own fence: %+v, want calls up to 2 started", r)
	}
}
