//go:build js

package gateway_test

import (
	"os"

	"github.com/lifeline-go/lifeline/internal/test/testserver"
)

// Under js/wasm a test cannot listen: tests that need a Host use one started natively
// (internal/test/testserver/cmd/testserver) and skip without it.
func init() { serverURL = os.Getenv(testserver.EnvServer) }
