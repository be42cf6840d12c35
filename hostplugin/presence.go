//go:build !js

package hostplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// Presence turns on presence (Options.Presence): who is on a stream, on any Host of the fleet.
// A session subscribed to a stream that carries presence is a member of it, under its
// identity (what Authenticate returned): every session of one identity is one member, with a
// count. A page that asks (its sub says so) is sent the stream's members and then every
// change, in batches; the same Authorize that lets a session read a stream lets it see its
// presence. A member leaves only once its last session has been gone for the config's
// presenceGraceMs, so a reconnect, a move to another Host, a restart with a handoff or a change
// of carrier shows no one leaving or joining. README ("Who is here") and docs/PROTOCOL.md §12 are the guide.
type Presence struct {
	// Streams says which streams carry presence. Required: New refuses a Presence without it.
	// It is called on the session's reading goroutine for every sub; a panic counts as false.
	Streams func(stream string) bool
	// Meta returns what pages are shown of a member beside its identity (a display name, an
	// avatar's URL): one JSON value of at most MaxMetaBytes. It is called once per session,
	// when the session first becomes a member of a stream, on its reading goroutine. An error,
	// a panic, invalid JSON or a value over MaxMetaBytes makes the member join without
	// metadata; its page is told why in an error frame, and the Host logs it. Default none:
	// members are shown by identity alone. Whatever it returns is shown to everyone who may
	// read the stream: it must name no secret.
	Meta func(identity string) (json.RawMessage, error)
	// MaxMembers is how many members of a stream pages are listed; past it they are told the
	// count of every member and listed the first MaxMembers (each frame says the limit).
	// Default DefaultMaxMembers; at most MaxPresenceMembers.
	MaxMembers int
	// MaxMetaBytes bounds a member's metadata. Default DefaultMaxMetaBytes; at most
	// MaxPresenceMetaBytes.
	MaxMetaBytes int
	// Fleet carries presence between the Hosts of a fleet, so that every Host knows every
	// member (hostplugin/jetstream's NewPresence, on the NATS of a JetStream log). Default
	// none: one Host, which needs nothing more.
	Fleet PresenceFleet
}

// Bounds and defaults of [Presence].
const (
	DefaultMaxMembers    = 1000
	MaxPresenceMembers   = 100000
	DefaultMaxMetaBytes  = 1024
	MaxPresenceMetaBytes = 16 << 10
)

// A Member is one member of a stream, as [Host.Members] lists it.
type Member struct {
	// Identity is what Authenticate returned for its sessions.
	Identity string `json:"id"`
	// Count is how many of its sessions follow the stream, across the fleet.
	Count int `json:"count"`
	// Meta is what Presence.Meta gave for it; nil for none.
	Meta json.RawMessage `json:"meta,omitempty"`
}

// ErrNoPresence is returned by [Host.Members] for a Host without Options.Presence, or a stream
// its Presence.Streams does not name.
var ErrNoPresence = errors.New("hostplugin: no presence")

// Members lists the members of stream across the fleet, as its pages are shown them (a member
// whose last session left within the grace window is still one), each with its count and
// metadata, ordered by identity. Unlike a page, it lists every member, past MaxMembers too.
func (h *Host) Members(ctx context.Context, stream string) ([]Member, error) {
	if err := checkStreamName(stream); err != nil {
		return nil, err
	}
	if h.pres == nil {
		return nil, fmt.Errorf("%w: Options.Presence is nil", ErrNoPresence)
	}
	if !h.pres.carries(stream) {
		return nil, fmt.Errorf("%w: Presence.Streams(%q) is false", ErrNoPresence, wire.Truncate(stream))
	}
	if h.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return h.pres.members(stream), nil
}

// checkPresence checks the application's Presence and applies its defaults to a copy.
func checkPresence(p *Presence) (Presence, error) {
	o := *p
	switch {
	case o.Streams == nil:
		return o, errors.New("hostplugin: Options.Presence.Streams is nil: set it to say which streams carry presence")
	case o.MaxMembers < 0 || o.MaxMembers > MaxPresenceMembers:
		return o, fmt.Errorf("hostplugin: Options.Presence.MaxMembers must be in 0..%d (0: %d), got %d", MaxPresenceMembers, DefaultMaxMembers, o.MaxMembers)
	case o.MaxMetaBytes < 0 || o.MaxMetaBytes > MaxPresenceMetaBytes:
		return o, fmt.Errorf("hostplugin: Options.Presence.MaxMetaBytes must be in 0..%d (0: %d), got %d", MaxPresenceMetaBytes, DefaultMaxMetaBytes, o.MaxMetaBytes)
	}
	if o.MaxMembers == 0 {
		o.MaxMembers = DefaultMaxMembers
	}
	if o.MaxMetaBytes == 0 {
		o.MaxMetaBytes = DefaultMaxMetaBytes
	}
	return o, nil
}

// sessionPresence is what a session holds of presence: the streams it is a member or a
// watcher of, and its metadata, asked for once. Its reader only (like subs).
type sessionPresence struct {
	streams map[string]presenceRole
	meta    wire.RawJSON
	asked   bool // Meta was called
	refused bool // its identity cannot be a member (told once)
}

