//go:build !js

package hostplugin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/test/wstest"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// expectEnd reads the frames of a page whose access ended: nothing but the error frame saying
// why (and replies refused before it, which want lists by id), then the close 4401 with the
// same words.
func expectEnd(c *client, reason string, reauth bool, refused ...uint64) {
	c.T.Helper()
	want := wire.AccessEndedReason(reason, reauth)
	for _, id := range refused {
		f := c.Expect(wire.TypeReply)
		if f.ID != id || f.Code != wire.CodeAccessEnded {
			c.T.Fatalf("reply %+v, want call %d refused %s", f, id, wire.CodeAccessEnded)
		}
	}
	if f := c.Expect(wire.TypeError); f.Message != want {
		c.T.Fatalf("error frame %q, want %q", f.Message, want)
	}
	// The close reason is the same words, cut to the 123 bytes a close frame holds.
	code, why := c.Closed()
	if code != wire.CloseAccessEnded || why == "" || !strings.HasPrefix(want, why) || len(why) > 123 {
		c.T.Fatalf("closed %d %q, want %d %q", code, why, wire.CloseAccessEnded, want)
	}
}

// sessionsOf dials n sockets as user and reads their ready frames.
func sessionsOf(f *fixture, t *testing.T, user string, n int) []*client {
	t.Helper()
	var out []*client
	for range n {
		c, err := f.TryDial(t, cookie(user))
		if err != nil {
			t.Fatalf("dial as %s: %v", user, err)
		}
		c.Expect(wire.TypeReady)
		out = append(out, c)
	}
	return out
}

func TestEndSessionsEndsEverySessionOfTheIdentityAndNoOther(t *testing.T) {
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{Authenticate: byCookie})
	alice := sessionsOf(f, t, "alice", 3)
	bob := sessionsOf(f, t, "bob", 1)[0]
	ap := dialHTTPAs(f, t, "alice", true)
	bob.Send(`{"t":"sub","stream":"news"}`)
	bob.Expect(wire.TypeReset)

	n, err := f.H.EndSessions(context.Background(), "alice", hostplugin.EndOptions{Reason: "You signed out on another device."})
	if err != nil || n != 4 {
		t.Fatalf("EndSessions = %d, %v; want 4 sessions (3 sockets, 1 on HTTP), no error", n, err)
	}
	for _, c := range alice {
		expectEnd(c, "You signed out on another device.", false)
	}
	want := wire.AccessEndedReason("You signed out on another device.", false)
	if e := ap.expect(wire.TypeError); e.Message != want {
		t.Fatalf("the HTTP page's error frame %q, want %q", e.Message, want)
	}
	if c := ap.expect(wire.TypeClose); c.Status != wire.CloseAccessEnded || c.Reason != want {
		t.Fatalf("the HTTP page's close %+v, want %d %q", c, wire.CloseAccessEnded, want)
	}
	// Bob carries on.
	if _, err := f.H.Publish(context.Background(), "news", json.RawMessage(`1`)); err != nil {
		t.Fatal(err)
	}
	if e := bob.Expect(wire.TypeEvent); string(e.Data) != "1" {
		t.Fatalf("bob's event %+v", e)
	}
	waitFor(t, "alice's sessions to be gone", func() bool { return f.H.Sessions() == 1 })
	if n, _ := f.H.EndSessions(context.Background(), "alice", hostplugin.EndOptions{}); n != 0 {
		t.Fatalf("a second EndSessions ended %d sessions, want 0", n)
	}
}

func TestReauthenticateAsksThePagesToComeBackThroughAuthenticate(t *testing.T) {
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{Authenticate: byCookie})
	c := sessionsOf(f, t, "alice", 1)[0]
	if _, err := f.H.EndSessions(context.Background(), "alice", hostplugin.EndOptions{Reason: "Your role changed.", Reauthenticate: true}); err != nil {
		t.Fatal(err)
	}
	expectEnd(c, "Your role changed.", true)
	// The page connects again at once, through Authenticate, which decides.
	sessionsOf(f, t, "alice", 1)
	if _, body := refusedDial(t, f, nil); !strings.Contains(body, "sign in first") {
		t.Fatalf("a page whose credential no longer passes: %s, want Authenticate's refusal", body)
	}
}

