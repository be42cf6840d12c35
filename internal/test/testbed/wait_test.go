//go:build !js

package testbed_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

func TestFreePortCanBeListenedOn(t *testing.T) {
	addr, err := testbed.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listening on the free address %s: %v", addr, err)
	}
	ln.Close()
}

func TestPollStopsWhenTheConditionHolds(t *testing.T) {
	calls := 0
	if !testbed.Poll(context.Background(), 5*time.Second, time.Millisecond, func() bool { calls++; return calls == 3 }) {
		t.Fatal("Poll = false; want true on the third call")
	}
	if calls != 3 {
		t.Fatalf("cond called %d times; want 3", calls)
	}
}

func TestPollGivesUpAfterItsBoundOrWithItsContext(t *testing.T) {
	if testbed.Poll(context.Background(), 20*time.Millisecond, time.Millisecond, func() bool { return false }) {
		t.Error("Poll of a condition that never holds = true")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	if testbed.Poll(ctx, time.Hour, time.Hour, func() bool { calls++; return false }) || calls != 1 {
		t.Errorf("Poll with a done context: %d calls; want false after one call", calls)
	}
}

func TestWaitTCPWaitsForTheListener(t *testing.T) {
	addr, err := testbed.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	listening := make(chan net.Listener, 1)
	time.AfterFunc(100*time.Millisecond, func() {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Error(err)
		}
		listening <- ln
	})
	if err := testbed.WaitTCP(context.Background(), addr, 5*time.Second); err != nil {
		t.Fatalf("WaitTCP for a listener that comes up: %v", err)
	}
	(<-listening).Close()
}

func TestWaitTCPNamesTheAddressWhenNothingListens(t *testing.T) {
	addr, err := testbed.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	err = testbed.WaitTCP(context.Background(), addr, 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("WaitTCP with nothing listening = %v; want an error naming %s and the refusal", err, addr)
	}
}

func TestWaitHTTPWantsA200(t *testing.T) {
	ready := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-ready:
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	err := testbed.WaitHTTP(context.Background(), srv.URL, 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("WaitHTTP of a server answering 503 = %v; want an error with the status", err)
	}
	close(ready)
	if err := testbed.WaitHTTP(context.Background(), srv.URL, 5*time.Second); err != nil {
		t.Fatalf("WaitHTTP of a server answering 200: %v", err)
	}
}

func TestGetHealthReadsTheBodyOfA503(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/_lifeline/health" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"ready":true,"draining":true,"fault":"up","sessions":7,"open":8,"accepted":9,"host":"h2"}`)
	}))
	defer srv.Close()
	h, err := testbed.GetHealth(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	want := testbed.Health{Stats: hostplugin.Stats{Ready: true, Draining: true, Sessions: 7, Open: 8, Accepted: 9}, Fault: "up", Host: "h2"}
	if h != want {
		t.Fatalf("GetHealth = %+v; want %+v", h, want)
	}
}

// A run picks all its ports before it starts the processes that bind them, so the picks must
// differ among themselves: the kernel gives a port closed a moment ago to the next pick as
// readily as any other (a fleet run once got the same port for a NATS route and a Host).
func TestFreePortNeverHandsOutAPortTwice(t *testing.T) {
	seen := map[int]int{}
	for i := range 300 {
		port, err := testbed.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if j, dup := seen[port]; dup {
			t.Fatalf("pick %d got port %d, which pick %d had already got", i, port, j)
		}
		seen[port] = i
	}
}
