// Package fault puts a Host's events endpoint into failure modes (refuse, stall, flap, drain,
// overload, outage) for demos and tests of the page's recovery: cmd/host -faults, the e2e
// suite, the chaos soak, the fleet test and the bench harness drive it through its HTTP
// panel, hostplugin's tests directly.
//
// It is internal so that fault injection is no part of hostplugin's API: an embedder's Host
// has no fault modes. A Host gets them only from [Install], which cmd/host and the tests call;
// without it the endpoint's checks are one nil pointer test each.
//
//	in, err := fault.Install(h) // h is a *hostplugin.Host
//	mux.Handle("/_lifeline/faults", in.Panel())
//	in.Set(fault.Fault{Mode: fault.Outage})
//
// The package builds natively only, as hostplugin does.
package fault
