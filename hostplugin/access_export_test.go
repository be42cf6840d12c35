//go:build !js

package hostplugin

import "unsafe"

// ExpiryTracking is what h's expiries hold: the sessions in the heap, and whether its one
// timer exists.
func ExpiryTracking(h *Host) (sessions int, timer bool) {
	h.acc.exp.mu.Lock()
	defer h.acc.exp.mu.Unlock()
	return len(h.acc.exp.heap), h.acc.exp.timer != nil
}

// SessionAccessSize is the size of a session's access state, which every session carries.
var SessionAccessSize = int(unsafe.Sizeof(sessionAccess{}))
