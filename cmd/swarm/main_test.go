//go:build !js

package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/swarmline"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// host is a minimal Host: ready, then a reset and two events for every sub.
func host(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{wire.Subprotocol}})
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := r.Context()
		send := func(f wire.HostFrame) {
			b, _ := f.Encode()
			c.Write(ctx, websocket.MessageText, b)
		}
		send(wire.Ready("s", time.Second))
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			f, err := wire.DecodePage(b)
			if err != nil || f.T != wire.TypeSub {
				continue
			}
			send(wire.HostFrame{T: wire.TypeReset, Stream: f.Stream, Epoch: "E", Seq: 0, Baseline: []byte(`0`)})
			send(wire.HostFrame{T: wire.TypeEvent, Stream: f.Stream, Seq: 1, Data: []byte(`1`)})
			send(wire.HostFrame{T: wire.TypeEvent, Stream: f.Stream, Seq: 2, Data: []byte(`2`)})
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + wire.DefaultPath
}

// lines collects what run prints and wakes waiters.
type lines struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

// waitFor waits, at most 10 s, until pred holds for the lines printed so far.
func (l *lines) waitFor(t *testing.T, what string, pred func([]swarmline.Line) bool) []swarmline.Line {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		l.mu.Lock()
		text, ch := l.buf.String(), l.changed
		l.mu.Unlock()
		var got []swarmline.Line
		for _, s := range strings.Split(strings.TrimSpace(text), "\n") {
			if s == "" {
				continue
			}
			ln, err := swarmline.Decode([]byte(s))
			if err != nil || ln.T < 1e12 {
				t.Fatalf("line %q is not {\"t\":ms,\"id\":n,\"event\":...}: %v", s, err)
			}
			got = append(got, ln)
		}
		if pred(got) {
			return got
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("waiting for %s: got %s", what, text)
		}
	}
}

// running is a run of the swarm in the background: what it prints is in out.
type running struct {
	out    *lines
	cancel context.CancelFunc
	done   chan error
}

// startRun runs the swarm with args in the background, until stop or the end of the test.
func startRun(t *testing.T, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{out: &lines{changed: make(chan struct{})}, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- run(ctx, args, r.out, io.Discard) }()
	t.Cleanup(cancel)
	return r
}

// stop ends the run as a signal does and returns what run returned, failing the test if it
// has not returned within 10 s.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after the signal")
		return nil
	}
}

func count(ls []swarmline.Line, ev string) int {
	n := 0
	for _, l := range ls {
		if l.Event == ev {
			n++
		}
	}
	return n
}

func TestClientsConnectPrintAndStopCleanly(t *testing.T) {
	url := host(t)
	r := startRun(t, "-url", url, "-n", "3", "-sub", "s", "-deliveries", "-seed", "7")
	out := r.out
	got := out.waitFor(t, "3 connected clients and their deliveries", func(ls []swarmline.Line) bool {
		return count(ls, "connected") == 3 && count(ls, "delivery") == 9
	})
	if a := count(got, "attempt"); a != 3 {
		t.Errorf("%d attempt lines, want 3", a)
	}
	if v := count(got, "violation"); v != 0 {
		t.Errorf("%d violations: %+v", v, got)
	}
	if err := r.stop(t); err != nil {
		t.Fatalf("run = %v, want a clean exit", err)
	}
	if after := out.waitFor(t, "the final lines", func([]swarmline.Line) bool { return true }); count(after, "disconnected") != 0 {
		t.Errorf("shutdown printed disconnected lines: %+v", after)
	}
}

// keyedAt spreads the keyed calls evenly, whatever the fraction.
func TestTheKeyedCallsAreSpreadEvenly(t *testing.T) {
	for _, tt := range []struct {
		keyed float64
		want  string
	}{
		{0, "........"}, {0.5, ".k.k.k.k"}, {0.25, "...k...k"}, {1, "kkkkkkkk"},
	} {
		p := callPlan{keyed: tt.keyed}
		var got []byte
		for k := range 8 {
			if p.keyedAt(k) {
				got = append(got, 'k')
			} else {
				got = append(got, '.')
			}
		}
		if string(got) != tt.want {
			t.Errorf("-keyed %v: calls 0..7 keyed %s; want %s", tt.keyed, got, tt.want)
		}
	}
}

func TestClientReportsAnUnreachableHost(t *testing.T) {
	r := startRun(t, "-url", "ws://127.0.0.1:1/_lifeline/events", "-recovery", `{"initialDelayMs":5,"maxDelayMs":10}`)
	r.out.waitFor(t, "three attempts", func(ls []swarmline.Line) bool { return count(ls, "attempt") >= 3 })
	if err := r.stop(t); err != nil {
		t.Fatalf("run = %v", err)
	}
}

func TestClientFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"the URL is required", nil, "-url is required"},
		{"at least one client", []string{"-url", "ws://h/x", "-n", "0"}, "-n must be at least 1, got 0"},
		{"a bad URL is refused", []string{"-url", "ftp://h/x"}, `got "ftp"`},
		{"timing is resolved", []string{"-url", "ws://h/x", "-recovery", `{"deadlineMs":0}`}, "recovery.deadlineMs: must be an integer in 1..2147483647, got 0"},
		{"unknown timing fields are refused", []string{"-url", "ws://h/x", "-recovery", `{"deadline":1}`}, "recovery.deadline: is not a known field (known: slowAfterMs"},
		{"stray arguments are refused", []string{"-url", "ws://h/x", "extra"}, `unexpected arguments ["extra"]`},
		{"calls are counted from 0", []string{"-url", "ws://h/x", "-calls", "-1"}, "-calls must not be negative, got -1"},
		{"the keyed fraction is a fraction", []string{"-url", "ws://h/x", "-keyed", "1.5"}, "-keyed must be in 0..1, got 1.5"},
		{"calls are spaced", []string{"-url", "ws://h/x", "-call-every", "0s"}, "-call-every must be positive, got 0s"},
		{"a call at a time at least", []string{"-url", "ws://h/x", "-calls-in-flight", "0"}, "-calls-in-flight must be at least 1, got 0"},
		{"the handler's name is one the protocol carries", []string{"-url", "ws://h/x", "-call-name", "a b"}, "-call-name: "},
		{"the keys are ones the protocol carries", []string{"-url", "ws://h/x", "-call-prefix", strings.Repeat("p", 120)}, "-call-prefix \"ppp"},
	} {
		err := run(context.Background(), tc.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: run(%q) = %v, want an error containing %q", tc.name, tc.args, err, tc.want)
		}
	}
}
