//go:build !js

package gateway_test

// Calls against the real Host (hostplugin), in a bubble: every failure the README's call table
// names, as the page sees it. The Hosts are served in memory by name (a.invalid, b.invalid),
// so a test can stop one, start another in its place, or send the page from one to the other.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/test/wstest"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// callWorld is a few Hosts served in memory by host name, with handlers that count their runs.
type callWorld struct {
	t     *testing.T
	mu    sync.Mutex
	hosts map[string]*hostplugin.Host // by URL host; replaced by start
	runs  map[string]int              // handler runs by the call's data
	began map[string]time.Time        // when the first run of each call's data began
	gate  chan struct{}               // "hold" waits for it to close
	user  string                      // who Authenticate says connects (the page's sign-in)
	links map[string][]*halfOpen      // the Host's end of every socket, by URL host, in order
}

// link is the Host's end of the latest socket to name.
func (w *callWorld) link(name string) *halfOpen {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.links[name]
	if len(l) == 0 {
		w.t.Fatalf("no socket to %s", name)
	}
	return l[len(l)-1]
}

// signIn makes every later socket of the page authenticate as user.
func (w *callWorld) signIn(user string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.user = user
}

func newCallWorld(t *testing.T) *callWorld {
	w := &callWorld{t: t, hosts: map[string]*hostplugin.Host{}, runs: map[string]int{}, gate: make(chan struct{}), links: map[string][]*halfOpen{}, began: map[string]time.Time{}}
	gateway.UseHandshakeClient(t, wstest.Client(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		h := w.hosts[r.Host]
		w.mu.Unlock()
		if h == nil {
			http.Error(rw, "no Host here", http.StatusServiceUnavailable)
			return
		}
		rw = hijacking{rw, func(l *halfOpen) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.links[r.Host] = append(w.links[r.Host], l)
		}}
		h.Handler(http.NotFoundHandler()).ServeHTTP(rw, r)
	})))
	return w
}

// start puts a new Host at name (replacing the one there, which the caller stopped), with
// store as its dedup store (nil: its own).
func (w *callWorld) start(name string, store hostplugin.CallStore, doc string) *hostplugin.Host {
	cfg, err := hostplugin.ParseConfig([]byte(doc))
	if err != nil {
		w.t.Fatal(err)
	}
	authenticate := func(*http.Request) (string, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.user, nil
	}
	h, err := hostplugin.New(cfg, &hostplugin.Options{Logger: quiet, Authenticate: authenticate, Authorize: hostplugin.PublicStreams, NoClient: true, Calls: store})
	if err != nil {
		w.t.Fatal(err)
	}
	count := func(c *hostplugin.Call) {
		w.mu.Lock()
		w.runs[string(c.Data)]++
		w.runs[c.Identity+":"+string(c.Data)]++
		if _, ok := w.began[string(c.Data)]; !ok {
			w.began[string(c.Data)] = time.Now()
		}
		w.mu.Unlock()
	}
	h.HandleCall("echo", func(_ context.Context, c *hostplugin.Call) (json.RawMessage, error) {
		count(c)
		return c.Data, nil
	})
	h.HandleCall("hold", func(_ context.Context, c *hostplugin.Call) (json.RawMessage, error) {
		count(c)
		<-w.gate
		return json.RawMessage(fmt.Sprintf(`{"held":%s}`, c.Data)), nil
	})
	h.SetReady(true)
	w.mu.Lock()
	w.hosts[name] = h
	w.mu.Unlock()
	w.t.Cleanup(func() { _ = h.Close() })
	return h
}

// beganAt is when the first run of the call with data began; zero if none did.
func (w *callWorld) beganAt(data string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.began[data]
}

func (w *callWorld) ran(data string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.runs[data]
}

func callRig(t *testing.T, o *gateway.Options) *rig {
	return newRig(t, "ws://a.invalid/_lifeline/events", controller.Recovery{InitialDelayMs: new(100.0)}, o)
}

