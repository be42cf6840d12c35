//go:build !js

package wstest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/test/wstest"
)

// echo accepts a WebSocket and sends back each message, until the connection closes.
func echo(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	for {
		typ, b, err := c.Read(context.Background())
		if err != nil {
			return
		}
		if c.Write(context.Background(), typ, b) != nil {
			return
		}
	}
}

func TestAWebSocketRunsInABubble(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
	}{
		{"a handler that serves the socket until it closes", echo},
		{"a handler that returns once it hijacked", func(w http.ResponseWriter, r *http.Request) {
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			go func() {
				defer c.CloseNow()
				typ, b, err := c.Read(context.Background())
				if err == nil {
					c.Write(context.Background(), typ, b)
				}
			}()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, resp, err := websocket.Dial(t.Context(), "ws://example.invalid/echo", &websocket.DialOptions{HTTPClient: wstest.Client(tc.h)})
				if err != nil {
					t.Fatalf("Dial: %v", err)
				}
				if resp.StatusCode != http.StatusSwitchingProtocols {
					t.Fatalf("status %d, want 101", resp.StatusCode)
				}
				start := time.Now()
				if err := c.Write(t.Context(), websocket.MessageText, []byte("hello")); err != nil {
					t.Fatalf("Write: %v", err)
				}
				_, b, err := c.Read(t.Context())
				if err != nil || string(b) != "hello" {
					t.Fatalf("Read = %q, %v; want the echo", b, err)
				}
				if took := time.Since(start); took != 0 {
					t.Errorf("the echo took %v of the bubble's clock, want none", took)
				}
				c.Close(websocket.StatusNormalClosure, "")
			})
		})
	}
}

func TestAnAnswerThatIsNoUpgradeIsTheResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := wstest.Client(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/events" || r.URL.RawQuery != "a=1" || r.Host != "example.invalid" || r.RequestURI != "/events?a=1" {
				t.Errorf("the handler saw path %q query %q host %q URI %q, want a server's view of the request",
					r.URL.Path, r.URL.RawQuery, r.Host, r.RequestURI)
			}
			http.Error(w, "not today", http.StatusServiceUnavailable)
		}))
		resp, err := client.Get("http://example.invalid/events?a=1")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusServiceUnavailable || string(body) != "not today\n" {
			t.Fatalf("response %d %q, want 503 %q", resp.StatusCode, body, "not today\n")
		}
	})
}

func TestADialGivenUpEndsTheRequestAndLeavesNoConnection(t *testing.T) {
	for _, tc := range []struct {
		name    string
		upgrade bool // the handler upgrades after the client gave up, instead of returning
	}{
		{"a handler that gives up too", false},
		{"a handler that upgrades all the same", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ended := make(chan error, 1)
				client := wstest.Client(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					<-r.Context().Done() // held until the client gives up
					if !tc.upgrade {
						ended <- nil
						return
					}
					c, err := websocket.Accept(w, r, nil)
					if err != nil {
						ended <- err
						return
					}
					defer c.CloseNow()
					_, _, err = c.Read(context.Background())
					ended <- err
				}))
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				defer cancel()
				_, _, err := websocket.Dial(ctx, "ws://example.invalid/", &websocket.DialOptions{HTTPClient: client})
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Dial = %v, want the deadline", err)
				}
				synctest.Wait()
				select {
				case err := <-ended:
					if tc.upgrade && err == nil {
						t.Fatal("the late upgrade's read succeeded, want its connection closed")
					}
				default:
					t.Fatal("the handler is still running after the client gave up")
				}
			})
		})
	}
}
