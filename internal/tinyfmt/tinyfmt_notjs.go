//go:build !js

package tinyfmt

import "fmt"

// Errorf is fmt.Errorf: an error whose message is format with args, wrapping the operand of
// each %w.
func Errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// Sprintf is fmt.Sprintf.
func Sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// Sprint is fmt.Sprint.
func Sprint(args ...any) string { return fmt.Sprint(args...) }
