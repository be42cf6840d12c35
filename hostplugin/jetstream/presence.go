//go:build !js

package jetstream

import (
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/lifeline-go/lifeline/hostplugin"
)

// Presence is a [hostplugin.PresenceFleet] on the NATS of a [Log]: the Hosts of a fleet tell
// each other their members' counts on core NATS subjects, <Prefix>.presence (to every Host)
// and <Prefix>.presence.to.<host> (to one).
//
//	p := &hostplugin.Presence{Streams: isRoom, Fleet: jetstream.NewPresence(log)}
//	h, err := hostplugin.New(cfg, &hostplugin.Options{Log: log, Presence: p, Authorize: authorize})
//
// Why subjects and not a key-value bucket with a TTL: a member's count is the sum of what each
// Host says, and a Host's word must end with the Host (its heartbeat stops) and not with a
// key's age, which a bucket would have every Host refresh for every member it holds. On
// subjects a Host sends its changes (batched every 20 ms) and one heartbeat a second whatever
// it holds: nothing is polled, nothing per stream is refreshed, and nothing is stored, so a
// JetStream leader election or a NATS node lost delays nothing but the messages in flight,
// which a Host finds missing by their numbers and asks again for. A Host cut off from NATS
// knows it (the connection says so) and takes no other Host for dead meanwhile.
type Presence struct {
	nc     *nats.Conn
	prefix string // <Prefix>.presence
}

// NewPresence returns the presence fleet of the Hosts that share log.
func NewPresence(log *Log) *Presence {
	return &Presence{nc: log.nc, prefix: log.opts.Prefix + ".presence"}
}

// Join implements hostplugin.PresenceFleet.
func (p *Presence) Join(self string, recv func(msg []byte)) (hostplugin.PresenceLink, error) {
	l := &presenceLink{p: p, self: self}
	// One subscription for both subjects' messages: recv sees them in the order NATS gave
	// them, as the fleet's numbering expects of one sender.
	h := func(m *nats.Msg) {
		l.mu.Lock()
		left := l.left
		l.mu.Unlock()
		if !left {
			recv(m.Data)
		}
	}
	all, err := p.nc.Subscribe(p.prefix, h)
	if err != nil {
		return nil, fmt.Errorf("jetstream: presence subscription of Host %s: %w", self, err)
	}
	to, err := p.nc.Subscribe(p.prefix+".to."+self, h)
	if err != nil {
		_ = all.Unsubscribe()
		return nil, fmt.Errorf("jetstream: presence subscription of Host %s: %w", self, err)
	}
	for _, s := range []*nats.Subscription{all, to} {
		// A burst of joins on a busy fleet must not be dropped as a slow consumer: the
		// Host's recv is quick, and a gap costs a query.
		_ = s.SetPendingLimits(1<<16, 64<<20)
	}
	// Both subscriptions are known to the server before the Host says hello: the answers
	// to it must find them.
	if err := p.nc.Flush(); err != nil && p.nc.IsConnected() {
		_ = all.Unsubscribe()
		_ = to.Unsubscribe()
		return nil, fmt.Errorf("jetstream: presence subscription of Host %s: %w", self, err)
	}
	l.subs = []*nats.Subscription{all, to}
	return l, nil
}

type presenceLink struct {
	p    *Presence
	self string
	subs []*nats.Subscription

	mu   sync.Mutex
	left bool
}

// Broadcast implements hostplugin.PresenceLink.
func (l *presenceLink) Broadcast(msg []byte) error {
	return l.p.nc.Publish(l.p.prefix, msg)
}

// Send implements hostplugin.PresenceLink.
func (l *presenceLink) Send(host string, msg []byte) error {
	return l.p.nc.Publish(l.p.prefix+".to."+host, msg)
}

// Connected implements hostplugin.PresenceLink.
func (l *presenceLink) Connected() bool { return l.p.nc.IsConnected() }

// Leave implements hostplugin.PresenceLink: its goodbye, sent just before, is flushed first.
func (l *presenceLink) Leave() {
	_ = l.p.nc.Flush()
	l.mu.Lock()
	l.left = true
	l.mu.Unlock()
	for _, s := range l.subs {
		_ = s.Unsubscribe()
	}
}
