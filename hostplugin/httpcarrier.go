//go:build !js

package hostplugin

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// The HTTP carrier (PROTOCOL.md §11), for pages whose network will not carry a WebSocket. A
// session is opened by a GET of the events endpoint with wire.CarrierParam: "stream" answers it
// as one long text/event-stream that carries every Host → page frame as it is written, "poll"
// answers it with the frames queued so far (the ready frame), after which the page fetches the
// rest with long polls. The page's own frames come in POSTs, each headed by a wire.Envelope
// that names the session and carries its secret (the ready frame's): a POST is taken only with
// the session's secret, never on a cookie alone.
//
// Everything else is the WebSocket's: the same origin check, Authenticate, the per-address
// rate, admission, the readiness gate, heartbeats, Drain and Stop, the same frames, and a
// close frame (wire.TypeClose) for what a WebSocket's close says.

// Bounds of the HTTP carrier on the Host.
const (
	// maxPollHold is the longest a poll is held for frames. A session that is idle for a
	// heartbeat is sent one, which answers the poll sooner; this only bounds a poll against
	// proxies that end quiet requests.
	maxPollHold = 30 * time.Second
	// envelopeLimit bounds a POST's first line.
	envelopeLimit = 512
)

// Errors of the HTTP carrier's writes.
var (
	errCarrierGone = errors.New("hostplugin: the page's HTTP carrier is gone")
	errPollBehind  = errors.New("hostplugin: the page polls too slowly")
)

// httpCarrier carries one session over HTTP.
type httpCarrier struct {
	s    *session
	poll bool   // long polls (else one stream)
	key  string // the session's secret, in its ready frame; every POST must carry it

	// reader serialises what the page sends: one POST's frames are applied at a time, in
	// their seq order; the session's end takes it too (the reader owns the session's subs).
	reader sync.Mutex
	seq    uint64 // the last send applied (reader)
	ended  bool   // the session has ended (reader)

	endOnce sync.Once

	mu      sync.Mutex
	closing bool          // the close frame is out (stream) or queued (poll)
	revoked string        // the AccessEndedReason of a session whose access ended: sends are refused
	dropped bool          // drop ran: nothing more is written
	done    chan struct{} // closed by drop
	quiet   *time.Timer   // ends a session whose page stopped polling or sending
	gone    bool          // the page was sent a goaway (leaving)

	// stream
	w     io.Writer
	rc    *http.ResponseController
	renew time.Time // when the write deadline must be moved on
	buf   []byte

	// poll
	frames [][]byte      // frames not yet acknowledged, JSON text (shared messages' payloads)
	base   uint64        // frames acknowledged before frames[0]
	wake   chan struct{} // the held poll's: closed when frames came, or another poll took over
	last   bool          // the close frame is among frames
}

func newHTTPCarrier(poll bool) *httpCarrier {
	return &httpCarrier{poll: poll, key: newID(16), done: make(chan struct{})}
}

func (c *httpCarrier) secret() string { return c.key }

func (c *httpCarrier) kind() string {
	if c.poll {
		return wire.CarrierPoll
	}
	return wire.CarrierStream
}

// write sends batch down the stream, or keeps it for the next poll.
func (c *httpCarrier) write(batch net.Buffers) error {
	defer clear(batch)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.dropped:
		return errCarrierGone
	case c.closing:
		return errCloseSent
	case c.poll:
		if len(c.frames)+len(batch) > c.s.h.maxQueue {
			return errPollBehind
		}
		for _, m := range batch {
			c.frames = append(c.frames, message{m}.payload())
		}
		c.wakeLocked()
		return nil
	}
	c.buf = c.buf[:0]
	for _, m := range batch {
		c.buf = wire.AppendEvent(c.buf, message{m}.payload())
	}
	err := c.streamLocked(c.buf)
	if cap(c.buf) > 16<<10 {
		c.buf = nil // an idle session keeps no burst's buffer
	}
	return err
}