func TestAnEndWithoutAReasonSaysSignedOut(t *testing.T) {
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{Authenticate: byCookie})
	c := sessionsOf(f, t, "alice", 1)[0]
	_, _ = f.H.EndSessions(context.Background(), "alice", hostplugin.EndOptions{Reason: "\n"})
	expectEnd(c, "signed out", false)
	d := sessionsOf(f, t, "alice", 1)[0]
	_, _ = f.H.EndSessions(context.Background(), "alice", hostplugin.EndOptions{Reason: strings.Repeat("é", 100) + "\nsecret stack"})
	expectEnd(d, strings.Repeat("é", 78)+"…", false)
}

func TestNothingReachesAPageAfterItsAccessEnded(t *testing.T) {
	// A stream published without pause, a heartbeat every 100 ms: at the end the page gets the
	// error frame, then the close, and nothing else.
	f := newFixtureWith(t, `{"heartbeatMs":100}`, true, hostplugin.Options{Authenticate: byCookie})
	c := sessionsOf(f, t, "alice", 1)[0]
	c.Send(`{"t":"sub","stream":"ticks"}`)
	c.Expect(wire.TypeReset)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			_, _ = f.H.Publish(context.Background(), "ticks", json.RawMessage(fmt.Sprint(i)))
		}
	})
	defer func() { close(stop); wg.Wait() }()
	for range 50 {
		c.Expect(wire.TypeEvent)
	}
	if _, err := f.H.EndSessions(context.Background(), "alice", hostplugin.EndOptions{Reason: "bye"}); err != nil {
		t.Fatal(err)
	}
	// Events written before the end may still arrive; from the error frame on, nothing but
	// the close.
	for {
		fr := c.Next()
		if fr.T == wire.TypeEvent {
			continue
		}
		if fr.T != wire.TypeError || fr.Message != wire.AccessEndedReason("bye", false) {
			t.Fatalf("frame %+v, want the end's error frame", fr)
		}
		break
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	typ, b, err := c.Conn.Read(ctx)
	if err == nil {
		t.Fatalf("after the end the page read %v %s, want the close", typ, b)
	}
	if code := websocket.CloseStatus(err); code != wire.CloseAccessEnded {
		t.Fatalf("close %v, want %d", err, wire.CloseAccessEnded)
	}
}

func TestACallReceivedButNotStartedIsRefusedAndNeverRuns(t *testing.T) {
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{Authenticate: byCookie})
	started := make(chan string, 8)
	release := make(chan struct{})
	var ran atomic.Int32
	f.H.HandleCall("slow", func(ctx context.Context, c *hostplugin.Call) (json.RawMessage, error) {
		ran.Add(1)
		started <- string(c.Data)
		<-release
		return json.RawMessage(`"done"`), nil
	})
	c := sessionsOf(f, t, "alice", 1)[0]
	c.Send(`{"t":"call","id":1,"name":"slow","data":1}`)
	if got := <-started; got != "1" {
		t.Fatalf("call %s started, want 1", got)
	}
	c.Send(`{"t":"call","id":2,"name":"slow","data":2}`)
	c.Send(`{"t":"call","id":3,"name":"slow","data":3,"key":"k3"}`)
	c.Send(`{"t":"ping"}`)
	c.Expect(wire.TypeHeartbeat) // the calls are queued on the Host by now
	if _, err := f.H.EndSessions(context.Background(), "alice", hostplugin.EndOptions{Reason: "revoked"}); err != nil {
		t.Fatal(err)
	}
	expectEnd(c, "revoked", false, 2, 3)
	close(release)
	waitFor(t, "the session to end", func() bool { return f.H.Sessions() == 0 })
	select {
	case got := <-started:
		t.Fatalf("call %s ran after the session's access ended", got)
	case <-time.After(50 * time.Millisecond):
	}
	if n := ran.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once (the call already running)", n)
	}
}

