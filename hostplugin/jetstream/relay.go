//go:build !js

package jetstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// Relay is a [hostplugin.Relay] on the NATS of a [Log]: the HTTP carrier's POSTs that reach a
// Host other than their session's go to it as NATS requests, on the subject
// <Prefix>.relay.<host>, so that the balancer in front of a fleet needs no sticky sessions.
//
//	h, err := hostplugin.New(cfg, &hostplugin.Options{Log: log, Relay: jetstream.NewRelay(log), Authorize: authorize})
//
// It costs nothing while every POST reaches its own Host: one subscription per Host.
type Relay struct {
	nc      *nats.Conn
	subject string // <Prefix>.relay.
}

// NewRelay returns the relay of the fleet that shares log.
func NewRelay(log *Log) *Relay {
	return &Relay{nc: log.nc, subject: log.opts.Prefix + ".relay."}
}

// ErrRelayTooBig is returned by Forward for a request over the NATS server's max payload.
var ErrRelayTooBig = errors.New("jetstream: a relayed request is over the NATS max payload")

// Serve implements hostplugin.Relay: each request is answered on a goroutine of its own (a
// long poll is held), until stop.
func (r *Relay) Serve(id string, serve func(ctx context.Context, req []byte) []byte) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	sub, err := r.nc.Subscribe(r.subject+id, func(m *nats.Msg) {
		go func() {
			if err := m.Respond(serve(ctx, m.Data)); err != nil && ctx.Err() == nil {
				_ = err // the asking Host times out and says so
			}
		}()
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("jetstream: relay subscription for Host %s: %w", id, err)
	}
	return func() {
		_ = sub.Unsubscribe()
		cancel()
	}, nil
}

// Forward implements hostplugin.Relay.
func (r *Relay) Forward(ctx context.Context, id string, req []byte) ([]byte, error) {
	if max := r.nc.MaxPayload(); int64(len(req)) > max {
		return nil, fmt.Errorf("%w: %d bytes, max %d", ErrRelayTooBig, len(req), max)
	}
	m, err := r.nc.RequestWithContext(ctx, r.subject+id, req)
	if err != nil {
		return nil, fmt.Errorf("jetstream: relaying to Host %s: %w", id, err)
	}
	return m.Data, nil
}
