package wire

import (
	"strconv"
	"time"

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
	members := []PresenceMember{}
	for d.PeekKind() != ']' {
		if d.PeekKind() != '{' {
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
	seen := make(map[string]struct{}, len(f.Members)+len(f.Left))
	for _, m := range f.Members {
		if len(m.ID) > MaxPresenceID {
			return tinyfmt.Errorf("%w: a presence member's id must be at most %d bytes, got %d", ErrFrame, MaxPresenceID, len(m.ID))
		}
		if _, dup := seen[m.ID]; dup {
			return tinyfmt.Errorf("%w: presence of %q names %q twice", ErrFrame, Truncate(f.Stream), Truncate(m.ID))
		}
		seen[m.ID] = struct{}{}
	}
	for _, id := range f.Left {
		if len(id) > MaxPresenceID {
			return tinyfmt.Errorf("%w: a presence member's id must be at most %d bytes, got %d", ErrFrame, MaxPresenceID, len(id))
		}
		if _, dup := seen[id]; dup {
			return tinyfmt.Errorf("%w: presence of %q names %q twice", ErrFrame, Truncate(f.Stream), Truncate(id))
		}
		seen[id] = struct{}{}
	}
	if f.Snapshot && f.Left != nil {
		return tinyfmt.Errorf("%w: a presence snapshot of %q lists who left: a snapshot lists who is there", ErrFrame, Truncate(f.Stream))
	}
	return nil
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
