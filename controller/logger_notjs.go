//go:build !js

package controller

import "log/slog"

// defaultLogger is slog's default logger: natively the package costs nothing worth counting.
func defaultLogger() Logger { return slog.Default() }