func TestEndSubscriptionDeniesOneStreamAndTheRestCarriesOn(t *testing.T) {
	var asked atomic.Int32
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{Authenticate: byCookie,
		Authorize: func(identity, stream string) error { asked.Add(1); return nil }})
	alice := sessionsOf(f, t, "alice", 2)
	a1, a2 := alice[0], alice[1]
	b := sessionsOf(f, t, "bob", 1)[0]
	for _, c := range []*client{a1, b} {
		c.Send(`{"t":"sub","stream":"team"}`)
		c.Expect(wire.TypeReset)
		c.Send(`{"t":"sub","stream":"own"}`)
		c.Expect(wire.TypeReset)
	}
	n, err := f.H.EndSubscription(context.Background(), "alice", "team", "You left the team.")
	if err != nil || n != 1 {
		t.Fatalf("EndSubscription = %d, %v; want the 1 session that followed it", n, err)
	}
	if d := a1.Expect(wire.TypeDenied); d.Stream != "team" || d.Reason != "You left the team." {
		t.Fatalf("denied %+v", d)
	}
	for _, s := range []string{"team", "own"} {
		if _, err := f.H.Publish(context.Background(), s, json.RawMessage(`"x"`)); err != nil {
			t.Fatal(err)
		}
	}
	if e := a1.Expect(wire.TypeEvent); e.Stream != "own" {
		t.Fatalf("alice got %+v, want only her own stream's event", e)
	}
	for _, s := range []string{"team", "own"} {
		if e := b.Expect(wire.TypeEvent); e.Stream != s {
			t.Fatalf("bob got %+v, want %s's event", e, s)
		}
	}
	// On the session it ended on, a sub for the stream is denied without asking Authorize.
	before := asked.Load()
	a1.Send(`{"t":"sub","stream":"team"}`)
	if d := a1.Expect(wire.TypeDenied); d.Stream != "team" || d.Reason != "You left the team." {
		t.Fatalf("a new sub: %+v, want denied with the same reason", d)
	}
	if asked.Load() != before {
		t.Fatal("Authorize was asked for a stream whose access ended on the session")
	}
	// Alice's other page did not follow it yet: it is ended for every page she has now.
	a2.Send(`{"t":"sub","stream":"team"}`)
	if d := a2.Expect(wire.TypeDenied); d.Reason != "You left the team." {
		t.Fatalf("her other page's sub: %+v, want denied", d)
	}
	// A new session asks Authorize again, which decides.
	a3 := sessionsOf(f, t, "alice", 1)[0]
	a3.Send(`{"t":"sub","stream":"team"}`)
	a3.Expect(wire.TypeReset)
	if asked.Load() != before+1 {
		t.Fatalf("Authorize asked %d times for the new session's sub, want once", asked.Load()-before)
	}
}

func TestASubscriptionEndedWhileItJoinsGetsNothingOfTheStream(t *testing.T) {
	// The sub is authorized, then the end comes before the session joins the fan-out: it must
	// join nothing and be denied, however the two interleave.
	for i := range 50 {
		authorized := make(chan struct{})
		goOn := make(chan struct{})
		var once sync.Once
		f := newFixtureWith(t, `{}`, true, hostplugin.Options{Authenticate: byCookie,
			Authorize: func(identity, stream string) error {
				once.Do(func() { close(authorized); <-goOn })
				return nil
			}})
		c := sessionsOf(f, t, "alice", 1)[0]
		c.Send(`{"t":"sub","stream":"s"}`)
		<-authorized
		ended := make(chan struct{})
		go func() {
			_, _ = f.H.EndSubscription(context.Background(), "alice", "s", "gone")
			close(ended)
		}()
		if i%2 == 0 {
			<-ended
		}
		close(goOn)
		<-ended
		// Whatever came first: the page is told denied, and no event of s follows.
		for {
			fr := c.Next()
			if fr.T == wire.TypeReset {
				continue // the join came first; its catch-up precedes the denied frame
			}
			if fr.T != wire.TypeDenied || fr.Stream != "s" {
				t.Fatalf("round %d: frame %+v, want denied", i, fr)
			}
			break
		}
		if _, err := f.H.Publish(context.Background(), "s", json.RawMessage(`1`)); err != nil {
			t.Fatal(err)
		}
		c.Send(`{"t":"ping"}`)
		if fr := c.Next(); fr.T != wire.TypeHeartbeat {
			t.Fatalf("round %d: after the end the page got %+v, want nothing of s", i, fr)
		}
	}
}

