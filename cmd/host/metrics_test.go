//go:build !js

package main_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

var metricsLine = regexp.MustCompile(`msg="host: metrics" url=(http://\S+)`)

// metricsURL waits for the Host's metrics line and returns its URL.
func (h *host) metricsURL() string {
	h.t.Helper()
	h.waitLog("host: metrics")
	deadline := time.Now().Add(bound)
	for {
		if m := metricsLine.FindStringSubmatch(h.out.String()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("no metrics URL in the host's output:\n%s", h.out)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, body := getURL(t, url)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	return string(body)
}

func TestMetricsAreServedOnLoopbackApartFromThePages(t *testing.T) {
	h := startHost(t, "-web", webDir(t), "-metrics", ":0")
	url := h.metricsURL()
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("a bare port serves the metrics at %s, want loopback", url)
	}
	c := h.dial()
	if f := next(t, c); f.T != "ready" {
		t.Fatalf("first frame %+v", f)
	}
	body := scrape(t, url)
	for _, want := range []string{
		`lifeline_upgrades_total{outcome="admitted"} 1`,
		`lifeline_sessions_open{mode="native"} 0`, // the test's socket names no mode
		`lifeline_sessions_open{mode="unknown"} 1`,
		`lifeline_host_ready 1`,
		`go_goroutines `,
		`process_resident_memory_bytes `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the metrics lack %q", want)
		}
	}
	// The pages' address serves no metrics, and answers the probes.
	if resp, _ := h.get("/metrics", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the pages' address answers /metrics with %d, want 404", resp.StatusCode)
	}
	for path, want := range map[string]string{"/_lifeline/live": `{"live":true}`, "/_lifeline/ready": `{"ready":true}`} {
		resp, b := h.get(path, nil)
		if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(b)) != want {
			t.Errorf("GET %s: %d %s, want 200 %s", path, resp.StatusCode, b, want)
		}
	}
}

func TestWithoutMetricsTheHostServesNone(t *testing.T) {
	h := startHost(t, "-web", webDir(t))
	if strings.Contains(h.out.String(), "host: metrics") {
		t.Fatalf("a Host without -metrics serves metrics:\n%s", h.out)
	}
}

func TestABadMetricsAddressRefusesToStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, hostBin, "-addr", "127.0.0.1:0", "-web", webDir(t), "-metrics", "no-port")
	cmd.Stderr = &stderr
	var ee *exec.ExitError
	if err := cmd.Run(); !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), `host: -metrics "no-port"`) {
		t.Fatalf("exit: %v, want status 1 naming the address; stderr:\n%s", err, stderr.String())
	}
}

func getURL(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}
