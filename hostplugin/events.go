//go:build !js

package hostplugin

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"

	"github.com/lifeline-go/lifeline/gateway/wire"
	"github.com/lifeline-go/lifeline/internal/fault"
)

var acceptOptions = &websocket.AcceptOptions{
	Subprotocols: []string{wire.Subprotocol},
	// The origin is checked by originAllowed after the upgrade, so that a refused page gets
	// close code 1008 (which it can read) instead of an HTTP 403 (which a browser hides).
	InsecureSkipVerify: true,
}

// ServeHTTP is the events endpoint (SPEC section 4): it upgrades the request to a WebSocket
// session speaking lifeline.v1, or refuses it with the protocol's close codes, or before the
// upgrade with an HTTP status (429 over the per-address rate; 401 or 403 from
// Options.Authenticate). A request that is not a WebSocket upgrade is a probe, answered with a
// JSON body (see "The probe" in the package documentation).
func (h *Host) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.closed.Load() {
		http.Error(w, "hostplugin: the Host is closed", http.StatusServiceUnavailable)
		return
	}
	st := h.state.Load()
	origin := r.Header.Get("Origin")
	originOK := originAllowed(origin, r.Host, st.cfg.allowedOrigins)
	probe := !isUpgrade(r)
	if probe {
		probeHeaders(w, origin, originOK)
	}
	if client, ok := clientAddr(r.RemoteAddr, r.Header.Values(xffHeader), st.cfg.trustedProxies); ok {
		if wait, ok := h.perIP.allow(client, time.Now()); !ok {
			// Before the upgrade: a client opening sockets in a loop costs one HTTP answer each.
			h.logPerIP.Do(func() {
				h.logger.Warn("hostplugin: refused a socket (429): over the per-address rate",
					"client", client, "remote", r.RemoteAddr, "retryAfter", wait)
			})
			w.Header().Set("Retry-After", strconv.Itoa(int(max(wait.Round(time.Second), time.Second)/time.Second)))
			http.Error(w, "hostplugin: too many sockets from this address", http.StatusTooManyRequests)
			return
		}
	}
	if probe {
		h.serveProbe(w, r, originOK)
		return
	}
	h.accepted.Add(1)
	h.inflight.Add(1)
	defer h.inflight.Add(-1)
	var injected fault.Fault // the zero Fault, "up", unless an injector is installed
	if in := h.faults.Load(); in != nil {
		var ok bool
		if injected, ok = in.Hold(r.Context(), h.done); !ok {
			return
		}
		if injected.Mode == fault.Refuse || injected.Mode == fault.Outage {
			http.Error(w, "hostplugin: refused (fault injection: "+injected.Mode.String()+")", http.StatusServiceUnavailable)
			return
		}
	}
	if !offersSubprotocol(r) {
		// Without lifeline.v1 the peer is not a Lifeline page: no frame we send means
		// anything to it.
		http.Error(w, "hostplugin: the client must offer the WebSocket subprotocol "+wire.Subprotocol, http.StatusBadRequest)
		return
	}
	var identity string
	if originOK {
		// A refused origin is refused after the upgrade, whatever its credential: were
		// Authenticate asked, how the handshake fails would tell that origin whether its
		// visitor is signed in.
		var ref *refusal
		if identity, ref = h.authenticate(r); ref != nil {
			h.refuse(w, r, ref, false)
			return
		}
	}
	admitted := false
	var retry time.Duration
	if originOK && injected.Mode != fault.Overload {
		// Before the upgrade, so that a page held for its slot is still connecting.
		retry, admitted = h.adm.admit(r.Context(), time.Now(), st.cfg.maxSessions)
		if !admitted && retry == 0 {
			return // the page left while held
		}
	}

	conn, err := websocket.Accept(slimWriter{w}, r, acceptOptions)
	if err != nil {
		// Accept has answered the request (400, 426, ...).
		if admitted {
			h.adm.release()
		}
		h.logger.Debug("hostplugin: websocket handshake failed", "remote", r.RemoteAddr, "err", err)
		return
	}
	if !originOK {
		h.logOrigin.Do(func() {
			h.logger.Warn("hostplugin: refused a cross-origin socket (1008); add the origin to allowedOrigins if it is yours",
				"origin", origin, "host", r.Host, "remote", r.RemoteAddr)
		})
		_ = conn.Close(wire.CloseOrigin, "origin not allowed")
		return
	}
	if injected.Mode == fault.Overload {
		refuseOverloaded(conn, injected.After)
		return
	}
	if !admitted {
		h.logOverload.Do(func() {
			h.logger.Warn("hostplugin: refused a socket (1013): over the session cap or the accept rate",
				"sessions", h.Sessions(), "maxSessions", st.cfg.maxSessions, "acceptRate", st.cfg.acceptRate,
				"retryAfter", retry)
		})
		refuseOverloaded(conn, retry)
		return
	}
	s := newSession(h, conn, st.cfg, r.RemoteAddr)
	s.identity = identity
	s.doomed = injected.Mode == fault.StallReady
	if !h.addSession(s) {
		h.adm.release()
		h.turnAway(conn)
		return
	}
	// The session runs on its own goroutine so that this one returns and net/http frees the
	// request, its buffers and this goroutine's stack: an idle session then costs one small
	// goroutine.
	go s.run()
	if h.Ready() {
		s.sendReady()
	}
}

