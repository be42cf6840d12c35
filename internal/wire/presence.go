package wire

import (
	"bytes"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lifeline-go/lifeline/internal/jsontok"
	"github.com/lifeline-go/lifeline/internal/tinyfmt"
)

// Presence: who is on a stream (PROTOCOL.md §12). A page asks for it in its sub frame
// ("presence":true, with the presence cursor it holds); a Host that carries presence (its ready
// frame says "presence":true) answers with presence frames: a snapshot, then batched diffs.
// Only a page that asked gets them, so an older page, which would fail on a frame type it does
// not know, never does.

// TypePresence is the Host → page frame of a stream's members.
const TypePresence = "presence"

// Bounds of presence frames.
const (
	// MaxPresenceID is the longest identity a presence frame names: an identity longer than
	// this is no member (the Host says so in an error frame).
	MaxPresenceID = 256
	// MaxPresenceFrame is the largest presence frame a Host sends: a snapshot or a diff larger
	// than this goes out in several frames of one batch ("more": true on all but the last),
	// well within the page's read limit (1 MiB by default).
	MaxPresenceFrame = 32 << 10
	// MaxPresenceHold bounds a snapshot's hold: the longest grace window a Host may have.
	MaxPresenceHold = 10 * time.Minute
)

// PresenceMember is one member of a stream as a presence frame lists it: an identity (as the
// Host's Authenticate returned it), how many sessions it has on the stream across the fleet,
// and the application's metadata for it (nil: none).
type PresenceMember struct {
	ID    string  `json:"id"`
	Count int     `json:"count"`
	Meta  RawJSON `json:"meta,omitempty"`
}

// appendPresence appends a presence frame's own members: from, snapshot, more, total, limit,
// members, left (Append writes stream, seq, epoch and reason before them).
func (f HostFrame) appendPresence(b []byte) []byte {
	if f.From != 0 {
		b = strconv.AppendUint(append(b, `,"from":`...), f.From, 10)
	}
	if f.Snapshot {
		b = append(b, `,"snapshot":true`...)
	}
	if f.More {
		b = append(b, `,"more":true`...)
	}
	if f.T == TypePresence && f.Reason == "" {
		b = strconv.AppendInt(append(b, `,"total":`...), int64(f.Total), 10) // 0 included: an empty stream says so
	}
	if f.Limit != 0 {
		b = strconv.AppendInt(append(b, `,"limit":`...), int64(f.Limit), 10)
	}
	if f.HoldMs != 0 {
		b = strconv.AppendInt(append(b, `,"hold":`...), f.HoldMs, 10)
	}
	if f.Members != nil {
		b = append(b, `,"members":[`...)
		for i, m := range f.Members {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendPresenceMember(b, m)
		}
		b = append(b, ']')
	}
	if f.Left != nil {
		b = append(b, `,"left":[`...)
		for i, id := range f.Left {
			if i > 0 {
				b = append(b, ',')
			}
			b = str(b, id)
		}
		b = append(b, ']')
	}
	return b
}

// AppendPresenceMember appends m as a presence frame lists it: {"id":…,"count":…,"meta":…}.
// A Host sizes its frames with it.
func AppendPresenceMember(b []byte, m PresenceMember) []byte {
	b = str(append(b, `{"id":`...), m.ID)
	b = strconv.AppendInt(append(b, `,"count":`...), int64(m.Count), 10)
	if len(m.Meta) > 0 {
		b = append(append(b, `,"meta":`...), m.Meta...)
	}
	return append(b, '}')
}

// readMembers reads a presence frame's members: an array of {"id","count","meta"} objects.
func readMembers(d *jsontok.Decoder, dst *[]PresenceMember) error {
	if d.PeekKind() != '[' {
		return wrongKind(d, "members", "an array of members")
	}
	if _, err := d.ReadToken(); err != nil {
		return frameErr(err)
	}
	// Sized once: grown by append, the slice of a full frame's thousand members was half of
	// a page's decoding (the copies, and memory touched the first time).
	members := make([]PresenceMember, 0, membersBound(d.Unread()))
	for d.PeekKind() != ']' {
		if d.PeekKind() == '{' {
			if m, n := plainMember(d.Unread()); n > 0 {
				if err := d.Advance(n); err != nil {
					return frameErr(err)
				}
				members = append(members, m)
				continue
			}
		} else {
			if d.PeekKind() == 0 {
				_, err := d.ReadToken()
				return frameErr(err)
			}
			return wrongKind(d, "each of members", "an object")
		}
		if _, err := d.ReadToken(); err != nil {
			return frameErr(err)
		}
		var m PresenceMember
		var seenID, seenCount, seenMeta bool
		for d.PeekKind() != '}' {
			tok, err := d.ReadToken()
			if err != nil {
				return frameErr(err)
			}
			key := tok.Name() // compared without a copy: a frame of 1,000 members has 2,000 keys
			dup := false
			switch string(key) {
			case "id":
				dup, seenID = seenID, true
				if !dup {
					if d.PeekKind() != '"' {
						return wrongKind(d, "a member's id", "a string")
					}
					err = readString(d, "id", &m.ID)
				}
			case "count":
				dup, seenCount = seenCount, true
				if !dup {
					var n uint64
					err = readUint(d, "a member's count", &n)
					if err == nil && (n < 1 || n > maxPresenceCount) {
						return tinyfmt.Errorf("%w: a member's count must be in 1..%d, got %d", ErrFrame, maxPresenceCount, n)
					}
					m.Count = int(n)
				}
			case "meta":
				dup, seenMeta = seenMeta, true
				if !dup {
					err = readRaw(d, &m.Meta, true)
				}
			default:
				err = frameErr(d.SkipValue())
			}
			if dup {
				return tinyfmt.Errorf("%w: a member gives %s twice", ErrFrame, string(key))
			}
			if err != nil {
				return err
			}
		}
		if _, err := d.ReadToken(); err != nil {
			return frameErr(err)
		}
		if !seenID || !seenCount {
			return tinyfmt.Errorf("%w: a member needs an id and a count", ErrFrame)
		}
		members = append(members, m)
	}
	if _, err := d.ReadToken(); err != nil {
		return frameErr(err)
	}
	*dst = members
	return nil
}

