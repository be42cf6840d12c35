//go:build !js

package hostplugin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
)

// Event is one entry of a stream log.
type Event struct {
	Epoch string          // the log's epoch when the event was appended
	Seq   uint64          // 1 for the first event of a stream, then +1 each
	Data  json.RawMessage // a JSON value, never modified once appended
}

// Cursor is a position in a stream: the last event a reader holds, in the log's epoch. The
// zero Cursor is a reader that holds nothing.
type Cursor struct {
	Epoch string
	Seq   uint64
}

// StreamLog stores the events of every stream for replay by cursor. [Ring], an in-memory ring
// per stream, is the default; a log shared by a fleet of Hosts implements the same three
// methods. A log's epoch must change whenever its sequence numbers stop being comparable with
// the ones it handed out before (a restart with an empty log, another log).
//
// Implementations must be safe for concurrent use.
type StreamLog interface {
	// Append stores data as the next event of stream and returns it.
	Append(ctx context.Context, stream string, data json.RawMessage) (Event, error)

	// Since returns what a reader at cur needs. When the log holds every event after cur in
	// cur's epoch, it returns them oldest first with ok true. Otherwise (another epoch, a
	// cursor older than the log keeps, or one from the future) ok is false and the reader must
	// be reset to head. head is the log's last position either way (Seq 0: nothing yet).
	Since(ctx context.Context, stream string, cur Cursor) (events []Event, head Cursor, ok bool, err error)

	// Follow calls fn for every event of stream appended from now on, by this Host or any
	// other writer, one call at a time and in seq order, until stop is called. An event
	// appended while Follow registers is either passed to fn or returned by a later Since.
	// fn must return promptly and must not call Append.
	Follow(stream string, fn func(Event)) (stop func())
}

// Ring is the default [StreamLog]: the newest events of each stream in memory, the same epoch
// for every stream, a new epoch per Ring (so a restarted Host resets every page's cursor
// instead of replaying numbers from another life).
//
// Each stream has locks of its own: appends to different streams never wait on each other,
// and only the map of streams is shared (read-locked to find one).
//
// The zero Ring is not usable; call [NewRing]. A Ring is safe for concurrent use.
type Ring struct {
	epoch string
	size  atomic.Int64 // events kept per stream; read by Append under the stream's lock

	mu      sync.RWMutex // guards streams; taken before a stream's mu
	streams map[string]*ringStream
}

type ringStream struct {
	// amu serialises the stream's appends with their Follow callbacks, so that its
	// followers see events in seq order while mu stays free for Since (which a follower
	// may be waiting on).
	amu sync.Mutex

	mu     sync.Mutex // guards the fields below
	events []Event    // a circle once full; oldest at start
	start  int
	head   uint64
	// followers is replaced, never changed in place, so that Append calls the ones it read
	// with no lock but amu held.
	followers []*ringFollower
	gone      bool // removed from Ring.streams: an Append must look the stream up again
}

type ringFollower struct{ fn func(Event) }

// NewRing returns a Ring keeping the newest size events of each stream (at least 1).
func NewRing(size int) *Ring {
	r := &Ring{epoch: newID(8), streams: map[string]*ringStream{}}
	r.size.Store(int64(max(size, 1)))
	return r
}

// Epoch is the ring's epoch, shared by all its streams.
func (r *Ring) Epoch() string { return r.epoch }

