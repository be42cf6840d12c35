//go:build js && wasm

package main

import (
	"syscall/js"

	"github.com/lifeline-go/lifeline/internal/tinyfmt"
)

// contain, deferred, turns a panic (a JS exception surfacing in Go, or a Go bug in code that
// runs on the page's behalf) into a console error naming what threw.
func contain(what string) {
	if r := recover(); r != nil {
		errorf("lifeline: %s threw; Lifeline carries on:", what).with(thrown(r))
	}
}

// thrown is what a recovered panic carries, as the console shows it best: the JS exception
// itself (with its stack), or the Go value.
func thrown(r any) any {
	if e, ok := r.(js.Error); ok {
		return e.Value
	}
	return tinyfmt.Sprint(r)
}

// consoleLine is one console.error call being built: errorf(...).with(values...).
type consoleLine struct{ msg string }

func errorf(format string, args ...any) consoleLine {
	return consoleLine{tinyfmt.Sprintf(format, args...)}
}

func (l consoleLine) with(values ...any) {
	js.Global().Get("console").Call("error", append([]any{l.msg}, values...)...)
}
