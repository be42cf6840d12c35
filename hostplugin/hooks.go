//go:build lifeline_faults && !js

package hostplugin

import (
	"fmt"
	"os"

	"github.com/lifeline-go/lifeline/hostplugin/internal/client"
	"github.com/lifeline-go/lifeline/internal/fault"
	"github.com/lifeline-go/lifeline/internal/hosthook"
)

// The repository's tools reach a Host through package hosthook, in a build with -tags
// lifeline_faults only (see its documentation).
func init() {
	hosthook.Register(
		func(host any) (*fault.Injector, error) {
			h, err := hostOf(host)
			if err != nil {
				return nil, err
			}
			return h.installFaults()
		},
		func(host any, dir string) error {
			h, err := hostOf(host)
			if err != nil {
				return err
			}
			return h.serveClientFrom(dir)
		})
}

func hostOf(host any) (*Host, error) {
	h, ok := host.(*Host)
	if !ok || h == nil {
		return nil, fmt.Errorf("hostplugin: a hook needs a *hostplugin.Host, got %T", host)
	}
	return h, nil
}

// serveClientFrom makes h serve and inject the client in dir instead of the embedded one.
func (h *Host) serveClientFrom(dir string) error {
	c, err := client.LoadFS(os.DirFS(dir), "the client directory "+dir)
	if err != nil {
		return err
	}
	h.applyMu.Lock()
	h.client = c
	h.applyMu.Unlock()
	h.apply(h.Config())
	return nil
}