func TestASessionAuthenticatedBeforeAnEndAndRegisteredAfterIsEnded(t *testing.T) {
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	var hold atomic.Bool
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{Access: func(r *http.Request) (hostplugin.Access, error) {
		user, err := byCookie(r)
		if hold.Load() {
			entered <- struct{}{}
			<-release
		}
		return hostplugin.Access{Identity: user}, err
	}})
	hold.Store(true)
	done := make(chan *client, 1)
	go func() {
		c, err := f.TryDial(t, cookie("alice"))
		if err != nil {
			t.Errorf("dial: %v", err)
		}
		done <- c
	}()
	<-entered // Authenticate let alice in; her session is not registered yet
	if n, _ := f.H.EndSessions(context.Background(), "alice", hostplugin.EndOptions{Reason: "signed out"}); n != 0 {
		t.Fatalf("EndSessions ended %d sessions, want 0: none is registered yet", n)
	}
	hold.Store(false)
	close(release)
	c := <-done
	if c == nil {
		return
	}
	// Its ready frame may be out before the end: either way the end follows.
	if fr := c.Next(); fr.T == wire.TypeReady {
		expectEnd(c, "signed out", false)
	} else if fr.T != wire.TypeError || fr.Message != wire.AccessEndedReason("signed out", false) {
		t.Fatalf("frame %+v, want the end", fr)
	}
}

func TestNewRefusesBothAuthenticateAndAccess(t *testing.T) {
	_, err := hostplugin.New(hostplugin.DefaultConfig(), &hostplugin.Options{Authorize: hostplugin.PublicStreams, NoClient: true,
		Authenticate: byCookie, Access: func(*http.Request) (hostplugin.Access, error) { return hostplugin.Access{}, nil }})
	if !errors.Is(err, hostplugin.ErrAccessHooks) {
		t.Fatalf("New = %v, want ErrAccessHooks", err)
	}
}

func TestEndSubscriptionRefusesABadStreamName(t *testing.T) {
	h, _ := newHost(t, `{}`)
	if _, err := h.EndSubscription(context.Background(), "alice", "", "x"); !errors.Is(err, hostplugin.ErrStreamName) {
		t.Fatalf("EndSubscription with no stream = %v, want ErrStreamName", err)
	}
}

// --- expiry and renewal, on the bubble's clock ---

// expiring is an Access whose credential (the cookie "user") holds for life from the moment
// it is asked; "other" names another identity, and a cookie "bad" is refused.
func expiring(life time.Duration) func(*http.Request) (hostplugin.Access, error) {
	return func(r *http.Request) (hostplugin.Access, error) {
		user, err := byCookie(r)
		if err != nil {
			return hostplugin.Access{}, err
		}
		if tok := r.Header.Get("Authorization"); tok != "" {
			user = strings.TrimPrefix(tok, "Bearer ")
		}
		return hostplugin.Access{Identity: user, Until: time.Now().Add(life)}, nil
	}
}

