package gateway

import (
	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// Recovery is the gateway's gatherer of reports, alone.
type Recovery struct{ r recovery }

func (r *Recovery) Observe(st controller.Status) (wire.PageFrame, bool) { return r.r.observe(st) }
func (r *Recovery) SetHidden(hidden bool)                               { r.r.setHidden(hidden) }
