package controller

// Logger is where the controller and the gateway log: a *slog.Logger is one, and so is
// anything with these methods, whose args are slog's alternating keys and values.
//
// It is an interface rather than *slog.Logger because the browser build must not link
// log/slog: it adds about 100 KB to the brotli-compressed wasm (it pulls in much of
// encoding/json and its handlers), a tenth of the page's whole download.
type Logger interface {
	Info(msg string, args ...any)
	Warn(msg string, args ...any)
	Error(msg string, args ...any)
}

// discard is a Logger that drops everything: the browser build's default.
type discard struct{}

func (discard) Info(string, ...any)  {}
func (discard) Warn(string, ...any)  {}
func (discard) Error(string, ...any) {}

// DefaultLogger is the Logger that Options.Logger defaults to: slog.Default() natively; in the
// browser one that drops everything.
func DefaultLogger() Logger { return defaultLogger() }
