//go:build !js

package hostplugin

import (
	"context"
	"net/netip"
	"time"

	"golang.org/x/time/rate"
)

// HoldMax is the longest an upgrade is held for its accept-rate slot.
const HoldMax = holdMax

// PresenceFlush is the longest a presence change waits for its batch.
const PresenceFlush = presenceFlush

// CapRetryFloor is the least retry-after of a page refused by the session cap.
const CapRetryFloor = capRetryFloor

// Admission is a Host's session cap and accept rate, without a Host.
type Admission struct{ a admission }

// NewAdmission returns an admission of perSecond sessions a second, burst at once.
func NewAdmission(perSecond, burst int) *Admission {
	return &Admission{a: admission{lim: rate.NewLimiter(rate.Limit(perSecond), burst)}}
}

// Decision is what Decide answered for one page.
type Decision struct {
	Verdict string        // "admit", "hold" or "refuse"
	Until   time.Time     // hold: the page's slot
	Retry   time.Duration // refuse: the retry-after
	d       decision
}

// Decide decides for a page arriving at now.
func (a *Admission) Decide(now time.Time, maxSessions int) Decision {
	d := a.a.decide(now, maxSessions)
	v := map[verdict]string{admitNow: "admit", holdUntil: "hold", comeBackLater: "refuse"}[d.verdict]
	return Decision{Verdict: v, Until: d.until, Retry: d.retry, d: d}
}

// Arrive is a held page's timer firing at now: 0 when it is admitted, else how much longer
// it must wait.
func (a *Admission) Arrive(d Decision, now time.Time) time.Duration { return a.a.arrive(d.d, now) }

// Leave is a held page leaving at now.
func (a *Admission) Leave(d Decision, now time.Time) { a.a.leave(d.d, now) }

// Hold waits on real timers for a held page's slot, as the endpoint does.
func (a *Admission) Hold(ctx context.Context, d Decision) bool { return a.a.hold(ctx, nil, d.d) }

// Admit decides for a page arriving at now and holds it if so decided, as the endpoint does.
func (a *Admission) Admit(ctx context.Context, now time.Time, maxSessions int) (time.Duration, bool) {
	retry, admitted, _ := a.a.admit(ctx, nil, now, maxSessions)
	return retry, admitted
}

// End ends one admitted session.
func (a *Admission) End() { a.a.release() }

// Taken is how many sessions are admitted or held and not yet ended.
func (a *Admission) Taken() int {
	a.a.mu.Lock()
	defer a.a.mu.Unlock()
	return a.a.count
}

// PerIP is a Host's per-address rate, without a Host.
type PerIP struct{ p perIP }

// NewPerIP returns a per-address rate of perSecond sockets a second, burst at once.
func NewPerIP(perSecond, burst int) *PerIP {
	p := &PerIP{}
	p.p.configure(perSecond, burst)
	return p
}

// Allow takes a token for addr at now, or returns how long it must wait.
func (p *PerIP) Allow(addr string, now time.Time) (time.Duration, bool) {
	return p.p.allow(netip.MustParseAddr(addr), now)
}

// Tracked is how many addresses have a bucket.
func (p *PerIP) Tracked() int {
	p.p.mu.Lock()
	defer p.p.mu.Unlock()
	return len(p.p.clients)
}

// PageAddr is the address a request's per-address limit applies to; false when none.
func PageAddr(remoteAddr string, xff []string, trusted []netip.Prefix) (netip.Addr, bool) {
	return pageAddr(remoteAddr, xff, trusted)
}

// AcceptTokens is how many sessions h's accept rate would admit at once now.
func AcceptTokens(h *Host) float64 {
	h.adm.mu.Lock()
	defer h.adm.mu.Unlock()
	return h.adm.lim.Tokens()
}

// SetMaxQueue sets how many frames h queues for a slow page before it sheds it. Call it
// before the first session.
func SetMaxQueue(h *Host, n int) { h.maxQueue = n }

// SetLogRetry sets the first wait before a catch-up the log failed is tried again.
func SetLogRetry(h *Host, d time.Duration) { h.logRetry = d }

// BootstrapJSON is the JSON pages receive in their bootstrap element for cfg.
func BootstrapJSON(cfg Config) []byte { return cfg.bootstrap() }
