//go:build !js

package jetstream_test

import (
	"errors"
	"testing"

	"github.com/lifeline-go/lifeline/hostplugin"
)

func TestAHostOnTheLogIsNotReadyWhileNATSIsDown(t *testing.T) {
	ns := startNATS(t)
	log := ns.connect(t, &logs{})
	h, err := hostplugin.New(hostplugin.DefaultConfig(), &hostplugin.Options{Authorize: hostplugin.PublicStreams, Log: log, NoClient: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.SetReady(true)
	if err := h.Readiness(); err != nil {
		t.Fatalf("Readiness with NATS up = %v", err)
	}
	ns.stop()
	waitFor(t, "the Host to turn unready", func() bool { return h.Readiness() != nil })
	if err := h.Readiness(); !errors.Is(err, hostplugin.ErrLogUnavailable) {
		t.Fatalf("Readiness with NATS down = %v, want ErrLogUnavailable", err)
	}
	ns.start()
	waitFor(t, "the Host to be ready again", func() bool { return h.Readiness() == nil })
}