// streamLocked writes b down the stream and flushes it, under the write deadline. c.mu is held.
func (c *httpCarrier) streamLocked(b []byte) error {
	if now := time.Now(); !now.Before(c.renew) {
		_ = c.rc.SetWriteDeadline(now.Add(writeTimeout))
		c.renew = now.Add(writeTimeout / 2)
	}
	if _, err := c.w.Write(b); err != nil {
		return err
	}
	return c.rc.Flush()
}

// writeClose sends the close frame: the last of the stream, which then ends, or of the polls.
func (c *httpCarrier) writeClose(code int, reason string) error {
	f := mustEncode(wire.HostFrame{T: wire.TypeClose, Status: code, Reason: reason})
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.dropped:
		return errCarrierGone
	case c.closing:
		return errCloseSent
	}
	c.closing = true
	if c.poll {
		c.frames = append(c.frames, f.payload())
		c.last = true
		c.wakeLocked()
		return nil
	}
	err := c.streamLocked(wire.AppendEvent(nil, f.payload()))
	c.dropLocked()
	return err
}

// drop ends the carrier: the stream's answer ends, a held poll is answered, and the session
// ends.
func (c *httpCarrier) drop() {
	c.mu.Lock()
	first := !c.dropped
	c.dropLocked()
	c.mu.Unlock()
	if first && c.poll {
		// A stream's session is ended by the GET that carries it, once it sees done; polls
		// have no request that lasts.
		go c.end()
	}
}

func (c *httpCarrier) dropLocked() {
	if c.dropped {
		return
	}
	c.dropped = true
	close(c.done)
	if c.quiet != nil {
		c.quiet.Stop()
	}
	c.wakeLocked()
}

func (c *httpCarrier) idle() {
	if c.poll {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dropped {
		_ = c.rc.SetWriteDeadline(time.Time{})
		c.renew = time.Time{}
	}
}

func (c *httpCarrier) wakeLocked() {
	if c.wake != nil {
		close(c.wake)
		c.wake = nil
	}
}

// end ends the session once, as the reader: its subs are the reader's.
func (c *httpCarrier) end() {
	c.endOnce.Do(func() {
		c.reader.Lock()
		defer c.reader.Unlock()
		c.ended = true
		c.s.end()
	})
}

// endAccess notes that the session's access ended with msg (an AccessEndedReason): from now
// on its sends are refused with it.
func (c *httpCarrier) endAccess(msg string) {
	c.mu.Lock()
	c.revoked = msg
	c.mu.Unlock()
}

// accessEnded is the AccessEndedReason of a session whose access ended, else "".
func (c *httpCarrier) accessEnded() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.revoked
}

// heard notes that the page was heard from (a send, or a poll's end): a session whose page
// goes quiet for longer than quietFor is over (a page behind a proxy that holds its stream,
// a page that left without a bye).
func (c *httpCarrier) heard() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped {
		return
	}
	d := c.quietFor()
	if c.quiet == nil {
		c.quiet = time.AfterFunc(d, func() {
			c.s.h.logger.Debug("hostplugin: an HTTP session's page went quiet; ending it", "session", c.s.id, "after", d)
			c.drop()
		})
		return
	}
	c.quiet.Reset(d)
}

// quietFor is how long a page may send nothing: it sends at least a ping every heartbeat on a
// stream, and polls without pause. c.mu is held.
//
// Once the page was sent a goaway, its polls end the moment it has moved: its bye may reach
// another Host (or a restarted Host's successor, which took this listening socket over), and
// this Host would otherwise hold its drain for a page that left.
func (c *httpCarrier) quietFor() time.Duration {
	if c.gone && c.poll {
		return leftQuiet
	}
	return 3 * c.s.heartbeat
}

// leftQuiet is how long a poll session sent a goaway may go without a poll: a page that polls
// without pause is back within a round trip.
const leftQuiet = 2 * time.Second

// leaving notes that the page was sent a goaway (quietFor).
func (c *httpCarrier) leaving() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gone = true
	if c.quiet != nil && c.wake == nil && !c.dropped {
		c.quiet.Reset(c.quietFor()) // no poll held: the page may be gone already
	}
}

