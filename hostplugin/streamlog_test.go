//go:build !js

package hostplugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
)

func appendN(t *testing.T, r *hostplugin.Ring, stream string, n int) {
	t.Helper()
	for i := range n {
		if _, err := r.Append(context.Background(), stream, json.RawMessage(fmt.Sprint(i+1))); err != nil {
			t.Fatal(err)
		}
	}
}

func seqs(events []hostplugin.Event) []uint64 {
	var out []uint64
	for _, e := range events {
		out = append(out, e.Seq)
	}
	return out
}

func TestRingSinceReplaysWithinTheWindowAndResetsOutsideIt(t *testing.T) {
	r := hostplugin.NewRing(4)
	appendN(t, r, "s", 10) // keeps 7..10
	e := r.Epoch()
	tests := []struct {
		name   string
		stream string
		cur    hostplugin.Cursor
		want   []uint64
		ok     bool
		head   uint64
	}{
		{"a cursor in the window gets what follows", "s", hostplugin.Cursor{Epoch: e, Seq: 8}, []uint64{9, 10}, true, 10},
		{"a cursor just before the window gets all of it", "s", hostplugin.Cursor{Epoch: e, Seq: 6}, []uint64{7, 8, 9, 10}, true, 10},
		{"a cursor at the head gets nothing", "s", hostplugin.Cursor{Epoch: e, Seq: 10}, nil, true, 10},
		{"a cursor older than the window is not continued", "s", hostplugin.Cursor{Epoch: e, Seq: 5}, nil, false, 10},
		{"a cursor from the future is not continued", "s", hostplugin.Cursor{Epoch: e, Seq: 11}, nil, false, 10},
		{"a cursor of another epoch is not continued", "s", hostplugin.Cursor{Epoch: "other", Seq: 9}, nil, false, 10},
		{"a fresh reader is not continued", "s", hostplugin.Cursor{}, nil, false, 10},
		{"an unknown stream continues a zero cursor of its epoch", "t", hostplugin.Cursor{Epoch: e}, nil, true, 0},
		{"an unknown stream resets a fresh reader", "t", hostplugin.Cursor{}, nil, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events, head, ok, err := r.Since(context.Background(), tt.stream, tt.cur)
			if err != nil || ok != tt.ok || !slices.Equal(seqs(events), tt.want) || head != (hostplugin.Cursor{Epoch: e, Seq: tt.head}) {
				t.Errorf("Since(%s, %+v) = %v, head %+v, ok %v, %v; want %v, head %d, ok %v",
					tt.stream, tt.cur, seqs(events), head, ok, err, tt.want, tt.head, tt.ok)
			}
		})
	}
}

func TestRingSetSizeKeepsTheNewestEvents(t *testing.T) {
	r := hostplugin.NewRing(8)
	appendN(t, r, "s", 10) // keeps 3..10
	r.SetSize(3)
	events, _, ok, _ := r.Since(context.Background(), "s", hostplugin.Cursor{Epoch: r.Epoch(), Seq: 7})
	if !ok || !slices.Equal(seqs(events), []uint64{8, 9, 10}) {
		t.Errorf("after shrinking to 3: %v, ok %v; want 8 9 10", seqs(events), ok)
	}
	if _, _, ok, _ := r.Since(context.Background(), "s", hostplugin.Cursor{Epoch: r.Epoch(), Seq: 6}); ok {
		t.Errorf("after shrinking to 3, a cursor at 6 is still continued")
	}
	r.SetSize(5)
	appendN(t, r, "s", 2) // 11, 12
	events, _, ok, _ = r.Since(context.Background(), "s", hostplugin.Cursor{Epoch: r.Epoch(), Seq: 7})
	if !ok || !slices.Equal(seqs(events), []uint64{8, 9, 10, 11, 12}) {
		t.Errorf("after growing to 5: %v, ok %v; want 8..12", seqs(events), ok)
	}
}

func TestRingFollowSeesEveryLaterAppendInOrder(t *testing.T) {
	r := hostplugin.NewRing(2)
	appendN(t, r, "s", 3)
	var got []uint64
	stop := r.Follow("s", func(e hostplugin.Event) { got = append(got, e.Seq) })
	appendN(t, r, "s", 3)
	appendN(t, r, "other", 1)
	stop()
	appendN(t, r, "s", 1)
	if !slices.Equal(got, []uint64{4, 5, 6}) {
		t.Errorf("followed %v, want 4 5 6", got)
	}
}

func TestRingsHaveDistinctEpochs(t *testing.T) {
	if a, b := hostplugin.NewRing(1).Epoch(), hostplugin.NewRing(1).Epoch(); a == b || a == "" {
		t.Errorf("epochs %q and %q", a, b)
	}
}

// flakyLog is a StreamLog that can be made to fail, standing in for a remote log.
type flakyLog struct {
	*hostplugin.Ring
	fail atomic.Bool
}

var errLogDown = errors.New("log down")

func (l *flakyLog) Append(ctx context.Context, stream string, data json.RawMessage) (hostplugin.Event, error) {
	if l.fail.Load() {
		return hostplugin.Event{}, errLogDown
	}
	return l.Ring.Append(ctx, stream, data)
}

func (l *flakyLog) Since(ctx context.Context, stream string, cur hostplugin.Cursor) ([]hostplugin.Event, hostplugin.Cursor, bool, error) {
	if l.fail.Load() {
		return nil, hostplugin.Cursor{}, false, errLogDown
	}
	return l.Ring.Since(ctx, stream, cur)
}

func TestAFailingStreamLogIsReportedAndRecoveredFrom(t *testing.T) {
	log := &flakyLog{Ring: hostplugin.NewRing(8)}
	h, err := hostplugin.New(hostplugin.DefaultConfig(), &hostplugin.Options{Log: log, Logger: slog.New(&logs{}), Authorize: hostplugin.PublicStreams})
	if err != nil {
		t.Fatal(err)
	}
	hostplugin.SetLogRetry(h, 10*time.Millisecond)
	h.SetReady(true)
	srv := httptest.NewServer(endpointOnly(h))
	t.Cleanup(func() { // before the client's cleanup, which closes its socket first
		_ = h.Close()
		srv.Close()
	})
	f := &fixture{H: h, Srv: srv}
	c := f.Dial(t)
	c.Expect(wire.TypeReady)

	log.fail.Store(true)
	if _, err := h.Publish(context.Background(), "s", json.RawMessage(`1`)); !errors.Is(err, errLogDown) {
		t.Errorf("Publish with the log down: %v, want it wrapped", err)
	}
	c.Send(`{"t":"sub","stream":"s"}`)
	if e := c.Expect(wire.TypeError); !strings.Contains(e.Message, "stream log is unavailable") {
		t.Errorf("error frame %q", e.Message)
	}

	// The Host tries the catch-up again by itself (every 10, 20, 40… ms here): once the log is
	// back the page is served from where it stands, without subscribing again.
	log.fail.Store(false)
	if r := c.Expect(wire.TypeReset); r.Seq != 0 {
		t.Errorf("after the log came back: %+v, want the reset to 0", r)
	}
	publish(t, h, "s", `2`)
	if ev := c.Expect(wire.TypeEvent); ev.Seq != 1 {
		t.Errorf("event %+v, want seq 1 (the failed append took no number)", ev)
	}
}
