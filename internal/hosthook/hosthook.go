//go:build !js

// Package hosthook is how this repository's tools reach into a hostplugin.Host beyond its API:
// fault injection (cmd/host -faults, the e2e suite, the soak, the fleet, the bench and
// hostplugin's own tests) and a client served from a directory instead of the embedded one
// (cmd/host -client, for the bench's builds of the client).
//
// Package hostplugin fills the hooks in only when it is built with -tags lifeline_faults (its
// file hooks.go): an embedder's build has neither hook, and links neither this package nor
// internal/fault. scripts/build.sh builds bin/host with the tag.
//
// The Host is passed as any, since hostplugin imports this package to register.
package hosthook

import (
	"errors"
	"fmt"

	"github.com/lifeline-go/lifeline/internal/fault"
)

// ErrNotBuilt is returned by every hook of a build without them: hostplugin is not linked,
// or it was built without the tag.
var ErrNotBuilt = errors.New("hosthook: built without fault injection: build with -tags lifeline_faults")

var hooks struct {
	faults    func(host any) (*fault.Injector, error)
	clientDir func(host any, dir string) error
}

// Register is called once, by package hostplugin's init in a build with -tags
// lifeline_faults: faults gives a *hostplugin.Host fault modes, clientDir makes it serve the
// client in a directory.
func Register(faults func(host any) (*fault.Injector, error), clientDir func(host any, dir string) error) {
	hooks.faults, hooks.clientDir = faults, clientDir
}

// InstallFaults gives host, a *hostplugin.Host, fault modes, in mode "up", before it serves.
// A Host takes one injector only.
func InstallFaults(host any) (*fault.Injector, error) {
	if hooks.faults == nil {
		return nil, fmt.Errorf("%w (cannot install on a %T)", ErrNotBuilt, host)
	}
	return hooks.faults(host)
}

// ServeClientFrom makes host, a *hostplugin.Host, serve and inject the client in dir, laid out
// as scripts/assets.sh writes it, instead of the one built into the plugin. Call it before
// the Host serves.
func ServeClientFrom(host any, dir string) error {
	if hooks.clientDir == nil {
		return fmt.Errorf("%w (cannot serve a client directory from a %T)", ErrNotBuilt, host)
	}
	return hooks.clientDir(host, dir)
}
