//go:build !js

package hostplugin

import (
	"bytes"
	"container/heap"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// Access that ends (PROTOCOL.md §13): the application ends every session of an identity
// (EndSessions: a sign-out, a revocation), one identity's subscription to a stream
// (EndSubscription), or a credential ends on its own at the time Options.Access said
// (expiry), unless the page renews it before then. A fleet of Hosts passes the first two on
// through Options.Bus, so one call on any Host ends the identity's pages on every Host.
//
// Nothing of a session reaches its page after its end: the end writes its frames (the calls
// it refuses, the error frame that says why) ahead of anything queued, which is dropped, and
// the session writes nothing more; a frame already being written is the only one that may
// come after, and the page drops it. An ended subscription is cut from its stream's fan-out
// before its denied frame is queued, and a sub for it on that session is denied from then on.

// Access is who a request is, and until when its credential holds: what [Options].Access
// returns.
type Access struct {
	// Identity is what Authorize is given for the session's streams and a call's Identity.
	Identity string
	// Until is when the credential stops holding: the session ends then (the page shows
	// unauthorized) unless the page renews it before, through the same hook. The zero time
	// is no expiry. A time already past refuses the request as unauthenticated.
	Until time.Time

	// ends is the count of ends of identities (hostAccess.count) when the hook was asked: a
	// session whose identity was ended after that is ended too, even if it registers after
	// the end (its Authenticate may have run before the credential was revoked). A count, not
	// a time: two readings of a clock may be equal.
	ends uint64
}

// EndOptions say how [Host.EndSessions] ends an identity's sessions.
type EndOptions struct {
	// Reason is the application's sentence for the user, shown on the page with the state
	// unauthorized: its first line, at most 160 bytes, control characters replaced. It must
	// name no secret. Default "signed out".
	Reason string
	// Reauthenticate asks the pages to connect again at once instead: each new session goes
	// through Authenticate (a role changed, a credential was rotated), and a page whose
	// credential no longer passes shows unauthorized then. Without it a page shows
	// unauthorized at once and tries again at the top of its ladder only, each time through
	// Authenticate.
	Reauthenticate bool
}

// A Bus carries what one Host of a fleet tells every other: the ends of access
// ([Host.EndSessions], [Host.EndSubscription]), so that one call on any Host ends an
// identity's pages on every Host. hostplugin/jetstream has one on core NATS. One Host needs
// none. A message is the Host's own encoding, at most a few hundred bytes.
type Bus interface {
	// Listen calls receive with every message a Host of the fleet publishes (this Host's
	// own included) until stop is called. receive does not block.
	Listen(receive func(msg []byte)) (stop func(), err error)
	// Publish sends msg to every Host of the fleet listening now, and returns once the bus
	// has taken it or ctx ended.
	Publish(ctx context.Context, msg []byte) error
}

// Errors of the access API.
var (
	// ErrAccessHooks is New's answer to options that set both Authenticate and Access.
	ErrAccessHooks = errors.New("hostplugin: Options.Authenticate and Options.Access are both set: set one (Access is Authenticate with an expiry)")
	// ErrBusTooBig is returned for an end whose message is over maxNotice (an identity or a
	// reason far over any application's).
	ErrBusTooBig = errors.New("hostplugin: an end of access is too big to pass on to the fleet")
)

// Bounds of access that ends.
const (
	// defaultEndReason is what a page is shown when EndOptions.Reason is empty.
	defaultEndReason = "signed out"
	// expiredReason is what a page whose credential expired is shown.
	expiredReason = "your sign-in has expired"
	// endMemory is how long an end of an identity's sessions is remembered for sessions that
	// were authenticated before it and register after it (held for their admission slot,
	// at most 2 s, or a fleet's message in flight).
	endMemory = 10 * time.Second
	// maxRevoked bounds the streams one session remembers as ended; past it an ended stream
	// is still cut and denied, but a later sub for it is Authorize's to decide again.
	maxRevoked = 256
	// maxNotice bounds a message on the Bus.
	maxNotice = 16 << 10
	// endWait bounds how long EndSessions waits for the end frames to be written.
	endWait = writeTimeout
)

// hostAccess is a Host's state of access that ends.
type hostAccess struct {
	fn      func(*http.Request) (Access, error) // Options.Access; nil without
	bus     Bus
	stopBus func()
	exp     expiries

	count atomic.Uint64 // ends of identities so far
	mu    sync.Mutex
	ends  map[string]endRecord // identity → its last end, for endMemory
}

// endRecord is one end of an identity's sessions.
type endRecord struct {
	n      uint64    // its number in hostAccess.count
	at     time.Time // when: it is forgotten endMemory later
	reason string
	reauth bool
}

// sessionAccess is a session's state of access that ends: under 100 bytes beside the session.
type sessionAccess struct {
	// until is when the session's credential stops holding, in ns since its Host's
	// expiries.base; 0 for never. Written under expiries.mu; read by the writer.
	until atomic.Int64
	// slot is the session's index in expiries.heap: -1 when not in it, gone once it ended
	// (expiries.mu).
	slot int32
	// secret names a WebSocket session in its renewals (an HTTP session's is its carrier's);
	// set before the ready frame, read-only after.
	secret string
	// revoked are the streams whose access ended on this session: stream → the reason (s.mu).
	revoked map[string]string
	// next and prev link the sessions of the same identity (h.sessions.mu).
	next, prev *session
}

// gone is sessionAccess.slot of a session that ended: it never enters the heap again.
const gone = -2

// EndSessions ends every session of identity: on this Host, and on every Host of the fleet
// through [Options].Bus. Each page is told why (opts.Reason) and shows unauthorized, or with
// opts.Reauthenticate connects again at once through Authenticate. Calls its session had
// received and not started are refused (code access-ended) and never run; nothing else of
// the session reaches the page. Make the credential fail Authenticate first (a sign-out
// deletes the server's session): a page comes back whenever Authenticate lets it.
//
// It returns how many sessions it ended on this Host, once their end frames are written (or
// ctx ended), and the Bus's error. A session of identity authenticated before the call and
// registered after it (held for its admission slot) is ended too.
func (h *Host) EndSessions(ctx context.Context, identity string, opts EndOptions) (int, error) {
	reason := endReason(opts.Reason)
	wait := h.endIdentity(identity, reason, opts.Reauthenticate)
	// The other Hosts are told while this one's ends are written: neither waits for the other.
	err := h.tellFleet(ctx, notice{From: h.id, Identity: identity, Reason: reason, Reauth: opts.Reauthenticate})
	return wait(ctx), err
}

// EndSubscription ends identity's subscription to stream on every page: on this Host, and on
// every Host of the fleet through [Options].Bus. Each page that follows it gets a denied frame
// with reason (the subscription ends there, with the reason) and nothing more of the stream;
// its session and its other streams carry on. A sub for stream on those sessions is denied
// from then on; a new session asks Authorize again, so make Authorize refuse it first.
//
// It returns how many sessions on this Host followed the stream, and the Bus's error.
func (h *Host) EndSubscription(ctx context.Context, identity, stream, reason string) (int, error) {
	if err := checkStreamName(stream); err != nil {
		return 0, err
	}
	reason = endReason(reason)
	n := h.endStream(identity, stream, reason)
	return n, h.tellFleet(ctx, notice{From: h.id, Identity: identity, Stream: stream, Reason: reason})
}

// endReason is what a page is shown: the application's words, as a refusal's are cut.
func endReason(reason string) string {
	if r := reasonText(errors.New(reason)); r != "" {
		return r
	}
	return defaultEndReason
}

// endIdentity ends identity's sessions on this Host and remembers the end for endMemory. The
// ends run on goroutines of their own; wait waits until their frames are written (or ctx ends,
// or endWait passes) and returns how many sessions were ended.
func (h *Host) endIdentity(identity, reason string, reauth bool) (wait func(context.Context) int) {
	now := time.Now()
	h.acc.mu.Lock()
	if h.acc.ends == nil {
		h.acc.ends = map[string]endRecord{}
	}
	for id, e := range h.acc.ends {
		if now.Sub(e.at) > endMemory {
			delete(h.acc.ends, id)
		}
	}
	h.acc.ends[identity] = endRecord{n: h.acc.count.Add(1), at: now, reason: reason, reauth: reauth}
	h.acc.mu.Unlock()

	list := h.sessions.ofIdentity(identity)
	written := make(chan struct{}, len(list))
	for _, s := range list {
		go s.endAccess(reason, reauth, written)
	}
	return func(ctx context.Context) int {
		t := time.NewTimer(endWait)
		defer t.Stop()
		for range list {
			select {
			case <-written:
			case <-ctx.Done():
				return len(list)
			case <-t.C:
				return len(list)
			}
		}
		return len(list)
	}
}

// endedSince reports whether identity's sessions were ended after the count of ends was n (a
// session whose Authenticate was asked then), and how.
func (h *Host) endedSince(identity string, n uint64) (endRecord, bool) {
	h.acc.mu.Lock()
	defer h.acc.mu.Unlock()
	e, ok := h.acc.ends[identity]
	return e, ok && e.n > n && time.Since(e.at) <= endMemory
}

// endStream ends identity's subscription to stream on this Host's sessions.
func (h *Host) endStream(identity, stream, reason string) int {
	n := 0
	for _, s := range h.sessions.ofIdentity(identity) {
		if s.endStream(stream, reason) {
			n++
		}
	}
	return n
}

// endStream ends stream on s: it is remembered as ended (a sub for it is denied), cut from
// the stream's fan-out (nothing more of it is queued on s), then denied, if s followed it.
// It reports whether s followed it.
func (s *session) endStream(stream, reason string) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	if _, ok := s.acc.revoked[stream]; ok || len(s.acc.revoked) < maxRevoked {
		if s.acc.revoked == nil {
			s.acc.revoked = map[string]string{}
		}
		s.acc.revoked[stream] = reason
	}
	s.mu.Unlock()
	if !s.h.cut(stream, s) {
		return false
	}
	s.h.obs.Denied()
	s.send(deniedFrame(stream, reason))
	return true
}

