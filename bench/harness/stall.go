//go:build !js

package main

import (
	"sync"
	"time"
)

// stallWatch notices when the harness's process did not run for a while: a timer that should
// fire every 20 ms fires late. On a shared machine another job can starve every process for
// seconds; the proxies then accept nothing and the clients' timers fire late together, so a
// herd measured across such a stall measures the machine, not the clients.
type stallWatch struct {
	mu     sync.Mutex
	stalls []stall
}

type stall struct {
	at time.Time
	d  time.Duration
}

const (
	stallTick      = 20 * time.Millisecond
	stallThreshold = 500 * time.Millisecond
)

func watchStalls(done <-chan struct{}) *stallWatch {
	w := &stallWatch{}
	go func() {
		t := time.NewTicker(stallTick)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				if late := now.Sub(last) - stallTick; late > stallThreshold {
					w.mu.Lock()
					w.stalls = append(w.stalls, stall{at: last, d: late})
					w.mu.Unlock()
				}
				last = now
			}
		}
	}()
	return w
}

// worst returns the longest stall that began in [from, to].
func (w *stallWatch) worst(from, to time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var worst time.Duration
	for _, s := range w.stalls {
		if !s.at.Before(from) && !s.at.After(to) {
			worst = max(worst, s.d)
		}
	}
	return worst
}

func (w *stallWatch) all() []stall {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]stall(nil), w.stalls...)
}