// serveHTTPCarrier answers the requests of the HTTP carrier: a GET that opens a session
// (wire.CarrierParam), or a POST for one. The CORS and no-store headers are set already.
func (h *Host) serveHTTPCarrier(w http.ResponseWriter, r *http.Request, cfg Config, origin string, originOK bool) {
	if r.Method == http.MethodPost {
		h.servePost(w, r, cfg, false)
		return
	}
	var poll bool
	switch kind := r.URL.Query().Get(wire.CarrierParam); kind {
	case wire.CarrierStream:
	case wire.CarrierPoll:
		poll = true
	default:
		writeJSON(w, http.StatusBadRequest, wire.Refusal{Error: wire.RefusalCarrier, Reason: "unknown carrier " + wire.Truncate(kind)})
		h.obs.Upgrade(UpgradeBadRequest)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET, POST")
		writeJSON(w, http.StatusMethodNotAllowed, wire.Refusal{Error: wire.RefusalMethod})
		return
	}
	if !h.withinAddressRate(w, r, cfg) {
		h.obs.Upgrade(UpgradeAddressRate)
		return
	}
	h.accepted.Add(1)
	h.inflight.Add(1)
	defer h.inflight.Add(-1)
	fault, ok := h.faults.atUpgrade(w, r, h.done)
	if !ok {
		h.obs.Upgrade(UpgradeInjected)
		return
	}
	acc, ok := h.authenticateUpgrade(w, r, originOK)
	if !ok {
		return
	}
	e, ok := h.admitUpgrade(r.Context(), cfg, originOK, fault)
	if !ok {
		h.obs.Upgrade(UpgradeLeft)
		if h.closed.Load() {
			writeJSON(w, http.StatusServiceUnavailable, wire.Refusal{Error: wire.RefusalClosed})
		}
		return
	}
	// From here on the answer is a stream of frames, as a WebSocket would carry them after
	// its upgrade: a refusal says why in frames, then closes.
	hd := w.Header()
	hd.Set("Content-Type", wire.EventStreamType)
	hd.Set("Cache-Control", "no-store, no-transform")
	hd.Set("X-Accel-Buffering", "no") // nginx: pass each frame on as it comes
	c := newHTTPCarrier(poll)
	c.w, c.rc = w, http.NewResponseController(w)
	switch {
	case !originOK:
		h.obs.Upgrade(UpgradeOrigin)
		h.thin.origin.Do(func() {
			h.logger.Warn("hostplugin: refused a cross-origin HTTP session (1008); add the origin to allowedOrigins if it is yours",
				"origin", origin, "host", r.Host, "remote", r.RemoteAddr)
		})
		answerFrames(w, errorFrame(originRefusal(origin)), closeFrame(wire.CloseOrigin, "origin not allowed"))
		return
	case !e.admitted:
		h.refuseEntryHTTP(w, cfg, e)
		return
	}
	s := newSession(h, c, cfg, r.RemoteAddr)
	c.s = s
	s.identity = acc.Identity
	s.doomed = fault.stallReady
	s.watch.mode, s.watch.opened, s.watch.reports = pageMode(r.URL.Query().Get(wire.ModeParam)), time.Now(), cfg.reports
	h.prepareAccess(s, acc)
	if !h.sessions.add(s) {
		s.dropAccess()
		h.adm.release()
		h.obs.Upgrade(UpgradeDraining)
		answerFrames(w, h.turnAwayFrames()...)
		return
	}
	h.obs.Upgrade(UpgradeAdmitted)
	h.obs.SessionOpened(s.watch.mode)
	h.obs.SessionCarrier(c.kind(), true)
	c.heard()
	if poll {
		h.startAccess(s, acc)
		if h.Ready() {
			s.sendReady()
		}
		// The first answer is the ready frame (a closed gate holds it, as a socket opens
		// without one): the page cannot poll before it has the session's secret.
		c.answerPoll(w, r, 0, false)
		return
	}
	w.WriteHeader(http.StatusOK)
	c.mu.Lock()
	_ = c.rc.SetWriteDeadline(time.Time{}) // a server's WriteTimeout is not for a stream
	_ = c.rc.Flush()
	c.mu.Unlock()
	h.startAccess(s, acc) // once the answer's head is out: an end may write to it at once
	if h.Ready() {
		s.sendReady()
	}
	select {
	case <-c.done:
	case <-r.Context().Done():
	}
	c.end()
}

