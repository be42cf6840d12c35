//go:build !js

package hostplugin

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/gateway/wire"
)

// Per-session limits.
const (
	// writeTimeout: a page that takes longer than this to accept one frame is gone.
	writeTimeout = 10 * time.Second
	// maxQueue: frames waiting for a slow page. Past it the page is shed and comes back
	// with its cursor, which costs the Host less than buffering without bound.
	maxQueue = 1024
	// maxSubs bounds the streams one session may follow.
	maxSubs = 64
	// maxBadFrames: past this many malformed frames the peer is not a working page.
	maxBadFrames = 16
)

var hbFrame = mustEncode(wire.ServerFrame{T: wire.TypeHeartbeat})

func mustEncode(f wire.ServerFrame) []byte {
	b, err := f.Encode()
	if err != nil {
		panic(fmt.Sprintf("hostplugin: encoding a %s frame: %v", f.T, err))
	}
	return b
}

func goAwayFrame(uri string) []byte {
	return mustEncode(wire.ServerFrame{T: wire.TypeGoAway, URI: uri})
}

func errorFrame(msg string) []byte {
	return mustEncode(wire.ServerFrame{T: wire.TypeError, Message: msg})
}

// writeFrame writes one frame directly, for sockets that never became sessions.
func writeFrame(conn *websocket.Conn, frame []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	return conn.Write(ctx, websocket.MessageText, frame)
}

// session is one page's socket. Its run goroutine is the only reader and the only user of
// subs and bad. Writes go through queue, drained by a writer goroutine that exists only while
// there is something to write, so an idle session holds one goroutine and one timer.
type session struct {
	h         *Host
	conn      *websocket.Conn
	id        string
	heartbeat time.Duration
	readLimit int64
	remote    string
	identity  string // as Options.Authenticate returned it

	mu      sync.Mutex // guards the fields below
	ready   bool       // the ready frame is queued; frames flow
	doomed  bool       // never becomes ready: drained before it, or opened under stall-ready
	closed  bool
	writing bool
	queue   [][]byte
	hbTimer *time.Timer
	flap    *time.Timer // fault injection: the pending drop of flap mode

	subs map[string]*hub // run goroutine only
	bad  int             // run goroutine only
}

func newSession(h *Host, conn *websocket.Conn, cfg Config, remote string) *session {
	return &session{
		h:         h,
		conn:      conn,
		id:        newID(12),
		heartbeat: cfg.heartbeat,
		readLimit: int64(cfg.maxFrameBytes),
		remote:    remote,
	}
}

// run reads the page's frames until the socket ends, then releases everything.
func (s *session) run() {
	defer s.end()
	defer func() {
		// A bug reached by one page's frames must not take the Host down.
		if p := recover(); p != nil {
			s.h.logger.Error("hostplugin: session panicked; closing it", "session", s.id, "panic", p, "stack", string(debug.Stack()))
			_ = s.conn.Close(websocket.StatusInternalError, "internal error")
		}
	}()
	s.conn.SetReadLimit(s.readLimit)
	// Reads use no context: a cancelled read context closes the socket, and the socket is
	// ended by closing it, which unblocks the read.
	ctx := context.Background()
	for {
		typ, data, err := s.conn.Read(ctx)
		if err != nil {
			s.logEnd(err)
			return
		}
		if typ != websocket.MessageText {
			if !s.badFrame("binary frames are not part of " + wire.Subprotocol) {
				return
			}
			continue
		}
		f, err := wire.DecodeClient(data)
		if err != nil {
			if !s.badFrame(err.Error()) {
				return
			}
			continue
		}
		switch f.T {
		case wire.TypeSub:
			s.subscribe(f)
		case wire.TypeUnsub:
			s.unsubscribe(f.Stream)
		case wire.TypePing:
			// A liveness probe: the page wants a frame now, not at the next heartbeat. (A
			// session that is not ready yet answers once its ready frame is out.)
			s.send(hbFrame)
		}
	}
}

func (s *session) logEnd(err error) {
	switch {
	case errors.Is(err, websocket.ErrMessageTooBig):
		s.h.logBadFrame.Do(func() {
			s.h.logger.Warn("hostplugin: client frame over the read limit; closed with 1009",
				"session", s.id, "remote", s.remote, "maxFrameBytes", s.readLimit)
		})
	default:
		s.h.logger.Debug("hostplugin: session ended", "session", s.id, "status", websocket.CloseStatus(err), "err", err)
	}
}

// badFrame answers a frame the protocol does not allow with an error frame, and reports
// whether the session may go on.
func (s *session) badFrame(msg string) bool {
	s.bad++
	s.h.logBadFrame.Do(func() {
		s.h.logger.Warn("hostplugin: bad client frame", "session", s.id, "remote", s.remote, "err", msg)
	})
	if s.bad > maxBadFrames {
		_ = s.conn.Close(websocket.StatusProtocolError, "too many bad frames")
		return false
	}
	s.send(errorFrame(msg))
	return true
}

