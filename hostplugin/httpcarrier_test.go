//go:build !js

package hostplugin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// httpPage is a page on the HTTP carrier, driven by the test: one streaming GET, or long
// polls, down; POSTs up.
type httpPage struct {
	t      testing.TB
	f      *fixture
	poll   bool
	header http.Header

	resp  *http.Response // the stream, or the last poll's answer
	scan  wire.EventScanner
	ready wire.HostFrame
	seq   uint64
	read  uint64 // frames read (a poll's ack)
	queue []wire.HostFrame
}

func httpURL(f *fixture, q url.Values) string {
	u := f.Srv.URL + f.H.Config().Endpoint()
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// openHTTP opens a session on the HTTP carrier and returns the answer to the opening GET,
// whose body the page then reads.
func openHTTP(f *fixture, t testing.TB, poll bool, header http.Header) (*httpPage, *http.Response) {
	t.Helper()
	kind := wire.CarrierStream
	if poll {
		kind = wire.CarrierPoll
	}
	req, err := http.NewRequest(http.MethodGet, httpURL(f, url.Values{wire.CarrierParam: {kind}}), nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", req.URL, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return &httpPage{t: t, f: f, poll: poll, header: header, resp: resp}, resp
}

// dialHTTP opens a session and reads its ready frame.
func dialHTTP(f *fixture, t testing.TB, poll bool) *httpPage {
	t.Helper()
	p, resp := openHTTP(f, t, poll, nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != wire.EventStreamType {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("opening GET: %d %q %s, want 200 %s", resp.StatusCode, resp.Header.Get("Content-Type"), b, wire.EventStreamType)
	}
	p.ready = p.expect(wire.TypeReady)
	if p.ready.Secret == "" {
		t.Fatalf("ready frame %+v carries no secret", p.ready)
	}
	if poll {
		// A page leaves with a bye: otherwise the Host's Close would wait for it to poll
		// its close frame.
		t.Cleanup(func() { p.post(wire.Envelope{T: wire.EnvelopeBye, Reason: "test over"}, nil) })
	}
	return p
}

// next returns the next frame the Host sent, failing the test after bound.
func (p *httpPage) next() wire.HostFrame {
	p.t.Helper()
	deadline := time.Now().Add(bound)
	for len(p.queue) == 0 {
		if time.Now().After(deadline) {
			p.t.Fatalf("no frame within %v", bound)
		}
		p.fill(deadline)
	}
	f := p.queue[0]
	p.queue = p.queue[1:]
	return f
}

// fill reads what the current answer brings, then (polling) polls again.
func (p *httpPage) fill(deadline time.Time) {
	p.t.Helper()
	for {
		b, err := p.scan.Next()
		if err != nil {
			p.t.Fatal(err)
		}
		if b == nil {
			break
		}
		f, err := wire.DecodeHost(b)
		if err != nil {
			p.t.Fatalf("DecodeHost(%s): %v", b, err)
		}
		p.queue = append(p.queue, f)
		p.read++
	}
	if len(p.queue) > 0 {
		return
	}
	if p.resp != nil {
		buf := make([]byte, 4096)
		type result struct {
			n   int
			err error
		}
		done := make(chan result, 1)
		go func() { n, err := p.resp.Body.Read(buf); done <- result{n, err} }()
		select {
		case r := <-done:
			p.scan.Write(buf[:r.n])
			if r.err != nil {
				p.resp.Body.Close()
				p.resp = nil
			}
			return
		case <-time.After(time.Until(deadline)):
			p.t.Fatalf("no frame within %v", bound)
		}
	}
	if !p.poll {
		p.t.Fatalf("the stream ended, and no frame waits")
	}
	resp := p.post(wire.Envelope{T: wire.EnvelopePoll, Ack: p.read}, nil)
	switch resp.StatusCode {
	case http.StatusOK:
		p.resp = resp
	case http.StatusNoContent:
		resp.Body.Close()
	default:
		b, _ := io.ReadAll(resp.Body)
		p.t.Fatalf("poll: %d %s", resp.StatusCode, b)
	}
}

func (p *httpPage) expect(typ string) wire.HostFrame {
	p.t.Helper()
	f := p.next()
	if f.T != typ {
		p.t.Fatalf("frame %+v, want type %q", f, typ)
	}
	return f
}

// post sends env (the session and secret filled in) with frames after it.
func (p *httpPage) post(env wire.Envelope, frames []string) *http.Response {
	p.t.Helper()
	if env.Session == "" {
		env.Session, env.Secret = p.ready.Session, p.ready.Secret
	}
	body := wire.AppendLine(nil, env.Encode())
	for _, f := range frames {
		body = wire.AppendLine(body, []byte(f))
	}
	return postRaw(p.f, p.t, body, p.header)
}

func postRaw(f *fixture, t testing.TB, body []byte, header http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, httpURL(f, nil), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", wire.SendType)
	for k, v := range header {
		req.Header[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*bound)
	t.Cleanup(cancel)
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// send posts frames as the session's next send and checks the answer is 204.
func (p *httpPage) send(frames ...string) {
	p.t.Helper()
	p.seq++
	resp := p.post(wire.Envelope{T: wire.EnvelopeSend, Seq: p.seq}, frames)
	if resp.StatusCode != http.StatusNoContent {
		b, _ := io.ReadAll(resp.Body)
		p.t.Fatalf("send %d: %d %s, want 204", p.seq, resp.StatusCode, b)
	}
}

// refusal reads a JSON refusal answer.
func refusalOf(t testing.TB, resp *http.Response) wire.Refusal {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	r, err := wire.DecodeRefusal(bytes.TrimSpace(b))
	if err != nil {
		t.Fatalf("answer %d %q: %v", resp.StatusCode, b, err)
	}
	return r
}

func bothCarriers(t *testing.T, test func(t *testing.T, poll bool)) {
	for _, poll := range []bool{false, true} {
		name := wire.CarrierStream
		if poll {
			name = wire.CarrierPoll
		}
		t.Run(name, func(t *testing.T) { test(t, poll) })
	}
}

func TestAnHTTPSessionCarriesTheSameFramesAsASocket(t *testing.T) {
	bothCarriers(t, func(t *testing.T, poll bool) {
		f := newFixture(t, `{}`, true)
		if _, err := f.H.Publish(context.Background(), "prices", json.RawMessage(`{"p":1}`)); err != nil {
			t.Fatal(err)
		}
		p := dialHTTP(f, t, poll)
		p.send(`{"t":"sub","stream":"prices"}`, `{"t":"ping"}`)
		reset := p.expect(wire.TypeReset)
		if reset.Stream != "prices" || reset.Seq != 1 {
			t.Fatalf("reset %+v, want prices at seq 1", reset)
		}
		p.expect(wire.TypeHeartbeat) // the ping's answer
		if _, err := f.H.Publish(context.Background(), "prices", json.RawMessage("{\n\"p\": 2}")); err != nil {
			t.Fatal(err)
		}
		ev := p.expect(wire.TypeEvent)
		if ev.Seq != 2 || string(ev.Data) != `{ "p": 2}` {
			t.Fatalf("event %+v (data %s), want seq 2 with the data on one line", ev, ev.Data)
		}
	})
}

func TestAnHTTPSessionAppliesEachSendOnceAndInOrder(t *testing.T) {
	bothCarriers(t, func(t *testing.T, poll bool) {
		f := newFixture(t, `{}`, true)
		p := dialHTTP(f, t, poll)
		p.send(`{"t":"sub","stream":"a"}`)
		p.expect(wire.TypeReset)
		// The same send again (its answer was lost, say): answered, not applied twice.
		resp := p.post(wire.Envelope{T: wire.EnvelopeSend, Seq: 1}, []string{`{"t":"sub","stream":"b"}`})
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("a send again: %d, want 204", resp.StatusCode)
		}
		// A send after a lost one: refused, so the page knows its frames are not in order.
		resp = p.post(wire.Envelope{T: wire.EnvelopeSend, Seq: 3}, []string{`{"t":"sub","stream":"c"}`})
		if r := refusalOf(t, resp); resp.StatusCode != http.StatusConflict || r.Error != wire.RefusalSequence {
			t.Fatalf("a send after a lost one: %d %+v, want 409 %q", resp.StatusCode, r, wire.RefusalSequence)
		}
		p.send(`{"t":"sub","stream":"d"}`)
		if r := p.expect(wire.TypeReset); r.Stream != "d" {
			t.Fatalf("after the refused sends the next frame is %+v, want d's reset: b and c were never applied", r)
		}
	})
}

func TestAPOSTIsTakenOnlyWithItsSessionsSecret(t *testing.T) {
	f := newFixture(t, `{}`, true)
	p := dialHTTP(f, t, false)
	q := dialHTTP(f, t, false)
	for _, tt := range []struct {
		name    string
		session string
		secret  string
	}{
		{"another session's secret", p.ready.Session, q.ready.Secret},
		{"a made-up secret", p.ready.Session, strings.Repeat("0", 32)},
		{"a session that never was", "00112233445566778899aabb", p.ready.Secret},
	} {
		resp := p.post(wire.Envelope{T: wire.EnvelopeSend, Session: tt.session, Secret: tt.secret, Seq: 1}, []string{`{"t":"sub","stream":"x"}`})
		if r := refusalOf(t, resp); resp.StatusCode != http.StatusNotFound || r.Error != wire.RefusalSession {
			t.Errorf("%s: %d %+v, want 404 %q", tt.name, resp.StatusCode, r, wire.RefusalSession)
		}
	}
	// Neither session took the frame.
	p.send(`{"t":"ping"}`)
	p.expect(wire.TypeHeartbeat)
	q.send(`{"t":"ping"}`)
	q.expect(wire.TypeHeartbeat)
}

func TestBadPOSTsGetAClearStatusAndHarmNoOtherSession(t *testing.T) {
	f := newFixture(t, `{"maxFrameBytes":1024}`, true)
	other := dialHTTP(f, t, false)
	p := dialHTTP(f, t, false)
	env := wire.Envelope{T: wire.EnvelopeSend, Session: p.ready.Session, Secret: p.ready.Secret, Seq: 1}.Encode()
	for _, tt := range []struct {
		name   string
		body   []byte
		status int
		err    string
	}{
		{"garbage", []byte("\x00\xffgarbage"), 400, wire.RefusalEnvelope},
		{"a frame for an envelope", []byte(`{"t":"sub","stream":"a"}` + "\n"), 400, wire.RefusalEnvelope},
		{"an envelope of no kind", []byte(`{"t":"put","session":"a","secret":"b"}`), 400, wire.RefusalEnvelope},
		{"over maxFrameBytes", append(append(env, '\n'), bytes.Repeat([]byte("x"), 4096)...), 413, wire.RefusalTooBig},
	} {
		resp := postRaw(f, t, tt.body, nil)
		if r := refusalOf(t, resp); resp.StatusCode != tt.status || r.Error != tt.err {
			t.Errorf("%s: %d %+v, want %d %q", tt.name, resp.StatusCode, r, tt.status, tt.err)
		}
	}
	// Malformed frames in a good envelope are bad frames, as on a socket: an error frame each.
	p.send(`{"t":"nonsense"}`)
	if e := p.expect(wire.TypeError); !strings.Contains(e.Message, "nonsense") {
		t.Fatalf("error frame %+v, want it to name the type", e)
	}
	other.send(`{"t":"ping"}`)
	other.expect(wire.TypeHeartbeat)
}

func TestAnEndedHTTPSessionAnswersItsPOSTsWith404(t *testing.T) {
	f := newFixture(t, `{}`, true)
	p := dialHTTP(f, t, true)
	resp := p.post(wire.Envelope{T: wire.EnvelopeBye, Reason: "leaving"}, nil)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("bye: %d, want 204", resp.StatusCode)
	}
	waitFor(t, "the session to end", func() bool { return f.H.Sessions() == 0 })
	resp = p.post(wire.Envelope{T: wire.EnvelopeSend, Seq: 1}, []string{`{"t":"ping"}`})
	if r := refusalOf(t, resp); resp.StatusCode != http.StatusNotFound || r.Error != wire.RefusalSession {
		t.Fatalf("a send after the bye: %d %+v, want 404", resp.StatusCode, r)
	}
}

func TestAPollAnswersWhatFollowsItsAckSoALostAnswerLosesNothing(t *testing.T) {
	f := newFixture(t, `{}`, true)
	p := dialHTTP(f, t, true)
	p.send(`{"t":"sub","stream":"s"}`)
	p.expect(wire.TypeReset)
	for i := range 3 {
		if _, err := f.H.Publish(context.Background(), "s", json.RawMessage(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	// A poll whose answer is lost: the page reads none of it.
	resp := p.post(wire.Envelope{T: wire.EnvelopePoll, Ack: p.read}, nil)
	lost, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(lost, []byte(`"t":"event"`)) {
		t.Fatalf("the lost poll: %d %s, want events", resp.StatusCode, lost)
	}
	// Polling again with the same ack gets the same frames, then what came since.
	var got []string
	for len(got) < 3 {
		f := p.expect(wire.TypeEvent)
		got = append(got, string(f.Data))
	}
	if strings.Join(got, " ") != "0 1 2" {
		t.Fatalf("after a lost answer the page read %v, want 0 1 2", got)
	}
	// An ack of frames never sent is the page's mistake, and refused.
	resp = p.post(wire.Envelope{T: wire.EnvelopePoll, Ack: 999}, nil)
	if r := refusalOf(t, resp); resp.StatusCode != http.StatusConflict || r.Error != wire.RefusalSequence {
		t.Fatalf("an ack past the frames sent: %d %+v, want 409", resp.StatusCode, r)
	}
}

func TestAnHTTPSessionWhosePageGoesQuietEnds(t *testing.T) {
	bothCarriers(t, func(t *testing.T, poll bool) {
		f := newFixture(t, `{"heartbeatMs":100}`, true)
		dialHTTP(f, t, poll) // and never sends, nor polls again
		if n := f.H.Sessions(); n != 1 {
			t.Fatalf("%d sessions, want 1", n)
		}
		// 3 heartbeats of silence from the page (a stream's page pings every heartbeat).
		waitFor(t, "the quiet session to end", func() bool { return f.H.Sessions() == 0 })
	})
}

func TestAnHTTPPageRefusedBeforeItsSessionIsToldWhy(t *testing.T) {
	bothCarriers(t, func(t *testing.T, poll bool) {
		f := newFixtureWith(t, `{}`, true, hostplugin.Options{Authenticate: byCookie})
		_, resp := openHTTP(f, t, poll, nil)
		if r := refusalOf(t, resp); resp.StatusCode != http.StatusUnauthorized || r.Error != wire.RefusalUnauthorized {
			t.Fatalf("no cookie: %d %+v, want 401", resp.StatusCode, r)
		}
		p, resp := openHTTP(f, t, poll, http.Header{"Origin": {"https://evil.example"}, "Cookie": cookie("alice")["Cookie"]})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("a foreign origin: %d, want 200 and the refusal in frames", resp.StatusCode)
		}
		if e := p.expect(wire.TypeError); !strings.Contains(e.Message, "evil.example") {
			t.Fatalf("error frame %+v, want the origin named", e)
		}
		if c := p.expect(wire.TypeClose); c.Status != wire.CloseOrigin {
			t.Fatalf("close frame %+v, want %d", c, wire.CloseOrigin)
		}
	})
}

func TestAnHTTPSessionIsDrainedAndStoppedAsASocketIs(t *testing.T) {
	bothCarriers(t, func(t *testing.T, poll bool) {
		f := newFixture(t, `{"drainTimeoutMs":1000}`, true)
		p := dialHTTP(f, t, poll)
		go f.H.Drain(context.Background(), "ws://elsewhere.example/_lifeline/events")
		if g := p.expect(wire.TypeGoAway); g.URI != "ws://elsewhere.example/_lifeline/events" {
			t.Fatalf("goaway %+v", g)
		}
		if c := p.expect(wire.TypeClose); c.Status != wire.CloseDrained {
			t.Fatalf("close %+v, want %d after the drain timeout", c, wire.CloseDrained)
		}
		// A page that arrives after the drain is sent away at once.
		q, resp := openHTTP(f, t, poll, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("after the drain: %d", resp.StatusCode)
		}
		q.expect(wire.TypeGoAway)
		q.expect(wire.TypeClose)
	})
	bothCarriers(t, func(t *testing.T, poll bool) {
		f := newFixture(t, `{}`, true)
		p := dialHTTP(f, t, poll)
		go f.H.Stop(context.Background(), 2*time.Second)
		if e := p.expect(wire.TypeError); e.Message != wire.RestartReason(2*time.Second) {
			t.Fatalf("error %+v, want the restart message", e)
		}
		if c := p.expect(wire.TypeClose); c.Status != wire.CloseServiceRestart {
			t.Fatalf("close %+v, want %d", c, wire.CloseServiceRestart)
		}
	})
}

// A page on long polls that read its goaway moves on: its bye may reach another Host (or a
// restarted Host's successor, which took the listening socket over), never this one. Its
// session ends once it stops polling, and the drain does not wait out its timeout for it.
func TestAPollingPageThatMovedOnDoesNotHoldTheDrain(t *testing.T) {
	f := newFixture(t, `{"drainTimeoutMs":60000}`, true)
	p := dialHTTP(f, t, true)
	forced := make(chan int, 1)
	start := time.Now()
	go func() { forced <- f.H.Drain(context.Background(), "") }()
	p.expect(wire.TypeGoAway) // and polls no more
	select {
	case n := <-forced:
		if n != 0 {
			t.Fatalf("the drain closed %d sessions, want none: the page had left", n)
		}
		t.Logf("drained %v after the goaway", time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("the drain still waits for a page that moved on 10 s ago")
	}
}

func TestAnHTTPSessionOverTheCapIsToldToComeBackLater(t *testing.T) {
	bothCarriers(t, func(t *testing.T, poll bool) {
		f := newFixture(t, `{"maxSessions":1}`, true)
		dialHTTP(f, t, poll)
		p, resp := openHTTP(f, t, poll, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("over the cap: %d", resp.StatusCode)
		}
		if e := p.expect(wire.TypeError); !strings.HasPrefix(e.Message, "retry-after=") {
			t.Fatalf("error %+v, want a retry-after", e)
		}
		if c := p.expect(wire.TypeClose); c.Status != wire.CloseOverloaded {
			t.Fatalf("close %+v, want %d", c, wire.CloseOverloaded)
		}
	})
}

func TestAnHTTPSessionWaitsForTheReadinessGate(t *testing.T) {
	bothCarriers(t, func(t *testing.T, poll bool) {
		f := newFixture(t, `{}`, false)
		// A poll's opening GET is answered with its ready frame, so it waits for the gate.
		opened := make(chan *httpPage, 1)
		go func() {
			p, _ := openHTTP(f, t, poll, nil)
			opened <- p
		}()
		waitFor(t, "the session to open", func() bool { return f.H.Sessions() == 1 })
		if st := f.H.Stats(); st.Ready {
			t.Fatalf("stats %+v, want the gate closed", st)
		}
		f.H.SetReady(true)
		p := <-opened
		if p.ready = p.expect(wire.TypeReady); p.ready.Secret == "" {
			t.Fatalf("ready %+v without a secret", p.ready)
		}
		p.post(wire.Envelope{T: wire.EnvelopeBye}, nil)
	})
}

func TestAProbeOfThePathIsAnsweredAndTakesNoSession(t *testing.T) {
	f := newFixture(t, `{"maxSessions":1}`, true)
	f.Dial(t).Expect(wire.TypeReady) // the Host is full
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, f.WSURL()+"?"+wire.ProbeParam+"=1", &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"t":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	_, b, err := conn.Read(ctx)
	if err != nil || string(b) != `{"t":"hb"}` {
		t.Fatalf("the probe's answer: %s %v, want a heartbeat", b, err)
	}
	if _, _, err := conn.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("after the answer: %v, want close 1000", err)
	}
	if n := f.H.Sessions(); n != 1 {
		t.Fatalf("%d sessions, want only the first: a probe is no session", n)
	}
}

func TestTheRefusalQueryTellsAClosedGateFromABlockedPath(t *testing.T) {
	f := newFixture(t, `{}`, false)
	resp, body := refusalQuery(t, f, http.MethodGet, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, wire.RefusalNotReady) {
		t.Fatalf("gate closed: %d %s, want 503 %q", resp.StatusCode, body, wire.RefusalNotReady)
	}
	f.H.SetReady(true)
	resp, body = refusalQuery(t, f, http.MethodGet, nil)
	if resp.StatusCode != http.StatusUpgradeRequired {
		t.Fatalf("gate open: %d %s, want 426", resp.StatusCode, body)
	}
}

// memRelay is a fleet's relay in memory: every Host that serves is reached by its name.
type memRelay struct {
	mu    sync.Mutex
	hosts map[string]func(context.Context, []byte) []byte
}

func (m *memRelay) Serve(id string, serve func(context.Context, []byte) []byte) (func(), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hosts == nil {
		m.hosts = map[string]func(context.Context, []byte) []byte{}
	}
	m.hosts[id] = serve
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.hosts, id)
	}, nil
}

func (m *memRelay) Forward(ctx context.Context, id string, req []byte) ([]byte, error) {
	m.mu.Lock()
	serve := m.hosts[id]
	m.mu.Unlock()
	if serve == nil {
		return nil, fmt.Errorf("memRelay: no Host %q", id)
	}
	return serve(ctx, req), nil
}

func TestAPOSTThatReachesAnotherHostOfTheFleetIsRelayedToItsSession(t *testing.T) {
	// A balancer without sticky sessions sends a page's POSTs to any Host: each is carried to
	// the Host of its session, sends and polls alike.
	bothCarriers(t, func(t *testing.T, poll bool) {
		relay := &memRelay{}
		a := newFixtureWith(t, `{}`, true, hostplugin.Options{Relay: relay})
		b := newFixtureWith(t, `{}`, true, hostplugin.Options{Relay: relay})
		p := dialHTTP(a, t, poll)
		p.f = b // every POST from now on goes to the other Host
		p.send(`{"t":"sub","stream":"s"}`)
		if r := p.expect(wire.TypeReset); r.Stream != "s" {
			t.Fatalf("frame %+v, want the reset of s", r)
		}
		if _, err := a.H.Publish(context.Background(), "s", json.RawMessage(`1`)); err != nil {
			t.Fatal(err)
		}
		if e := p.expect(wire.TypeEvent); string(e.Data) != "1" {
			t.Fatalf("event %+v", e)
		}
		if b.H.Sessions() != 0 {
			t.Fatalf("the other Host holds %d sessions, want none: the relay carried the POSTs", b.H.Sessions())
		}
		// A session of no Host of the fleet is unknown, as on one Host.
		resp := p.post(wire.Envelope{T: wire.EnvelopeSend, Session: "deadbeef.00112233", Secret: "x", Seq: 1}, []string{`{"t":"ping"}`})
		if r := refusalOf(t, resp); resp.StatusCode != http.StatusNotFound || r.Error != wire.RefusalSession {
			t.Fatalf("a session of no Host: %d %+v, want 404", resp.StatusCode, r)
		}
	})
}

func TestWithoutARelayAPOSTForAnotherHostsSessionIsUnknown(t *testing.T) {
	a := newFixture(t, `{}`, true)
	b := newFixture(t, `{}`, true)
	p := dialHTTP(a, t, false)
	p.f = b
	p.seq++
	resp := p.post(wire.Envelope{T: wire.EnvelopeSend, Seq: p.seq}, []string{`{"t":"ping"}`})
	if r := refusalOf(t, resp); resp.StatusCode != http.StatusNotFound || r.Error != wire.RefusalSession {
		t.Fatalf("%d %+v, want 404: one Host needs no relay, and a fleet without one has sticky sessions", resp.StatusCode, r)
	}
}