func TestACallMadeWhileNotConnectedIsSentOnceReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newCallWorld(t)
		r := callRig(t, nil)
		p := startCall(r.gw, "echo", `{"n":1}`, gateway.CallOptions{})
		synctest.Wait()
		if len(p.sent) != 0 {
			t.Fatal("the call went out before any session was ready")
		}
		w.start("a.invalid", nil, `{}`)
		r.ctl.Start()
		if reply, ce := p.result(t); ce != nil || reply != `{"n":1}` || w.ran(`{"n":1}`) != 1 {
			t.Fatalf("reply %s, %v after %d runs; want the echo, once", reply, ce, w.ran(`{"n":1}`))
		}
		r.ctl.Stop()
	})
}

// noteHost starts a Host whose "note" handler replies with its data; order returns the data
// of the calls it ran, in the order it ran them.
func noteHost(w *callWorld) (h *hostplugin.Host, order func() []string) {
	h = w.start("a.invalid", nil, `{"callRate":1000,"callBurst":100}`)
	var mu sync.Mutex
	var ran []string
	h.HandleCall("note", func(_ context.Context, c *hostplugin.Call) (json.RawMessage, error) {
		mu.Lock()
		ran = append(ran, string(c.Data))
		mu.Unlock()
		return c.Data, nil
	})
	return h, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ran)
	}
}

func TestCallsReachTheHostInTheOrderMade(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, ran := noteHost(newCallWorld(t))
		h.SetReady(false) // the calls queue first, each made after the one before
		r := callRig(t, nil)
		r.ctl.Start()
		var calls []*pendingCall
		for i := range 30 {
			calls = append(calls, startCall(r.gw, "note", fmt.Sprint(i), gateway.CallOptions{}))
			synctest.Wait()
		}
		h.SetReady(true)
		for _, p := range calls {
			if _, ce := p.result(t); ce != nil {
				t.Fatal(ce)
			}
		}
		wantInOrder(t, ran(), 30)
		r.ctl.Stop()
	})
}

// wantInOrder checks that the Host ran the n calls note made with data 0 … n-1, in that order.
func wantInOrder(t *testing.T, ran []string, n int) {
	t.Helper()
	if len(ran) != n {
		t.Fatalf("the Host ran %d calls (%v), want %d", len(ran), ran, n)
	}
	for i, got := range ran {
		if got != fmt.Sprint(i) {
			t.Fatalf("the Host ran them in the order %v, want the order made", ran)
		}
	}
}

func TestGoQueuesEachCallBeforeItReturnsSoCallsMadeAtOnceKeepTheirOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, ran := noteHost(newCallWorld(t))
		r := callRig(t, nil)
		r.ctl.Start()
		synctest.Wait() // connected
		const n = 30
		replies := make(chan string, n)
		for i := range n { // one after another, none waited for: a tab's calls in one turn
			r.gw.Go(context.Background(), "note", wire.RawJSON(fmt.Sprint(i)), gateway.CallOptions{},
				func(reply wire.RawJSON, err error) {
					if err != nil {
						t.Error(err)
					}
					replies <- string(reply)
				})
		}
		for range n {
			<-replies
		}
		wantInOrder(t, ran(), n)
		// A call refused before it is queued reaches done too, with the reason.
		refused := make(chan error, 1)
		r.gw.Go(context.Background(), "", nil, gateway.CallOptions{}, func(_ wire.RawJSON, err error) { refused <- err })
		var ce *gateway.CallError
		if err := <-refused; !errors.As(err, &ce) || ce.Kind != gateway.CallInvalid || ce.Sent {
			t.Fatalf("a call with no name: %v, want an invalid call, not sent", err)
		}
		r.ctl.Stop()
	})
}

