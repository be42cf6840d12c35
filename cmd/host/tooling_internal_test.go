//go:build lifeline_faults && !js

package main

import (
	"testing"

	"github.com/lifeline-go/lifeline/internal/fault"
)

func TestUpModeIsThePanels(t *testing.T) {
	if got := (fault.Fault{}).String(); got != upMode {
		t.Errorf("the fault panel reads no fault as %q, the health of a Host without faults says %q", got, upMode)
	}
}