func (s *session) subscribe(f wire.ClientFrame) {
	if reason, ok := s.h.authorize(s, f.Stream); !ok {
		// A stream the session followed until now stops before the denied frame is queued:
		// nothing of it comes after.
		s.unsubscribe(f.Stream)
		s.send(deniedFrame(f.Stream, reason))
		return
	}
	if _, ok := s.subs[f.Stream]; !ok && len(s.subs) >= maxSubs {
		s.send(errorFrame(fmt.Sprintf("sub %q refused: a session follows at most %d streams", wire.Truncate(f.Stream), maxSubs)))
		return
	}
	if s.subs == nil {
		s.subs = map[string]*hub{}
	}
	hb, err := s.h.join(s, f.Stream, Cursor{Epoch: f.Epoch, Seq: f.After})
	if err != nil {
		delete(s.subs, f.Stream) // join has left the hub
		s.h.logger.Error("hostplugin: cannot read stream log", "stream", f.Stream, "err", err)
		s.send(errorFrame(fmt.Sprintf("sub %q failed: the stream log is unavailable", wire.Truncate(f.Stream))))
		return
	}
	s.subs[f.Stream] = hb
}

func (s *session) unsubscribe(stream string) {
	if hb, ok := s.subs[stream]; ok {
		delete(s.subs, stream)
		s.h.leave(hb, s)
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
	ready := mustEncode(wire.Ready(s.id, s.heartbeat))
	s.queue = append([][]byte{ready}, s.queue...)
	s.startWriterLocked()
	s.hbTimer = time.AfterFunc(s.heartbeat, s.onIdle)
	s.mu.Unlock()

	if in := s.h.faults.Load(); in != nil {
		s.faultAtReady(in)
	}
}

// onIdle runs when nothing was written for a heartbeat; the write re-arms the timer.
func (s *session) onIdle() { s.send(hbFrame) }

// send queues frame. Frames queued before the ready frame wait for it.
func (s *session) send(frame []byte) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	if len(s.queue) >= s.h.maxQueue {
		s.closed = true
		s.queue = nil
		s.mu.Unlock()
		s.h.logOverload.Do(func() {
			s.h.logger.Warn("hostplugin: shedding a session that reads too slowly", "session", s.id, "remote", s.remote, "queued", s.h.maxQueue)
		})
		// No close frame: it would wait behind the frames the page is not reading. The page
		// sees the socket drop and comes back with its cursor.
		go func() { _ = s.conn.CloseNow() }()
		return
	}
	s.queue = append(s.queue, frame)
	if s.ready {
		s.startWriterLocked()
	}
	s.mu.Unlock()
}

func (s *session) startWriterLocked() {
	if !s.writing && len(s.queue) > 0 {
		s.writing = true
		go s.flush()
	}
}

// flush writes the queue until it is empty, then exits.
func (s *session) flush() {
	for {
		s.mu.Lock()
		if s.closed || len(s.queue) == 0 {
			s.writing = false
			s.mu.Unlock()
			return
		}
		batch := s.queue
		s.queue = nil
		s.mu.Unlock()

		for _, frame := range batch {
			if err := writeFrame(s.conn, frame); err != nil {
				// The reader sees the socket end and releases the session.
				_ = s.conn.CloseNow()
				s.mu.Lock()
				s.writing = false
				s.mu.Unlock()
				return
			}
		}
		s.mu.Lock()
		if s.hbTimer != nil {
			s.hbTimer.Reset(s.heartbeat)
		}
		s.mu.Unlock()
	}
}

// goAway tells the page to leave. A session that never got its ready frame is not connected
// from the page's point of view: it gets the goaway and is closed at once.
func (s *session) goAway(frame []byte) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	if s.ready {
		s.mu.Unlock()
		s.send(frame)
		return
	}
	s.doomed = true
	s.mu.Unlock()
	go func() {
		_ = writeFrame(s.conn, frame)
		s.closeWith(wire.CloseDrained, "drained")
	}()
}

// finish ends the session with frame, written ahead of anything still queued (which the
// page then never gets: it is leaving), then a close with code and reason. It is for a Host
// that stops: nothing may be queued behind the frame, and the frame must precede the close.
func (s *session) finish(frame []byte, code int, reason string) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.doomed = true
	s.closed = true // no more queued writes: the writer stops at its next look
	s.queue = nil
	s.mu.Unlock()
	_ = writeFrame(s.conn, frame)
	s.closeWith(code, reason)
}

func (s *session) isReady() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready
}

func (s *session) closeWith(code int, reason string) {
	_ = s.conn.Close(websocket.StatusCode(code), reason)
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
	if s.flap != nil {
		s.flap.Stop()
	}
	s.mu.Unlock()
	for _, hb := range s.subs {
		s.h.leave(hb, s)
	}
	s.subs = nil
	_ = s.conn.CloseNow()
	s.h.removeSession(s)
}