// The README's table, row by row: what a call in flight sees when its session ends.
func TestAnUnkeyedCallCutOffAfterItWasSentIsInterruptedAndNeverSentAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newCallWorld(t)
		store := hostplugin.NewMemoryCallStore(time.Minute, 0)
		a := w.start("a.invalid", store, `{}`)
		r := callRig(t, nil)
		r.ctl.Start()
		r.waitConnected()
		p := startCall(r.gw, "hold", `"unkeyed"`, gateway.CallOptions{})
		synctest.Wait()
		a.Stop(context.Background(), 0) // the session ends before the reply
		synctest.Wait()
		select {
		case <-p.done:
			t.Fatal("the page was told what became of the call before a Host of its store fenced its session")
		default:
		}
		w.start("a.invalid", store, `{}`)
		r.waitConnected() // the new session fences the old one: the call had started there
		ce := wantKind(t, p, gateway.CallInterrupted, true)
		close(w.gate)
		synctest.Wait()
		if n := w.ran(`"unkeyed"`); n != 1 {
			t.Fatalf("the handler ran %d times, want once: an unkeyed call is never sent again (%v)", n, ce)
		}
		r.ctl.Stop()
	})
}

// The black-box case: an unkeyed call cut off by a half-open link is told its fate, and the
// Host starts it afterwards: its frame, held in the network, reaches the old session late, or
// waited there behind a slow call. A page that checked and saw nothing would do it again.
// The page is told only once the Host has fenced the old session (the new session's fence
// frame, answered fenced): a call that started before is interrupted (it ran, or runs to its
// end, once); one that had not is not-run, and never starts; nothing starts after the page
// was told.
func TestACallCutOffIsToldOnlyWhatTheHostCanNoLongerChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newCallWorld(t)
		release := sync.OnceFunc(func() { close(w.gate) })
		defer release() // a failure must not leave a run blocked in the bubble
		w.start("a.invalid", nil, `{"heartbeatMs":1000}`)
		r := callRig(t, nil)
		r.ctl.Start()
		r.waitConnected()
		running := startCall(r.gw, "hold", `"running"`, gateway.CallOptions{Timeout: time.Minute})
		synctest.Wait() // it runs on the Host, and holds
		x := w.link("a.invalid")
		x.Cut()
		late := startCall(r.gw, "echo", `"late"`, gateway.CallOptions{Timeout: time.Minute})
		synctest.Wait()             // written into the half-open link: the network holds it
		time.Sleep(3 * time.Second) // the page's watchdog ends the session (2.5 heartbeats of silence)
		r.waitConnected()           // and the page is back, on a new session of the same Host
		synctest.Wait()
		x.Deliver() // the network hands the old session its late frame
		release()   // and the run in progress ends
		synctest.Wait()

		for _, c := range []struct {
			data string
			p    *pendingCall
			kind string
		}{
			{`"running"`, running, gateway.CallInterrupted},
			{`"late"`, late, gateway.CallNotRun},
		} {
			_, ce := c.p.result(t)
			began := w.beganAt(c.data)
			switch {
			case ce == nil:
				t.Errorf("call %s resolved: the page cannot have had its reply", c.data)
			case !began.IsZero() && began.After(c.p.at):
				t.Errorf("call %s: the Host started it %v after the page was told %s (%v)", c.data, began.Sub(c.p.at), ce.Kind, ce)
			case ce.Kind != c.kind || !ce.Sent:
				t.Errorf("call %s: %v, want %s, sent", c.data, ce, c.kind)
			}
		}
		if n, m := w.ran(`"running"`), w.ran(`"late"`); n != 1 || m != 0 {
			t.Errorf("runs: the started call %d, the late one %d; want 1 and 0", n, m)
		}
		r.ctl.Stop()
		_ = x.Close() // the Host's half-open session ends at last (its Close would wait out its close handshake)
		synctest.Wait()
	})
}

func TestAKeyedCallCutOffIsReSentToTheSameStoreAndRunsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newCallWorld(t)
		store := hostplugin.NewMemoryCallStore(time.Minute, 0) // shared, as a fleet's is
		a := w.start("a.invalid", store, `{}`)
		r := callRig(t, nil)
		r.ctl.Start()
		r.waitConnected()
		p := startCall(r.gw, "hold", `"keyed"`, gateway.CallOptions{Key: "k-1"})
		synctest.Wait()
		a.Stop(context.Background(), 0)
		w.start("a.invalid", store, `{}`) // the page comes back to a Host of the same store
		time.Sleep(5 * time.Second)       // the re-send waits for the first run, still running
		synctest.Wait()
		close(w.gate)
		if reply, ce := p.result(t); ce != nil || reply != `{"held":"keyed"}` {
			t.Fatalf("reply %s, %v; want the first run's outcome", reply, ce)
		}
		if n := w.ran(`"keyed"`); n != 1 {
			t.Fatalf("the handler ran %d times, want once", n)
		}
		r.ctl.Stop()
	})
}

