//go:build lifeline_faults && !js

package main

import (
	"net/http"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/hosthook"
)

// The repository's tooling flags, -faults, -client and -ledger (ledger.go), in a build with -tags lifeline_faults
// (scripts/build.sh builds bin/host so): package hosthook reaches into the Host for them.
// notooling.go is the build without them.

// toolingAvailable reports nothing: this build has every tooling flag.
func toolingAvailable(faults bool, clientDir, ledgerFile string) error { return nil }

// installFaults gives h fault modes, serves their panel on mux, and returns the mode in force
// as the panel reads it, and the wrapper of the page handler that runs the e2e suite's init
// scripts (initscripts.go).
func installFaults(h *hostplugin.Host, mux *http.ServeMux) (mode func() string, pages func(http.Handler) http.Handler, err error) {
	in, err := hosthook.InstallFaults(h)
	if err != nil {
		return nil, nil, err
	}
	mux.Handle("/_lifeline/faults", in.Panel())
	scripts := newInitScripts()
	mux.Handle(initScriptPath, scripts.panel())
	return func() string { return in.Fault().String() }, scripts.pages, nil
}

// serveClientFrom makes h serve the client in dir instead of the built-in one.
func serveClientFrom(h *hostplugin.Host, dir string) error { return hosthook.ServeClientFrom(h, dir) }
