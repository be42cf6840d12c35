package tinyfmt

// The browser's formatter, exported to the tests on every platform (natively the exported
// functions are fmt's own).
var (
	TinySprintf = func(format string, args ...any) string { return sprintf(format, args, nil) }
	TinySprint  = func(args ...any) string { return sprint(args) }
	TinyErrorf  = func(format string, args ...any) error { return errorf(format, args) }
)
