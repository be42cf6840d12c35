package testserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// EnvServer names the environment variable that gives tests a running server's base URL
// (ws://127.0.0.1:port), as cmd/testserver prints it.
const EnvServer = "LIFELINE_TEST_SERVER"

// Scenario is the control client of one scenario. Its methods are safe from any goroutine;
// requests run one at a time.
type Scenario struct {
	base string
	id   string
	mu   sync.Mutex
	c    *websocket.Conn
}

// Dial opens a new scenario on the server at base (ws://host:port).
func Dial(ctx context.Context, base string) (*Scenario, error) { return DialWith(ctx, base, nil) }

// DialWith is Dial with the control socket's options (nil: the defaults); natively
// opts.HTTPClient may serve the handshake in memory (internal/test/wstest), for a test in a
// synctest bubble.
func DialWith(ctx context.Context, base string, opts *websocket.DialOptions) (*Scenario, error) {
	base = strings.TrimSuffix(base, "/")
	c, _, err := websocket.Dial(ctx, base+ControlPath, opts)
	if err != nil {
		return nil, fmt.Errorf("testserver: dial %s: %w", base, err)
	}
	c.SetReadLimit(64 << 20)
	s := &Scenario{base: base, c: c}
	var hello Reply
	if err := s.read(ctx, &hello); err != nil {
		c.CloseNow()
		return nil, err
	}
	s.id = hello.ID
	return s, nil
}

// ID names the scenario.
func (s *Scenario) ID() string { return s.id }

// URL is the events endpoint of host.
func (s *Scenario) URL(host string) string {
	return s.base + "/s/" + s.id + "/" + host + wire.DefaultPath
}

// Close ends the scenario: the server closes every socket of it.
func (s *Scenario) Close() error {
	return s.c.Close(websocket.StatusNormalClosure, "")
}

// Do sends one request and returns its reply; a reply carrying an error is returned with it.
func (s *Scenario) Do(ctx context.Context, req Request) (Reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := json.Marshal(req)
	if err != nil {
		return Reply{}, err
	}
	// The control socket lives for the whole test: no per-call context may touch it, since
	// a cancelled read closes the socket under js/wasm.
	if err := s.c.Write(context.Background(), websocket.MessageText, b); err != nil {
		return Reply{}, fmt.Errorf("testserver: %s: %w", req.Op, err)
	}
	var rep Reply
	if err := s.read(ctx, &rep); err != nil {
		return Reply{}, fmt.Errorf("testserver: %s: %w", req.Op, err)
	}
	if rep.Error != "" {
		return rep, errors.New(rep.Error)
	}
	return rep, nil
}

func (s *Scenario) read(ctx context.Context, v any) error {
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		_, b, err := s.c.Read(context.Background())
		ch <- result{b, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return r.err
		}
		return json.Unmarshal(r.b, v)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Script queues one script per upcoming session of host.
func (s *Scenario) Script(ctx context.Context, host string, sessions ...[]Step) error {
	_, err := s.Do(ctx, Request{Op: "script", Host: host, Sessions: sessions})
	return err
}

// Default sets the script of host's sessions once its queue is empty.
func (s *Scenario) Default(ctx context.Context, host string, steps ...Step) error {
	if len(steps) == 0 {
		steps = []Step{{}} // a step that does nothing: an empty list would mean "keep"
	}
	_, err := s.Do(ctx, Request{Op: "script", Host: host, Default: steps})
	return err
}

// Heartbeat sets the heartbeat of sessions accepted from now on.
func (s *Scenario) Heartbeat(ctx context.Context, hb time.Duration) error {
	_, err := s.Do(ctx, Request{Op: "config", HeartbeatMs: hb.Milliseconds()})
	return err
}

// Ring sets how many events each stream log keeps for replay.
func (s *Scenario) Ring(ctx context.Context, n int) error {
	_, err := s.Do(ctx, Request{Op: "config", Ring: n})
	return err
}

// Publish appends n events to stream and returns its last seq.
func (s *Scenario) Publish(ctx context.Context, stream string, n int) (uint64, error) {
	rep, err := s.Do(ctx, Request{Op: "publish", Stream: stream, N: n})
	return rep.Last[stream], err
}

// Pump publishes one event on stream every interval (0 stops) and returns its last seq.
func (s *Scenario) Pump(ctx context.Context, stream string, every time.Duration) (uint64, error) {
	rep, err := s.Do(ctx, Request{Op: "pump", Stream: stream, EveryMs: every.Milliseconds()})
	return rep.Last[stream], err
}

// NewEpoch restarts stream's log under a new epoch and resets its subscribers.
func (s *Scenario) NewEpoch(ctx context.Context, stream string) (string, error) {
	rep, err := s.Do(ctx, Request{Op: "newEpoch", Stream: stream})
	return rep.Epoch[stream], err
}

// Release lets host's held upgrades proceed.
func (s *Scenario) Release(ctx context.Context, host string) error {
	_, err := s.Do(ctx, Request{Op: "release", Host: host})
	return err
}

// Kick closes host's live sessions with code and reason (code 0 drops them).
func (s *Scenario) Kick(ctx context.Context, host string, code int, reason string) error {
	_, err := s.Do(ctx, Request{Op: "kick", Host: host, Code: code, Reason: reason})
	return err
}

// GoAway sends a goaway frame with uri to host's live sessions.
func (s *Scenario) GoAway(ctx context.Context, host, uri string) error {
	_, err := s.Do(ctx, Request{Op: "goaway", Host: host, URI: uri})
	return err
}

// Stats returns every counter.
func (s *Scenario) Stats(ctx context.Context) (Reply, error) {
	return s.Do(ctx, Request{Op: "stats"})
}

// Wait blocks until host's field compares (cmp: "==", ">=", "<=") to value, or fails after
// timeout with the value seen.
func (s *Scenario) Wait(ctx context.Context, host, field, cmp string, value int, timeout time.Duration) (HostStats, error) {
	rep, err := s.Do(ctx, Request{Op: "wait", Host: host, Field: field, Cmp: cmp, Value: value, TimeoutMs: timeout.Milliseconds()})
	return rep.Hosts[host], err
}

// Auth makes host refuse, from now on, every upgrade and refusal query with status (401 or
// 403; 0 lets everyone in again) and reason, except requests carrying cookie ("name=value";
// "" refuses all); noCORS leaves out the CORS headers of the refusal query's answer.
func (s *Scenario) Auth(ctx context.Context, host string, status int, reason, cookie string, noCORS bool) error {
	_, err := s.Do(ctx, Request{Op: "auth", Host: host, Code: status, Reason: reason, Cookie: cookie, NoCORS: noCORS})
	return err
}

// PathPrefix is where the server serves the real Host behind a middlebox of each of
// pathproxy's modes: PathPrefix + mode + wire.DefaultPath (for the HTTP carrier's tests in the
// browser, which cannot start a Host of their own).
const PathPrefix = "/path/"

// TicksStream is the stream the real Host publishes to every TicksEvery, and CountCall the
// call whose reply is how many times it ran for its key.
const (
	TicksStream = "ticks"
	TicksEvery  = 20 * time.Millisecond
	CountCall   = "count"
)

// PathURL is the events endpoint of the server's real Host behind a middlebox in mode (one of
// pathproxy's mode names: "open", "strip-upgrade", …).
func PathURL(base, mode string) string {
	return strings.TrimSuffix(base, "/") + PathPrefix + mode + wire.DefaultPath
}
