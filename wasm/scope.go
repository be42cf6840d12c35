//go:build js && wasm

package main

import (
	"sync"
	"syscall/js"
	"time"
)

// inWorker reports whether the program runs in a SharedWorker (shared mode) rather than in a
// page.
func inWorker() bool {
	scope := js.Global().Get("SharedWorkerGlobalScope")
	return scope.Type() == js.TypeFunction && js.Global().InstanceOf(scope)
}

// A tab pings every pingEvery (web/lifeline.js); one heard from for silentAfter has vanished
// without a word (a crash, a killed process: a MessagePort's close never reaches a worker).
// Hidden tabs' timers run at most once a minute, and a frozen tab says nothing until it
// resumes, so the bound is generous; a dropped tab that comes back attaches again.
const (
	pingEvery   = 10 * time.Second
	silentAfter = 3 * time.Minute
)

// sweeper drops ports that went silent.
type sweeper struct {
	mu    sync.Mutex
	ports map[*port]time.Time
}

var sweep = &sweeper{ports: map[*port]time.Time{}}

func (s *sweeper) heard(p *port) {
	s.mu.Lock()
	s.ports[p] = time.Now()
	s.mu.Unlock()
}

func (s *sweeper) forget(p *port) {
	s.mu.Lock()
	delete(s.ports, p)
	s.mu.Unlock()
}

func (s *sweeper) run() {
	for range time.Tick(pingEvery) {
		s.mu.Lock()
		var silent []*port
		for p, at := range s.ports {
			if time.Since(at) > silentAfter {
				silent = append(silent, p)
				delete(s.ports, p)
			}
		}
		s.mu.Unlock()
		for _, p := range silent {
			p.post(map[string]any{"t": "dropped"})
			p.conn.Detach()
		}
	}
}
