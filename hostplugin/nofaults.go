//go:build !lifeline_faults && !js

package hostplugin

import "net/http"

// The fault hooks of every build without -tags lifeline_faults, the one an embedder makes: a
// Host has no fault modes, and the hooks do nothing (faults.go has the real ones).

type hostFaults struct{}

func (hostFaults) atUpgrade(http.ResponseWriter, *http.Request, <-chan struct{}) (upgradeFault, bool) {
	return upgradeFault{}, true
}

func (hostFaults) atQuery(http.ResponseWriter, *http.Request, <-chan struct{}) bool { return true }

type sessionFault struct{}

func (*sessionFault) stop() {}

func (*session) faultAtReady() {}
