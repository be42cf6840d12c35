//go:build lifeline_faults && !js

package main_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// The test binary is built with -tags lifeline_faults: so is the command under test.
var buildFlags = []string{"-tags", "lifeline_faults"}

func TestTheFaultPanelSetsTheModeAndTheHealthReportsIt(t *testing.T) {
	web := webDir(t)
	var st struct {
		Ready              bool
		Sessions, Accepted int
		Fault              string
	}
	faulty := startHost(t, "-web", web, "-faults")
	post, err := http.Post(faulty.url+"/_lifeline/faults", "text/plain", strings.NewReader("overload=2500"))
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	c := faulty.dial()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	// First the retry-after as an error frame (which every page reads), then 1013.
	if _, b, err := c.Read(ctx); err != nil || !strings.Contains(string(b), `"message":"retry-after=2500"`) {
		t.Errorf("under overload=2500 the first frame was %s (%v), want an error frame with the retry-after", b, err)
	}
	_, _, err = c.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != wire.CloseOverloaded || ce.Reason != "retry-after=2500" {
		t.Errorf("under overload=2500 the socket ended with %v", err)
	}
	if _, body := faulty.get("/_lifeline/faults", nil); string(body) != "overload=2500\n" {
		t.Errorf("panel shows %q", body)
	}
	// The health reports the mode too, for the e2e and bench tooling.
	if _, body := faulty.get("/_lifeline/health", nil); json.Unmarshal(body, &st) != nil || st.Fault != "overload=2500" {
		t.Errorf("health under overload=2500: %s", body)
	}
}

// -client serves, and injects, the client of a directory: here the built-in one with its
// runner changed.
func TestClientServesTheClientOfADirectory(t *testing.T) {
	const dist = "../../hostplugin/internal/client/dist"
	dir := t.TempDir()
	files, err := os.ReadDir(dist)
	if err != nil {
		t.Fatal(err)
	}
	const mark = "\n// another build of the runner\n"
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dist, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if f.Name() == "run.js" {
			b = append(b, mark...)
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := startHost(t, "-web", webDir(t), "-client", dir)
	_, page := h.get("/", nil)
	m := regexp.MustCompile(`data-run="([^"]+)"`).FindStringSubmatch(string(page))
	if m == nil {
		t.Fatalf("the page does not load the client:\n%s", page)
	}
	if resp, body := h.get(m[1], nil); resp.StatusCode != 200 || !strings.HasSuffix(string(body), mark) {
		t.Errorf("GET %s: %d, %d bytes; want the directory's runner", m[1], resp.StatusCode, len(body))
	}
}
