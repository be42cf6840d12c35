// Package fault puts a Host's events endpoint into failure modes (refuse, stall, flap, drain,
// overload, outage) for demos and tests of the page's recovery: cmd/host -faults, the e2e
// suite, the chaos soak, the fleet test and the bench harness drive it through its HTTP
// panel, hostplugin's tests directly.
//
// It is internal so that fault injection is no part of hostplugin's API, and it is linked only
// into a build with -tags lifeline_faults: an embedder's Host has no fault modes and links no
// part of this package. A Host built with the tag gets them from hosthook.InstallFaults,
// which cmd/host and the tests call:
//
//	in, err := hosthook.InstallFaults(h) // h is a *hostplugin.Host
//	mux.Handle("/_lifeline/faults", in.Panel())
//	in.Set(fault.Fault{Mode: fault.Outage})
//
// The package builds natively only, as hostplugin does.
package fault
