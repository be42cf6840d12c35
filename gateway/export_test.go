package gateway

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/lifeline-go/lifeline/internal/weburl"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// Pending returns, per stream, the action a generation that became ready now would send
// first: "sub" (stalled streams send nothing until their handler returns).
func Pending(g *Gateway) map[string]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]string)
	for name, sub := range g.subs {
		if !sub.stalled {
			out[name] = wire.TypeSub
		}
	}
	return out
}

// CursorOf is where s stands: the log it follows and the last seq accepted for delivery.
func CursorOf(s *Subscription) Cursor {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	return Cursor{Epoch: s.epoch, Seq: s.last}
}

// Dups counts the frames s dropped as duplicates.
// RefusedBy is what a refused upgrade's status, Retry-After header and body say.
func RefusedBy(status int, retryAfter string, body []byte) error {
	return refusedBy(status, retryAfter, body)
}

func Dups(s *Subscription) uint64 {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	return s.dups
}

// ResolveGoAway exposes resolveGoAway.
func ResolveGoAway(base, uri string) (string, error) {
	u, err := parseURL(base)
	if err != nil {
		return "", err
	}
	return resolveGoAway(u, uri)
}

// TestSession is a ready session without a socket: tests feed it Host frames and read
// what it would send, so the stream logic runs without a server (also under js/wasm).
type TestSession struct {
	s    *session
	once sync.Once
}

// NewTestSession registers a ready session on g; it ends with the test at the latest.
func NewTestSession(t testing.TB, g *Gateway) *TestSession {
	u, _ := weburl.Parse(g.url)
	s, err := g.register(context.Background(), nil, u)
	if err != nil {
		panic(err)
	}
	s.gotReady = true
	g.mu.Lock()
	s.ready = true
	g.mu.Unlock()
	ts := &TestSession{s: s}
	t.Cleanup(ts.End)
	return ts
}

// NewReadyTestSession registers a session on g that got the ready frame ready (its dedup
// store, window and the rest) and was reported ready; it ends with the test at the latest.
func NewReadyTestSession(t testing.TB, g *Gateway, ready string) *TestSession {
	f, err := wire.DecodeHost([]byte(ready))
	if err != nil || f.T != wire.TypeReady {
		t.Fatalf("NewReadyTestSession(%s): %v", ready, err)
	}
	u, _ := weburl.Parse(g.url)
	s, err := g.register(context.Background(), nil, u)
	if err != nil {
		t.Fatal(err)
	}
	s.gotReady, s.readyFrame = true, f
	g.readied(s, f)
	ts := &TestSession{s: s}
	t.Cleanup(ts.End)
	return ts
}

// Calls returns the call frames the writer would send now, each as it would go out (its
// OnSent called first).
func (t *TestSession) Calls() []wire.PageFrame {
	frames, onSent := t.s.g.sendable(t.s)
	var out []wire.PageFrame
	for i, b := range frames {
		if onSent[i] != nil {
			onSent[i]()
		}
		f, err := wire.DecodePage(b)
		if err != nil {
			panic(fmt.Sprintf("the gateway wrote a frame the Host cannot read: %s: %v", b, err))
		}
		out = append(out, f)
	}
	return out
}

// Feed handles one Host frame (event, reset, hb or error) as the pump would.
func (t *TestSession) Feed(frame string) error {
	f, err := wire.DecodeHost([]byte(frame))
	if err != nil {
		return err
	}
	return t.s.handle(f)
}

// Reconcile returns the frames the writer would send now.
func (t *TestSession) Reconcile() []wire.PageFrame { return t.s.g.reconcile(t.s) }

// End ends the session as Run's return would.
func (t *TestSession) End() {
	t.once.Do(func() {
		t.s.cancel(nil)
		t.s.g.unregister(t.s, nil)
	})
}

// WithPresence makes the session's Host one whose ready frame says it carries presence.
func (t *TestSession) WithPresence() *TestSession {
	t.s.g.mu.Lock()
	t.s.presence = true
	t.s.g.mu.Unlock()
	return t
}

// DialURL is the URL with which g dials its home.
func DialURL(g *Gateway) string {
	u, err := parseURL(g.url)
	if err != nil {
		panic(err)
	}
	return g.dialURL(u)
}
