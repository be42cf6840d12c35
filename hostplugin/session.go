//go:build !js

package hostplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/serial"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// Per-session limits.
const (
	// writeTimeout: a page that takes longer than this to accept a write is gone (socket.go:
	// a session's writes get between half of it and all of it).
	writeTimeout = 10 * time.Second
	// maxQueue: frames waiting for a slow page. Past it the page is shed and comes back
	// with its cursor, which costs the Host less than buffering without bound.
	maxQueue = 1024
	// maxSubs bounds the streams one session may follow.
	maxSubs = 64
	// maxBadFrames: past this many malformed frames the peer is not a working page.
	maxBadFrames = 16
	// closeHandshake bounds the wait for a page's answer to the Host's close frame, as
	// coder/websocket's Close does.
	closeHandshake = 5 * time.Second
)

// hbFrame is the heartbeat, shared by every session.
var hbFrame = mustEncode(wire.HostFrame{T: wire.TypeHeartbeat})

func goAwayFrame(uri string) message {
	return mustEncode(wire.HostFrame{T: wire.TypeGoAway, URI: uri})
}

func errorFrame(msg string) message {
	return mustEncode(wire.HostFrame{T: wire.TypeError, Message: msg})
}

// writeFrame writes one frame through coder/websocket, for sockets that never became
// sessions (a session writes through its socket).
func writeFrame(conn *websocket.Conn, m message) error {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	return conn.Write(ctx, websocket.MessageText, m.payload())
}

// carrier is what carries a session's frames to its page: a WebSocket (wsCarrier, socket.go)
// or the HTTP carrier (httpCarrier, httpcarrier.go). The session queues messages, and its
// writer hands them to write in batches.
type carrier interface {
	// write writes batch, whole messages, in order, and clears its elements (the messages
	// are shared). Once the close is out it writes nothing and returns errCloseSent.
	write(batch net.Buffers) error
	// writeClose sends the close with code and reason, unless one went out (errCloseSent).
	writeClose(code int, reason string) error
	// drop tears the carrier down at once, with no close: the page sees the connection end.
	drop()
	// idle says that nothing more is written for a while.
	idle()
	// leaving says the page was sent a goaway: it has somewhere else to be.
	leaving()
	// kind is the carrier's name, as wire names them (wire.CarrierWebSocket, …).
	kind() string
	// secret is what the page's POSTs must carry, for the ready frame; "" for a WebSocket.
	secret() string
}

// session is one page's connection. Its reader (the WebSocket's run goroutine, one at a time:
// see run; on the HTTP carrier, the POST being applied) is the only user of subs and bad.
// Writes go through queue, drained by a writer goroutine that exists only while there is
// something to write, so an idle session holds one goroutine (with the smallest stack) and one
// timer.
type session struct {
	h         *Host
	c         carrier
	conn      *websocket.Conn // a WebSocket's, which run reads; nil on the HTTP carrier
	sock      *socket         // the connection under conn; nil on the HTTP carrier
	id        string
	heartbeat time.Duration
	readLimit int64
	remote    string
	identity  string // as Options.Authenticate returned it

	// flushFn and runFn are s.writing.Run and s.run, bound once: a go statement of a method
	// value allocates each time.
	flushFn, runFn func()

	mu      sync.Mutex  // guards the fields below
	ready   bool        // the ready frame is queued; frames flow
	dedup   string      // the dedup epoch the ready frame announced
	doomed  bool        // never becomes ready: drained before it, or opened under fault stall-ready
	closed  bool        // no frame is written any more: ended, shed, finished or its socket failed
	writing serial.Loop // writes queue (flushRound), on a goroutine only while there is any
	// queue holds the messages to write (net.Buffers: the writer hands it to writev as it
	// is); spare is the array of the writer's last batch, for the next queue.
	queue, spare net.Buffers
	wrote        time.Time     // when the writer last finished a batch
	over         bool          // end has run
	ended        chan struct{} // closed by end, if a closeWith waits for it
	hbTimer      *time.Timer
	fault        sessionFault // fault injection's timers: empty unless built with -tags lifeline_faults

	subs  map[string]*fanout // run only
	bad   int                // run only
	calls sessionCalls
	pres  sessionPresence // run only (presence.go)
	watch watch           // what the Observer is told of it (observer.go)
	acc   sessionAccess   // its expiry, ended streams, its identity's list (access.go)
}

