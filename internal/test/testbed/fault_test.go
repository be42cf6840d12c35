//go:build lifeline_faults && !js

package testbed_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/hosthook"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// The fault client against the real fault panel.
func TestSetFaultSwitchesARealPanelAndReportsItsRefusal(t *testing.T) {
	h, err := hostplugin.New(hostplugin.DefaultConfig(), &hostplugin.Options{Authorize: hostplugin.PublicStreams})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	in, err := hosthook.InstallFaults(h)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.StripPrefix("/_lifeline/faults", in.Panel()))
	defer srv.Close()
	ctx := context.Background()
	if err := testbed.SetFault(ctx, srv.URL, "outage"); err != nil {
		t.Fatalf("SetFault outage: %v", err)
	}
	if got := in.Fault().String(); got != "outage" {
		t.Fatalf("the Host's fault after SetFault outage: %s", got)
	}
	err = testbed.SetFault(ctx, srv.URL, "sideways")
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "sideways") {
		t.Fatalf("SetFault of an unknown mode = %v; want the panel's 400 and its message", err)
	}
}
