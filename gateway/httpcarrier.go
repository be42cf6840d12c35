package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/internal/tinyfmt"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// The HTTP carrier (PROTOCOL.md §11), for a path that will not carry a WebSocket: the Host's
// frames come down one long GET answered as a text/event-stream (stream), or in the answers of
// long polls where a proxy holds the stream back (poll); the page's frames go up in POSTs, each
// a batch in order, headed by an envelope with the session's secret from its ready frame. The
// browser's fetch carries it (fetch_js.go: no net/http in the wasm), net/http natively.

// Bounds of the HTTP carrier.
const (
	// maxUnsent bounds the bytes of frames waiting to be POSTed, as the browser bounds a
	// WebSocket's send buffer: past it the path is not draining, and the session ends.
	maxUnsent = DefaultMaxQueuedBytes
	// sendTries is how often a POST goes before the session is given up. A POST whose answer
	// was lost may go again: the Host applies each send once, by its seq. Five, 2.5 s in all:
	// a reverse proxy whose pooled connections went to a Host that restarted fails a POST on
	// each of them once (it replays no POST), and a proxy has several.
	sendTries = 5
	// sendRetry is the first wait before a POST goes again; each try waits one more.
	sendRetry = 250 * time.Millisecond
)

// Errors of the HTTP carrier.
var (
	errStreamEnded = errors.New("gateway: the host's stream ended without a close")
	errSessionGone = errors.New("gateway: the host no longer has the session")
)

// Frames the carrier reads itself, by their start (the Host writes "t" first).
var (
	readyPrefix = []byte(`{"t":"` + wire.TypeReady + `"`)
	closePrefix = []byte(`{"t":"` + wire.TypeClose + `"`)
	pingFrame   = []byte(`{"t":"` + wire.TypePing + `"}`)
)

// httpCarrier carries one session over HTTP.
type httpCarrier struct {
	name     string // wire.CarrierStream or CarrierPoll
	endpoint string // the events URL, http or https, as the dial named it
	header   map[string][]string

	// life ends with hangup, or with the failure of a POST or a poll: it aborts every request
	// and is the cause read returns.
	life context.Context
	end  context.CancelCauseFunc

	// The pump's: read's state.
	down   *httpAnswer // the stream, or the poll answer being read
	scan   wire.EventScanner
	frames uint64 // frames read: a poll's ack

	mu        sync.Mutex
	session   string // the ready frame's
	secret    string
	heartbeat time.Duration
	maxFrame  int      // the ready frame's maxFrameBytes: what one send may carry
	out       [][]byte // frames waiting to be POSTed, in order
	unsent    int      // their bytes
	seq       uint64   // the last send's
	closed    bool     // hangup ran
	draining  bool     // the session is leaving (drain): a POST that fails is dropped, not fatal
	kick      chan struct{}
	posted    chan struct{} // closed when the poster is gone
}

func (c *httpCarrier) kind() string { return c.name }