// maxSpare is the largest batch array a writer keeps for the next queue: an idle session
// should not hold on to the array of the burst it once had.
const maxSpare = 16

// newSession returns a session carried by c. A WebSocket session also needs its conn and sock
// (newSocketSession).
func newSession(h *Host, c carrier, cfg Config, remote string) *session {
	s := &session{
		h:         h,
		c:         c,
		id:        h.sessionID(),
		heartbeat: cfg.heartbeat,
		readLimit: int64(cfg.maxFrameBytes),
		remote:    remote,
	}
	s.acc.slot = -1
	s.writing.Init(&s.mu, s.flushRound)
	s.flushFn, s.runFn = s.writing.Run, s.run
	return s
}

// newSocketSession returns the session of a WebSocket.
func newSocketSession(h *Host, conn *websocket.Conn, sock *socket, cfg Config, remote string) *session {
	s := newSession(h, wsCarrier{conn: conn, sock: sock}, cfg, remote)
	s.conn, s.sock = conn, sock
	conn.SetReadLimit(s.readLimit)
	return s
}

// run reads the page's frames until the socket ends, then releases everything.
//
// Each burst of frames is read by a goroutine of its own: run waits for the page's next bytes
// in a shallow call (a Peek of the connection's reader), reads and handles what came, and
// once the reader holds no more bytes it starts the next run and returns. coder/websocket's
// read path takes a goroutine's stack past the smallest (2 KiB), and a stack blocked that
// deep would keep 4 KiB for the life of the session (the runtime shrinks a stack only to
// four times what it uses while blocked); waiting on a goroutine that never ran it keeps an
// idle session at 2 KiB. Frames from a page are rare (subscriptions, pings, calls): the
// goroutine a burst costs is cheap beside that.
func (s *session) run() {
	handedOn := false
	defer func() {
		if !handedOn {
			s.end()
		}
	}()
	defer func() {
		// A bug reached by one page's frames must not take the Host down.
		if p := recover(); p != nil {
			s.h.logger.Error("hostplugin: session panicked; closing it", "session", s.id, "panic", p, "stack", string(debug.Stack()))
			s.closeFromReader(int(websocket.StatusInternalError), "internal error")
		}
	}()
	// An error is Read's to report, with the close status.
	_, _ = s.sock.br.Peek(1)
	for {
		// Reads use no context: a cancelled read context closes the socket, and the socket
		// is ended by closing it, which unblocks the read.
		typ, data, err := s.conn.Read(context.Background())
		if err != nil {
			s.logEnd(err)
			s.watch.ended(err)
			return
		}
		if !s.handle(typ, data) {
			return
		}
		if s.sock.br.Buffered() == 0 {
			handedOn = true
			go s.runFn()
			return
		}
	}
}

// handle acts on one frame of the page, and reports whether the session goes on.
func (s *session) handle(typ websocket.MessageType, data []byte) bool {
	if typ != websocket.MessageText {
		return s.badFrame("binary frames are not part of "+wire.Subprotocol, wire.PageFrame{})
	}
	f, err := wire.DecodePage(data)
	if err != nil {
		return s.badFrame(err.Error(), f)
	}
	switch f.T {
	case wire.TypeSub:
		s.subscribe(f)
	case wire.TypeUnsub:
		s.unsubscribe(f.Stream)
	case wire.TypePing:
		// The page's liveness probe: it wants a frame now, not at the next heartbeat. (A
		// session that is not ready yet answers once its ready frame is out.)
		s.h.obs.Probe()
		s.send(hbFrame)
	case wire.TypeCall:
		s.call(f)
	case wire.TypeFence:
		return s.fence(f)
	case wire.TypeReport:
		return s.report(f, len(data))
	}
	return true
}

