//go:build !js

package gateway_test

import (
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/lifeline-go/lifeline/internal/test/testserver"
)

// TestMain serves the scriptable test Host in-process, unless LIFELINE_TEST_SERVER names
// one already running.
func TestMain(m *testing.M) {
	if serverURL = os.Getenv(testserver.EnvServer); serverURL != "" {
		os.Exit(m.Run())
	}
	ts := testserver.New()
	hs := httptest.NewServer(ts)
	serverURL = "ws" + strings.TrimPrefix(hs.URL, "http")
	code := m.Run()
	ts.Close()
	hs.Close()
	os.Exit(code)
}
