//go:build !js

package jetstream

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// Bus is a [hostplugin.Bus] on the NATS of a [Log]: an end of access (Host.EndSessions,
// Host.EndSubscription) made on any Host of the fleet is published on the subject
// <Prefix>.access, which every Host of the fleet listens to, so that one call ends an
// identity's pages on every Host.
//
//	h, err := hostplugin.New(cfg, &hostplugin.Options{Log: log, Bus: jetstream.NewBus(log), Authorize: authorize})
//
// It is core NATS, not a JetStream stream: an end is for the sessions open now, so nothing is
// kept, and it costs one subscription per Host. A Host cut off from NATS when an end is
// published misses it (its own pages then keep their sessions until they end otherwise, or
// their credential expires: give sessions an expiry, Options.Access, where that matters);
// Publish fails while this Host is cut off, so the application learns of it.
type Bus struct {
	nc      *nats.Conn
	subject string
	timeout time.Duration // the log's Timeout: bounds a Publish whose ctx has no deadline
}

// NewBus returns the bus of the fleet that shares log.
func NewBus(log *Log) *Bus {
	return &Bus{nc: log.nc, subject: log.opts.Prefix + ".access", timeout: log.opts.Timeout}
}

// Listen implements hostplugin.Bus.
func (b *Bus) Listen(receive func(msg []byte)) (stop func(), err error) {
	sub, err := b.nc.Subscribe(b.subject, func(m *nats.Msg) { receive(m.Data) })
	if err != nil {
		return nil, fmt.Errorf("jetstream: access bus subscription on %s: %w", b.subject, err)
	}
	// The subscription must be known to the server before this Host serves pages: an end
	// published meanwhile would otherwise pass it by.
	if err := b.nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("jetstream: access bus subscription on %s: %w", b.subject, err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// Publish implements hostplugin.Bus: it returns once the NATS server has the message (a
// round trip, bounded by ctx and the log's Timeout), so that an end the application was told
// is out is out.
func (b *Bus) Publish(ctx context.Context, msg []byte) error {
	if err := b.nc.Publish(b.subject, msg); err != nil {
		return fmt.Errorf("jetstream: publishing an end of access: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	if err := b.nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("jetstream: publishing an end of access: %w", err)
	}
	return nil
}
