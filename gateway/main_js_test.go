//go:build js

package gateway_test

import (
	"os"

	"github.com/lifeline-go/lifeline/internal/testserver"
)

// Under js/wasm a test cannot listen: tests that need a Host use one started natively
// (internal/testserver/cmd/testserver) and skip without it.
func init() { serverURL = os.Getenv(testserver.EnvServer) }
