//go:build !lifeline_faults && !js

package hostplugin_test

// Without -tags lifeline_faults a Host has no fault injector to measure.
var injectorCases []faultCase
