//go:build js && wasm

package main

import (
	"strings"
	"syscall/js"

	"github.com/lifeline-go/lifeline/internal/tinyfmt"
)

// console is the page's controller.Logger: the browser console, one line per record, the
// attributes as key=value. (log/slog is not linked into the wasm: see controller.Logger.)
type console struct{}

func (console) Info(msg string, args ...any)  { logTo("info", msg, args) }
func (console) Warn(msg string, args ...any)  { logTo("warn", msg, args) }
func (console) Error(msg string, args ...any) { logTo("error", msg, args) }

func logTo(method, msg string, args []any) {
	var b strings.Builder
	b.WriteString(msg)
	for i := 0; i < len(args); i += 2 {
		b.WriteByte(' ')
		if i+1 < len(args) {
			b.WriteString(tinyfmt.Sprintf("%v=%v", args[i], args[i+1]))
		} else {
			b.WriteString(tinyfmt.Sprint(args[i]))
		}
	}
	js.Global().Get("console").Call(method, b.String())
}