// refuseEntryHTTP answers a session admission refused as a WebSocket's 1013 says it: the
// retry-after in an error frame, then the close.
func (h *Host) refuseEntryHTTP(w http.ResponseWriter, cfg Config, e entry) {
	h.observeRefusedEntry(cfg, e)
	reason := wire.RetryAfterReason(e.retry)
	answerFrames(w, errorFrame(reason), closeFrame(wire.CloseOverloaded, reason))
}

// turnAwayFrames are what a page arriving after Drain or Stop is told before its close:
// Drain's goaway, or Stop's restart message.
func (h *Host) turnAwayFrames() []message {
	h.sessions.mu.Lock()
	stopping, reason, uri := h.sessions.stopping, h.sessions.restart, h.sessions.drainURI
	h.sessions.mu.Unlock()
	if stopping {
		return []message{errorFrame(reason), closeFrame(wire.CloseServiceRestart, reason)}
	}
	h.obs.GoAway(1)
	return []message{goAwayFrame(uri), closeFrame(wire.CloseDrained, "drained")}
}

func closeFrame(code int, reason string) message {
	return mustEncode(wire.HostFrame{T: wire.TypeClose, Status: code, Reason: reason})
}

// answerFrames answers with frames, as a text/event-stream, and ends the answer.
func answerFrames(w http.ResponseWriter, frames ...message) {
	var b []byte
	for _, m := range frames {
		b = wire.AppendEvent(b, m.payload())
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// answerPoll answers a poll: the frames after ack, at once if there are some, else when the
// first comes, the page leaves, another poll of the page's takes over, or maxPollHold passes
// (then 204). A session's first poll (the GET that opened it) waits for its ready frame however
// long: the page cannot poll again without the secret the ready frame carries.
func (c *httpCarrier) answerPoll(w http.ResponseWriter, r *http.Request, ack uint64, checkAck bool) {
	c.mu.Lock()
	if checkAck {
		if have := c.base + uint64(len(c.frames)); ack < c.base || ack > have {
			c.mu.Unlock()
			writeJSON(w, http.StatusConflict, wire.Refusal{Error: wire.RefusalSequence,
				Reason: "poll ack " + itoa(ack) + " is outside the frames sent, " + itoa(c.base) + ".." + itoa(have)})
			return
		}
		n := ack - c.base
		clear(c.frames[:n])
		c.frames = c.frames[n:]
		c.base = ack
	}
	c.wakeLocked() // an older poll of the page's is answered now: this one takes over
	if c.quiet != nil {
		c.quiet.Stop() // a page whose poll is held is not quiet
	}
	if len(c.frames) == 0 && !c.dropped {
		var timeout <-chan time.Time
		if checkAck {
			t := time.NewTimer(maxPollHold)
			defer t.Stop()
			timeout = t.C
		}
		wake := make(chan struct{})
		c.wake = wake
		c.mu.Unlock()
		select {
		case <-wake:
		case <-r.Context().Done():
		case <-timeout:
		}
		c.mu.Lock()
		if c.wake == wake {
			c.wake = nil
		}
	}
	frames := append([][]byte(nil), c.frames...)
	last := c.last
	c.mu.Unlock()
	c.heard()
	if r.Context().Err() != nil {
		return
	}
	if len(frames) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var b []byte
	for _, f := range frames {
		b = wire.AppendEvent(b, f)
	}
	w.Header().Set("Content-Type", wire.EventStreamType)
	w.Header().Set("Cache-Control", "no-store, no-transform")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
	if last {
		c.drop() // the page has its close frame
	}
}

// servePost answers a POST of the HTTP carrier: its envelope names the session, which must be
// this Host's and carry its secret.
// A POST that another Host relayed here (relayed) is never relayed again.
func (h *Host) servePost(w http.ResponseWriter, r *http.Request, cfg Config, relayed bool) {
	limit := int64(cfg.maxFrameBytes) + envelopeLimit
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			writeJSON(w, http.StatusRequestEntityTooLarge, wire.Refusal{Error: wire.RefusalTooBig,
				Reason: "a POST carries at most maxFrameBytes (" + itoa(uint64(cfg.maxFrameBytes)) + ") of frames"})
			return
		}
		return // the page left
	}
	line, rest, _ := bytes.Cut(body, []byte{'\n'})
	env, err := wire.DecodeEnvelope(line)
	if err != nil {
		h.obs.BadFrame()
		writeJSON(w, http.StatusBadRequest, wire.Refusal{Error: wire.RefusalEnvelope, Reason: err.Error()})
		return
	}
	c := h.httpSession(env)
	if c == nil && !relayed && h.relayPost(w, r, env, body) {
		return
	}
	if c == nil {
		writeJSON(w, http.StatusNotFound, wire.Refusal{Error: wire.RefusalSession,
			Reason: "no session " + wire.Truncate(env.Session) + " with that secret on this Host: it ended, or it never was"})
		return
	}
	switch env.T {
	case wire.EnvelopeBye:
		c.s.watch.closing(int(websocket.StatusNormalClosure))
		c.drop()
		w.WriteHeader(http.StatusNoContent)
	case wire.EnvelopePoll:
		if !c.poll {
			writeJSON(w, http.StatusConflict, wire.Refusal{Error: wire.RefusalCarrier, Reason: "this session streams its frames: it takes no polls"})
			return
		}
		c.answerPoll(w, r, env.Ack, true)
	case wire.EnvelopeSend:
		c.send(w, env.Seq, rest)
	}
}