// cut removes s from stream's fan-out and reports whether it followed the stream: once it
// returns, nothing more of the stream is queued on s.
func (h *Host) cut(stream string, s *session) bool {
	h.fanouts.mu.Lock()
	fo := h.fanouts.live[stream]
	h.fanouts.mu.Unlock()
	if fo == nil {
		return false
	}
	fo.mu.Lock()
	_, had := fo.followers[s]
	delete(fo.followers, s)
	empty := len(fo.followers) == 0
	fo.mu.Unlock()
	if empty {
		fo.removeIfEmpty()
	}
	return had
}

// revokedReason is the reason stream's access ended on s, if it did.
func (s *session) revokedReason(stream string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.acc.revoked[stream]
	return r, ok
}

// authorizeSub decides a sub of s for stream: denied if its access ended on s, else as
// Authorize says.
func (h *Host) authorizeSub(s *session, stream string) (reason string, ok bool) {
	if r, revoked := s.revokedReason(stream); revoked {
		return r, false
	}
	return h.authorize(s, stream)
}

// setSub records that s follows stream through fo, or no longer (fo nil). The reader writes
// subs; a renewal reads them (followed), so the writes take s.mu.
func (s *session) setSub(stream string, fo *fanout) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fo == nil {
		delete(s.subs, stream)
		return
	}
	if s.subs == nil {
		s.subs = map[string]*fanout{}
	}
	s.subs[stream] = fo
}