// accessHost is a Host in a synctest bubble, ready, and its endpoint in memory.
func accessHost(t *testing.T, doc string, opts hostplugin.Options) (*hostplugin.Host, *http.Client) {
	t.Helper()
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	opts.NoClient = true
	if opts.Authorize == nil {
		opts.Authorize = hostplugin.PublicStreams
	}
	h, err := hostplugin.New(mustConfig(t, doc), &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	h.SetReady(true)
	return h, wstest.Client(endpointOnly(h))
}

// bubblePageAs dials h as user in memory and returns the frames it reads.
func bubblePageAs(t *testing.T, client *http.Client, user string) (*websocket.Conn, <-chan readFrame) {
	t.Helper()
	conn, _, err := websocket.Dial(t.Context(), "ws://host.invalid"+wire.DefaultPath, &websocket.DialOptions{
		Subprotocols: []string{wire.Subprotocol},
		HTTPClient:   client,
		HTTPHeader:   cookie(user),
	})
	if err != nil {
		t.Fatal(err)
	}
	frames := make(chan readFrame, 256)
	t.Cleanup(func() {
		_ = conn.CloseNow()
		for range frames {
		}
	})
	go func() {
		defer close(frames)
		for {
			_, b, err := conn.Read(context.Background())
			if err != nil {
				var ce websocket.CloseError
				if errors.As(err, &ce) {
					frames <- readFrame{wire.HostFrame{T: "closed", Status: int(ce.Code), Reason: ce.Reason}, time.Now()}
				}
				return
			}
			f, err := wire.DecodeHost(b)
			if err != nil {
				t.Errorf("DecodeHost(%s): %v", b, err)
				return
			}
			frames <- readFrame{f, time.Now()}
		}
	}()
	return conn, frames
}

// renewal posts a renewal of session with secret (and token) as user, and returns the status
// and the answer's body.
func renewal(t *testing.T, client *http.Client, base, user, session, secret, token string) (int, string) {
	t.Helper()
	body := wire.Renewal{Session: session, Secret: secret, Token: token}.Encode()
	req, err := http.NewRequest(http.MethodPost, base+wire.DefaultPath+"?"+wire.RenewParam+"=1", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", wire.SendType)
	for k, v := range cookie(user) {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("renewal: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(bytes.TrimSpace(b))
}

func TestASessionEndsAtItsExpiryNeverLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, client := accessHost(t, `{"heartbeatMs":1000}`, hostplugin.Options{Access: expiring(10 * time.Second)})
		start := time.Now()
		_, frames := bubblePageAs(t, client, "alice")
		ready := <-frames
		if ready.f.T != wire.TypeReady || ready.f.ExpiresMs != 10000 || ready.f.Secret == "" {
			t.Fatalf("ready frame %+v, want expiresMs 10000 and a secret", ready.f)
		}
		var last readFrame
		for f := range frames {
			last = f
			switch f.f.T {
			case wire.TypeHeartbeat:
				if f.at.Sub(start) >= 10*time.Second {
					t.Fatalf("a heartbeat at %v, at or after the expiry", f.at.Sub(start))
				}
				continue
			case wire.TypeError:
				if f.f.Message != wire.AccessEndedReason("your sign-in has expired", false) || f.at.Sub(start) != 10*time.Second {
					t.Fatalf("error frame %q at %v, want the expiry at 10s", f.f.Message, f.at.Sub(start))
				}
				continue
			}
			break
		}
		if last.f.T != "closed" || last.f.Status != wire.CloseAccessEnded || last.at.Sub(start) != 10*time.Second {
			t.Fatalf("the session ended with %+v at %v, want close %d at 10s", last.f, last.at.Sub(start), wire.CloseAccessEnded)
		}
		synctest.Wait()
		if h.Sessions() != 0 {
			t.Fatalf("%d sessions left", h.Sessions())
		}
	})
}

func TestARenewalMovesTheExpiryOrTheSessionEndsThenNeverLater(t *testing.T) {
	// A table of moments: the credential holds 10 s; a renewal comes at some moment, with
	// some outcome; the session ends at the expiry its last good renewal set, never later.
	tests := []struct {
		name   string
		at     time.Duration // when the renewal is sent
		user   string        // the renewal's cookie
		token  string
		secret string // "" for the session's own
		status int
		ends   time.Duration // when the session ends
	}{
		{name: "renewed a moment before the expiry: 10 s more from then", at: 9999 * time.Millisecond, user: "alice", status: 200, ends: 19999 * time.Millisecond},
		{name: "renewed early: 10 s from the renewal", at: 2 * time.Second, user: "alice", status: 200, ends: 12 * time.Second},
		{name: "renewed with a token the page's code handed over", at: 5 * time.Second, user: "nobody-by-cookie", token: "alice", status: 200, ends: 15 * time.Second},
		{name: "a renewal at the very instant of the expiry is too late", at: 10 * time.Second, user: "alice", status: 404, ends: 10 * time.Second},
		{name: "a renewal naming another identity: ends at the expiry", at: 5 * time.Second, user: "bob", status: 409, ends: 10 * time.Second},
		{name: "a renewal Authenticate refuses: ends at the expiry", at: 5 * time.Second, user: "", status: 401, ends: 10 * time.Second},
		{name: "a renewal with another secret: ends at the expiry", at: 5 * time.Second, user: "alice", secret: "0123456789abcdef", status: 404, ends: 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, client := accessHost(t, `{"heartbeatMs":60000}`, hostplugin.Options{Access: expiring(10 * time.Second)})
				start := time.Now()
				_, frames := bubblePageAs(t, client, "alice")
				ready := (<-frames).f
				time.Sleep(tt.at)
				secret := tt.secret
				if secret == "" {
					secret = ready.Secret
				}
				user := tt.user
				if user == "nobody-by-cookie" {
					user = "carol"
				}
				status, body := renewal(t, client, "http://host.invalid", user, ready.Session, secret, tt.token)
				if status != tt.status {
					t.Fatalf("renewal at %v: %d %s, want %d", tt.at, status, body, tt.status)
				}
				if status == 200 {
					want := (10 * time.Second).Milliseconds()
					if r, err := wire.DecodeRenewed([]byte(body)); err != nil || r.ExpiresMs != want {
						t.Fatalf("renewal answer %s, want expiresMs %d", body, want)
					}
				}
				for f := range frames {
					if f.f.T == "closed" {
						if f.f.Status != wire.CloseAccessEnded || f.at.Sub(start) != tt.ends {
							t.Fatalf("ended %+v at %v, want %d at %v", f.f, f.at.Sub(start), wire.CloseAccessEnded, tt.ends)
						}
						return
					}
				}
				t.Fatal("the session never closed")
			})
		})
	}
}

func TestARenewalAuthorizesEveryStreamAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var revoked atomic.Bool
		_, client := accessHost(t, `{"heartbeatMs":60000}`, hostplugin.Options{Access: expiring(time.Minute),
			Authorize: func(identity, stream string) error {
				if stream == "admin" && revoked.Load() {
					return errors.New("you are no longer an admin")
				}
				return nil
			}})
		conn, frames := bubblePageAs(t, client, "alice")
		ready := (<-frames).f
		for _, s := range []string{"admin", "own"} {
			if err := conn.Write(t.Context(), websocket.MessageText, []byte(`{"t":"sub","stream":"`+s+`"}`)); err != nil {
				t.Fatal(err)
			}
			if f := <-frames; f.f.T != wire.TypeReset {
				t.Fatalf("frame %+v, want a reset", f.f)
			}
		}
		revoked.Store(true)
		if status, body := renewal(t, client, "http://host.invalid", "alice", ready.Session, ready.Secret, ""); status != 200 {
			t.Fatalf("renewal: %d %s", status, body)
		}
		if f := <-frames; f.f.T != wire.TypeDenied || f.f.Stream != "admin" || f.f.Reason != "you are no longer an admin" {
			t.Fatalf("frame %+v, want admin denied", f.f)
		}
	})
}

