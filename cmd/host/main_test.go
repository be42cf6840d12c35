//go:build !js

package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/wire"
)

const bound = 10 * time.Second

// hostBin is the command under test, built once by TestMain.
var hostBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lifeline-host-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hostBin = filepath.Join(dir, "host")
	// The binary is built with the test's own tags: with -tags lifeline_faults it has -faults.
	build := exec.Command("go", append(append([]string{"build"}, buildFlags...), "-o", hostBin, ".")...)
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building cmd/host:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// host is a running cmd/host.
type host struct {
	t    *testing.T
	cmd  *exec.Cmd
	out  *syncBuffer
	url  string
	done chan struct{}
	code int
}

var servingLine = regexp.MustCompile(`msg="host: serving" url=(https?://\S+)`)

// startHost runs the command with args (and -addr 127.0.0.1:0) and waits until it serves.
func startHost(t *testing.T, args ...string) *host {
	t.Helper()
	h := &host{t: t, out: &syncBuffer{}, done: make(chan struct{})}
	h.cmd = exec.Command(hostBin, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	h.cmd.Stdout, h.cmd.Stderr = h.out, h.out
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = h.cmd.Wait()
		h.code = h.cmd.ProcessState.ExitCode()
		close(h.done)
	}()
	t.Cleanup(func() {
		_ = h.cmd.Process.Kill()
		<-h.done
	})
	// Wait for the whole line: a substring may arrive before the rest of its line does.
	h.waitLog("host: serving")
	deadline := time.Now().Add(bound)
	for {
		if m := servingLine.FindStringSubmatch(h.out.String()); m != nil {
			h.url = m[1]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no serving URL in the host's output:\n%s", h.out)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return h
}

// waitLog waits until the output holds s.
func (h *host) waitLog(s string) {
	h.t.Helper()
	deadline := time.Now().Add(bound)
	for !strings.Contains(h.out.String(), s) {
		select {
		case <-h.done:
			h.t.Fatalf("the host exited (%d) before logging %q:\n%s", h.code, s, h.out)
		default:
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("no %q in the host's output after %v:\n%s", s, bound, h.out)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// exitCode waits for the process to end.
func (h *host) exitCode() int {
	h.t.Helper()
	select {
	case <-h.done:
		return h.code
	case <-time.After(bound):
		h.t.Fatalf("the host did not exit within %v:\n%s", bound, h.out)
		return -1
	}
}

func (h *host) get(path string, header map[string]string) (*http.Response, []byte) {
	h.t.Helper()
	req, _ := http.NewRequest("GET", h.url+path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	// A transport that leaves Content-Encoding alone, so the test sees the bytes sent.
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp, body
}

func (h *host) dial() *websocket.Conn {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(h.url, "http")+wire.DefaultPath,
		&websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

func next(t *testing.T, c *websocket.Conn) wire.HostFrame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("reading a frame: %v", err)
	}
	f, err := wire.DecodeHost(b)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// webDir makes a -web directory: a page, and a .gz sibling of it that must never be served.
func webDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, body string, mod time.Time) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now().Add(-time.Hour)
	write("index.html", "<!doctype html><html><head><title>demo</title></head><body>hi</body></html>", t0)
	write("index.html.gz", "not a page", t0)
	return dir
}

func writeConfig(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "lifeline.json")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestInvalidStartRefusesWithTheReasonOnStderr(t *testing.T) {
	web := webDir(t)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"an invalid config names the field and the value",
			[]string{"-config", writeConfig(t, `{"recovery":{"deadlineMs":0}}`), "-web", web}, 1,
			"host: hostplugin: recovery.deadlineMs: must be an integer in 1..2147483647, got 0"},
		{"an unknown config field is refused",
			[]string{"-config", writeConfig(t, `{"heartbeat":1}`), "-web", web}, 1,
			"host: hostplugin: heartbeat: is not a known field"},
		{"a missing config file is refused",
			[]string{"-config", filepath.Join(t.TempDir(), "nope.json"), "-web", web}, 1,
			"hostplugin: cannot read the config file"},
		{"a missing web directory is refused",
			[]string{"-web", filepath.Join(t.TempDir(), "nope")}, 1,
			"is not a directory"},
		{"an unknown flag is a usage error",
			[]string{"-port", "80"}, 2,
			"flag provided but not defined: -port"},
		{"an address that cannot be listened on is refused",
			[]string{"-addr", "256.0.0.1:1", "-web", web}, 1,
			"host: restart: listen tcp: lookup 256.0.0.1"},
		{"a negative restart hint is a usage error",
			[]string{"-stop-retry-after", "-1s", "-web", web}, 2,
			"host: -stop-retry-after must not be negative, got -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			var stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, hostBin, tt.args...)
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tt.wantCode {
				t.Fatalf("exit: %v, want status %d; stderr:\n%s", err, tt.wantCode, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("stderr:\n%s\nwant it to contain %q", stderr.String(), tt.wantErr)
			}
		})
	}
}

func TestServesThePageWithTheBootstrap(t *testing.T) {
	h := startHost(t, "-web", webDir(t), "-config", writeConfig(t, `{"recovery":{"deadlineMs":9000}}`))
	resp, body := h.get("/", map[string]string{"Accept-Encoding": "gzip, br"})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "" {
		t.Fatalf("GET /: %d, Content-Encoding %q", resp.StatusCode, resp.Header.Get("Content-Encoding"))
	}
	if !strings.Contains(string(body), `<script type="application/json" id="lifeline-bootstrap">`) ||
		!strings.Contains(string(body), `"deadlineMs":9000`) {
		t.Errorf("the page lacks the configured bootstrap:\n%s", body)
	}
}

func TestServesTheClientThePageNames(t *testing.T) {
	// The demo takes the embedder's path: the Host plugin injects and serves its own client.
	h := startHost(t, "-web", webDir(t))
	_, page := h.get("/", nil)
	m := regexp.MustCompile(`<script src="(/_lifeline/client/[^"]+)" data-wasm="([^"]+)" data-run="([^"]+)" data-worker="([^"]+)" async>`).FindStringSubmatch(string(page))
	if m == nil {
		t.Fatalf("the page does not load the client:\n%s", page)
	}
	for i, u := range m[1:] {
		resp, body := h.get(u, map[string]string{"Accept-Encoding": "gzip, br"})
		if resp.StatusCode != 200 || len(body) == 0 || resp.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Errorf("GET %s: %d, %d bytes, Cache-Control %q", u, resp.StatusCode, len(body), resp.Header.Get("Cache-Control"))
		}
		if i == 1 && resp.Header.Get("Content-Encoding") != "br" {
			t.Errorf("the wasm came as %q, want br", resp.Header.Get("Content-Encoding"))
		}
	}
	// HTML is never served from a compressed sibling: it must carry the bootstrap.
	resp, body := h.get("/", map[string]string{"Accept-Encoding": "gzip"})
	if resp.Header.Get("Content-Encoding") != "" || !strings.Contains(string(body), "lifeline-bootstrap") {
		t.Errorf("the page came from its .gz sibling: %q", body)
	}
}

func TestHealthAndTheFaultPanel(t *testing.T) {
	web := webDir(t)
	plain := startHost(t, "-web", web)
	resp, body := plain.get("/_lifeline/health", nil)
	var st struct {
		Ready              bool
		Sessions, Accepted int
		Fault              string
	}
	if err := json.Unmarshal(body, &st); err != nil || resp.StatusCode != 200 || !st.Ready || st.Fault != "up" {
		t.Errorf("health: %d %s (%v)", resp.StatusCode, body, err)
	}
	if resp, _ := plain.get("/_lifeline/faults", nil); resp.StatusCode != 404 {
		t.Errorf("without -faults the panel answers %d, want 404", resp.StatusCode)
	}
}

func TestTicksStreamPublishesOncePerSecond(t *testing.T) {
	h := startHost(t, "-web", webDir(t))
	c := h.dial()
	if f := next(t, c); f.T != wire.TypeReady {
		t.Fatalf("first frame %+v", f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"t":"sub","stream":"ticks"}`)); err != nil {
		t.Fatal(err)
	}
	reset := next(t, c)
	if reset.T != wire.TypeReset || string(reset.Baseline) != fmt.Sprintf(`{"n":%d}`, reset.Seq) {
		t.Fatalf("reset %+v (baseline %s), want the baseline n at the head seq", reset, reset.Baseline)
	}
	for want := reset.Seq + 1; want <= reset.Seq+2; want++ {
		ev := next(t, c)
		var tick struct{ N, At int64 }
		if err := json.Unmarshal(ev.Data, &tick); err != nil || ev.T != wire.TypeEvent || ev.Seq != want || uint64(tick.N) != want {
			t.Fatalf("event %+v %s, want tick n=%d", ev, ev.Data, want)
		}
		if d := time.Since(time.UnixMilli(tick.At)); d < 0 || d > bound {
			t.Errorf("tick at %d is %v from now", tick.At, d)
		}
	}
}

func TestSIGHUPReloadsTheConfigForPagesLoadedAfterwards(t *testing.T) {
	cfgPath := writeConfig(t, `{"recovery":{"deadlineMs":9000}}`)
	h := startHost(t, "-web", webDir(t), "-config", cfgPath)
	page := func() string {
		_, body := h.get("/", nil)
		return string(body)
	}
	if err := os.WriteFile(cfgPath, []byte(`{"recovery":{"deadlineMs":7000}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = h.cmd.Process.Signal(syscall.SIGHUP)
	h.waitLog("config reloaded")
	if p := page(); !strings.Contains(p, `"deadlineMs":7000`) {
		t.Fatalf("after the reload the page carries %s", p)
	}

	if err := os.WriteFile(cfgPath, []byte(`{"recovery":{"deadlineMs":-1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = h.cmd.Process.Signal(syscall.SIGHUP)
	h.waitLog("reload refused")
	if !strings.Contains(h.out.String(), "recovery.deadlineMs") {
		t.Errorf("the refusal does not say why:\n%s", h.out)
	}
	if p := page(); !strings.Contains(p, `"deadlineMs":7000`) {
		t.Errorf("an invalid reload changed the page: %s", p)
	}
}

// -drain-on-stop keeps the full drain for a Host behind a load balancer: its pages come back
// to the same place, where the other Hosts take them.
func TestSIGTERMWithDrainOnStopDrainsThenExits(t *testing.T) {
	h := startHost(t, "-web", webDir(t), "-drain-on-stop", "-config", writeConfig(t, `{"drainTimeoutMs":300}`))
	c := h.dial()
	if f := next(t, c); f.T != wire.TypeReady {
		t.Fatalf("first frame %+v", f)
	}
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	if f := next(t, c); f.T != wire.TypeGoAway || f.URI != "" {
		t.Errorf("on SIGTERM the page got %+v, want goaway back to the same place", f)
	}
	// This page does not leave; the drain bound closes it.
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for {
		_, _, err := c.Read(ctx)
		if err != nil {
			if code := websocket.CloseStatus(err); code != wire.CloseDrained {
				t.Errorf("the page was closed with %v (%d), want %d", err, code, wire.CloseDrained)
			}
			break
		}
	}
	if code := h.exitCode(); code != 0 {
		t.Errorf("exit status %d, want 0:\n%s", code, h.out)
	}
	if !strings.Contains(h.out.String(), "draining") {
		t.Errorf("no drain in the log:\n%s", h.out)
	}
}