// plainMember reads a member as a Host writes one without metadata, {"id":"…","count":N}
// with an ASCII id that needs no escape, from the start of b: the member and its length, or
// a length of 0 for anything else, which the tokens then read (and judge). Most members are
// plain, and this reads one in a fifth of the tokens' time.
func plainMember(b []byte) (PresenceMember, int) {
	const open, mid = `{"id":"`, `","count":`
	if len(b) < len(open) || string(b[:len(open)]) != open {
		return PresenceMember{}, 0
	}
	i := len(open)
	for ; i < len(b) && b[i] != '"'; i++ {
		if c := b[i]; c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			return PresenceMember{}, 0
		}
	}
	id := b[len(open):i]
	if len(b)-i < len(mid) || string(b[i:i+len(mid)]) != mid {
		return PresenceMember{}, 0
	}
	i += len(mid)
	start, count := i, uint64(0)
	for ; i < len(b) && i-start < 10 && b[i] >= '0' && b[i] <= '9'; i++ {
		count = count*10 + uint64(b[i]-'0')
	}
	if i == start || b[start] == '0' || count > maxPresenceCount || i >= len(b) || b[i] != '}' {
		return PresenceMember{}, 0
	}
	return PresenceMember{ID: string(id), Count: int(count)}, i + 1
}

// membersBound bounds how many members the rest of a frame can list: each opens a '{', and
// takes at least minMemberBytes. A frame of metadata-heavy members (more '{' than members) is
// sized at most for its length over minMemberBytes: a few times the frame, not more.
func membersBound(rest []byte) int {
	return min(bytes.Count(rest, []byte{'{'}), len(rest)/minMemberBytes)
}

// minMemberBytes is the shortest member: {"id":"","count":1}.
const minMemberBytes = len(`{"id":"","count":1}`)

// maxPresenceCount bounds a member's count as a frame may carry it: more sessions than any
// fleet holds, and well within an int of the browser's 32-bit wasm.
const maxPresenceCount = 1 << 30

// readIDs reads a presence frame's left: an array of identities.
func readIDs(d *jsontok.Decoder, dst *[]string) error {
	if d.PeekKind() != '[' {
		return wrongKind(d, "left", "an array of strings")
	}
	if _, err := d.ReadToken(); err != nil {
		return frameErr(err)
	}
	ids := []string{}
	for d.PeekKind() != ']' {
		if d.PeekKind() != '"' {
			if d.PeekKind() == 0 {
				_, err := d.ReadToken()
				return frameErr(err)
			}
			return wrongKind(d, "each of left", "a string")
		}
		tok, err := d.ReadToken()
		if err != nil {
			return frameErr(err)
		}
		ids = append(ids, tok.String())
	}
	if _, err := d.ReadToken(); err != nil {
		return frameErr(err)
	}
	*dst = ids
	return nil
}

// readCount reads a non-negative count that fits an int on every platform.
func readCount(d *jsontok.Decoder, key string, dst *int) error {
	var n uint64
	if err := readUint(d, key, &n); err != nil {
		return err
	}
	if n > maxPresenceCount {
		return tinyfmt.Errorf("%w: %s must be in 0..%d, got %d", ErrFrame, key, maxPresenceCount, n)
	}
	*dst = int(n)
	return nil
}