// refuseOverloaded closes a socket with 1013 and retry-after. The same retry-after goes first
// in an error frame: a browser page cannot read close codes through coder/websocket, but it
// reads frames.
func refuseOverloaded(conn *websocket.Conn, wait time.Duration) {
	reason := wire.RetryAfterReason(wait)
	_ = writeFrame(conn, errorFrame(reason))
	_ = conn.Close(wire.CloseOverloaded, reason)
}

// offersSubprotocol reports whether the client listed lifeline.v1 in Sec-WebSocket-Protocol.
func offersSubprotocol(r *http.Request) bool {
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(p) == wire.Subprotocol {
				return true
			}
		}
	}
	return false
}

// slimWriter hands coder/websocket smaller buffers than net/http's 4 KiB reader and writer:
// client frames are a few hundred bytes and larger writes bypass a bufio.Writer anyway, so
// the big buffers would only cost ~7 KiB per idle session.
type slimWriter struct{ http.ResponseWriter }

const (
	slimReaderSize = 512
	slimWriterSize = 512
)

func (w slimWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w slimWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	var src io.Reader = c
	n := brw.Reader.Buffered()
	if n > 0 {
		// Bytes the client sent right behind its handshake.
		b, _ := brw.Reader.Peek(n)
		src = io.MultiReader(bytes.NewReader(bytes.Clone(b)), c)
	}
	br := bufio.NewReaderSize(src, max(slimReaderSize, n))
	if n > 0 {
		// coder/websocket keeps only what the reader has buffered when it takes over, so
		// the early bytes must be in the buffer, not behind it.
		_, _ = br.Peek(n)
	}
	return c, bufio.NewReadWriter(br, bufio.NewWriterSize(c, slimWriterSize)), nil
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
	admitNow  verdict = iota // the page takes a session now
	holdUntil                // the page's slot is near: it waits for it, then arrives
	refuse                   // the page is told to come back later
)

// decision is admission's answer to one arriving page.
type decision struct {
	verdict verdict
	until   time.Time         // holdUntil: the page's slot
	retry   time.Duration     // refuse: the retry-after
	spacing time.Duration     // holdUntil: the least time since the previous admission; 0 = none
	res     *rate.Reservation // holdUntil: the slot's token, given back if the page leaves
}

// admit takes a session slot, or returns how long the page should wait before trying again.
// It returns false without a retry-after when ctx ends while the page is held (the page left).
func (a *admission) admit(ctx context.Context, now time.Time, maxSessions int) (time.Duration, bool) {
	d := a.decide(now, maxSessions)
	switch d.verdict {
	case admitNow:
		return 0, true
	case holdUntil:
		return 0, a.hold(ctx, d)
	default:
		return d.retry, false
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
		return decision{verdict: refuse, retry: max(a.nextSlot(now, 0), capRetryFloor)}
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
		return decision{verdict: refuse, retry: max(a.nextSlot(now, wait), rateRetryFloor)}
	}
	a.count++ // the slot is taken now, so the session cap holds while the page waits
	if wait <= 0 {
		a.last = now
		return decision{verdict: admitNow}
	}
	return decision{verdict: holdUntil, until: now.Add(wait), spacing: spacing, res: r}
}

// hold waits for a held page's slot and admits it there. It returns false when ctx ends first.
func (a *admission) hold(ctx context.Context, d decision) bool {
	t := time.NewTimer(time.Until(d.until))
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
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

// release ends a session.
func (a *admission) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.count--
}
