package serial_test

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifeline-go/lifeline/internal/serial"
)

// owner is the shape every user of a Loop has: a queue and the Loop under one mutex, work done
// with the mutex released.
type owner struct {
	mu    sync.Mutex
	loop  serial.Loop
	queue []int
	done  []int
	busy  int // rounds doing work at this moment
	most  int // the most rounds ever doing work at once
	took  time.Duration
}

func newOwner(took time.Duration) *owner {
	o := &owner{took: took}
	o.loop.Init(&o.mu, o.round)
	return o
}

func (o *owner) round() bool {
	if len(o.queue) == 0 {
		return false
	}
	n := o.queue[0]
	o.queue = o.queue[1:]
	o.busy++
	o.most = max(o.most, o.busy)
	o.mu.Unlock()
	time.Sleep(o.took) // the work, with the owner's mutex released
	o.mu.Lock()
	o.busy--
	o.done = append(o.done, n)
	return true
}

func (o *owner) add(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.queue = append(o.queue, n)
	o.loop.Start()
}

func (o *owner) state() (done []int, running bool, most int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.done), o.loop.Running(), o.most
}

// Work queued from many goroutines, some of it while a round is doing work and some just as the
// goroutine runs out of it, is all done, one piece at a time, each goroutine's pieces in the
// order it queued them; afterwards no goroutine is left.
func TestWorkIsDoneInOrderOneAtATimeAndTheGoroutineLeavesWhenThereIsNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newOwner(time.Millisecond)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 25 {
					o.add(g*100 + i)
					time.Sleep(time.Duration(g) * 700 * time.Microsecond) // in step with rounds, and not
				}
			})
		}
		wg.Wait()
		time.Sleep(time.Second) // far longer than what is left to do
		done, running, most := o.state()
		if len(done) != 100 {
			t.Fatalf("%d pieces of work done, want 100", len(done))
		}
		for g := range 4 {
			var mine []int
			for _, n := range done {
				if n/100 == g {
					mine = append(mine, n)
				}
			}
			if !slices.IsSorted(mine) {
				t.Errorf("goroutine %d's work done out of order: %v", g, mine)
			}
		}
		if most != 1 {
			t.Errorf("up to %d rounds did work at once, want 1", most)
		}
		if running {
			t.Error("the loop is still running with nothing queued")
		}
		// Everything in the bubble but this goroutine has exited: synctest.Test would report a
		// goroutine left blocked, but not one that exited late; count them.
		before := runtime.NumGoroutine()
		o.add(1000)
		time.Sleep(time.Second)
		if after := runtime.NumGoroutine(); after != before {
			t.Errorf("%d goroutines after one more piece of work was done, want the %d before it", after, before)
		}
	})
}

// A goroutine that claims the loop runs it itself (a timer's goroutine, sparing a new one);
// while it does, Start from elsewhere starts nothing and its work waits its turn.
func TestClaimRunsTheLoopOnTheCallersGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newOwner(time.Second)
		o.mu.Lock()
		o.queue = append(o.queue, 1)
		if !o.loop.Claim() {
			t.Fatal("Claim on an idle loop = false")
		}
		if o.loop.Claim() {
			t.Fatal("Claim on a claimed loop = true")
		}
		o.mu.Unlock()
		go func() {
			time.Sleep(time.Second / 2)
			o.add(2) // while the caller's round works
		}()
		o.loop.Run()
		done, running, most := o.state()
		if !slices.Equal(done, []int{1, 2}) || running || most != 1 {
			t.Errorf("after Run: done %v, running %v, %d at once; want [1 2], false, 1", done, running, most)
		}
	})
}

// The owner's mutex is free while a round works: queuing never waits for the work.
func TestQueuingDoesNotWaitForTheWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newOwner(time.Hour)
		o.add(1)
		synctest.Wait() // the round is in its hour of work
		start := time.Now()
		o.add(2)
		if waited := time.Since(start); waited != 0 {
			t.Errorf("queuing waited %v for the work", waited)
		}
		time.Sleep(2*time.Hour + time.Second)
		if done, _, _ := o.state(); !slices.Equal(done, []int{1, 2}) {
			t.Errorf("done %v, want [1 2]", done)
		}
	})
}
