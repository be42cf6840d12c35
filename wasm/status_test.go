//go:build js && wasm

package main

import "github.com/lifeline-go/lifeline/controller"

func statusFor(name string) controller.Status {
	for s := controller.Idle; s <= controller.Stopped; s++ {
		if s.String() == name {
			return controller.Status{State: s}
		}
	}
	panic("no state " + name)
}
