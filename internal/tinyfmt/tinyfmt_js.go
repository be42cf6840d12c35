package tinyfmt

// Errorf is fmt.Errorf: an error whose message is format with args, wrapping the operand of
// each %w.
func Errorf(format string, args ...any) error { return errorf(format, args) }

// Sprintf is fmt.Sprintf.
func Sprintf(format string, args ...any) string { return sprintf(format, args, nil) }

// Sprint is fmt.Sprint.
func Sprint(args ...any) string { return sprint(args) }