// followed lists the streams s follows.
func (s *session) followed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.subs))
	for stream := range s.subs {
		out = append(out, stream)
	}
	return out
}

// endAccess ends s because its access ended: the calls it received and has not started are
// refused (they never run), then the error frame saying why, ahead of anything queued
// (dropped: nothing of the session may follow its end), then the close. written is told once
// the frames are out.
func (s *session) endAccess(reason string, reauth bool, written chan<- struct{}) {
	msg := wire.AccessEndedReason(reason, reauth)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		if written != nil {
			written <- struct{}{}
		}
		return
	}
	s.doomed = true
	s.closed = true // the writer stops at its next look; nothing more is queued
	s.queue = nil
	s.mu.Unlock()
	if hc, ok := s.c.(*httpCarrier); ok {
		hc.endAccess(msg) // its POSTs are refused from now on, with the same words
	}

	s.calls.mu.Lock()
	pending := s.calls.queue
	s.calls.queue, s.calls.closed = nil, true
	s.calls.mu.Unlock()
	batch := make(net.Buffers, 0, len(pending)+1)
	for _, f := range pending {
		s.h.obs.Call(f.Name, wire.CodeAccessEnded, 0)
		batch = append(batch, replyFrame(wire.Failed(f.ID, wire.CodeAccessEnded,
			"the session's access ended before the call ran: "+reason, 0)).b)
	}
	batch = append(batch, errorFrame(msg).b)
	// After the batch the writer may be writing: the carrier orders the two.
	_ = s.c.write(batch)
	if written != nil {
		written <- struct{}{}
	}
	s.closeWith(wire.CloseAccessEnded, msg)
}

