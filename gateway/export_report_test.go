package gateway

import (
	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// OutageRecord is the gateway's gatherer of reports, alone.
type OutageRecord struct{ r outageRecord }

func (r *OutageRecord) Observe(st controller.Status) (wire.PageFrame, bool) { return r.r.observe(st) }
func (r *OutageRecord) SetHidden(hidden bool)                               { r.r.setHidden(hidden) }
