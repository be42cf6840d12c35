package wire_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/internal/wire"
)

func TestReportClampsToTheBounds(t *testing.T) {
	for _, tc := range []struct {
		name         string
		down         time.Duration
		attempts     int
		wantDown     uint64
		wantAttempts uint64
	}{
		{"a report is kept as it is within the bounds", 1500 * time.Millisecond, 4, 1500, 4},
		{"a time under a millisecond is 0", 999 * time.Microsecond, 1, 0, 1},
		{"a negative time is 0", -time.Second, 1, 0, 1},
		{"a time over 30 days is 30 days", 31 * 24 * time.Hour, 1, uint64(wire.MaxReportDown.Milliseconds()), 1},
		{"no attempt is one", time.Second, 0, 1000, 1},
		{"too many attempts are the most", time.Second, wire.MaxReportAttempts + 5, 1000, wire.MaxReportAttempts},
	} {
		f := wire.Report(tc.down, tc.attempts, []string{wire.KindClosed})
		if f.DownMs != tc.wantDown || f.Attempts != tc.wantAttempts {
			t.Errorf("%s: Report(%v, %d) = downMs %d, attempts %d; want %d, %d", tc.name, tc.down, tc.attempts, f.DownMs, f.Attempts, tc.wantDown, tc.wantAttempts)
		}
		b, _ := f.Encode()
		if _, err := wire.DecodePage(b); err != nil {
			t.Errorf("%s: the Host refuses Report's frame %s: %v", tc.name, b, err)
		}
	}
}

func TestCheckKinds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kinds []string
		err   string
	}{
		{"one kind is a report", []string{wire.KindSilent}, ""},
		{"every kind once is a report", wire.ReportKinds[:], ""},
		{"no kind is refused", nil, "got 0"},
		{"a kind twice is refused", []string{wire.KindBusy, wire.KindBusy}, `"busy" twice`},
		{"a kind not in the list is refused", []string{"Closed"}, `unknown kind "Closed"`},
		{"a long unknown kind is truncated", []string{strings.Repeat("k", 100)}, strings.Repeat("k", 32) + "…"},
	} {
		err := wire.CheckKinds(tc.kinds)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: CheckKinds(%q) = %v", tc.name, tc.kinds, err)
		case tc.err != "" && (!errors.Is(err, wire.ErrReportKinds) || !errors.Is(err, wire.ErrFrame) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: CheckKinds(%q) = %v, want ErrReportKinds containing %q", tc.name, tc.kinds, err, tc.err)
		}
	}
}

// TestAReportIsSmall: a report of the longest kind list fits a few hundred bytes, far within
// the Host's smallest maxFrameBytes (512), so a page never loses its session to one.
func TestAReportIsSmall(t *testing.T) {
	b, _ := wire.Report(wire.MaxReportDown, wire.MaxReportAttempts, wire.ReportKinds[:]).Encode()
	if len(b) > 256 {
		t.Errorf("the largest report is %d bytes: %s", len(b), b)
	}
}