// expire ends s, whose credential expired without a renewal.
func (h *Host) expire(s *session) {
	h.logger.Debug("hostplugin: a session's credential expired; ending it", "session", s.id)
	s.endAccess(expiredReason, false, nil)
}

// prepareAccess takes what Authenticate said of a session about to be registered: its expiry
// and the secret of its renewals, set before any ready frame can be sent (the gate may open
// as soon as the session is registered). A session that is then not registered drops it.
func (h *Host) prepareAccess(s *session, acc Access) {
	if acc.Until.IsZero() {
		return
	}
	if s.c.secret() == "" {
		s.acc.secret = newID(16)
	}
	h.acc.exp.set(s, acc.Until)
}

// startAccess ends at once a session just registered whose identity was ended after its
// Authenticate answered.
func (h *Host) startAccess(s *session, acc Access) {
	if e, ended := h.endedSince(s.identity, acc.ends); ended {
		go s.endAccess(e.reason, e.reauth, nil)
	}
}

// readyAccess puts the session's expiry and renewal secret in its ready frame.
func (s *session) readyAccess(rf *wire.HostFrame) {
	u := s.acc.until.Load()
	if u == 0 {
		return
	}
	left := time.Duration(u - s.h.acc.exp.now())
	rf.ExpiresMs = max(left.Milliseconds(), 1)
	if rf.Secret == "" {
		rf.Secret = s.acc.secret
	}
}

// expired reports whether s's credential has expired: its writer writes nothing from then on,
// whether or not the expiry's end has run yet.
func (s *session) expired() bool {
	u := s.acc.until.Load()
	return u != 0 && s.h.acc.exp.now() >= u
}

// dropAccess forgets s's access state once it ended.
func (s *session) dropAccess() { s.h.acc.exp.drop(s) }

// renewSecret is the secret a renewal of s must carry: its carrier's, or its own.
func (s *session) renewSecret() string {
	if k := s.c.secret(); k != "" {
		return k
	}
	return s.acc.secret
}

// expiries are a Host's sessions that expire, in a heap by expiry under one timer: no
// goroutine and no timer per session.
type expiries struct {
	h    *Host
	base time.Time // the monotonic origin of sessionAccess.until

	mu    sync.Mutex
	heap  []*session
	timer *time.Timer
	due   int64 // when timer fires, as until; 0 when it is not set
}

func (e *expiries) init(h *Host) { e.h, e.base = h, time.Now() }

// now is the time as sessionAccess.until counts it.
func (e *expiries) now() int64 { return int64(time.Since(e.base)) }

// at is t as sessionAccess.until counts it (at least 1: 0 is never).
func (e *expiries) at(t time.Time) int64 { return max(int64(t.Sub(e.base)), 1) }

// set makes s expire at t (the zero time: never). It reports false for a session that has
// ended or expired, whose expiry stays as it was.
func (e *expiries) set(s *session, t time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	if s.acc.slot == gone {
		return false
	}
	if u := s.acc.until.Load(); u != 0 && now >= u {
		return false // expired: a renewal never makes an end later than its expiry
	}
	switch {
	case t.IsZero():
		s.acc.until.Store(0)
		if s.acc.slot >= 0 {
			heap.Remove(e, int(s.acc.slot))
		}
	case s.acc.slot >= 0:
		s.acc.until.Store(e.at(t))
		heap.Fix(e, int(s.acc.slot))
	default:
		s.acc.until.Store(e.at(t))
		heap.Push(e, s)
	}
	e.armLocked(now)
	return true
}

// drop takes s out of the heap for good.
func (e *expiries) drop(s *session) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s.acc.slot >= 0 {
		heap.Remove(e, int(s.acc.slot))
	}
	s.acc.slot = gone
}