// SetSize changes how many events each stream keeps, dropping the oldest when it shrinks.
// Sequence numbers and the epoch stay: readers within the new window still replay.
func (r *Ring) SetSize(size int) {
	size = max(size, 1)
	if r.size.Swap(int64(size)) == int64(size) {
		return
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, s := range r.streams {
		s.mu.Lock()
		s.fit(size)
		s.mu.Unlock()
	}
}

// fit makes the kept events a plain slice, oldest first, of at most size: the shape an append
// after a change of size needs. s.mu is held.
func (s *ringStream) fit(size int) {
	ordered := s.ordered()
	if len(ordered) > size {
		ordered = ordered[len(ordered)-size:]
	}
	s.events = append(make([]Event, 0, min(len(ordered), size)), ordered...)
	s.start = 0
}

// put keeps ev, the newest event, dropping the oldest past size. s.mu is held.
func (s *ringStream) put(ev Event, size int) {
	if len(s.events) > size || (len(s.events) < size && s.start != 0) {
		s.fit(size) // the size changed since the circle closed, and SetSize has not come by yet
	}
	if len(s.events) < size {
		s.events = append(s.events, ev)
		return
	}
	s.events[s.start] = ev
	s.start = (s.start + 1) % len(s.events)
}

// ordered returns the kept events oldest first (a new slice).
func (s *ringStream) ordered() []Event {
	out := make([]Event, 0, len(s.events))
	out = append(out, s.events[s.start:]...)
	return append(out, s.events[:s.start]...)
}

// stream returns the stream called name, making it if it is new.
func (r *Ring) stream(name string) *ringStream {
	r.mu.RLock()
	s := r.streams[name]
	r.mu.RUnlock()
	if s != nil {
		return s
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s = r.streams[name]; s == nil {
		s = &ringStream{}
		r.streams[name] = s
	}
	return s
}

// Append implements [StreamLog]. It copies data.
func (r *Ring) Append(_ context.Context, stream string, data json.RawMessage) (Event, error) {
	data = append(json.RawMessage(nil), data...)
	for {
		s := r.stream(stream)
		s.amu.Lock()
		s.mu.Lock()
		if s.gone {
			// Its last follower left and took it out of the map meanwhile.
			s.mu.Unlock()
			s.amu.Unlock()
			continue
		}
		s.head++
		ev := Event{Epoch: r.epoch, Seq: s.head, Data: data}
		s.put(ev, int(r.size.Load()))
		followers := s.followers
		s.mu.Unlock()

		for _, f := range followers {
			f.fn(ev)
		}
		s.amu.Unlock()
		return ev, nil
	}
}

// Since implements [StreamLog].
func (r *Ring) Since(_ context.Context, stream string, cur Cursor) ([]Event, Cursor, bool, error) {
	r.mu.RLock()
	s := r.streams[stream]
	r.mu.RUnlock()
	if s == nil {
		head := Cursor{Epoch: r.epoch}
		return nil, head, cur == head, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	head := Cursor{Epoch: r.epoch, Seq: s.head}
	oldest := s.head - uint64(len(s.events)) + 1
	if cur.Epoch != r.epoch || cur.Seq > s.head || cur.Seq+1 < oldest {
		return nil, head, false, nil
	}
	n := int(s.head - cur.Seq)
	if n == 0 {
		return nil, head, true, nil
	}
	ordered := s.ordered()
	return ordered[len(ordered)-n:], head, true, nil
}

// Follow implements [StreamLog].
func (r *Ring) Follow(stream string, fn func(Event)) (stop func()) {
	f := &ringFollower{fn: fn}
	for {
		s := r.stream(stream)
		s.mu.Lock()
		if s.gone {
			s.mu.Unlock()
			continue
		}
		s.followers = append(slices.Clip(s.followers), f)
		s.mu.Unlock()
		return func() { r.unfollow(stream, s, f) }
	}
}

func (r *Ring) unfollow(name string, s *ringStream, f *ringFollower) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.followers, f); i >= 0 {
		s.followers = slices.Delete(slices.Clone(s.followers), i, i+1)
	}
	// A stream nobody wrote to is forgotten with its last follower, so that pages
	// subscribing to made-up names cannot grow the ring without bound.
	if len(s.followers) == 0 && s.head == 0 && !s.gone {
		s.gone = true
		delete(r.streams, name)
	}
}

// newID returns n random bytes in hex.
func newID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}
