package gateway_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// step is one status the controller publishes at t0+at, or (hidden non-nil) the page hiding
// or showing.
type step struct {
	at      time.Duration
	state   controller.State
	attempt uint64
	err     error
	hidden  *bool
}

var (
	yes, no    = true, false
	errClosed  = fmt.Errorf("%w: EOF", gateway.ErrSessionClosed)
	errRefused = fmt.Errorf("%w: ws://h: connection refused", gateway.ErrDial)
	errTimeout = fmt.Errorf("%w after 15s", controller.ErrDeadline)
	errBusy    = &controller.RetryAfterError{After: time.Second, Err: fmt.Errorf("%w: 1013", gateway.ErrOverloaded)}
)

// TestAReportSaysWhatThePageLivedThroughBetweenTwoConnections: the statuses from a lost session
// to the next ready, as a table of moments, and the report that ready sends (or none).
func TestAReportSaysWhatThePageLivedThroughBetweenTwoConnections(t *testing.T) {
	const (
		C  = controller.Connecting
		OK = controller.Connected
		R  = controller.Reconnecting
		U  = controller.Unauthorized
		X  = controller.Offline
		S  = controller.Stopped
	)
	s := time.Second
	tests := []struct {
		name  string
		steps []step
		want  []wire.PageFrame // one per Connected
	}{
		{"a first connection ends no outage", []step{{0, C, 1, nil, nil}, {s, OK, 1, nil, nil}}, []wire.PageFrame{{}}},
		{"a first connection after failures ends no outage either",
			[]step{{0, C, 1, nil, nil}, {s, R, 1, errRefused, nil}, {2 * s, C, 2, errRefused, nil}, {3 * s, OK, 2, nil, nil}}, []wire.PageFrame{{}}},
		{"a session lost and the next attempt ready: one attempt, the cause",
			[]step{{0, OK, 1, nil, nil}, {10 * s, R, 1, errClosed, nil}, {11 * s, C, 2, errClosed, nil}, {11500 * time.Millisecond, OK, 2, nil, nil}},
			[]wire.PageFrame{{}, wire.Report(1500*time.Millisecond, 1, []string{wire.KindClosed})}},
		{"every kind on the way, each once, in the order met",
			[]step{{0, OK, 3, nil, nil}, {s, R, 3, errClosed, nil}, {2 * s, C, 4, errClosed, nil}, {3 * s, R, 4, errRefused, nil},
				{4 * s, C, 5, errRefused, nil}, {5 * s, R, 5, errTimeout, nil}, {6 * s, C, 6, errTimeout, nil}, {7 * s, R, 6, errRefused, nil},
				{8 * s, C, 7, errRefused, nil}, {9 * s, R, 7, errBusy, nil}, {10 * s, C, 8, errBusy, nil}, {12 * s, OK, 8, nil, nil}},
			[]wire.PageFrame{{}, wire.Report(11*s, 5, []string{wire.KindClosed, wire.KindRefused, wire.KindTimeout, wire.KindBusy})}},
		{"a second failure of the same kind is still one kind",
			[]step{{0, OK, 1, nil, nil}, {s, R, 1, errClosed, nil}, {2 * s, C, 2, errClosed, nil}, {3 * s, R, 2, fmt.Errorf("%w: reset", gateway.ErrSessionClosed), nil},
				{4 * s, C, 3, nil, nil}, {5 * s, OK, 3, nil, nil}},
			[]wire.PageFrame{{}, wire.Report(4*s, 2, []string{wire.KindClosed})}},
		{"a browser offline while connected: offline, and the time until it is back",
			[]step{{0, OK, 1, nil, nil}, {s, X, 1, nil, nil}, {61 * s, C, 2, nil, nil}, {62 * s, OK, 2, nil, nil}},
			[]wire.PageFrame{{}, wire.Report(61*s, 1, []string{wire.KindOffline})}},
		{"offline during an outage is named after its cause",
			[]step{{0, OK, 1, nil, nil}, {s, R, 1, errClosed, nil}, {2 * s, X, 1, errClosed, nil}, {3 * s, C, 2, errClosed, nil}, {4 * s, OK, 2, nil, nil}},
			[]wire.PageFrame{{}, wire.Report(3*s, 1, []string{wire.KindClosed, wire.KindOffline})}},
		{"a refused credential on the way is named",
			[]step{{0, OK, 1, nil, nil}, {s, R, 1, errClosed, nil}, {2 * s, C, 2, errClosed, nil},
				{3 * s, U, 2, fmt.Errorf("gateway: 401: %w", controller.ErrUnauthorized), nil}, {13 * s, C, 3, nil, nil}, {14 * s, OK, 3, nil, nil}},
			[]wire.PageFrame{{}, wire.Report(13*s, 2, []string{wire.KindClosed, wire.KindUnauthorized})}},
		{"a page hidden during the outage says so",
			[]step{{0, OK, 1, nil, nil}, {s, R, 1, errClosed, nil}, {2 * s, 0, 0, nil, &yes}, {30 * s, 0, 0, nil, &no}, {31 * s, C, 2, errClosed, nil}, {32 * s, OK, 2, nil, nil}},
			[]wire.PageFrame{{}, wire.Report(31*s, 1, []string{wire.KindClosed, wire.KindHidden})}},
		{"a page hidden before the outage says so too",
			[]step{{0, 0, 0, nil, &yes}, {0, OK, 1, nil, nil}, {s, R, 1, errClosed, nil}, {2 * s, C, 2, errClosed, nil}, {3 * s, OK, 2, nil, nil}},
			[]wire.PageFrame{{}, wire.Report(2*s, 1, []string{wire.KindClosed, wire.KindHidden})}},
		{"a page hidden and shown again while connected says nothing",
			[]step{{0, OK, 1, nil, nil}, {s, 0, 0, nil, &yes}, {2 * s, 0, 0, nil, &no}, {3 * s, R, 1, errClosed, nil}, {4 * s, C, 2, errClosed, nil}, {5 * s, OK, 2, nil, nil}},
			[]wire.PageFrame{{}, wire.Report(2*s, 1, []string{wire.KindClosed})}},
		{"a reconnect the page asked for is other, and its attempt in flight is the first",
			[]step{{0, OK, 4, nil, nil}, {s, C, 5, nil, nil}, {1200 * time.Millisecond, OK, 5, nil, nil}},
			[]wire.PageFrame{{}, wire.Report(200*time.Millisecond, 1, []string{wire.KindOther})}},
		{"a stop ends the record: the application stopped it, nothing failed",
			[]step{{0, OK, 1, nil, nil}, {s, R, 1, errClosed, nil}, {2 * s, S, 1, errClosed, nil}, {60 * s, C, 2, errClosed, nil}, {61 * s, OK, 2, nil, nil}},
			[]wire.PageFrame{{}, {}}},
		{"a stop while connected, then a start, is no outage",
			[]step{{0, OK, 1, nil, nil}, {s, S, 1, nil, nil}, {60 * s, C, 2, nil, nil}, {61 * s, OK, 2, nil, nil}},
			[]wire.PageFrame{{}, {}}},
		{"a draining session lost while its successor dials: the successor's attempt is the first, the loss the cause",
			[]step{{0, OK, 1, nil, nil}, {s, OK, 2, nil, nil}, {2 * s, C, 2, errClosed, nil}, {3 * s, OK, 2, nil, nil}},
			[]wire.PageFrame{{}, {}, wire.Report(s, 1, []string{wire.KindClosed})}},
		{"a handover keeps the page connected: no report",
			[]step{{0, OK, 1, nil, nil}, {s, OK, 2, nil, nil}, {2 * s, OK, 2, nil, nil}},
			[]wire.PageFrame{{}, {}, {}}},
		{"two outages, two reports",
			[]step{{0, OK, 1, nil, nil}, {s, R, 1, errClosed, nil}, {2 * s, C, 2, errClosed, nil}, {3 * s, OK, 2, nil, nil},
				{10 * s, R, 2, errTimeout, nil}, {11 * s, C, 3, errTimeout, nil}, {12 * s, OK, 3, nil, nil}},
			[]wire.PageFrame{{}, wire.Report(2*s, 1, []string{wire.KindClosed}), wire.Report(2*s, 1, []string{wire.KindTimeout})}},
	}
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		var r gateway.OutageRecord
		var got []wire.PageFrame
		for _, st := range tt.steps {
			if st.hidden != nil {
				r.SetHidden(*st.hidden)
				continue
			}
			f, ok := r.Observe(controller.Status{State: st.state, Attempt: st.attempt, Err: st.err, At: t0.Add(st.at)})
			if ok != (f.T == wire.TypeReport) || ok && st.state != controller.Connected {
				t.Fatalf("%s: Observe(%s) = %+v, %v", tt.name, st.state, f, ok)
			}
			if st.state == controller.Connected {
				got = append(got, f)
			}
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: reports %+v, want %+v", tt.name, got, tt.want)
		}
		for _, f := range got {
			if f.T == "" {
				continue
			}
			b, _ := f.Encode()
			if _, err := wire.DecodePage(b); err != nil {
				t.Errorf("%s: the Host would refuse the report %s: %v", tt.name, b, err)
			}
		}
	}
}