// armLocked sets the timer for the earliest expiry. e.mu is held.
func (e *expiries) armLocked(now int64) {
	if len(e.heap) == 0 {
		if e.timer != nil && e.due != 0 {
			e.timer.Stop()
		}
		e.due = 0
		return
	}
	next := e.heap[0].acc.until.Load()
	if next == e.due {
		return
	}
	e.due = next
	d := time.Duration(max(next-now, 0))
	if e.timer == nil {
		e.timer = time.AfterFunc(d, e.fire)
		return
	}
	e.timer.Reset(d)
}

// fire ends the sessions whose expiry has come, each on a goroutine of its own (an end
// writes to the page and waits for its close).
func (e *expiries) fire() {
	e.mu.Lock()
	now := e.now()
	var due []*session
	for len(e.heap) > 0 && e.heap[0].acc.until.Load() <= now {
		s := heap.Pop(e).(*session)
		due = append(due, s)
	}
	e.due = 0
	e.armLocked(now)
	e.mu.Unlock()
	for _, s := range due {
		go e.h.expire(s)
	}
}

// heap.Interface, by until.
func (e *expiries) Len() int { return len(e.heap) }
func (e *expiries) Less(i, j int) bool {
	return e.heap[i].acc.until.Load() < e.heap[j].acc.until.Load()
}
func (e *expiries) Swap(i, j int) {
	e.heap[i], e.heap[j] = e.heap[j], e.heap[i]
	e.heap[i].acc.slot, e.heap[j].acc.slot = int32(i), int32(j)
}
func (e *expiries) Push(x any) {
	s := x.(*session)
	s.acc.slot = int32(len(e.heap))
	e.heap = append(e.heap, s)
}
func (e *expiries) Pop() any {
	n := len(e.heap) - 1
	s := e.heap[n]
	e.heap[n] = nil
	e.heap = e.heap[:n]
	s.acc.slot = -1
	return s
}

// ofIdentity lists the sessions of identity.
func (ss *sessionSet) ofIdentity(identity string) []*session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var out []*session
	for s := ss.byIdentity[identity]; s != nil; s = s.acc.next {
		out = append(out, s)
	}
	return out
}

// link adds s to its identity's list. ss.mu is held.
func (ss *sessionSet) link(s *session) {
	if ss.byIdentity == nil {
		ss.byIdentity = map[string]*session{}
	}
	head := ss.byIdentity[s.identity]
	s.acc.next, s.acc.prev = head, nil
	if head != nil {
		head.acc.prev = s
	}
	ss.byIdentity[s.identity] = s
}

// unlink removes s from its identity's list. ss.mu is held.
func (ss *sessionSet) unlink(s *session) {
	if s.acc.prev != nil {
		s.acc.prev.acc.next = s.acc.next
	} else if ss.byIdentity[s.identity] == s {
		if s.acc.next != nil {
			ss.byIdentity[s.identity] = s.acc.next
		} else {
			delete(ss.byIdentity, s.identity)
		}
	}
	if s.acc.next != nil {
		s.acc.next.acc.prev = s.acc.prev
	}
	s.acc.next, s.acc.prev = nil, nil
}

// callAccess runs whichever hook the application set, Access or Authenticate.
func (h *Host) callAccess(r *http.Request) (Access, error) {
	if h.acc.fn != nil {
		return h.acc.fn(r)
	}
	id, err := h.authn(r)
	return Access{Identity: id}, err
}

// errExpired refuses a request whose credential the application says is already past.
var errExpired = fmt.Errorf("%w: the credential has expired", ErrUnauthenticated)

