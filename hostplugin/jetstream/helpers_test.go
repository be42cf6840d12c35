//go:build !js

package jetstream_test

import (
	"github.com/lifeline-go/lifeline/internal/test/hosttest"
	"github.com/lifeline-go/lifeline/internal/test/testlog"
)

// bound is the longest any test waits for something that should happen.
const bound = hosttest.Bound

// logs records a Host's log lines for assertions.
type logs = testlog.Recorder

// A fixture is a Host on a stream log, serving its events endpoint over loopback; a client is
// a page's socket, driven by the test (internal/test/hosttest, shared with hostplugin's tests).
type (
	fixture = hosttest.Fixture
	client  = hosttest.Client
)

var waitFor = hosttest.WaitFor
