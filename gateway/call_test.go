package gateway_test

// Calls without a socket: what a session's ready frame lets the page send, and what it sends
// again after a session ended, fed frame by frame. These run everywhere, also under js/wasm
// without a test Host; call_notjs_test.go has the same rules against the real Host.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// call is one Call made on its own goroutine; its result arrives on done.
type pendingCall struct {
	done  chan struct{}
	reply wire.RawJSON
	err   error
	at    time.Time         // when the call returned: when the page was told
	sent  chan gateway.Sent // what the last OnSent said
}

func startCall(gw *gateway.Gateway, name, data string, o gateway.CallOptions) *pendingCall {
	p := &pendingCall{done: make(chan struct{}), sent: make(chan gateway.Sent, 1)}
	o.OnSent = func(on gateway.Sent) { // once per write: a keyed call re-sent is told again
		select {
		case <-p.sent:
		default:
		}
		p.sent <- on
	}
	go func() {
		defer close(p.done)
		p.reply, p.err = gw.Call(context.Background(), name, wire.RawJSON(data), o)
		p.at = time.Now()
	}()
	return p
}

func (p *pendingCall) result(t *testing.T) (string, *gateway.CallError) {
	t.Helper()
	synctest.Wait()
	select {
	case <-p.done:
	default:
		t.Fatal("the call has not returned")
	}
	if p.err == nil {
		return string(p.reply), nil
	}
	var ce *gateway.CallError
	if !errors.As(p.err, &ce) {
		t.Fatalf("call error %v (%T), want a *gateway.CallError", p.err, p.err)
	}
	return "", ce
}

func wantKind(t *testing.T, p *pendingCall, kind string, sent bool) *gateway.CallError {
	t.Helper()
	reply, ce := p.result(t)
	if ce == nil || ce.Kind != kind || ce.Sent != sent {
		t.Fatalf("call: reply %s, error %v; want a %s error with Sent %v", reply, ce, kind, sent)
	}
	return ce
}

// readyFrame is a Host's ready frame for session sid of dedup store epoch, with its window.
func readyFrame(sid, epoch string, window time.Duration) string {
	return readyAs(sid, epoch, window, "w-alice")
}

// readyAs is readyFrame for a session whose identity's tag is who.
func readyAs(sid, epoch string, window time.Duration, who string) string {
	f := wire.HostFrame{T: wire.TypeReady, Session: sid, HeartbeatMs: 15000, Dedup: epoch, DedupMs: window.Milliseconds(), Who: who, MaxFrameBytes: 4096}
	b, _ := f.Encode()
	return string(b)
}

// keys names the keyed calls among frames, in order.
func keys(frames []wire.PageFrame) string {
	var ks []string
	for _, f := range frames {
		if f.T == wire.TypeCall {
			ks = append(ks, f.Key)
		}
	}
	return strings.Join(ks, " ")
}

