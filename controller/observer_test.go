package controller_test

import (
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/lifeline-go/lifeline/controller"
)

// observingSource is a fakeSource that implements controller.StatusObserver, and records
// whether OnChange had seen each status before it did.
type observingSource struct {
	*fakeSource
	rec *recorder

	mu       sync.Mutex
	observed []controller.Status
	late     int // statuses OnChange had before ObserveStatus
}

func (o *observingSource) ObserveStatus(s controller.Status) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.rec.Statuses()) > len(o.observed) {
		o.late++
	}
	o.observed = append(o.observed, s)
}

func TestASourceThatObservesStatusesGetsEachOneInOrderBeforeOnChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		src := &observingSource{fakeSource: newFakeSource(), rec: rec}
		ctl, err := controller.New(src, mustResolve(t, controller.Recovery{}), &controller.Options{OnChange: rec.onChange, Rand: constant(fullCap)})
		if err != nil {
			t.Fatal(err)
		}
		ctl.Start()
		synctest.Wait()
		a := <-src.attempts
		if err := a.gen.Ready(&carrier{}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		a.end <- errRefused
		synctest.Wait()
		ctl.Stop()
		synctest.Wait()
		src.mu.Lock()
		defer src.mu.Unlock()
		var states []controller.State
		for _, s := range src.observed {
			states = append(states, s.State)
		}
		want := []controller.State{controller.Connecting, controller.Connected, controller.Reconnecting, controller.Stopped}
		if !slices.Equal(states, want) {
			t.Fatalf("observed %v, want %v", states, want)
		}
		if !slices.EqualFunc(src.observed, rec.Statuses(), func(a, b controller.Status) bool { return a.State == b.State && a.At.Equal(b.At) }) {
			t.Fatalf("the source observed %v, OnChange saw %v", src.observed, rec.Statuses())
		}
		if src.late > 0 {
			t.Fatalf("OnChange saw %d statuses before the source did", src.late)
		}
	})
}

// A controller without OnChange still tells an observing source.
func TestASourceObservesStatusesWithoutOnChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &observingSource{fakeSource: newFakeSource(), rec: &recorder{}}
		ctl, err := controller.New(src, mustResolve(t, controller.Recovery{}), nil)
		if err != nil {
			t.Fatal(err)
		}
		ctl.Start()
		synctest.Wait()
		ctl.Stop()
		synctest.Wait()
		src.mu.Lock()
		defer src.mu.Unlock()
		if n := len(src.observed); n != 2 || src.observed[1].State != controller.Stopped {
			t.Fatalf("observed %v, want connecting then stopped", src.observed)
		}
	})
}