func (s *session) logEnd(err error) {
	switch {
	case errors.Is(err, websocket.ErrMessageTooBig):
		s.h.thin.badFrame.Do(func() {
			s.h.logger.Warn("hostplugin: client frame over the read limit; closed with 1009",
				"session", s.id, "remote", s.remote, "maxFrameBytes", s.readLimit)
		})
	default:
		s.h.logger.Debug("hostplugin: session ended", "session", s.id, "status", websocket.CloseStatus(err), "err", err)
	}
}

// badFrame answers a frame the protocol does not allow with an error frame, and reports
// whether the session may go on.
// A bad call (f, as far as it was read, names one by its id) is answered with a bad-request
// reply instead, which ends that call on the page; its handler never runs.
func (s *session) badFrame(msg string, f wire.PageFrame) bool {
	s.bad++
	s.h.obs.BadFrame()
	s.h.thin.badFrame.Do(func() {
		s.h.logger.Warn("hostplugin: bad client frame", "session", s.id, "remote", s.remote, "err", msg)
	})
	if s.bad > maxBadFrames {
		s.closeFromReader(int(websocket.StatusProtocolError), "too many bad frames")
		return false
	}
	if f.T == wire.TypeCall && f.ID != 0 {
		s.h.obs.Call("", wire.CodeBadRequest, 0)
		s.send(replyFrame(wire.Failed(f.ID, wire.CodeBadRequest, msg, 0)))
		return true
	}
	s.send(errorFrame(msg))
	return true
}

func (s *session) subscribe(f wire.PageFrame) {
	if reason, ok := s.h.authorizeSub(s, f.Stream); !ok {
		// A stream the session followed until now stops before the denied frame is queued:
		// nothing of it comes after.
		s.unsubscribe(f.Stream)
		s.h.obs.Denied()
		s.send(deniedFrame(f.Stream, reason))
		return
	}
	if _, ok := s.subs[f.Stream]; !ok && len(s.subs) >= maxSubs {
		// Denied, not an error frame: the page ends that subscription visibly, with the
		// reason, instead of waiting for events of a stream nobody sends it.
		s.h.obs.Denied()
		s.send(deniedFrame(f.Stream, fmt.Sprintf("a session follows at most %d streams", maxSubs)))
		return
	}
	fo := s.h.join(s, f.Stream, Cursor{Epoch: f.Epoch, Seq: f.After})
	if fo == nil {
		// Its access ended while it joined (EndSubscription): denied, as any sub for it now.
		s.unsubscribe(f.Stream)
		reason, _ := s.revokedReason(f.Stream)
		s.h.obs.Denied()
		s.send(deniedFrame(f.Stream, reason))
		return
	}
	s.setSub(f.Stream, fo)
	s.presenceSub(f)
}

func (s *session) unsubscribe(stream string) {
	if fo, ok := s.subs[stream]; ok {
		s.setSub(stream, nil)
		s.h.leave(fo, s)
		s.presenceUnsub(stream)
	}
}

// sendReady queues the ready frame ahead of anything queued while the gate was closed, and
// starts the heartbeat. It is idempotent.
func (s *session) sendReady() {
	s.mu.Lock()
	if s.ready || s.doomed || s.closed {
		s.mu.Unlock()
		return
	}
	s.ready = true
	rf := wire.Ready(s.id, s.heartbeat)
	s.callsReady(&rf)
	rf.MaxFrameBytes, rf.Report, rf.Secret = s.readLimit, s.watch.reports, s.c.secret()
	rf.HasPresence = s.h.pres != nil
	s.readyAccess(&rf)
	s.queue = slices.Insert(s.queue, 0, mustEncode(rf).b)
	start := s.startWriterLocked()
	s.wrote = time.Now()
	s.hbTimer = time.AfterFunc(s.heartbeat, s.onIdle)
	s.mu.Unlock()
	if start {
		go s.flushFn()
	}
	s.h.obs.SessionReady(s.watch.mode)
	s.faultAtReady()
}