// validatePresence checks a presence frame: a refusal (a reason, and nothing else of
// presence), or a batch of a log of presence (an epoch; a snapshot, or a diff from an earlier
// seq), whose members and left name identities of at most MaxPresenceID bytes, none twice.
func (f HostFrame) validatePresence() error {
	if err := checkFrameStream(f.Stream); err != nil {
		return err
	}
	if f.Reason != "" {
		if f.Epoch != "" || f.Seq != 0 || f.From != 0 || f.Snapshot || f.More || f.Total != 0 || f.Limit != 0 || f.Members != nil || f.Left != nil || f.HoldMs != 0 {
			return tinyfmt.Errorf("%w: presence on %q refused with a reason carries nothing else", ErrFrame, Truncate(f.Stream))
		}
		return nil
	}
	if f.Epoch == "" {
		return tinyfmt.Errorf("%w: presence on %q without an epoch", ErrFrame, Truncate(f.Stream))
	}
	switch {
	case f.Snapshot && f.From != 0:
		return tinyfmt.Errorf("%w: a presence snapshot of %q has from=%d: a snapshot is from nothing", ErrFrame, Truncate(f.Stream), f.From)
	case !f.Snapshot && f.From >= f.Seq:
		return tinyfmt.Errorf("%w: a presence diff of %q goes from %d to %d: it must go forward", ErrFrame, Truncate(f.Stream), f.From, f.Seq)
	case f.HoldMs < 0 || f.HoldMs > MaxPresenceHold.Milliseconds():
		return tinyfmt.Errorf("%w: presence of %q holds for %d ms: must be in 0..%d", ErrFrame, Truncate(f.Stream), f.HoldMs, MaxPresenceHold.Milliseconds())
	case f.HoldMs != 0 && !f.Snapshot:
		return tinyfmt.Errorf("%w: a presence diff of %q holds: only a snapshot does", ErrFrame, Truncate(f.Stream))
	case f.Limit != 0 && len(f.Members) > f.Limit:
		return tinyfmt.Errorf("%w: presence of %q lists %d members, over its limit %d", ErrFrame, Truncate(f.Stream), len(f.Members), f.Limit)
	}
	for _, m := range f.Members {
		if len(m.ID) > MaxPresenceID {
			return tinyfmt.Errorf("%w: a presence member's id must be at most %d bytes, got %d", ErrFrame, MaxPresenceID, len(m.ID))
		}
	}
	for _, id := range f.Left {
		if len(id) > MaxPresenceID {
			return tinyfmt.Errorf("%w: a presence member's id must be at most %d bytes, got %d", ErrFrame, MaxPresenceID, len(id))
		}
	}
	if id, dup := f.namedTwice(); dup {
		return tinyfmt.Errorf("%w: presence of %q names %q twice", ErrFrame, Truncate(f.Stream), Truncate(id))
	}
	if f.Snapshot && f.Left != nil {
		return tinyfmt.Errorf("%w: a presence snapshot of %q lists who left: a snapshot lists who is there", ErrFrame, Truncate(f.Stream))
	}
	return nil
}

// namedTwice finds an id that f's members and left name twice. A Host lists each in
// ascending order (hostplugin's presence.frames sorts them), so one pass over them finds it;
// a frame in another order takes a set, which cost a page a quarter of its decoding.
func (f HostFrame) namedTwice() (string, bool) {
	sorted := true
	for i := 1; i < len(f.Members) && sorted; i++ {
		sorted = f.Members[i-1].ID < f.Members[i].ID
	}
	for i := 1; i < len(f.Left) && sorted; i++ {
		sorted = f.Left[i-1] < f.Left[i]
	}
	if sorted {
		for i, j := 0, 0; i < len(f.Members) && j < len(f.Left); {
			switch c := strings.Compare(f.Members[i].ID, f.Left[j]); {
			case c < 0:
				i++
			case c > 0:
				j++
			default:
				return f.Left[j], true
			}
		}
		return "", false
	}
	seen := make(map[string]struct{}, len(f.Members)+len(f.Left))
	for _, m := range f.Members {
		if _, dup := seen[m.ID]; dup {
			return m.ID, true
		}
		seen[m.ID] = struct{}{}
	}
	for _, id := range f.Left {
		if _, dup := seen[id]; dup {
			return id, true
		}
		seen[id] = struct{}{}
	}
	return "", false
}

// checkPresenceSub checks a page frame's presence members: a sub's alone, the cursor only
// with presence, its seq only with its epoch.
func (f PageFrame) checkPresenceSub() error {
	if f.T != TypeSub {
		if f.Presence || f.PresenceEpoch != "" || f.PresenceAfter != 0 {
			return tinyfmt.Errorf("%w: %s carries no presence, presenceEpoch or presenceAfter", ErrFrame, Truncate(f.T))
		}
		return nil
	}
	switch {
	case !f.Presence && (f.PresenceEpoch != "" || f.PresenceAfter != 0):
		return tinyfmt.Errorf("%w: sub %q has a presence cursor without presence", ErrFrame, Truncate(f.Stream))
	case f.PresenceEpoch == "" && f.PresenceAfter != 0:
		return tinyfmt.Errorf("%w: sub %q has presenceAfter=%d without a presenceEpoch", ErrFrame, Truncate(f.Stream), f.PresenceAfter)
	}
	return nil
}

// appendPresenceSub appends a sub frame's presence members.
func (f PageFrame) appendPresenceSub(b []byte) []byte {
	if !f.Presence {
		return b
	}
	b = append(b, `,"presence":true`...)
	b = optStr(b, "presenceEpoch", f.PresenceEpoch)
	if f.PresenceAfter != 0 {
		b = strconv.AppendUint(append(b, `,"presenceAfter":`...), f.PresenceAfter, 10)
	}
	return b
}
