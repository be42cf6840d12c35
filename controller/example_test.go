package controller_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/lifeline-go/lifeline/controller"
)

func ExampleResolve() {
	_, err := controller.Resolve(controller.Recovery{DeadlineMs: new(0.0), Jitter: new(1.5)})
	fmt.Println(err)

	cfg, _ := controller.Resolve(controller.Recovery{DeadlineMs: new(5000.0)})
	fmt.Println(cfg.Deadline(), cfg.SlowAfter())
	// Output:
	// controller: recovery.deadlineMs: must be an integer in 1..2147483647, got 0; recovery.jitter: must be a number in [0,1], got 1.5
	// 5s 3s
}

func ExampleDelay() {
	cfg := controller.DefaultConfig()
	full := func() float64 { return 0 } // no jitter drawn: the cap itself
	for failures := 1; failures <= 7; failures++ {
		fmt.Print(controller.Delay(cfg, failures, full), " ")
	}
	fmt.Println()
	// Output: 500ms 1s 2s 4s 8s 10s 10s
}

func ExampleController() {
	tries := 0
	src := controller.SourceFunc(func(ctx context.Context, gen *controller.Generation) error {
		tries++
		if tries < 3 {
			return errors.New("connection refused")
		}
		if err := gen.Ready(nil); err != nil {
			return err
		}
		<-ctx.Done() // carry the connection until the controller ends it
		return context.Cause(ctx)
	})
	// Bootstrap input is untrusted: it goes through the resolver before anything is built.
	cfg, err := controller.Resolve(controller.Recovery{InitialDelayMs: new(20.0)})
	if err != nil {
		fmt.Println(err)
		return
	}
	connected := make(chan struct{})
	ctl, err := controller.New(src, cfg, &controller.Options{
		Logger: slog.New(slog.DiscardHandler),
		OnChange: func(s controller.Status) {
			if s.State == controller.Connected {
				close(connected)
			}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctl.Start()
	select {
	case <-connected:
	case <-time.After(5 * time.Second):
	}
	fmt.Println(ctl.Status().State, "after", tries, "tries")
	ctl.Stop()
	fmt.Println(ctl.Status().State)
	// Output:
	// connected after 3 tries
	// stopped
}