// currentDedup is the dedup epoch the session's ready frame announced.
func (s *session) currentDedup() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dedup
}

// onIdle runs on the heartbeat timer's own goroutine: a heartbeat after nothing was written
// for one (the writer does not touch the timer: it notes when it wrote, and onIdle sets the
// timer again for the rest of the silence). The heartbeat is written from this goroutine.
func (s *session) onIdle() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	switch quiet := time.Since(s.wrote); {
	case s.writing.Running():
		// A write is under way: the page is not left in silence.
		s.hbTimer.Reset(s.heartbeat)
		s.mu.Unlock()
		return
	case quiet < s.heartbeat:
		// Written since the timer was set: a heartbeat after the last write, then.
		s.hbTimer.Reset(s.heartbeat - quiet)
		s.mu.Unlock()
		return
	}
	start := s.queueLocked(hbFrame)
	s.mu.Unlock()
	s.h.obs.Heartbeat()
	if start {
		s.writing.Run() // on the timer's goroutine: no new one
		s.c.idle()
	}
	// Set from the end of the write, which is when the writer noted it wrote: set from before
	// it, the timer would fire a moment early next time and again a moment later.
	s.mu.Lock()
	if !s.closed {
		s.hbTimer.Reset(s.heartbeat)
	}
	s.mu.Unlock()
}

// send queues m. Frames queued before the ready frame wait for it.
func (s *session) send(m message) {
	s.mu.Lock()
	start := s.queueLocked(m)
	s.mu.Unlock()
	if start {
		go s.flushFn()
	}
}

// queueLocked queues m, shedding the session if its page reads too slowly, and reports
// whether the caller must start the writer (s.flushFn: the writing loop).
func (s *session) queueLocked(m message) (start bool) {
	if s.closed {
		return false
	}
	if len(s.queue) >= s.h.maxQueue {
		s.closed = true
		s.queue = nil
		s.h.obs.Shed() // no lock of the Host's: the Observer only counts
		s.h.thin.overload.Do(func() {
			s.h.logger.Warn("hostplugin: shedding a session that reads too slowly", "session", s.id, "remote", s.remote, "queued", s.h.maxQueue)
		})
		// No close frame: it would wait behind the frames the page is not reading. The page
		// sees the socket drop and comes back with its cursor.
		go s.c.drop()
		return false
	}
	s.queue = append(s.queue, m.b)
	return s.ready && s.startWriterLocked()
}

// startWriterLocked marks the writer running if it is not and there is something to write,
// and reports whether the caller must start it.
func (s *session) startWriterLocked() bool {
	return len(s.queue) > 0 && s.writing.Claim()
}

// flushRound writes all that is queued in one batch, so a page that many frames wait for gets
// them in few writes; with nothing queued (or the session closed) the writer exits. s.mu is
// held, and released while the batch is written.
func (s *session) flushRound() bool {
	if s.closed || len(s.queue) == 0 || s.expired() {
		// An expired session writes nothing, whether or not its end has run yet.
		return false
	}
	batch := s.queue
	s.queue, s.spare = s.spare, nil
	s.mu.Unlock()

	n := 0
	for _, m := range batch {
		n += len(m)
	}
	err := s.c.write(batch)
	s.h.obs.Sent(s.c.kind(), n)

	s.mu.Lock()
	s.wrote = time.Now()
	if cap(batch) <= maxSpare {
		s.spare = batch[:0]
	}
	if err != nil {
		s.closed, s.queue = true, nil
		if !errors.Is(err, errCloseSent) {
			// The reader sees the connection end and releases the session.
			s.mu.Unlock()
			s.c.drop()
			s.mu.Lock()
		}
		return false
	}
	return true
}

