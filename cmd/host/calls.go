//go:build !js

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/hostplugin/jetstream"
)

// openCalls returns the call store of a Host whose stream log is on JetStream: the fleet's,
// in a KV bucket every Host on the same NATS shares, so that a keyed call re-sent to another
// Host (after a SIGKILL of its own) finds its outcome. Nil otherwise: the Host keeps its
// outcomes in memory.
func openCalls(shared sharedLog, cfg hostplugin.Config, logger *slog.Logger) (*jetstream.CallStore, error) {
	log, ok := shared.(*jetstream.Log)
	if !ok {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	calls, err := jetstream.NewCallStore(ctx, log, &jetstream.CallOptions{Window: cfg.CallDedup(), Lease: cfg.CallTimeout()})
	if err != nil {
		return nil, err
	}
	logger.Info("host: keyed calls' outcomes in a JetStream KV bucket, shared by the fleet", "epoch", calls.Epoch(), "window", cfg.CallDedup())
	return calls, nil
}

// fleetCall is the call of the fleet test (e2e/fleet). Its handler logs each run with the
// call's id before it does anything else, so that the runs of a call can be counted across
// the fleet, a SIGKILLed Host's included (its log outlives it), and replies with the Host
// that ran it and the id. It holds the run for holdMs (at most maxFleetHold), so that a
// test can have calls running, and calls queued behind them, when it kills a Host.
const fleetCall = "fleet.call"

const maxFleetHold = time.Second

// errFleetCallData is the error of a fleet.call whose data is not what it takes.
var errFleetCallData = errors.New(`fleet.call takes {"id": "1..128 bytes", "holdMs": 0..1000}`)

func handleFleetCall(h *hostplugin.Host, host string, logger *slog.Logger) {
	h.HandleCall(fleetCall, func(ctx context.Context, c *hostplugin.Call) (json.RawMessage, error) {
		var d struct {
			ID     string `json:"id"`
			HoldMs int64  `json:"holdMs"`
		}
		if err := json.Unmarshal(c.Data, &d); err != nil || d.ID == "" || len(d.ID) > 128 ||
			d.HoldMs < 0 || time.Duration(d.HoldMs)*time.Millisecond > maxFleetHold {
			return nil, errFleetCallData
		}
		logger.Info("host: fleet.call ran", "id", d.ID, "key", c.Key)
		if d.HoldMs > 0 {
			t := time.NewTimer(time.Duration(d.HoldMs) * time.Millisecond)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("fleet.call %s: %w", d.ID, context.Cause(ctx))
			case <-t.C:
			}
		}
		return json.Marshal(map[string]string{"host": host, "id": d.ID})
	})
}
