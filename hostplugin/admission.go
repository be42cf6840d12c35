//go:build !js

package hostplugin

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// Who gets a socket, in the order the events endpoint asks: the per-address rate (perIP,
// before anything else, so that a page opening sockets in a loop costs one HTTP answer
// each), then, after Authenticate, the session cap and the accept rate (admission).

// withinAddressRate takes a token of the per-address rate for the address r comes from, or answers 429
// with the Retry-After of its next token and returns false.
func (h *Host) withinAddressRate(w http.ResponseWriter, r *http.Request, cfg Config) bool {
	addr, ok := pageAddr(r.RemoteAddr, r.Header.Values(xffHeader), cfg.trustedProxies)
	if !ok {
		return true
	}
	wait, ok := h.perIP.allow(addr, time.Now())
	if ok {
		return true
	}
	h.thin.perIP.Do(func() {
		h.logger.Warn("hostplugin: refused a socket (429): over the per-address rate",
			"addr", addr, "remote", r.RemoteAddr, "retryAfter", wait)
	})
	// Retry-After for HTTP clients (whole seconds, rounded up), and the exact wait in the
	// body, which a browser page reads through the refusal query (it cannot read the header
	// of a cross-origin answer, nor the status of a refused upgrade).
	w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
	writeJSON(w, http.StatusTooManyRequests, wire.Refusal{Error: wire.RefusalRate, RetryAfterMs: max(wait.Milliseconds(), 1)})
	return false
}

// entry is what admission said of one upgrade: a session slot, or the retry-after of a
// refusal (1013) that is sent once the socket is open.
type entry struct {
	admitted bool
	retry    time.Duration
	capped   bool // the refusal is the session cap's, not the accept rate's
	injected bool // the refusal is fault injection's (overload), not the cap's or the rate's
}

// admitUpgrade asks admission for a slot, before the upgrade, so that a page held for its slot
// is still connecting. A refused origin is not asked (it is refused after the upgrade, and
// must take no slot), nor is an upgrade that fault injection refuses. It returns false when
// the page left while held, or Close released it.
func (h *Host) admitUpgrade(ctx context.Context, cfg Config, originOK bool, fault upgradeFault) (entry, bool) {
	switch {
	case !originOK:
		return entry{}, true
	case fault.overload:
		return entry{retry: fault.retryAfter, injected: true}, true
	}
	retry, admitted, capped := h.adm.admit(ctx, h.done, time.Now(), cfg.maxSessions)
	if !admitted && retry == 0 {
		return entry{}, false
	}
	return entry{admitted: admitted, retry: retry, capped: capped}, true
}

// refuseEntry closes a socket that admission refused with 1013 and its retry-after.
func (h *Host) refuseEntry(conn *websocket.Conn, cfg Config, e entry) {
	h.observeRefusedEntry(cfg, e)
	refuseOverloaded(conn, e.retry)
}

// observeRefusedEntry tells the Observer, and the log, of a session admission refused.
func (h *Host) observeRefusedEntry(cfg Config, e entry) {
	switch {
	case e.injected:
		h.obs.Upgrade(UpgradeInjected)
	case e.capped:
		h.obs.Upgrade(UpgradeSessionCap)
	default:
		h.obs.Upgrade(UpgradeAcceptRate)
	}
	if !e.injected {
		h.thin.overload.Do(func() {
			h.logger.Warn("hostplugin: refused a socket (1013): over the session cap or the accept rate",
				"sessions", h.Sessions(), "maxSessions", cfg.maxSessions, "acceptRate", cfg.acceptRate,
				"retryAfter", e.retry)
		})
	}
}

// refuseOverloaded closes a socket with 1013 and retry-after. The same retry-after goes first
// in an error frame, which every page reads, whatever its carrier makes of close frames (the
// pages built before the browser's own WebSocket carrier took their refusals from frames).
func refuseOverloaded(conn *websocket.Conn, wait time.Duration) {
	reason := wire.RetryAfterReason(wait)
	_ = writeFrame(conn, errorFrame(reason))
	_ = conn.Close(wire.CloseOverloaded, reason)
}

// admission is the session cap and the accept-rate limit. What it decides is a function of its
// state and the time it is given (decide, arrive, leave); only hold waits, on real timers.
type admission struct {
	mu    sync.Mutex
	lim   *rate.Limiter
	count int       // sessions admitted or held for their slot, and not yet ended
	tail  time.Time // when the last page told to come back is due
	last  time.Time // when the last page was admitted
}

// Floors of the retry-after for refused pages.
const (
	// capRetryFloor: a full Host frees slots as sessions end, not within milliseconds.
	capRetryFloor = time.Second
	// rateRetryFloor: shorter delays are lost in the page's own timer and network jitter.
	rateRetryFloor = 10 * time.Millisecond
)

// holdMax is the longest the Host holds an upgrade for its accept-rate slot rather than
// refusing it. Shorter than the page's slow warning (3 s by default), so a held page does not
// even look slow; and a held page costs the Host nothing but a parked request.
const holdMax = 2 * time.Second

// verdict is what admission decides for an arriving page.
type verdict int

