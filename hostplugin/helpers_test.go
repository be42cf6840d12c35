//go:build !js

package hostplugin_test

import (
	"log/slog"
	"net/http"
	"testing"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/test/hosttest"
	"github.com/lifeline-go/lifeline/internal/test/testlog"
)

// bound is the longest any test waits for something that should happen.
const bound = hosttest.Bound

// logs records a Host's log lines for assertions.
type logs = testlog.Recorder

// A fixture is a Host serving a tiny page and its events endpoint over loopback; a client is
// a page's socket, driven by the test (internal/test/hosttest, shared with the tests of
// hostplugin/jetstream and hostplugin/metrics).
type (
	fixture = hosttest.Fixture
	client  = hosttest.Client
)

var (
	mustConfig = hosttest.MustConfig
	waitFor    = hosttest.WaitFor
)

// newFixture starts a Host with the config document doc (ready unless the caller says
// otherwise) and tears it down with the test.
func newFixture(t testing.TB, doc string, ready bool) *fixture {
	t.Helper()
	return hosttest.New(t, doc, ready, hostplugin.Options{})
}

// newFixtureWith is newFixture with options (hooks, a log); its Logger is always the
// fixture's, and its Authorize PublicStreams unless the test sets one.
func newFixtureWith(t testing.TB, doc string, ready bool, opts hostplugin.Options) *fixture {
	t.Helper()
	return hosttest.New(t, doc, ready, opts)
}

// newHost returns a Host with the config document doc whose streams are all public, and its
// logs, closed with the test.
func newHost(t testing.TB, doc string) (*hostplugin.Host, *logs) {
	t.Helper()
	l := &logs{}
	h, err := hostplugin.New(mustConfig(t, doc), &hostplugin.Options{Logger: slog.New(l), Authorize: hostplugin.PublicStreams})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h, l
}

// endpointOnly serves h's events endpoint (and its client), with no application behind it.
func endpointOnly(h *hostplugin.Host) http.Handler { return h.Handler(http.NotFoundHandler()) }
