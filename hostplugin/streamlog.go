//go:build !js

package hostplugin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sync"
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
// The zero Ring is not usable; call [NewRing]. A Ring is safe for concurrent use.
type Ring struct {
	epoch string

	// amu serialises each append with its Follow callbacks, so that followers see events in
	// seq order while mu stays free for Since (which a follower may be waiting on).
	amu sync.Mutex

	mu      sync.Mutex // guards everything below
	size    int
	streams map[string]*ringStream
	nextID  uint64
}

type ringStream struct {
	events    []Event // a circle once len == size; oldest at start
	start     int
	head      uint64
	followers map[uint64]func(Event)
}

// NewRing returns a Ring keeping the newest size events of each stream (at least 1).
func NewRing(size int) *Ring {
	return &Ring{epoch: newID(8), size: max(size, 1), streams: map[string]*ringStream{}}
}

// Epoch is the ring's epoch, shared by all its streams.
func (r *Ring) Epoch() string { return r.epoch }

// SetSize changes how many events each stream keeps, dropping the oldest when it shrinks.
// Sequence numbers and the epoch stay: readers within the new window still replay.
func (r *Ring) SetSize(size int) {
	size = max(size, 1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if size == r.size {
		return
	}
	r.size = size
	for _, s := range r.streams {
		ordered := s.ordered()
		if len(ordered) > size {
			ordered = ordered[len(ordered)-size:]
		}
		s.events = append(make([]Event, 0, min(len(ordered), size)), ordered...)
		s.start = 0
	}
}

// ordered returns the kept events oldest first (a new slice).
func (s *ringStream) ordered() []Event {
	out := make([]Event, 0, len(s.events))
	out = append(out, s.events[s.start:]...)
	return append(out, s.events[:s.start]...)
}

func (r *Ring) stream(name string) *ringStream {
	s := r.streams[name]
	if s == nil {
		s = &ringStream{}
		r.streams[name] = s
	}
	return s
}

// Append implements [StreamLog]. It copies data.
func (r *Ring) Append(_ context.Context, stream string, data json.RawMessage) (Event, error) {
	r.amu.Lock()
	defer r.amu.Unlock()

	r.mu.Lock()
	s := r.stream(stream)
	s.head++
	ev := Event{Epoch: r.epoch, Seq: s.head, Data: append(json.RawMessage(nil), data...)}
	if len(s.events) < r.size {
		s.events = append(s.events, ev)
	} else {
		s.events[s.start] = ev
		s.start = (s.start + 1) % len(s.events)
	}
	fns := make([]func(Event), 0, len(s.followers))
	for _, fn := range s.followers {
		fns = append(fns, fn)
	}
	r.mu.Unlock()

	for _, fn := range fns {
		fn(ev)
	}
	return ev, nil
}

// Since implements [StreamLog].
func (r *Ring) Since(_ context.Context, stream string, cur Cursor) ([]Event, Cursor, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.streams[stream]
	if s == nil {
		head := Cursor{Epoch: r.epoch}
		return nil, head, cur == head, nil
	}
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
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stream(stream)
	if s.followers == nil {
		s.followers = map[uint64]func(Event){}
	}
	r.nextID++
	id := r.nextID
	s.followers[id] = fn
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(s.followers, id)
		// A stream nobody wrote to is forgotten with its last follower, so that pages
		// subscribing to made-up names cannot grow the ring without bound.
		if len(s.followers) == 0 && s.head == 0 && r.streams[stream] == s {
			delete(r.streams, stream)
		}
	}
}

// newID returns n random bytes in hex.
func newID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}