// The black-box case: the page comes back after its Host's dedup window has passed since the
// keyed call's run. Sent again, it would run again, silently (the store has forgotten it);
// the page knows the window from the ready frame and does not send it: timeout, and one run.
func TestAKeyedCallIsNotSentAgainPastTheHostsDedupWindowAndRunsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newCallWorld(t)
		store := hostplugin.NewMemoryCallStore(10*time.Second, 0)
		a := w.start("a.invalid", store, `{}`)
		r := callRig(t, nil)
		r.ctl.Start()
		r.waitConnected()
		p := startCall(r.gw, "hold", `"windowed"`, gateway.CallOptions{Key: "w-1", Timeout: time.Minute})
		synctest.Wait()
		a.Stop(context.Background(), 0) // the session ends before the reply
		close(w.gate)                   // and the run ends: its outcome is kept for 10 s
		time.Sleep(20 * time.Second)    // the Host is away for longer
		w.start("a.invalid", store, `{}`)
		r.waitConnected()
		ce := wantKind(t, p, gateway.CallTimeout, true)
		if n := w.ran(`"windowed"`); n != 1 {
			t.Fatalf("the handler ran %d times, want once: a re-send past the window runs again (%v)", n, ce)
		}
		r.ctl.Stop()
	})
}

// The black-box case: a keyed call made as alice, cut off, and the user signs in as bob
// before the page is back. Sent again, it would run as bob, a call alice made. The ready frame
// tells the page who the session is (a tag of the identity); the call is not sent as anyone
// else, and rejects identity-changed, sent: it ran as alice at most once, and never as bob.
func TestAKeyedCallMadeAsOneUserIsNeverSentAgainAsAnother(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newCallWorld(t)
		release := sync.OnceFunc(func() { close(w.gate) })
		defer release() // a failure must not leave a run blocked in the bubble
		w.signIn("alice")
		store := hostplugin.NewMemoryCallStore(time.Minute, 0)
		a := w.start("a.invalid", store, `{}`)
		r := callRig(t, nil)
		r.ctl.Start()
		r.waitConnected()
		p := startCall(r.gw, "hold", `"mine"`, gateway.CallOptions{Key: "as-alice"})
		synctest.Wait()
		a.Stop(context.Background(), 0) // cut off
		w.signIn("bob")                 // another user on this page now
		w.start("a.invalid", store, `{}`)
		r.waitConnected()
		synctest.Wait()
		if n := w.ran(`bob:"mine"`); n != 0 {
			t.Fatalf("alice's keyed call was sent again as bob and ran %d times as bob", n)
		}
		ce := wantKind(t, p, gateway.CallIdentityChanged, true)
		release()
		synctest.Wait()
		if n, bob := w.ran(`"mine"`), w.ran(`bob:"mine"`); n != 1 || bob != 0 {
			t.Fatalf("the handler ran %d times, %d of them as bob; want once, as alice (%v)", n, bob, ce)
		}
		// The same user again: a keyed call is sent again as before.
		again := startCall(r.gw, "hold", `"bob's"`, gateway.CallOptions{Key: "as-bob"})
		if reply, ce := again.result(t); ce != nil || reply != `{"held":"bob's"}` {
			t.Fatalf("bob's own call: %s, %v", reply, ce)
		}
		r.ctl.Stop()
	})
}

func TestAKeyedCallIsNotReSentToAHostOfAnotherStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newCallWorld(t)
		a := w.start("a.invalid", nil, `{}`)
		r := callRig(t, nil)
		r.ctl.Start()
		r.waitConnected()
		p := startCall(r.gw, "hold", `"keyed"`, gateway.CallOptions{Key: "k-1"})
		synctest.Wait()
		a.Stop(context.Background(), 0)
		w.start("a.invalid", nil, `{}`) // a plain restart: an in-memory store of its own
		time.Sleep(5 * time.Second)     // back, and told the store is another
		ce := wantKind(t, p, gateway.CallTimeout, true)
		close(w.gate)
		synctest.Wait()
		if n := w.ran(`"keyed"`); n != 1 || !strings.Contains(ce.Message, "dedup store") {
			t.Fatalf("the handler ran %d times (%v), want once and the page told why it was not re-sent", n, ce)
		}
		r.ctl.Stop()
	})
}