// serveRenewal answers a renewal (PROTOCOL.md §13.3): a POST naming a session of this Host
// (or, with a Relay, of another Host of the fleet) and its secret, which Authenticate answers
// as it answers an upgrade, with the request's cookies and the page's token. A renewal that
// fails leaves the session's expiry as it was: the session ends then, never later.
func (h *Host) serveRenewal(w http.ResponseWriter, r *http.Request, cfg Config, originOK bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeJSON(w, http.StatusMethodNotAllowed, wire.Refusal{Error: wire.RefusalMethod})
		return
	}
	if !h.withinAddressRate(w, r, cfg) {
		return
	}
	if !originOK {
		// Authenticate is never asked for a foreign origin: its answer would tell that
		// origin whether its visitor is signed in.
		writeJSON(w, http.StatusForbidden, wire.Refusal{Error: wire.RefusalOrigin})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, wire.MaxRenewal))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			writeJSON(w, http.StatusRequestEntityTooLarge, wire.Refusal{Error: wire.RefusalTooBig,
				Reason: "a renewal is at most " + strconv.Itoa(wire.MaxRenewal) + " bytes"})
		}
		return
	}
	rn, err := wire.DecodeRenewal(body)
	if err != nil {
		h.obs.BadFrame()
		writeJSON(w, http.StatusBadRequest, wire.Refusal{Error: wire.RefusalRenewal, Reason: err.Error()})
		return
	}
	s := h.sessions.byID(rn.Session)
	if s == nil {
		if owner := ownerOf(rn.Session); h.relay != nil && owner != "" && owner != h.id {
			h.relayRenewal(w, r, owner, rn)
			return
		}
		writeNoSession(w, rn.Session)
		return
	}
	if subtle.ConstantTimeCompare([]byte(s.renewSecret()), []byte(rn.Secret)) != 1 {
		writeNoSession(w, rn.Session)
		return
	}
	acc, ref := h.authenticate(withToken(r, rn.Token))
	if ref != nil {
		h.refuse(w, r, ref, true)
		return
	}
	status, ans := h.renew(s, acc)
	writeAnswer(w, status, ans)
}

// withToken is r as Authenticate is to see a renewal: with the page's token, if it handed one
// over, as "Authorization: Bearer <token>".
func withToken(r *http.Request, token string) *http.Request {
	if token == "" {
		return r
	}
	r2 := r.Clone(r.Context())
	r2.Header.Set("Authorization", "Bearer "+token)
	return r2
}

// writeNoSession is the one answer for a session that is not this Host's, has ended, or was
// named with another secret: it tells nothing of other sessions.
func writeNoSession(w http.ResponseWriter, id string) {
	writeJSON(w, http.StatusNotFound, wire.Refusal{Error: wire.RefusalSession,
		Reason: "no session " + wire.Truncate(id) + " with that secret on this Host: it ended, or it never was"})
}