// send applies the frames of a POST, once and in seq order.
func (c *httpCarrier) send(w http.ResponseWriter, seq uint64, frames []byte) {
	c.reader.Lock()
	defer c.reader.Unlock()
	msg := c.accessEnded()
	switch {
	case msg != "":
		// Nothing of it is applied: its calls are not run, its subs join nothing. Its
		// polls are still answered, so that the page reads the end's frames.
		writeJSON(w, http.StatusUnauthorized, wire.Refusal{Error: wire.RefusalAccessEnded, Reason: msg})
		return
	case c.ended:
		writeJSON(w, http.StatusNotFound, wire.Refusal{Error: wire.RefusalSession, Reason: "the session ended"})
		return
	case seq <= c.seq:
		w.WriteHeader(http.StatusNoContent) // applied already: its answer was lost
		return
	case seq != c.seq+1:
		writeJSON(w, http.StatusConflict, wire.Refusal{Error: wire.RefusalSequence,
			Reason: "send " + itoa(seq) + " after " + itoa(c.seq) + ": a send was lost"})
		return
	}
	c.seq = seq
	c.heard()
	n := 0
	for len(frames) > 0 {
		var f []byte
		f, frames, _ = bytes.Cut(frames, []byte{'\n'})
		if len(bytes.TrimSpace(f)) == 0 {
			continue
		}
		if n++; n > wire.MaxBatchFrames {
			c.s.badFrame("a send carries at most "+itoa(wire.MaxBatchFrames)+" frames", wire.PageFrame{})
			break
		}
		if !c.s.handle(websocket.MessageText, f) {
			break
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// httpSession returns the HTTP carrier of the session env names, if it is this Host's and env
// carries its secret.
func (h *Host) httpSession(env wire.Envelope) *httpCarrier {
	s := h.sessions.byID(env.Session)
	if s == nil {
		return nil
	}
	c, ok := s.c.(*httpCarrier)
	if !ok || subtle.ConstantTimeCompare([]byte(c.key), []byte(env.Secret)) != 1 {
		return nil
	}
	return c
}

func itoa(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}
