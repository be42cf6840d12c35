//go:build !js

package hostplugin

import (
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// perIP limits how fast one client address may open sockets, so that a client opening sockets
// in a loop cannot spend the Host's accept budget (acceptRate) that every other page shares.
// The address is the client's as clientAddr finds it behind the trusted proxies; a request
// that names no client beyond them is not limited here (see clientAddr and SECURITY.md).
type perIP struct {
	mu      sync.Mutex
	limit   rate.Limit
	burst   int
	clients map[netip.Addr]*ipBucket
	swept   time.Time
}

type ipBucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// ipIdle is how long an address's bucket is kept after its last socket; by then it is full
// again (burst ≤ rate × ipIdle for every legal config), so forgetting it changes nothing.
const ipIdle = time.Minute

func (p *perIP) configure(perSecond, burst int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.limit, p.burst = rate.Limit(perSecond), burst
	for _, b := range p.clients {
		b.lim.SetLimit(p.limit)
		b.lim.SetBurst(burst)
	}
}

// allow takes a token for addr at now, or returns how long that address must wait.
func (p *perIP) allow(addr netip.Addr, now time.Time) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.clients == nil {
		p.clients = make(map[netip.Addr]*ipBucket)
	}
	if now.Sub(p.swept) > ipIdle {
		for a, b := range p.clients {
			if now.Sub(b.seen) > ipIdle {
				delete(p.clients, a)
			}
		}
		p.swept = now
	}
	b := p.clients[addr]
	if b == nil {
		b = &ipBucket{lim: rate.NewLimiter(p.limit, p.burst)}
		p.clients[addr] = b
	}
	b.seen = now
	r := b.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now) // a refused socket must not use up a later token
		return d, false
	}
	return 0, true
}
