//go:build !js

package hostplugin

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/lifeline-go/lifeline/gateway/wire"
)

// hub fans the events of one stream out to the sessions that follow it. It exists while at
// least one session follows the stream, and follows the log for them.
//
// Lock order: Host.hubsMu, then hub.mu, then Host.baseMu or the log's own locks; the log calls
// deliver with none of these held.
type hub struct {
	h      *Host
	stream string
	mu     sync.Mutex
	subs   map[*session]Cursor // what each session holds; events at or before it are not resent
	dead   bool                // removed from Host.hubs: a joiner must fetch a new hub
	stop   func()
}

// join subscribes s to stream from cur: it replays what the log holds after cur, or resets s
// to the log's head (a fresh subscription, a cursor too old, from another epoch or from the
// future), then s receives live events.
func (h *Host) join(s *session, stream string, cur Cursor) (*hub, error) {
	for {
		hb := h.hubFor(stream)
		hb.mu.Lock()
		if hb.dead {
			// The last follower left between hubFor and Lock.
			hb.mu.Unlock()
			continue
		}
		err := hb.catchUp(s, cur)
		hb.mu.Unlock()
		if err != nil {
			h.leave(hb, s)
			return nil, err
		}
		return hb, nil
	}
}

// catchUp sends s what it misses after cur and records its new cursor. hb.mu is held, so no
// live event of this stream is delivered meanwhile.
func (hb *hub) catchUp(s *session, cur Cursor) error {
	// Follow was registered when the hub was made, before this read: an event appended since
	// is either in this answer or delivered after we unlock, and then dropped by the cursor.
	events, head, ok, err := hb.h.log.Since(context.Background(), hb.stream, cur)
	if err != nil {
		return err
	}
	if !ok {
		s.send(hb.resetFrame(head))
		hb.subs[s] = head
		return nil
	}
	last := cur
	for _, ev := range events {
		frame, err := eventFrame(hb.stream, ev)
		if err != nil {
			// Never a silent gap: reset to the head instead.
			hb.h.logger.Error("hostplugin: cannot encode a logged event; resetting the page", "stream", hb.stream, "seq", ev.Seq, "err", err)
			s.send(hb.resetFrame(head))
			hb.subs[s] = head
			return nil
		}
		s.send(frame)
		last = Cursor{Epoch: ev.Epoch, Seq: ev.Seq}
	}
	hb.subs[s] = last
	return nil
}

// deliver is the hub's Follow callback: one event, to every session that does not hold it.
func (hb *hub) deliver(ev Event) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if hb.dead || len(hb.subs) == 0 {
		return
	}
	var frame, reset []byte
	for s, cur := range hb.subs {
		if cur.Epoch == ev.Epoch && ev.Seq <= cur.Seq {
			continue // replayed already
		}
		if cur.Epoch == ev.Epoch && ev.Seq == cur.Seq+1 {
			if frame == nil {
				var err error
				if frame, err = eventFrame(hb.stream, ev); err != nil {
					// Cursors stay put: the next event finds the gap and resets.
					hb.h.logger.Error("hostplugin: cannot encode an event; its followers will be reset", "stream", hb.stream, "seq", ev.Seq, "err", err)
					return
				}
			}
			s.send(frame)
		} else {
			// Another epoch, or a gap in what the log delivered: never a silent gap.
			if reset == nil {
				reset = hb.resetFrame(Cursor{Epoch: ev.Epoch, Seq: ev.Seq})
			}
			s.send(reset)
		}
		hb.subs[s] = Cursor{Epoch: ev.Epoch, Seq: ev.Seq}
	}
}

func eventFrame(stream string, ev Event) ([]byte, error) {
	return wire.ServerFrame{T: wire.TypeEvent, Stream: stream, Seq: ev.Seq, Data: wire.RawJSON(ev.Data)}.Encode()
}

// resetFrame builds the reset to head, with the stream's baseline when it has one.
func (hb *hub) resetFrame(head Cursor) []byte {
	f := wire.ServerFrame{T: wire.TypeReset, Stream: hb.stream, Epoch: head.Epoch, Seq: head.Seq}
	if base, err := hb.h.baseline(hb.stream, head); err != nil {
		hb.h.logger.Error("hostplugin: baseline failed; the reset carries none", "stream", hb.stream, "err", err)
	} else if base != nil && !json.Valid(base) {
		hb.h.logger.Error("hostplugin: baseline is not valid JSON; the reset carries none", "stream", hb.stream)
	} else if base != nil {
		f.Baseline = wire.RawJSON(base)
	}
	return mustEncode(f)
}

// baseline calls the stream's BaselineFunc, if any, turning a panic into an error: the
// function belongs to the application, and one bad baseline must not end a session.
func (h *Host) baseline(stream string, head Cursor) (b json.RawMessage, err error) {
	h.baseMu.RLock()
	fn := h.baselines[stream]
	h.baseMu.RUnlock()
	if fn == nil {
		return nil, nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("hostplugin: baseline of %q panicked: %v", stream, p)
		}
	}()
	return fn(stream, head)
}

// hubFor returns the live hub of stream, making it (and its Follow) when there is none.
func (h *Host) hubFor(stream string) *hub {
	h.hubsMu.Lock()
	defer h.hubsMu.Unlock()
	if hb := h.hubs[stream]; hb != nil {
		return hb
	}
	hb := &hub{h: h, stream: stream, subs: map[*session]Cursor{}}
	hb.stop = h.log.Follow(stream, hb.deliver)
	h.hubs[stream] = hb
	return hb
}

// leave unsubscribes s; the last one out removes the hub and stops its Follow.
func (h *Host) leave(hb *hub, s *session) {
	hb.mu.Lock()
	delete(hb.subs, s)
	empty := len(hb.subs) == 0
	hb.mu.Unlock()
	if !empty {
		return
	}
	h.hubsMu.Lock()
	hb.mu.Lock()
	kill := len(hb.subs) == 0 && !hb.dead
	if kill {
		hb.dead = true
		delete(h.hubs, hb.stream)
	}
	hb.mu.Unlock()
	h.hubsMu.Unlock()
	if kill {
		hb.stop()
	}
}
