package controller_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/lifeline-go/lifeline/controller"
)

// BenchmarkAttemptCycle measures one failed attempt cycle: start a generation, the source
// fails at once, the failure is logged (to a discarding handler) and the retry waits out the
// shortest ladder (1 ms). allocs/op is the figure that matters; ns/op is mostly the 1 ms wait.
func BenchmarkAttemptCycle(b *testing.B) {
	cfg, err := controller.Resolve(controller.Recovery{InitialDelayMs: new(1.0), MaxDelayMs: new(1.0)})
	if err != nil {
		b.Fatal(err)
	}
	var runs atomic.Int64
	done := make(chan struct{})
	target := int64(b.N) + 1
	errFail := errors.New("refused")
	src := controller.SourceFunc(func(ctx context.Context, gen *controller.Generation) error {
		if runs.Add(1) == target {
			close(done)
			<-ctx.Done()
			return context.Cause(ctx)
		}
		return errFail
	})
	ctl, err := controller.New(src, cfg, &controller.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	ctl.Start()
	<-done
	b.StopTimer()
	ctl.Stop()
}
