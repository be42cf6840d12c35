//go:build !lifeline_faults && !js

package main

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/lifeline-go/lifeline/hostplugin"
)

// The build without -tags lifeline_faults: no fault injection, no client directory and no call
// ledger, as an embedder's Host has none of them. The flags are refused before anything starts (tooling.go has
// them).

var errNoTooling = errors.New("built without fault injection: build with -tags lifeline_faults")

// toolingAvailable refuses -faults, -client and -ledger, which this build cannot serve.
func toolingAvailable(faults bool, clientDir, ledgerFile string) error {
	switch {
	case faults:
		return fmt.Errorf("-faults: %w", errNoTooling)
	case clientDir != "":
		return fmt.Errorf("-client: %w", errNoTooling)
	case ledgerFile != "":
		return fmt.Errorf("-ledger: %w", errNoTooling)
	}
	return nil
}

func installFaults(*hostplugin.Host, *http.ServeMux) (func() string, func(http.Handler) http.Handler, error) {
	return nil, nil, errNoTooling
}

func serveClientFrom(*hostplugin.Host, string) error { return errNoTooling }

func installLedger(*hostplugin.Host, *http.ServeMux, string) (func(), error) {
	return nil, errNoTooling
}