// A keyed call is sent again only while the Host that runs it still keeps its outcome: within
// half the dedup window its ready frame named, from its first send (the other half is for a
// re-send slow to arrive). Past it, the page does not send it again, and the call ends
// timeout, sent: it may have run, at most once. A Host that names no window gets no re-send.
func TestAKeyedCallIsNeverSentAgainPastTheHostsDedupWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := newGateway(t, nil)
		const window = time.Minute
		s1 := gateway.NewReadyTestSession(t, gw, readyFrame("s1", "E", window))
		early := startCall(gw, "save", `1`, gateway.CallOptions{Key: "early", Timeout: time.Hour})
		synctest.Wait()
		late := startCall(gw, "save", `2`, gateway.CallOptions{Key: "late", Timeout: time.Hour})
		synctest.Wait()
		if got := keys(s1.Calls()); got != "early late" {
			t.Fatalf("sent on the first session: %q, want both", got)
		}
		sent := time.Now()
		s1.End() // both cut off: sent, no reply
		for _, m := range []struct {
			at   time.Duration // since the first send
			want string        // the keyed calls the next session sends again
		}{
			{window/2 - time.Millisecond, "early late"},
			{window / 2, ""},
		} {
			time.Sleep(m.at - time.Since(sent))
			s := gateway.NewReadyTestSession(t, gw, readyFrame(fmt.Sprint("s@", m.at), "E", window))
			if got := keys(s.Calls()); got != m.want {
				t.Fatalf("at %v after the first send: sent again %q, want %q", m.at, got, m.want)
			}
			s.End()
		}
		for _, p := range []*pendingCall{early, late} {
			if ce := wantKind(t, p, gateway.CallTimeout, true); !strings.Contains(ce.Message, "dedup window") {
				t.Errorf("a keyed call past the window: %v, want the page told why it was not sent again", ce)
			}
		}

		// A Host that names no window: the page cannot know how long it keeps an outcome.
		s := gateway.NewReadyTestSession(t, gw, readyFrame("s3", "E", time.Minute))
		p := startCall(gw, "save", `3`, gateway.CallOptions{Key: "k3", Timeout: time.Hour})
		synctest.Wait()
		s.Calls()
		s.End()
		none := gateway.NewReadyTestSession(t, gw, readyFrame("s4", "E", 0))
		if got := keys(none.Calls()); got != "" {
			t.Fatalf("sent again to a Host that names no dedup window: %q", got)
		}
		wantKind(t, p, gateway.CallTimeout, true)
	})
}

// A keyed call is sent again only to a session of the identity it was first sent as (the
// ready frame's who): after the page's user changed, it rejects identity-changed, sent, and
// is not sent as the new user; a call of the new user's is sent again as usual.
func TestAKeyedCallIsSentAgainOnlyAsTheIdentityItWasSentAs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := newGateway(t, nil)
		s1 := gateway.NewReadyTestSession(t, gw, readyAs("s1", "E", time.Minute, "w-alice"))
		alices := startCall(gw, "save", `1`, gateway.CallOptions{Key: "a", Timeout: time.Hour})
		synctest.Wait()
		s1.Calls()
		s1.End()
		s2 := gateway.NewReadyTestSession(t, gw, readyAs("s2", "E", time.Minute, "w-bob"))
		if got := keys(s2.Calls()); got != "" {
			t.Fatalf("sent again as bob: %q", got)
		}
		if ce := wantKind(t, alices, gateway.CallIdentityChanged, true); !strings.Contains(ce.Message, "identity") {
			t.Errorf("the page was told %v, want why it was not sent again", ce)
		}
		bobs := startCall(gw, "save", `2`, gateway.CallOptions{Key: "b", Timeout: time.Hour})
		synctest.Wait()
		s2.Calls()
		s2.End()
		s3 := gateway.NewReadyTestSession(t, gw, readyAs("s3", "E", time.Minute, "w-bob"))
		if got := keys(s3.Calls()); got != "b" {
			t.Fatalf("bob's call on bob's next session: sent again %q, want it", got)
		}
		s3.End()
		_ = bobs
	})
}

// types names the frames, in order, with a fence's session.
func types(frames []wire.PageFrame) string {
	var ts []string
	for _, f := range frames {
		if f.T == wire.TypeFence {
			ts = append(ts, "fence "+f.Session)
			continue
		}
		ts = append(ts, fmt.Sprintf("%s %d", f.T, f.ID))
	}
	return strings.Join(ts, ", ")
}

