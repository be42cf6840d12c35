//go:build !js

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/swarmline"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// The calls against a real Host, which builds natively only.

// callHost is a real Host whose handler "echo" answers every call with its data.
func callHost(t *testing.T) string {
	t.Helper()
	h, err := hostplugin.New(hostplugin.DefaultConfig(), &hostplugin.Options{Authorize: hostplugin.PublicStreams})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	h.HandleCall("echo", func(_ context.Context, c *hostplugin.Call) (json.RawMessage, error) { return c.Data, nil })
	h.SetReady(true)
	srv := httptest.NewServer(h.Handler(http.NotFoundHandler()))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + h.Config().Endpoint()
}

// Every call's outcome is one line: every other call keyed, each with its own data, the
// reply, and the epoch of the Host's dedup store it was sent under.
func TestCallsPrintOneLinePerOutcome(t *testing.T) {
	url := callHost(t)
	r := startRun(t, "-url", url, "-n", "2", "-calls", "3", "-call-every", "5ms", "-call-name", "echo", "-call-prefix", "r1")
	out := r.out
	got := out.waitFor(t, "6 call lines", func(ls []swarmline.Line) bool { return count(ls, swarmline.Call) == 6 })
	seen := map[string]bool{}
	for _, l := range got {
		if l.Event != swarmline.Call {
			continue
		}
		id := fmt.Sprintf("r1/%d/%d", l.ID, l.Call)
		if seen[id] {
			t.Errorf("call %s printed twice", id)
		}
		seen[id] = true
		if l.Kind != "" || string(l.Reply) != strconv.Quote(id) || l.Keyed != (l.Call == 1) || l.Epoch == "" {
			t.Errorf("call %s: %+v; want the reply %q, keyed only for call 1, an epoch", id, l, id)
		}
	}
	if err := r.stop(t); err != nil {
		t.Fatalf("run = %v", err)
	}
}

// A failed call prints what the gateway's CallError says: here the Host has no such handler.
func TestACallThatFailsPrintsItsKindAndWhetherItWasSent(t *testing.T) {
	url := callHost(t)
	r := startRun(t, "-url", url, "-calls", "1", "-keyed", "1", "-call-name", "nobody.home")
	out := r.out
	got := out.waitFor(t, "the call's line", func(ls []swarmline.Line) bool { return count(ls, swarmline.Call) == 1 })
	for _, l := range got {
		if l.Event == swarmline.Call && (l.Kind != "unknown" || !l.Sent || l.Code != wire.CodeUnknown || !l.Keyed || l.Reply != nil || !strings.Contains(l.Message, "nobody.home")) {
			t.Errorf("call line %+v; want kind unknown, sent, the Host's code, keyed, the Host's message", l)
		}
	}
	if err := r.stop(t); err != nil {
		t.Fatalf("run = %v", err)
	}
}