// dialHTTP opens a session on the HTTP carrier kind at the events URL rawURL (ws or wss, as the
// gateway names it). A refusal before the session (401, 403, 429) is returned as refusedBy
// reads it; an answer that is not a Lifeline Host's stream is an error naming what came.
func dialHTTP(ctx context.Context, rawURL, kind string, h Handshake, limit int64) (*httpCarrier, error) {
	u := httpURL(rawURL)
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	u += sep + wire.CarrierParam + "=" + kind
	life, end := context.WithCancelCause(context.Background())
	stop := context.AfterFunc(ctx, func() { end(context.Cause(ctx)) }) // while dialing only
	a, err := doHTTP(life, httpRequest{method: methodGet, url: u, header: h.header()})
	if !stop() || err != nil {
		if a != nil {
			a.close()
		}
		end(err)
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	if a.status != statusOK {
		body := a.readAll(life, wire.MaxRefusalBody)
		end(nil)
		if refused := refusedBy(a.status, a.retryAfter, body); refused != nil {
			return nil, refused
		}
		return nil, tinyfmt.Errorf("gateway: GET %s answered %d", u, a.status)
	}
	if !strings.HasPrefix(a.contentType, wire.EventStreamType) {
		a.close()
		end(nil)
		return nil, tinyfmt.Errorf("gateway: GET %s answered %q, not a Lifeline Host's %s", u, a.contentType, wire.EventStreamType)
	}
	c := &httpCarrier{
		name:     kind,
		endpoint: httpURL(rawURL),
		header:   h.header(),
		life:     life,
		end:      end,
		down:     a,
		kick:     make(chan struct{}, 1),
		posted:   make(chan struct{}),
	}
	c.scan.Limit = int(limit)
	go c.poster()
	return c, nil
}

// read returns the next frame of the stream or of the polls. It reads the ready frame's
// session and secret on its way (the POSTs need them), and returns the Host's close frame as
// the end it is.
func (c *httpCarrier) read() (frameKind, []byte, error) {
	for {
		b, err := c.scan.Next()
		if err != nil {
			return 0, nil, tinyfmt.Errorf("%w: %w", errMessageTooBig, err)
		}
		if b != nil {
			c.frames++
			b = bytes.Clone(b)
			if bytes.HasPrefix(b, readyPrefix) || bytes.HasPrefix(b, closePrefix) {
				if f, err := wire.DecodeHost(b); err == nil {
					if f.T == wire.TypeClose {
						return 0, nil, &hostClosed{code: f.Status, reason: f.Reason}
					}
					c.readyFrame(f)
				}
			}
			return textFrame, b, nil
		}
		if c.down == nil {
			if c.name != wire.CarrierPoll {
				return 0, nil, c.cause(errStreamEnded)
			}
			if c.down, err = c.poll(); err != nil {
				return 0, nil, err
			}
			continue // nil: the poll came back empty; poll again
		}
		chunk, err := c.down.next(c.life)
		c.scan.Write(chunk)
		if err != nil {
			c.down.close()
			c.down = nil
			if err == io.EOF {
				if c.name == wire.CarrierPoll {
					continue
				}
				err = errStreamEnded
			}
			return 0, nil, c.cause(err)
		}
	}
}

// cause is why the carrier ended: the failure or hangup that ended its life, else err; and the
// page going away, when it is (a browser aborts the page's requests as it unloads it).
func (c *httpCarrier) cause(err error) error {
	if c.life.Err() != nil {
		err = context.Cause(c.life)
	}
	if pageLeaving(leavingWait) && !errors.Is(err, errClosedByPage) {
		return tinyfmt.Errorf("%w: %w", controller.ErrLeaving, err)
	}
	return err
}

// readyFrame takes what the POSTs need from the ready frame.
func (c *httpCarrier) readyFrame(f wire.HostFrame) {
	c.mu.Lock()
	c.session, c.secret, c.heartbeat, c.maxFrame = f.Session, f.Secret, f.Heartbeat(), int(f.MaxFrameBytes)
	c.mu.Unlock()
	c.wake()
}

// poll asks for the frames after those read: an answer to read, or nil when it came back
// empty (the Host held it for its longest, or another took over).
func (c *httpCarrier) poll() (*httpAnswer, error) {
	c.mu.Lock()
	env := wire.Envelope{T: wire.EnvelopePoll, Session: c.session, Secret: c.secret, Ack: c.frames}
	c.mu.Unlock()
	if env.Session == "" {
		return nil, tinyfmt.Errorf("%w: the first answer of the polls carried no ready frame", ErrProtocol)
	}
	a, err := c.post(wire.AppendLine(nil, env.Encode()))
	if err != nil && c.isDraining() && c.life.Err() == nil {
		// A draining session's Host may be a successor that does not know it (a restart that
		// handed the listening socket on): its polls fail while the page's next session is
		// being made. The session holds, silent, make-before-break, until that session
		// replaces it, or the dead-link probe ends it; it is not a lost connection.
		<-c.life.Done()
		return nil, c.cause(err)
	}
	if err != nil {
		c.end(err)
		return nil, err
	}
	if a.status == statusNoContent {
		a.close()
		return nil, nil
	}
	return a, nil
}

// post sends one POST of the session, again on a network error (sendTries in all), and
// returns its answer: 200 or 204; any other status is the session's end, named.
func (c *httpCarrier) post(body []byte) (*httpAnswer, error) {
	for try := 1; ; try++ {
		a, err := doHTTP(c.life, httpRequest{method: methodPost, url: c.endpoint, body: body, contentType: wire.SendType, header: c.header})
		if err == nil {
			if a.status == statusOK || a.status == statusNoContent {
				return a, nil
			}
			b := a.readAll(c.life, wire.MaxRefusalBody)
			if a.status < 500 {
				return nil, postRefused(a.status, b)
			}
			err = tinyfmt.Errorf("gateway: POST %s answered %d", c.endpoint, a.status)
		}
		if c.life.Err() != nil {
			return nil, context.Cause(c.life)
		}
		if try == sendTries {
			return nil, tinyfmt.Errorf("%w: %d POSTs of the session failed: %w", ErrSessionClosed, sendTries, err)
		}
		t := time.NewTimer(time.Duration(try) * sendRetry)
		select {
		case <-t.C:
		case <-c.life.Done():
			t.Stop()
			return nil, context.Cause(c.life)
		}
	}
}

// postRefused is the end of a session whose POST the Host refused.
func postRefused(status int, body []byte) error {
	why := tinyfmt.Sprintf("HTTP %d", status)
	if r, err := wire.DecodeRefusal(bytes.TrimSpace(body)); err == nil {
		if r.Error == wire.RefusalAccessEnded {
			if reason, reauth, ok := wire.ParseAccessEnded(r.Reason); ok {
				return &accessEndedRefusal{reason: reason, reauth: reauth, status: status}
			}
		}
		why += " " + r.Error
		if r.Reason != "" {
			why += ": " + r.Reason
		}
	}
	if status == statusNotFound {
		return tinyfmt.Errorf("%w: %w (%s)", ErrSessionClosed, errSessionGone, why)
	}
	return tinyfmt.Errorf("%w: the host refused a POST of the session (%s)", ErrSessionClosed, why)
}

// write queues one frame for the next POST.
func (c *httpCarrier) write(b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return errClosedByPage
	case c.life.Err() != nil:
		return context.Cause(c.life)
	case c.unsent+len(b) > maxUnsent && c.unsent > 0:
		return tinyfmt.Errorf("gateway: the link is not draining: %d bytes wait to be sent (bound %d)", c.unsent, maxUnsent)
	}
	c.out = append(c.out, bytes.Clone(b))
	c.unsent += len(b)
	c.wake()
	return nil
}

