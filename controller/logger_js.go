//go:build js

package controller

// defaultLogger discards: the browser build links no log/slog (see [Logger]); the page passes
// a logger that writes to the console.
func defaultLogger() Logger { return discard{} }
