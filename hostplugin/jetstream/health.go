//go:build !js

package jetstream

import (
	"fmt"
	"time"

	"github.com/lifeline-go/lifeline/hostplugin"
)

var _ hostplugin.LogChecker = (*Log)(nil)

// CheckLog implements hostplugin.LogChecker: nil while the NATS connection is up, so that a
// Host on this log is not ready while it is cut off from it (it could only reset its pages).
func (l *Log) CheckLog() error {
	h := l.Health()
	if h.Connected {
		return nil
	}
	if h.DownSince.IsZero() {
		return fmt.Errorf("jetstream: not connected to NATS (%s)", h.LastError)
	}
	return fmt.Errorf("jetstream: not connected to NATS since %s (%s)", h.DownSince.Format(time.RFC3339), h.LastError)
}
