//go:build !js

package hostplugin_test

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/test/testlog"
	"github.com/lifeline-go/lifeline/internal/test/wstest"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// Presence is tested inside synctest bubbles: Hosts, pages (in-memory sockets) and the
// fleet's bus (memBus) all run on the bubble's clock, so the grace window, the settle and the
// fleet's heartbeats are checked to the millisecond with no sleep of real time.

// roomStreams carries presence on the streams named room.*.
func roomStreams(stream string) bool { return strings.HasPrefix(stream, "room.") }

// presHost is a Host with presence on room.* whose sessions are who their X-User header
// says; mod changes its Presence before New.
func presHost(t *testing.T, doc string, fleet hostplugin.PresenceFleet, mod func(*hostplugin.Presence)) (*hostplugin.Host, *testlog.Recorder) {
	t.Helper()
	p := &hostplugin.Presence{Streams: roomStreams, Fleet: fleet}
	if mod != nil {
		mod(p)
	}
	l := &testlog.Recorder{}
	h, err := hostplugin.New(mustConfig(t, doc), &hostplugin.Options{
		Logger: slog.New(l), Authorize: hostplugin.PublicStreams, NoClient: true, Presence: p,
		Authenticate: func(r *http.Request) (string, error) { return r.Header.Get("X-User"), nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	h.SetReady(true)
	return h, l
}

// quietHost is the config of a Host whose heartbeats never come within a test.
const quietHost = `{"heartbeatMs":600000}`

// change is one batch a page applied that changed what it shows.
type change struct {
	at                    time.Time
	joined, left, updated []string
	total                 int
	snapshot              bool
}

// ppage is a page in the bubble: its socket, what it shows of each stream's presence, and
// every change it saw.
type ppage struct {
	t      *testing.T
	user   string
	conn   *websocket.Conn
	frames chan readFrame
	ready  wire.HostFrame
	errs   []string // error frames

	shows   map[string]map[string]wire.PresenceMember // stream → identity → member
	total   map[string]int
	limit   map[string]int
	cursor  map[string]hostplugin.Cursor
	batch   map[string][]wire.HostFrame // frames of a batch still coming
	refused map[string]string
	changes map[string][]change
	frameN  map[string]int // presence frames read
	bytes   map[string]int // and their bytes
}

// dialPres opens a page of user on h, in memory, and reads its ready frame.
func dialPres(t *testing.T, h *hostplugin.Host, user string) *ppage {
	t.Helper()
	conn, _, err := websocket.Dial(t.Context(), "ws://host.invalid"+wire.DefaultPath, &websocket.DialOptions{
		Subprotocols: []string{wire.Subprotocol},
		HTTPClient:   wstest.Client(h.Handler(http.NotFoundHandler())),
		HTTPHeader:   http.Header{"X-User": {user}},
	})
	if err != nil {
		t.Fatalf("dial as %q: %v", user, err)
	}
	conn.SetReadLimit(1 << 20)
	p := &ppage{t: t, user: user, conn: conn, frames: make(chan readFrame, 1<<14),
		shows: map[string]map[string]wire.PresenceMember{}, total: map[string]int{}, limit: map[string]int{},
		cursor: map[string]hostplugin.Cursor{}, batch: map[string][]wire.HostFrame{}, refused: map[string]string{},
		changes: map[string][]change{}, frameN: map[string]int{}, bytes: map[string]int{}}
	var wg sync.WaitGroup
	wg.Add(1)
	t.Cleanup(func() {
		_ = conn.CloseNow()
		wg.Wait()
	})
	go func() {
		defer wg.Done()
		defer close(p.frames)
		for {
			_, b, err := conn.Read(context.Background())
			if err != nil {
				return
			}
			f, err := wire.DecodeHost(b)
			if err != nil {
				t.Errorf("page %s: DecodeHost(%s): %v", user, b, err)
				return
			}
			if f.T == wire.TypePresence {
				f.Data = wire.RawJSON(b) // its size, for the bytes a page is sent
				// A page checks a frame for an id named twice in one pass when the Host
				// lists its members and its left in order (wire's namedTwice).
				if !slices.IsSortedFunc(f.Members, func(a, b wire.PresenceMember) int { return cmp.Compare(a.ID, b.ID) }) || !slices.IsSorted(f.Left) {
					t.Errorf("page %s: a presence frame out of order of id: %s", user, b)
				}
			}
			p.frames <- readFrame{f, time.Now()}
		}
	}()
	synctest.Wait()
	p.ready = p.next()
	if p.ready.T != wire.TypeReady {
		t.Fatalf("page %s: first frame %+v, want ready", user, p.ready)
	}
	return p
}

// next is the next frame the page has, or the zero frame if none is waiting.
func (p *ppage) next() wire.HostFrame {
	f, _ := p.nextAt()
	return f
}

// nextAt is next, with when the page read it.
func (p *ppage) nextAt() (wire.HostFrame, time.Time) {
	select {
	case f := <-p.frames:
		return f.f, f.at
	default:
		return wire.HostFrame{}, time.Time{}
	}
}

// send writes a frame of the page's.
func (p *ppage) send(frame string) {
	p.t.Helper()
	if err := p.conn.Write(context.Background(), websocket.MessageText, []byte(frame)); err != nil {
		p.t.Fatalf("page %s: write %s: %v", p.user, frame, err)
	}
}

// sub subscribes stream, asking for presence when watch, from the cursor the page holds.
func (p *ppage) sub(stream string, watch bool) {
	p.t.Helper()
	f := wire.PageFrame{T: wire.TypeSub, Stream: stream, Presence: watch}
	if c, ok := p.cursor[stream]; ok && watch {
		f.PresenceEpoch, f.PresenceAfter = c.Epoch, c.Seq
	}
	b, _ := f.Encode()
	p.send(string(b))
	synctest.Wait()
}

// close drops the page's socket (a tab closed, a network gone).
func (p *ppage) close() {
	_ = p.conn.CloseNow()
	synctest.Wait()
}

// pump applies every frame the page has now.
func (p *ppage) pump() {
	synctest.Wait()
	for {
		f, at := p.nextAt()
		switch f.T {
		case "":
			return
		case wire.TypeError:
			p.errs = append(p.errs, f.Message)
		case wire.TypePresence:
			p.apply(f, at)
		}
	}
}

// apply applies one presence frame the way the page's gateway does: a batch once its last
// frame is in; a snapshot as a diff against what it shows.
func (p *ppage) apply(f wire.HostFrame, at time.Time) {
	s := f.Stream
	p.frameN[s]++
	p.bytes[s] += len(f.Data)
	if f.Reason != "" {
		p.refused[s] = f.Reason
		return
	}
	p.batch[s] = append(p.batch[s], f)
	if f.More {
		return
	}
	frames := p.batch[s]
	delete(p.batch, s)
	old := p.shows[s]
	next := maps.Clone(old)
	if next == nil {
		next = map[string]wire.PresenceMember{}
	}
	if frames[0].Snapshot {
		next = map[string]wire.PresenceMember{}
	} else if c := p.cursor[s]; c.Epoch != f.Epoch || c.Seq < f.From {
		p.t.Errorf("page %s: a diff of %s from %s/%d on a page at %+v", p.user, s, f.Epoch, f.From, c)
	}
	for _, fr := range frames {
		for _, m := range fr.Members {
			next[m.ID] = m
		}
		for _, id := range fr.Left {
			delete(next, id)
		}
	}
	ch := change{at: at, total: f.Total, snapshot: frames[0].Snapshot}
	for id, m := range next {
		was, ok := old[id]
		switch {
		case !ok:
			ch.joined = append(ch.joined, id)
		case was.Count != m.Count || string(was.Meta) != string(m.Meta):
			ch.updated = append(ch.updated, id)
		}
	}
	for id := range old {
		if _, ok := next[id]; !ok {
			ch.left = append(ch.left, id)
		}
	}
	slices.Sort(ch.joined)
	slices.Sort(ch.left)
	slices.Sort(ch.updated)
	first := p.shows[s] == nil
	p.shows[s], p.total[s], p.limit[s] = next, f.Total, f.Limit
	p.cursor[s] = hostplugin.Cursor{Epoch: f.Epoch, Seq: f.Seq}
	if first || len(ch.joined)+len(ch.left)+len(ch.updated) > 0 {
		p.changes[s] = append(p.changes[s], ch)
	}
}

// who is what the page shows of stream: identity → count.
func (p *ppage) who(stream string) map[string]int {
	out := map[string]int{}
	for id, m := range p.shows[stream] {
		out[id] = m.Count
	}
	return out
}

// expectWho fails unless the page shows exactly want on stream.
func (p *ppage) expectWho(stream string, want map[string]int) {
	p.t.Helper()
	p.pump()
	if got := p.who(stream); !maps.Equal(got, want) {
		p.t.Errorf("page %s shows %v on %s at %v, want %v", p.user, got, stream, time.Now().Format("15:04:05.000"), want)
	}
}

// changesSince are the changes the page saw on stream from index i on.
func (p *ppage) changesSince(stream string, i int) []change {
	p.pump()
	return p.changes[stream][min(i, len(p.changes[stream])):]
}

// members is h.Members as identity → count.
func members(t *testing.T, h *hostplugin.Host, stream string) map[string]int {
	t.Helper()
	list, err := h.Members(t.Context(), stream)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, m := range list {
		out[m.Identity] = m.Count
	}
	return out
}

// memBus is a PresenceFleet in memory: each Host's messages reach the others in the order
// sent, through a queue and a goroutine per Host (a delivery never runs on its sender's
// goroutine, as over NATS). A Host can be cut off (killed: nothing it says arrives, and it
// hears nothing), or its link marked down (it knows it is cut off).
type memBus struct {
	mu    sync.Mutex
	links map[string]*memLink
	lost  func(from, to string) bool // drops a message on the way when set (a NATS node lost)
}

type memLink struct {
	bus  *memBus
	id   string
	recv func([]byte)

	mu    sync.Mutex
	queue [][]byte
	cut   bool // nothing from or to it arrives
	down  bool // and it knows
	left  bool
	wake  chan struct{}
	done  chan struct{}
}

func newMemBus() *memBus { return &memBus{links: map[string]*memLink{}} }

func (b *memBus) Join(self string, recv func([]byte)) (hostplugin.PresenceLink, error) {
	l := &memLink{bus: b, id: self, recv: recv, wake: make(chan struct{}, 1), done: make(chan struct{})}
	b.mu.Lock()
	b.links[self] = l
	b.mu.Unlock()
	go l.run()
	return l, nil
}

func (l *memLink) run() {
	defer close(l.done)
	for range l.wake {
		for {
			l.mu.Lock()
			q := l.queue
			l.queue = nil
			left := l.left
			l.mu.Unlock()
			if left {
				return
			}
			if len(q) == 0 {
				break
			}
			for _, m := range q {
				l.recv(m)
			}
		}
	}
}

func (l *memLink) deliver(from string, msg []byte) {
	l.bus.mu.Lock()
	lost := l.bus.lost
	l.bus.mu.Unlock()
	if lost != nil && lost(from, l.id) {
		return
	}
	l.mu.Lock()
	if l.cut || l.left {
		l.mu.Unlock()
		return
	}
	l.queue = append(l.queue, msg)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *memLink) isCut() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cut
}

func (l *memLink) Broadcast(msg []byte) error {
	if l.isCut() {
		return io.ErrClosedPipe
	}
	l.bus.mu.Lock()
	others := make([]*memLink, 0, len(l.bus.links))
	for id, o := range l.bus.links {
		if id != l.id {
			others = append(others, o)
		}
	}
	l.bus.mu.Unlock()
	for _, o := range others {
		o.deliver(l.id, msg)
	}
	return nil
}

func (l *memLink) Send(host string, msg []byte) error {
	if l.isCut() {
		return io.ErrClosedPipe
	}
	l.bus.mu.Lock()
	o := l.bus.links[host]
	l.bus.mu.Unlock()
	if o != nil {
		o.deliver(l.id, msg)
	}
	return nil
}

func (l *memLink) Connected() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.down
}

func (l *memLink) Leave() {
	l.mu.Lock()
	l.left = true
	l.mu.Unlock()
	l.bus.mu.Lock()
	if l.bus.links[l.id] == l {
		delete(l.bus.links, l.id)
	}
	l.bus.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	<-l.done
	close(l.wake)
}

// setCut cuts the Host whose link is id off the bus (down: and it knows it), or puts it back.
func (b *memBus) setCut(id string, cut, down bool) {
	b.mu.Lock()
	l := b.links[id]
	b.mu.Unlock()
	l.mu.Lock()
	l.cut, l.down = cut, down
	if cut {
		l.queue = nil
	}
	l.mu.Unlock()
}

// setLost makes lost drop messages on the way (nil: none).
func (b *memBus) setLost(lost func(from, to string) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lost = lost
}

// hostID is the name h goes by in the fleet: the first part of its sessions' ids.
func hostID(p *ppage) string {
	id, _, _ := strings.Cut(p.ready.Session, ".")
	return id
}