func TestBadRenewalsGetAClearStatusAndBoundedWork(t *testing.T) {
	var asked atomic.Int32
	f := newFixtureWith(t, `{"perIPRate":1,"perIPBurst":30,"trustedProxies":[]}`, true, hostplugin.Options{
		Access: func(r *http.Request) (hostplugin.Access, error) {
			asked.Add(1)
			return expiring(time.Minute)(r)
		}})
	c := sessionsOf(f, t, "alice", 1)[0]
	_ = c
	renewURL := httpURL(f, url.Values{wire.RenewParam: {"1"}})
	post := func(body string, header http.Header, method string) (int, wire.Refusal) {
		t.Helper()
		req, _ := http.NewRequest(method, renewURL, strings.NewReader(body))
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		r, _ := wire.DecodeRefusal(bytes.TrimSpace(b))
		return resp.StatusCode, r
	}
	before := asked.Load()
	tests := []struct {
		name   string
		body   string
		header http.Header
		method string
		status int
		error  string
	}{
		{"garbage", "renew me please", cookie("alice"), http.MethodPost, 400, wire.RefusalRenewal},
		{"a renewal that is no object", `[1,2]`, cookie("alice"), http.MethodPost, 400, wire.RefusalRenewal},
		{"a GET", ``, cookie("alice"), http.MethodGet, 405, wire.RefusalMethod},
		{"a body over the bound", `{"session":"` + strings.Repeat("x", wire.MaxRenewal) + `"}`, cookie("alice"), http.MethodPost, 413, wire.RefusalTooBig},
		{"a session that never was", `{"session":"nohost.123","secret":"k"}`, cookie("alice"), http.MethodPost, 404, wire.RefusalSession},
		{"another origin", `{"session":"x","secret":"k"}`, http.Header{"Origin": {"https://evil.example"}, "Cookie": {"user=alice"}}, http.MethodPost, 403, wire.RefusalOrigin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, r := post(tt.body, tt.header, tt.method)
			if status != tt.status || r.Error != tt.error {
				t.Fatalf("%d %+v, want %d %q", status, r, tt.status, tt.error)
			}
		})
	}
	if n := asked.Load() - before; n != 0 {
		t.Fatalf("Authenticate was asked %d times for renewals that named no session of this Host", n)
	}
	// A flood: the per-address rate answers 429 with its wait, before any other work.
	saw429 := false
	for range 40 {
		if status, r := post(`{"session":"nohost.123","secret":"k"}`, nil, http.MethodPost); status == 429 {
			saw429 = r.RetryAfterMs > 0
			break
		}
	}
	if !saw429 {
		t.Fatal("40 renewals in a row from one address were never refused with 429 and a wait")
	}
}

func TestARenewalOfAnEndedSessionIs404(t *testing.T) {
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{Access: expiring(time.Minute)})
	c, err := f.TryDial(t, cookie("alice"))
	if err != nil {
		t.Fatal(err)
	}
	ready := c.Expect(wire.TypeReady)
	_, _ = f.H.EndSessions(context.Background(), "alice", hostplugin.EndOptions{})
	expectEnd(c, "signed out", false)
	status, body := renewal(t, http.DefaultClient, f.Srv.URL, "alice", ready.Session, ready.Secret, "")
	if status != 404 {
		t.Fatalf("renewal of an ended session: %d %s, want 404", status, body)
	}
}

func TestARenewalOfAnHTTPSessionCarriesItsSecret(t *testing.T) {
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{Access: expiring(time.Minute)})
	p := dialHTTPAs(f, t, "alice", false)
	if p.ready.ExpiresMs <= 59000 || p.ready.ExpiresMs > 60000 {
		t.Fatalf("ready %+v, want expiresMs a moment under 60000", p.ready)
	}
	if status, body := renewal(t, http.DefaultClient, f.Srv.URL, "alice", p.ready.Session, p.ready.Secret, ""); status != 200 {
		t.Fatalf("renewal: %d %s", status, body)
	}
}

func TestARenewalThatReachesAnotherHostIsAuthenticatedThereAndAppliedByItsSessionsHost(t *testing.T) {
	relay := &memRelay{}
	var askedB atomic.Int32
	a := newFixtureWith(t, `{}`, true, hostplugin.Options{Relay: relay, Access: expiring(time.Minute)})
	b := newFixtureWith(t, `{}`, true, hostplugin.Options{Relay: relay, Access: func(r *http.Request) (hostplugin.Access, error) {
		askedB.Add(1)
		return expiring(time.Minute)(r)
	}})
	c, err := a.TryDial(t, cookie("alice"))
	if err != nil {
		t.Fatal(err)
	}
	ready := c.Expect(wire.TypeReady)
	if status, body := renewal(t, http.DefaultClient, b.Srv.URL, "alice", ready.Session, ready.Secret, ""); status != 200 || askedB.Load() != 1 {
		t.Fatalf("renewal through the other Host: %d %s (its Authenticate asked %d times), want 200 once", status, body, askedB.Load())
	}
	for _, tt := range []struct {
		user, secret string
		status       int
	}{{"bob", ready.Secret, 409}, {"alice", "0123456789", 404}, {"", ready.Secret, 401}} {
		if status, body := renewal(t, http.DefaultClient, b.Srv.URL, tt.user, ready.Session, tt.secret, ""); status != tt.status {
			t.Fatalf("relayed renewal as %q: %d %s, want %d", tt.user, status, body, tt.status)
		}
	}
}