func TestCallsInFlightOnADrainingSessionFinishThereMakeBeforeBreak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newCallWorld(t)
		a := w.start("a.invalid", nil, `{}`)
		b := w.start("b.invalid", nil, `{}`)
		r := callRig(t, nil)
		r.ctl.Start()
		r.waitConnected()
		held := startCall(r.gw, "hold", `"on a"`, gateway.CallOptions{})
		synctest.Wait()
		go a.Drain(context.Background(), "ws://b.invalid/_lifeline/events")
		synctest.Wait()
		// Moved to b: a call made now waits until the one on a has its reply.
		next := startCall(r.gw, "echo", `"on b"`, gateway.CallOptions{})
		synctest.Wait()
		if len(next.sent) != 0 {
			t.Fatal("a call made after the goaway went out while one was in flight on the draining session")
		}
		close(w.gate)
		if reply, ce := held.result(t); ce != nil || reply != `{"held":"on a"}` {
			t.Fatalf("the call in flight on the draining session: %s, %v; want its reply there", reply, ce)
		}
		if reply, ce := next.result(t); ce != nil || reply != `"on b"` {
			t.Fatalf("the next call: %s, %v", reply, ce)
		}
		if b.Sessions() != 1 {
			t.Fatalf("b has %d sessions, want the page", b.Sessions())
		}
		checkStayedConnected(t, r)
		r.ctl.Stop()
	})
}

func TestACallsTimeoutSaysWhetherItWasSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newCallWorld(t)
		r := callRig(t, nil)
		unsent := startCall(r.gw, "echo", `1`, gateway.CallOptions{Timeout: time.Second})
		time.Sleep(time.Second)
		wantKind(t, unsent, gateway.CallTimeout, false)
		w.start("a.invalid", nil, `{}`)
		r.ctl.Start()
		r.waitConnected()
		sent := startCall(r.gw, "hold", `2`, gateway.CallOptions{Timeout: time.Second})
		time.Sleep(time.Second)
		wantKind(t, sent, gateway.CallTimeout, true)
		close(w.gate)
		synctest.Wait()
		if w.ran(`1`) != 0 || w.ran(`2`) != 1 {
			t.Fatalf("runs: unsent %d, sent %d; want 0 and 1", w.ran(`1`), w.ran(`2`))
		}
		r.ctl.Stop()
	})
}

func TestTheQueueOfUnsentCallsIsBoundedAndNothingIsDroppedSilently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		newCallWorld(t)
		r := callRig(t, &gateway.Options{MaxQueuedCalls: 2, MaxQueuedBytes: 10})
		a, b := startCall(r.gw, "echo", `1`, gateway.CallOptions{}), startCall(r.gw, "echo", `2`, gateway.CallOptions{})
		synctest.Wait()
		wantKind(t, startCall(r.gw, "echo", `3`, gateway.CallOptions{}), gateway.CallBusy, false)
		r.gw.Close(nil)
		wantKind(t, a, gateway.CallClosed, false)
		wantKind(t, b, gateway.CallClosed, false)
		wantKind(t, startCall(r.gw, "echo", `4`, gateway.CallOptions{}), gateway.CallClosed, false)
	})
}

