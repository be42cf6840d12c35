//go:build !js

package hosthook_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/lifeline-go/lifeline/internal/hosthook"
)

// This test binary links no hostplugin: nothing registered the hooks, and each says how to
// get them.
func TestTheHooksNeedHostpluginBuiltWithTheTag(t *testing.T) {
	if _, err := hosthook.InstallFaults(http.NotFoundHandler()); !errors.Is(err, hosthook.ErrNotBuilt) {
		t.Errorf("InstallFaults without hostplugin = %v, want ErrNotBuilt", err)
	}
	if err := hosthook.ServeClientFrom(http.NotFoundHandler(), "dir"); !errors.Is(err, hosthook.ErrNotBuilt) {
		t.Errorf("ServeClientFrom without hostplugin = %v, want ErrNotBuilt", err)
	}
}