func (c *httpCarrier) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// poster sends what write queued, one POST at a time and in order, once the ready frame has
// named the session. On a stream it sends a ping when the page has sent nothing for a
// heartbeat: the Host ends a stream's session whose page has gone quiet (a page behind a proxy
// that holds its stream back would otherwise leave it open for good), and the ping's answer
// is news of the stream too.
func (c *httpCarrier) poster() {
	defer close(c.posted)
	quiet := time.NewTimer(time.Hour)
	quiet.Stop()
	defer quiet.Stop()
	for {
		select {
		case <-c.life.Done():
			return
		case <-c.kick:
		case <-quiet.C:
			c.mu.Lock()
			if len(c.out) == 0 {
				c.out = append(c.out, pingFrame)
				c.unsent += len(pingFrame)
			}
			c.mu.Unlock()
		}
		for {
			body := c.batch()
			if body == nil {
				break
			}
			a, err := c.post(body)
			if err != nil && c.isDraining() && c.life.Err() == nil {
				// A draining session waits only for the replies of its calls in flight, which
				// come down its stream; what it sends now is no call (new calls go to the
				// session the page moves to), and its Host may be a successor that does not
				// know it (a restart that handed the socket on). The session goes on.
				continue
			}
			if err != nil {
				c.end(err)
				return
			}
			a.close()
		}
		c.mu.Lock()
		if c.session != "" && c.name == wire.CarrierStream {
			quiet.Reset(c.heartbeat)
		}
		c.mu.Unlock()
	}
}

// batch takes the next send's body from the queue: its envelope, then frames up to the Host's
// maxFrameBytes (one frame at least) and wire.MaxBatchFrames. nil when nothing can go.
func (c *httpCarrier) batch() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session == "" || len(c.out) == 0 || c.life.Err() != nil {
		return nil
	}
	c.seq++
	body := wire.AppendLine(nil, wire.Envelope{T: wire.EnvelopeSend, Session: c.session, Secret: c.secret, Seq: c.seq}.Encode())
	n, size := 0, 0
	for n < len(c.out) && n < wire.MaxBatchFrames {
		f := c.out[n]
		if n > 0 && c.maxFrame > 0 && size+len(f)+1 > c.maxFrame {
			break
		}
		body = wire.AppendLine(body, f)
		size += len(f) + 1
		n++
	}
	clear(c.out[:n])
	c.out = c.out[n:]
	c.unsent -= size - n
	return body
}

// hangup ends the session: a bye tells the Host at once (within grace), unless the link is
// dead (force); then every request of the carrier is aborted.
func (c *httpCarrier) hangup(reason string, force bool, grace time.Duration) {
	c.mu.Lock()
	c.closed = true
	env := wire.Envelope{T: wire.EnvelopeBye, Session: c.session, Secret: c.secret, Reason: reason}
	c.mu.Unlock()
	if !force && env.Session != "" && c.life.Err() == nil {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		if a, err := doHTTP(ctx, httpRequest{method: methodPost, url: c.endpoint, body: wire.AppendLine(nil, env.Encode()), contentType: wire.SendType, header: c.header}); err == nil {
			a.close()
		}
		cancel()
	}
	c.end(errClosedByPage)
}

// settle waits for the poster and the goroutines done stands for: hangup has ended them.
func (c *httpCarrier) settle(_ time.Duration, _ bool, done ...<-chan struct{}) {
	<-c.posted
	for _, d := range done {
		<-d
	}
}

// drain tells the carrier its session is leaving (a goaway, or a move to a WebSocket): what it
// still sends may fail without ending it.
func (c *httpCarrier) drain() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.draining = true
}

func (c *httpCarrier) isDraining() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.draining
}
