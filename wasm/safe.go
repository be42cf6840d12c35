//go:build js && wasm

package main

import (
	"fmt"
	"syscall/js"
)

// call invokes fn, a function of the embedding page, and contains anything it throws: the
// exception is logged on the console with what threw, and the page carries on. Without this,
// js.Value.Invoke turns the exception into a Go panic, which ends the whole wasm program and
// with it the page's connection.
func call(what string, fn js.Value, args ...any) {
	defer contain(what)
	fn.Invoke(args...)
}

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
	return fmt.Sprint(r)
}

// consoleLine is one console.error call being built: errorf(...).with(values...).
type consoleLine struct{ msg string }

func errorf(format string, args ...any) consoleLine {
	return consoleLine{fmt.Sprintf(format, args...)}
}

func (l consoleLine) with(values ...any) {
	js.Global().Get("console").Call("error", append([]any{l.msg}, values...)...)
}

// misuse reports a wrong call of the JS API on the console, naming the call and the values,
// and returns what the call returns instead: undefined, or a remover that does nothing.
func misuse(call string, values ...any) {
	errorf("lifeline: %s", call).with(values...)
}

// remover wraps f as the function the JS API returns to undo a registration: the first call
// runs f, later ones do nothing (quietly: calling a remover twice is not a mistake worth a
// console line). The js.Func is not released, so that a second call finds a live function; it
// costs a few dozen bytes per registration.
func remover(f func()) js.Func {
	done := false
	return js.FuncOf(func(js.Value, []js.Value) any {
		defer contain("a Lifeline remover")
		if !done {
			done = true
			f()
		}
		return nil
	})
}

// noop is the remover of a registration that was refused.
var noop = js.FuncOf(func(js.Value, []js.Value) any { return nil })