func TestExpiryTrackingTakesNoGoroutineOrTimerPerSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, client := accessHost(t, `{"heartbeatMs":600000,"acceptRate":10000,"acceptBurst":10000}`, hostplugin.Options{Access: expiring(time.Hour)})
		page := func() {
			_, frames := bubblePageAs(t, client, "alice")
			<-frames
		}
		page()
		synctest.Wait()
		one := countGoroutines()
		for range 50 {
			page()
		}
		synctest.Wait()
		per := float64(countGoroutines()-one) / 50
		// A session costs its reader and the page's own reader here, and no more with an expiry
		// than without: the same count as sessions without one.
		h2, client2 := accessHost(t, `{"heartbeatMs":600000,"acceptRate":10000,"acceptBurst":10000}`, hostplugin.Options{Authenticate: byCookie})
		_ = h2
		base := countGoroutines()
		for range 50 {
			_, frames := bubblePageAs(t, client2, "alice")
			<-frames
		}
		synctest.Wait()
		without := float64(countGoroutines()-base) / 50
		// (NumGoroutine counts the process's, so others come and go: a goroutine or timer
		// goroutine per session would show as a whole one more per session.)
		if per-without >= 0.5 {
			t.Fatalf("a session that expires costs %.2f goroutines, one that does not %.2f", per, without)
		}
		if h.Sessions() != 51 {
			t.Fatalf("%d sessions", h.Sessions())
		}
	})
}

// dialHTTPAs opens a session on the HTTP carrier as user and reads its ready frame.
func dialHTTPAs(f *fixture, t *testing.T, user string, poll bool) *httpPage {
	t.Helper()
	p, resp := openHTTP(f, t, poll, cookie(user))
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("opening GET as %s: %d %s", user, resp.StatusCode, b)
	}
	p.ready = p.expect(wire.TypeReady)
	return p
}

func countGoroutines() int { return runtime.NumGoroutine() }

// An ended session whose page never answers the close waits closeHandshake for it, but no
// longer than the Host's Close: Close cuts the handshake at once, and nothing of the Host
// outlives it (in the bubble, a goroutine left waiting on its timer would deadlock the end).
// The page is on the poll carrier and polls no more after its first answer, so the close
// frame waits unread.
func TestCloseCutsTheCloseHandshakeOfAnEndedSessionWhosePageNeverAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, client := accessHost(t, `{}`, hostplugin.Options{Access: expiring(time.Hour)})
		req, err := http.NewRequest(http.MethodGet, "http://host.invalid"+wire.DefaultPath+"?"+
			url.Values{wire.CarrierParam: {wire.CarrierPoll}}.Encode(), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = cookie("alice")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(wire.TypeReady)) {
			t.Fatalf("opening GET: %d %s, want 200 and the ready frame", resp.StatusCode, b)
		}
		if n, err := h.EndSessions(context.Background(), "alice", hostplugin.EndOptions{}); err != nil || n != 1 {
			t.Fatalf("EndSessions = %d, %v; want the page's one session", n, err)
		}
		synctest.Wait()
		if h.Sessions() != 1 {
			t.Fatalf("%d sessions before Close, want the one in its close handshake", h.Sessions())
		}
		start := time.Now()
		_ = h.Close()
		synctest.Wait()
		if n, d := h.Sessions(), time.Since(start); n != 0 || d != 0 {
			t.Fatalf("%d sessions %v after Close, want none at once (not after the close handshake's wait)", n, d)
		}
	})
}
