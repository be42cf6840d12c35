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

	"github.com/lifeline-go/lifeline/gateway/wire"
	"github.com/lifeline-go/lifeline/hostplugin"
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

func TestAReadyFrameNamesTheDedupStoreAndTheReadLimit(t *testing.T) {
	f, _ := callFixture(t, `{"maxFrameBytes":8192}`)
	r := f.Dial(t).Expect(wire.TypeReady)
	if r.Dedup == "" || r.MaxFrameBytes != 8192 {
		t.Fatalf("ready %+v, want the dedup store's epoch and maxFrameBytes 8192", r)
	}
	if r2 := f.Dial(t).Expect(wire.TypeReady); r2.Dedup != r.Dedup {
		t.Fatalf("two sessions of one Host name two dedup stores: %q, %q", r.Dedup, r2.Dedup)
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
