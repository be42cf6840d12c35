// Package serial runs an owner's queued work in order on a goroutine that exists only while
// there is work, so that an idle owner (a session, a fan-out, a subscription, a follow, a
// controller's status queue) holds no goroutine, and a busy one holds exactly one.
//
// The owner keeps its queue, and the Loop's state, under its own mutex: whether there is work
// and whether a goroutine is doing it must change together, or work queued just as the
// goroutine decides to leave would wait for the next piece of work to be noticed. A Loop
// therefore has no lock of its own; every method but Run is called with the owner's mutex held.
package serial

import "sync"

// A Loop is the one goroutine of its owner. The zero Loop is not usable: call Init first.
type Loop struct {
	mu      sync.Locker
	round   func() bool
	run     func() // l.Run, bound once: a go statement of a method value allocates each time
	running bool
}

// Init sets the owner's mutex and its round, the function the goroutine calls over and over.
// round is called with mu held. When there is no work it returns false, mu still held, and the
// goroutine leaves; otherwise it takes the next work, may release mu to do it (it must, to call
// anything slow or outside the owner), and returns true with mu held again.
func (l *Loop) Init(mu sync.Locker, round func() bool) {
	l.mu, l.round, l.run = mu, round, l.Run
}

// Running reports whether a goroutine is doing the owner's work, or has been claimed to. An
// owner that may do work in place (with nothing queued before it) does so only when it is not.
// mu is held.
func (l *Loop) Running() bool { return l.running }

// Start starts the goroutine unless it runs: the owner has queued work. mu is held.
func (l *Loop) Start() {
	if l.Claim() {
		go l.run()
	}
}

// Claim marks the loop running if it is not, and reports whether it did. When it did, the
// caller must call Run once mu is released, on a goroutine of its choosing: its own, when it
// has one to spare (a timer's), or a new one. mu is held.
func (l *Loop) Claim() bool {
	if l.running {
		return false
	}
	l.running = true
	return true
}

// Run does rounds until one finds no work, then marks the loop idle. It is called after a
// Claim that returned true, with mu not held.
func (l *Loop) Run() {
	l.mu.Lock()
	for l.round() {
	}
	l.running = false
	l.mu.Unlock()
}