func TestACallTheHostCouldNotReadIsRefusedBeforeItIsSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newCallWorld(t)
		w.start("a.invalid", nil, `{"maxFrameBytes":512}`)
		r := callRig(t, nil)
		r.ctl.Start()
		r.waitConnected()
		wantKind(t, startCall(r.gw, "echo", `"`+strings.Repeat("x", 600)+`"`, gateway.CallOptions{}), gateway.CallTooBig, false)
		wantKind(t, startCall(r.gw, "bad name", `1`, gateway.CallOptions{}), gateway.CallInvalid, false)
		wantKind(t, startCall(r.gw, "echo", `{"a":`, gateway.CallOptions{}), gateway.CallInvalid, false)
		wantKind(t, startCall(r.gw, "nope", `1`, gateway.CallOptions{}), gateway.CallUnknown, true)
		if reply, ce := startCall(r.gw, "echo", `"still here"`, gateway.CallOptions{}).result(t); ce != nil || reply != `"still here"` {
			t.Fatalf("after the refusals: %s, %v; want the session alive", reply, ce)
		}
		r.ctl.Stop()
	})
}

func TestAKeyedCallMadeAgainWithItsEpochGoesOnlyToThatStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newCallWorld(t)
		store := hostplugin.NewMemoryCallStore(time.Minute, 0)
		w.start("a.invalid", store, `{}`)
		r := callRig(t, nil)
		r.ctl.Start()
		r.waitConnected()
		// A tab's hub sent it, then crashed: the tab makes it again on a fresh hub, with the
		// epoch it was told.
		first := startCall(r.gw, "echo", `"once"`, gateway.CallOptions{Key: "tab-1"})
		if _, ce := first.result(t); ce != nil {
			t.Fatal(ce)
		}
		on, at := <-first.sent, time.Now()
		again := startCall(r.gw, "echo", `"once"`, gateway.CallOptions{Key: "tab-1", Epoch: on.Epoch, Who: on.Who, SentAt: at})
		if reply, ce := again.result(t); ce != nil || reply != `"once"` || w.ran(`"once"`) != 1 {
			t.Fatalf("made again under its epoch: %s, %v after %d runs; want the first outcome", reply, ce, w.ran(`"once"`))
		}
		wantKind(t, startCall(r.gw, "echo", `"elsewhere"`, gateway.CallOptions{Key: "tab-2", Epoch: "another-store", Who: on.Who, SentAt: at}), gateway.CallTimeout, true)
		if w.ran(`"elsewhere"`) != 0 {
			t.Fatal("a call sent under another store's epoch ran here")
		}
		r.ctl.Stop()
	})
}

func TestADroppedSessionInterruptsNoMoreThanTheCallsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newCallWorld(t)
		store := hostplugin.NewMemoryCallStore(time.Minute, 0)
		a := w.start("a.invalid", store, `{}`)
		r := callRig(t, &gateway.Options{CallsInFlight: 3})
		r.ctl.Start()
		r.waitConnected()
		// The Host runs a page's calls one at a time: ten unkeyed calls made at once wait on
		// the page, three at a time on the wire.
		var calls []*pendingCall
		for i := range 10 {
			calls = append(calls, startCall(r.gw, "hold", fmt.Sprint(i), gateway.CallOptions{}))
			synctest.Wait()
		}
		sent := 0
		for _, p := range calls {
			sent += len(p.sent)
		}
		if sent != 3 {
			t.Fatalf("%d calls sent with 3 in flight at most", sent)
		}
		a.Stop(context.Background(), 0)
		w.start("a.invalid", store, `{}`)
		close(w.gate)
		time.Sleep(5 * time.Second)
		var cut []string // what the calls in flight were told, in order
		for i, p := range calls {
			switch reply, ce := p.result(t); {
			case ce != nil && (ce.Kind == gateway.CallInterrupted || ce.Kind == gateway.CallNotRun) && ce.Sent:
				cut = append(cut, ce.Kind)
			case ce != nil || reply != fmt.Sprintf(`{"held":%d}`, i):
				t.Fatalf("call %d: %s, %v; want its reply, or interrupted or not-run if it was in flight", i, reply, ce)
			}
		}
		// The Host ran the first; the two behind it waited there, and were dropped with the
		// session: the fence says so.
		if want := []string{gateway.CallInterrupted, gateway.CallNotRun, gateway.CallNotRun}; !slices.Equal(cut, want) {
			t.Fatalf("the calls cut off by the drop were told %v, want %v: the 3 in flight, and the 7 unsent are sent on the next session", cut, want)
		}
		r.ctl.Stop()
	})
}
