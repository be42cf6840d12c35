// Package controller keeps one logical connection alive through outages of any length.
//
// A [Controller] drives a [Source] (the gateway, in production; channels, in tests) one
// generation at a time. Each generation is an attempt with a number: it is given a context,
// a slow-host warning at SlowAfter and a cancellation at Deadline; it becomes the connection
// when it calls [Generation.Ready]. Failures walk a jittered ladder of caps ([Delay]) and never
// stop on their own; a generation that stays ready for StableAfter resets the ladder (flap
// damping). A GOAWAY moves the page make-before-break; a redirect back to an endpoint that
// already redirected the page in the same chain waits out the ladder (loop damping).
//
// Guarantees:
//   - At most one handshake at a time, and a cancelled generation has settled (its Run has
//     returned) before the next one starts. A slow settle delays the next attempt; it never
//     overlaps it. The one exception is a GOAWAY handover, where the draining generation keeps
//     delivering beside the single handshake in flight.
//   - A ready from any generation but the current one is refused and its carrier closed.
//   - Stop cancels everything and waits for it to settle; no goroutine or timer is left.
//   - Every state change reaches Options.OnChange, in order.
//
// The timing config enters through [Resolve], the one resolver shared with the Host plugin and
// the page; a [Config] can only come from it or from [DefaultConfig].
//
// The package imports no socket, DOM or syscall/js code and builds for linux and js/wasm
// alike. Its timers are plain Go timers: they work in the browser and under testing/synctest.
package controller