// presenceRole is what a session is of a stream's presence.
type presenceRole struct{ member, watcher bool }

// presenceSub makes s a member of the stream of the sub frame f when the stream carries
// presence, and a watcher of it when f asks for presence. It runs after the sub was
// authorized and joined, so the stream's reset goes out before any presence frame.
func (s *session) presenceSub(f wire.PageFrame) {
	p := s.h.pres
	if p == nil {
		return // the ready frame said nothing of presence: a page asking is ignored, as by an older Host
	}
	if !p.carries(f.Stream) {
		if f.Presence {
			s.send(mustEncode(wire.HostFrame{T: wire.TypePresence, Stream: f.Stream,
				Reason: fmt.Sprintf("stream %q carries no presence (Presence.Streams)", wire.Truncate(f.Stream))}))
		}
		return
	}
	member := s.presenceIdentity(f.Stream)
	var meta wire.RawJSON
	if member {
		meta = s.presenceMeta(f.Stream)
	}
	was := s.pres.streams[f.Stream]
	var cur *Cursor
	if f.Presence {
		cur = &Cursor{Epoch: f.PresenceEpoch, Seq: f.PresenceAfter}
	}
	p.subscribe(s, f.Stream, member && !was.member, meta, cur, was.watcher)
	if s.pres.streams == nil {
		s.pres.streams = map[string]presenceRole{}
	}
	s.pres.streams[f.Stream] = presenceRole{member: member, watcher: f.Presence}
}

// presenceUnsub ends s's membership of stream, and its watch.
func (s *session) presenceUnsub(stream string) {
	p := s.h.pres
	if p == nil {
		return
	}
	role, ok := s.pres.streams[stream]
	if !ok {
		return
	}
	delete(s.pres.streams, stream)
	p.unsubscribe(s, stream, role.member, role.watcher)
}

// presenceEnd ends every membership and watch of s: its session is over.
func (s *session) presenceEnd() {
	if s.h.pres == nil {
		return
	}
	for stream := range s.pres.streams {
		s.presenceUnsub(stream)
	}
}

// presenceIdentity reports whether s's identity can be a member; one that no presence frame
// can carry is refused, and its page told once.
func (s *session) presenceIdentity(stream string) bool {
	if len(s.identity) <= wire.MaxPresenceID {
		return true
	}
	if !s.pres.refused {
		s.pres.refused = true
		msg := fmt.Sprintf("presence %q: this session's identity is %d bytes, over the %d a member's may be: it is no member (it still sees the others)",
			wire.Truncate(stream), len(s.identity), wire.MaxPresenceID)
		s.send(errorFrame(msg))
		s.h.thin.presence.Do(func() { s.h.logger.Warn("hostplugin: "+msg, "session", s.id) })
	}
	return false
}

// presenceMeta asks Presence.Meta for s's metadata, once per session. What is wrong with it
// is the application's: the member joins without it, its page is told why, and the Host logs
// it; nobody else is affected.
func (s *session) presenceMeta(stream string) wire.RawJSON {
	if s.pres.asked {
		return s.pres.meta
	}
	s.pres.asked = true
	p := s.h.pres
	if p.opts.Meta == nil {
		return nil
	}
	meta, err := p.callMeta(s.identity)
	switch {
	case err != nil:
	case meta == nil:
	case len(meta) > p.opts.MaxMetaBytes:
		err = fmt.Errorf("its metadata is %d bytes, over Presence.MaxMetaBytes (%d)", len(meta), p.opts.MaxMetaBytes)
	case wire.CheckValue(wire.RawJSON(meta)) != nil:
		err = errors.New("its metadata is not one JSON value")
	default:
		s.pres.meta = wire.RawJSON(slices.Clone([]byte(meta)))
		return s.pres.meta
	}
	if err != nil {
		msg := fmt.Sprintf("presence %q: %s; the member joins without metadata", wire.Truncate(stream), firstLine(err.Error()))
		s.send(errorFrame(msg))
		s.h.thin.presence.Do(func() {
			s.h.logger.Warn("hostplugin: Presence.Meta: "+msg, "session", s.id, "identity", wire.Truncate(s.identity))
		})
	}
	return nil
}

// callMeta calls Presence.Meta, a panic turned into an error.
func (p *presence) callMeta(identity string) (meta json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			p.h.logger.Error("hostplugin: Presence.Meta panicked", "panic", r, "stack", string(debug.Stack()))
			meta, err = nil, errors.New("Presence.Meta panicked")
		}
	}()
	return p.opts.Meta(identity)
}

// carries calls Presence.Streams, a panic counted as false.
func (p *presence) carries(stream string) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			ok = false
			p.h.logger.Error("hostplugin: Presence.Streams panicked; the stream carries no presence", "stream", wire.Truncate(stream), "panic", r, "stack", string(debug.Stack()))
		}
	}()
	return p.opts.Streams(stream)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
