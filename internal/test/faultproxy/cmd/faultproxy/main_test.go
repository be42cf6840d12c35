//go:build !js

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// upstream is the server behind the proxy: an HTTP server, as a Host is.
func upstream(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hello")
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

type started struct {
	ready ready
	lines chan string // stdout after the ready line, read as it comes
	stdin *io.PipeWriter
	done  chan error    // run's result
	ended chan struct{} // closed when run has returned
}

// start runs the command as a test would from Node: ports 0, stdin and stdout on pipes.
func start(t *testing.T, extra ...string) *started {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	s := &started{stdin: inW, done: make(chan error, 1), ended: make(chan struct{}), lines: make(chan string, 100)}
	args := append([]string{"-listen", "127.0.0.1:0", "-control", "127.0.0.1:0", "-upstream", upstream(t)}, extra...)
	go func() {
		defer close(s.ended)
		s.done <- run(ctx, args, inR, outW, io.Discard)
	}()
	t.Cleanup(func() {
		cancel()
		_ = inW.Close()
		<-s.ended
		_ = outW.Close()
	})
	// stdout is read all along, as a test must: the proxy waits for its log.
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(outR)
		if sc.Scan() {
			first <- sc.Text()
		}
		for sc.Scan() {
			select {
			case s.lines <- sc.Text():
			default:
			}
		}
	}()
	select {
	case l := <-first:
		if err := json.Unmarshal([]byte(l), &s.ready); err != nil || s.ready.Listen == "" || s.ready.Control == "" {
			t.Fatalf("first line %q: %v; want the ready line with both addresses", l, err)
		}
	case err := <-s.done:
		t.Fatalf("run ended before its ready line: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("no ready line within 5 s")
	}
	return s
}

func post(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Post(url, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s %s", url, resp.Status, b)
	}
	return strings.TrimSpace(string(b))
}

func TestTheReadyLineNamesThePortsAndThePanelSwitchesToStall(t *testing.T) {
	s := start(t)
	if s.ready.Mode != "up" {
		t.Fatalf("ready line %+v; want mode up", s.ready)
	}
	// One kept-alive connection: the second request goes on the connection the stall froze.
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}, Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	get := func() (string, error) {
		resp, err := client.Get("http://" + s.ready.Listen + "/")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if got, err := get(); err != nil || got != "hello" {
		t.Fatalf("GET through the proxy: %q, %v; want the upstream's hello", got, err)
	}
	if got := post(t, "http://"+s.ready.Control+"/mode?mode=stall"); got != "stall" {
		t.Fatalf("POST /mode?mode=stall answered %q", got)
	}
	client.Timeout = 300 * time.Millisecond
	var ne net.Error
	if got, err := get(); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("GET after the switch to stall: %q, %v; want no answer and no close (a timeout)", got, err)
	}
	// The connection log follows the ready line.
	select {
	case l := <-s.lines:
		if !strings.Contains(l, `"mode":"up"`) {
			t.Fatalf("second stdout line %q; want the log of the accepted connection", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no connection log line within 5 s")
	}
}

func TestExitOnEOFEndsWithStdin(t *testing.T) {
	s := start(t, "-exit-on-eof")
	_ = s.stdin.Close()
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("run = %v; want a clean end", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run still going 5 s after its stdin ended")
	}
}

func TestStdinSwitchesModes(t *testing.T) {
	s := start(t)
	if _, err := io.WriteString(s.stdin, "latency\n"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get("http://" + s.ready.Control + "/mode")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.TrimSpace(string(b)) == "latency" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("mode %q 5 s after writing latency on stdin", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFlagsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"an unknown mode", []string{"-mode", "sideways"}, `"sideways" is not one of`},
		{"stray arguments", []string{"extra"}, `unexpected arguments ["extra"]`},
	} {
		err := run(context.Background(), tc.args, strings.NewReader(""), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: run(%q) = %v; want an error containing %q", tc.name, tc.args, err, tc.want)
		}
	}
}
