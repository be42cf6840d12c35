//go:build !js

package hub

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// seqs records the seqs of what a hub delivers to a tab, and nothing else.
type seqs struct {
	mu  sync.Mutex
	got []string
}

func (s *seqs) Deliver(_ int, d gateway.Delivery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.Reset {
		s.got = append(s.got, fmt.Sprintf("R%d", d.Seq))
	} else {
		s.got = append(s.got, fmt.Sprint(d.Seq))
	}
}
func (s *seqs) Status(Status)                        {}
func (s *seqs) Ended(int, error)                     {}
func (s *seqs) Sent(int, gateway.Sent)               {}
func (s *seqs) Replied(int, wire.RawJSON, error)     {}
func (s *seqs) Presence(int, gateway.Presence, bool) {}
func (s *seqs) String() string                       { s.mu.Lock(); defer s.mu.Unlock(); return strings.Join(s.got, " ") }

// The wire rewound for a tab behind the others still brings, ahead of its replay, the events it
// had queued before: each tab, and what the hub keeps for later ones, takes only the next event
// it lacks, so that nobody skips the replay between. The hub's stream is driven here one delivery
// at a time, as the gateway's handler would, in the order that race gives.
func TestEventsQueuedBeforeARewindNeverMakeAGap(t *testing.T) {
	synctest.Test(t, testEventsQueuedBeforeARewindNeverMakeAGap)
}

func testEventsQueuedBeforeARewindNeverMakeAGap(t *testing.T) {
	h := New(&Options{Logger: slog.New(slog.DiscardHandler)})
	defer h.Close(nil)
	join := func(after uint64) (*seqs, *Conn) {
		tab := &seqs{}
		c := h.Attach(tab)
		// Offline: the hub is built and dials nothing, so its wire subscription never delivers.
		c.Handle(In{T: MsgHello, Bootstrap: `{}`, Href: "http://page.test/page", Online: false})
		c.Handle(In{T: MsgSubscribe, ID: 1, Stream: "s", Epoch: "E", After: after})
		Sync(c)
		return tab, c
	}
	event := func(seq uint64) gateway.Delivery {
		return gateway.Delivery{Stream: "s", Seq: seq, Epoch: "E", Data: wire.RawJSON(`{}`)}
	}
	a, _ := join(10)
	h.mu.Lock()
	st := h.streams["s"]
	h.mu.Unlock()
	for seq := uint64(11); seq <= 15; seq++ {
		st.deliver(event(seq))
	}
	b, _ := join(8)                        // behind: the wire goes back to 8
	for _, seq := range []uint64{16, 17} { // queued before the rewind
		st.deliver(event(seq))
	}
	for seq := uint64(9); seq <= 18; seq++ { // the replay, then what is new
		st.deliver(event(seq))
	}
	c, _ := join(12) // after: from what the hub keeps
	synctest.Wait()  // every tab has been sent all it is given
	want := map[string]string{"a": "11 12 13 14 15 16 17 18", "b": "9 10 11 12 13 14 15 16 17 18", "c": "13 14 15 16 17 18"}
	for name, tab := range map[string]*seqs{"a": a, "b": b, "c": c} {
		if got := tab.String(); got != want[name] {
			t.Errorf("%s got %q, want %q: each event once, in order, no gap", name, got, want[name])
		}
	}
}
