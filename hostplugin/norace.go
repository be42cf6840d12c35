//go:build !race && !js

package hostplugin

// raceBuild is false in a build without the race detector: see race.go.
const raceBuild = false