const (
	admitNow      verdict = iota // the page takes a session now
	holdUntil                    // the page's slot is near: it waits for it, then arrives
	comeBackLater                // the page is refused, with the retry-after of its slot
)

// decision is admission's answer to one arriving page.
type decision struct {
	verdict verdict
	until   time.Time         // holdUntil: the page's slot
	retry   time.Duration     // comeBackLater: the retry-after
	capped  bool              // comeBackLater: by the session cap (else the accept rate)
	spacing time.Duration     // holdUntil: the least time since the previous admission; 0 = none
	res     *rate.Reservation // holdUntil: the slot's token, given back if the page leaves
}

// admit takes a session slot, or returns how long the page should wait before trying again
// and whether the session cap refused it (else the accept rate did). It returns false without
// a retry-after when ctx ends (the page left) or done is closed (the Host closed) while the
// page is held.
func (a *admission) admit(ctx context.Context, done <-chan struct{}, now time.Time, maxSessions int) (retry time.Duration, admitted, capped bool) {
	d := a.decide(now, maxSessions)
	switch d.verdict {
	case admitNow:
		return 0, true, false
	case holdUntil:
		return 0, a.hold(ctx, done, d), false
	default:
		return d.retry, false, d.capped
	}
}

// decide admits a page arriving at now, holds it for its slot, or refuses it.
//
// Over the accept rate, a page whose slot is at most holdMax away is held until then instead
// of refused: a refusal would cost it a full step of its retry ladder (a 1013 never shortens
// the ladder), so a herd would come back seconds later than the Host could take it. The rate
// still holds in every window, because the held page is admitted at its slot.
func (a *admission) decide(now time.Time, maxSessions int) decision {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.count >= maxSessions {
		return decision{verdict: comeBackLater, retry: max(a.nextSlot(now, 0), capRetryFloor), capped: true}
	}
	r := a.lim.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	// With burst 1 the limit promises at most one page per interval in every window, so a
	// page is also spaced from the previous actual admission: a held page whose timer fired
	// late must not squeeze the next one closer than the rate allows.
	var spacing time.Duration
	if a.lim.Burst() <= 1 {
		spacing = a.interval()
		wait = max(wait, a.last.Add(spacing).Sub(now))
	}
	if wait > holdMax || !r.OK() {
		r.CancelAt(now)
		return decision{verdict: comeBackLater, retry: max(a.nextSlot(now, wait), rateRetryFloor)}
	}
	a.count++ // the slot is taken now, so the session cap holds while the page waits
	if wait <= 0 {
		a.last = now
		return decision{verdict: admitNow}
	}
	return decision{verdict: holdUntil, until: now.Add(wait), spacing: spacing, res: r}
}

// hold waits for a held page's slot and admits it there. It returns false when ctx ends or
// done is closed first.
func (a *admission) hold(ctx context.Context, done <-chan struct{}, d decision) bool {
	t := time.NewTimer(time.Until(d.until))
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			a.leave(d, time.Now())
			return false
		case <-done:
			a.leave(d, time.Now())
			return false
		}
		gap := a.arrive(d, time.Now())
		if gap <= 0 {
			return true
		}
		t.Reset(gap)
	}
}

// arrive admits a held page whose timer fired at now, or returns how much longer it must
// wait: another page admitted late (its timer fired late) may have moved the spacing on.
func (a *admission) arrive(d decision, now time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if gap := a.last.Add(d.spacing).Sub(now); d.spacing > 0 && gap > 0 {
		return gap
	}
	a.last = now
	return 0
}

// leave gives back the slot and the token of a held page that left at now.
func (a *admission) leave(d decision, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	d.res.CancelAt(now)
	a.count--
}

// interval is the time between two admissions at the accept rate.
func (a *admission) interval() time.Duration {
	return time.Duration(float64(time.Second) / float64(a.lim.Limit()))
}

// nextSlot spreads refused pages over the time the limiter needs to admit them: each gets the
// next free slot at the accept rate after the ones already told to come back (and no earlier
// than free, when the limiter's next token is free from now, which counts held pages), so a
// herd returns at the rate the Host takes instead of all at once. Beyond what a page honours
// (wire.MaxRetryAfter) the slots are full; those pages get a random delay in its upper half.
func (a *admission) nextSlot(now time.Time, free time.Duration) time.Duration {
	slot := now.Add(free)
	if next := a.tail.Add(a.interval()); next.After(slot) {
		slot = next
	}
	if d := slot.Sub(now); d <= wire.MaxRetryAfter {
		a.tail = slot
		return d
	}
	half := wire.MaxRetryAfter / 2
	return half + rand.N(half)
}

// configure sets the accept rate and burst of an applied config.
func (a *admission) configure(limit rate.Limit, burst int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lim.SetLimit(limit)
	a.lim.SetBurst(burst)
}

// release ends a session.
func (a *admission) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.count--
}

// perIP limits how fast one browser address may open sockets, so that a page opening sockets
// in a loop cannot spend the Host's accept budget (acceptRate) that every other page shares.
// The address is the browser's as pageAddr finds it behind the trusted proxies; a request
// that names no browser beyond them is not limited here (see pageAddr and SECURITY.md).
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