// writeAnswer writes a renewal's answer: 200 with a wire.Renewed, or a refusal.
func writeAnswer(w http.ResponseWriter, status int, body []byte) {
	hd := w.Header()
	hd.Set("Content-Type", "application/json; charset=utf-8")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// renew applies what Authenticate said of a renewal of s: the same identity moves its expiry
// (and every stream it follows is authorized again); another identity is refused, and the
// session ends at its expiry. It returns the answer's status and body.
func (h *Host) renew(s *session, acc Access) (int, []byte) {
	if acc.Identity != s.identity {
		h.logger.Info("hostplugin: a renewal named another identity; the session ends at its expiry", "session", s.id)
		return http.StatusConflict, wire.Refusal{Error: wire.RefusalIdentity,
			Reason: "the credential is another identity's; this session ends at its expiry"}.Encode()
	}
	s.mu.Lock()
	ended := s.closed
	s.mu.Unlock()
	if ended || !h.acc.exp.set(s, acc.Until) {
		return http.StatusNotFound, wire.Refusal{Error: wire.RefusalSession, Reason: "the session ended, or its credential expired"}.Encode()
	}
	// What the session reads may have changed with the credential: every stream it follows
	// is authorized again, and one now refused ends as EndSubscription ends it.
	for _, stream := range s.followed() {
		if reason, ok := h.authorize(s, stream); !ok {
			s.endStream(stream, reason)
		}
	}
	ms := int64(0)
	if u := s.acc.until.Load(); u != 0 {
		ms = max(time.Duration(u-h.acc.exp.now()).Milliseconds(), 1)
	}
	return http.StatusOK, wire.Renewed{ExpiresMs: ms}.Encode()
}

// relayedRenewal is a renewal another Host of the fleet took and authenticated for a session of
// this Host: the page's cookies went to that Host, so Authenticate ran there, and its answer
// comes here with the session's name and secret, which only this Host can check.
type relayedRenewal struct {
	Session  string `json:"session"`
	Secret   string `json:"secret"`
	Identity string `json:"identity"`
	// UntilMs is the expiry Authenticate gave, from when it answered; 0 for none.
	UntilMs int64 `json:"untilMs,omitempty"`
}

// renewalMark opens a relayed renewal, which no relayed POST (its first line an envelope,
// a JSON object) can begin with.
var renewalMark = []byte("\x00renew\n")

// relayRenewal authenticates a renewal of another Host's session here and relays the outcome
// to that Host, whose answer is the page's.
func (h *Host) relayRenewal(w http.ResponseWriter, r *http.Request, owner string, rn wire.Renewal) {
	acc, ref := h.authenticate(withToken(r, rn.Token))
	if ref != nil {
		h.refuse(w, r, ref, true)
		return
	}
	rr := relayedRenewal{Session: rn.Session, Secret: rn.Secret, Identity: acc.Identity}
	if !acc.Until.IsZero() {
		rr.UntilMs = max(time.Until(acc.Until).Milliseconds(), 1)
	}
	b, _ := json.Marshal(rr)
	ctx, cancel := context.WithTimeout(r.Context(), relayWait)
	defer cancel()
	ans, err := h.relay.Forward(ctx, owner, append(bytes.Clone(renewalMark), b...))
	if err != nil {
		h.thin.relay.Do(func() {
			h.logger.Warn("hostplugin: could not relay a renewal to the Host of its session", "host", owner, "err", err)
		})
		writeNoSession(w, rn.Session)
		return
	}
	writeRelayed(w, ans)
}

// serveRelayedRenewal answers a renewal another Host relayed here, as serveRelayed answers a
// POST: its status, its content type and its body, a line each but the body.
func (h *Host) serveRelayedRenewal(req []byte) []byte {
	var rr relayedRenewal
	status, body := http.StatusNotFound, wire.Refusal{Error: wire.RefusalSession, Reason: "no such session on this Host"}.Encode()
	if err := json.Unmarshal(req, &rr); err == nil {
		if s := h.sessions.byID(rr.Session); s != nil && subtle.ConstantTimeCompare([]byte(s.renewSecret()), []byte(rr.Secret)) == 1 {
			acc := Access{Identity: rr.Identity}
			if rr.UntilMs > 0 {
				acc.Until = time.Now().Add(time.Duration(rr.UntilMs) * time.Millisecond)
			}
			status, body = h.renew(s, acc)
		}
	}
	out := append(strconv.AppendInt(nil, int64(status), 10), '\n')
	out = append(out, "application/json; charset=utf-8\n"...)
	return append(out, body...)
}

// notice is one end of access on the Bus.
type notice struct {
	From     string `json:"from"` // the Host that ended it, which has applied it already
	Identity string `json:"identity"`
	Stream   string `json:"stream,omitempty"` // an EndSubscription's; "" for EndSessions
	Reason   string `json:"reason"`
	Reauth   bool   `json:"reauth,omitempty"`
}

// tellFleet passes an end on to the other Hosts of the fleet, if there is a Bus.
func (h *Host) tellFleet(ctx context.Context, n notice) error {
	if h.acc.bus == nil {
		return nil
	}
	b, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("hostplugin: encoding an end of access: %w", err)
	}
	if len(b) > maxNotice {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrBusTooBig, len(b), maxNotice)
	}
	if err := h.acc.bus.Publish(ctx, b); err != nil {
		return fmt.Errorf("hostplugin: passing an end of access on to the fleet: %w", err)
	}
	return nil
}

// serveBus makes h apply what other Hosts of the fleet end. Closing h stops it.
func (h *Host) serveBus() error {
	if h.acc.bus == nil {
		return nil
	}
	stop, err := h.acc.bus.Listen(h.heard)
	if err != nil {
		return fmt.Errorf("hostplugin: listening to the fleet's bus: %w", err)
	}
	h.acc.stopBus = stop
	return nil
}

// heard applies an end another Host of the fleet passed on: the fleet is trusted (as its
// relay is), but what it carries is checked as any input.
func (h *Host) heard(msg []byte) {
	var n notice
	if len(msg) > maxNotice || json.Unmarshal(msg, &n) != nil || n.Reason == "" ||
		(n.Stream != "" && wire.CheckStream(n.Stream) != nil) {
		h.thin.relay.Do(func() {
			h.logger.Warn("hostplugin: a message on the fleet's bus is no end of access; dropped", "bytes", len(msg))
		})
		return
	}
	if n.From == h.id {
		return // applied when it was made
	}
	go func() {
		if n.Stream != "" {
			h.endStream(n.Identity, n.Stream, n.Reason)
			return
		}
		h.endIdentity(n.Identity, n.Reason, n.Reauth)(context.Background())
	}()
}