// An unkeyed call cut off is told nothing until a session of its dedup store has fenced the
// one it was sent on: that session sends a fence frame before any call, and the Host's
// fenced answer says which started there (interrupted) and which did not (not-run). A session
// of another store or identity cannot fence it: the call waits for its timeout. So does one
// sent so long ago that the store may no longer know (half its window).
func TestAnUnkeyedCallCutOffIsToldOnlyOnceItsSessionIsFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := newGateway(t, nil)
		s1 := gateway.NewReadyTestSession(t, gw, readyFrame("s1", "E", time.Minute))
		first := startCall(gw, "post", `1`, gateway.CallOptions{Timeout: time.Hour})
		synctest.Wait()
		second := startCall(gw, "post", `2`, gateway.CallOptions{Timeout: time.Hour})
		synctest.Wait()
		if got := types(s1.Calls()); got != "call 1, call 2" {
			t.Fatalf("s1 sent %s", got)
		}
		s1.End()
		other := gateway.NewReadyTestSession(t, gw, readyFrame("o1", "another store", time.Minute))
		if got := types(other.Calls()); got != "" {
			t.Fatalf("a session of another store sent %s: it cannot fence s1", got)
		}
		other.End()
		bob := gateway.NewReadyTestSession(t, gw, readyAs("b1", "E", time.Minute, "w-bob"))
		if got := types(bob.Calls()); got != "" {
			t.Fatalf("a session of another identity sent %s: the Host would fence nothing for it", got)
		}
		bob.End()
		next := startCall(gw, "post", `3`, gateway.CallOptions{Timeout: time.Hour})
		synctest.Wait()
		for _, p := range []*pendingCall{first, second} {
			select {
			case <-p.done:
				t.Fatalf("a call cut off was told %v before its session was fenced", p.err)
			default:
			}
		}
		s2 := gateway.NewReadyTestSession(t, gw, readyFrame("s2", "E", time.Minute))
		if got := types(s2.Calls()); got != "fence s1, call 1" {
			t.Fatalf("s2 sent %s, want the fence of s1 before its first call", got)
		}
		if got := types(s2.Calls()); got != "" {
			t.Fatalf("s2 sent %s again", got)
		}
		feed(t, s2, `{"t":"fenced","session":"s1","started":1}`)
		wantKind(t, first, gateway.CallInterrupted, true)
		wantKind(t, second, gateway.CallNotRun, true)
		feed(t, s2, `{"t":"reply","id":1,"data":3}`)
		if reply, ce := next.result(t); ce != nil || reply != "3" {
			t.Fatalf("the call made meanwhile: %s, %v", reply, ce)
		}

		// A call cut off whose session no one fences in time.
		late := startCall(gw, "post", `4`, gateway.CallOptions{Timeout: time.Hour})
		synctest.Wait()
		s2.Calls()
		s2.End()
		time.Sleep(30 * time.Second) // half the window
		s3 := gateway.NewReadyTestSession(t, gw, readyFrame("s3", "E", time.Minute))
		if got := types(s3.Calls()); got != "" {
			t.Fatalf("s3 sent %s: the store may have forgotten what started on s2", got)
		}
		if ce := wantKind(t, late, gateway.CallTimeout, true); !strings.Contains(ce.Message, "can no longer be fenced") {
			t.Errorf("the page was told %v, want why", ce)
		}
		s3.End()
	})
}

// A tab whose hub was lost makes an unkeyed call it was told was sent again, naming the
// session and the id it was sent as: the fresh hub never sends it, and tells it what the
// fence of that session says. A call held so is closed with the gateway.
func TestAnUnkeyedCallMadeAgainWaitsForTheFenceOfTheSessionItWasSentOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := newGateway(t, nil)
		again := startCall(gw, "post", `1`, gateway.CallOptions{Epoch: "E", Who: "w-alice", Session: "s1", ID: 7, SentAt: time.Now(), Timeout: time.Hour})
		wantKind(t, startCall(gw, "post", `1`, gateway.CallOptions{Epoch: "E", Session: "s1", Key: "k"}), gateway.CallInvalid, false)
		s := gateway.NewReadyTestSession(t, gw, readyFrame("s2", "E", time.Minute))
		if got := types(s.Calls()); got != "fence s1" {
			t.Fatalf("the fresh session sent %s, want only the fence", got)
		}
		feed(t, s, `{"t":"fenced","session":"s1","started":6}`)
		wantKind(t, again, gateway.CallNotRun, true)

		closed := startCall(gw, "post", `2`, gateway.CallOptions{Epoch: "E", Who: "w-alice", Session: "s9", ID: 1, SentAt: time.Now(), Timeout: time.Hour})
		synctest.Wait()
		s.End()
		gw.Close(nil)
		wantKind(t, closed, gateway.CallClosed, true)
	})
}