// goAway tells the page to leave. A session that never got its ready frame is not connected
// from the page's point of view: it gets the goaway and is closed at once.
func (s *session) goAway(m message) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.c.leaving()
	if s.ready {
		s.mu.Unlock()
		s.send(m)
		return
	}
	s.doomed = true
	s.mu.Unlock()
	go func() {
		_ = s.c.write(net.Buffers{m.b})
		s.closeWith(wire.CloseDrained, "drained")
	}()
}

// finish ends the session with m, written ahead of anything still queued (which the page
// then never gets: it is leaving), then a close with code and reason. It is for a Host that
// stops: nothing may be queued behind the frame, and the frame must precede the close.
func (s *session) finish(m message, code int, reason string) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.doomed = true
	s.closed = true // no more queued writes: the writer stops at its next look
	s.queue = nil
	s.mu.Unlock()
	// After the batch the writer may be writing: the carrier orders the two.
	_ = s.c.write(net.Buffers{m.b})
	s.closeWith(code, reason)
}

// closeWith closes the session with code and reason: it sends the close frame, waits at most
// closeHandshake for the page's answer (and no longer than until the Host's Close returns),
// then closes the connection. It is for goroutines other than run's, and leaves the
// handshake's reading to run (where coder/websocket answers the page's close frame and closes
// the connection), so that only run ever reads the connection: it waits on its reader between
// bursts, outside coder/websocket, which a Close of coder/websocket's from here would read at
// the same time. (run itself, which may close on a bad page, calls coder/websocket's Close.)
func (s *session) closeWith(code int, reason string) {
	s.watch.closing(code)
	s.mu.Lock()
	if s.over {
		s.mu.Unlock()
		return
	}
	if s.ended == nil {
		s.ended = make(chan struct{})
	}
	ended := s.ended
	s.mu.Unlock()
	if err := s.c.writeClose(code, reason); err != nil && !errors.Is(err, errCloseSent) {
		s.c.drop()
		return
	}
	t := time.NewTimer(closeHandshake)
	defer t.Stop()
	select {
	case <-ended:
	case <-t.C:
		s.c.drop() // the page never answered
	case <-s.h.released:
		s.c.drop() // the Host is closed: nothing of it waits on
	}
}

// closeFromReader closes the session with code and reason from its reader (a page that broke
// the rules, a panic of its frames' handling). A WebSocket is closed by coder/websocket's own
// Close, which reads the page's answer (only the reader may read); the HTTP carrier sends its
// close and ends at once.
func (s *session) closeFromReader(code int, reason string) {
	s.watch.closing(code)
	if s.conn != nil {
		_ = s.conn.Close(websocket.StatusCode(code), reason)
		return
	}
	_ = s.c.writeClose(code, reason)
	s.c.drop()
}

// closeUnlessEnding closes the session unless it is ending already (finished, shed or over).
func (s *session) closeUnlessEnding(code int, reason string) {
	s.mu.Lock()
	ending := s.closed
	s.mu.Unlock()
	if !ending {
		s.closeWith(code, reason)
	}
}

// end releases everything the session holds. It runs once, on the run goroutine.
func (s *session) end() {
	s.mu.Lock()
	s.closed = true
	s.queue = nil
	if s.hbTimer != nil {
		s.hbTimer.Stop()
	}
	s.fault.stop()
	s.mu.Unlock()
	s.endCalls()
	s.presenceEnd()
	s.dropAccess()
	s.mu.Lock()
	subs := s.subs
	s.subs = nil
	s.mu.Unlock()
	for _, fo := range subs {
		s.h.leave(fo, s)
	}
	s.c.drop()
	s.h.removeSession(s)
	s.mu.Lock()
	s.over = true
	if s.ended != nil {
		close(s.ended)
	}
	s.mu.Unlock()
	s.observeEnd()
}
