package testbed

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestLinesWaitSeesALineThatArrivesLaterAndFailsWithTheOutput(t *testing.T) {
	var l Lines
	r, w := io.Pipe()
	go l.Read(r)
	go func() {
		io.WriteString(w, "starting\n")
		time.Sleep(20 * time.Millisecond)
		io.WriteString(w, "serving url=http://x pid=7\n")
		w.Close()
	}()
	m, at, i, err := l.Wait(regexp.MustCompile(`serving url=(\S+) pid=(\d+)`), 0, 5*time.Second)
	if err != nil || m[1] != "http://x" || m[2] != "7" || i != 1 || at.IsZero() {
		t.Fatalf("Wait = %q %v %d %v", m, at, i, err)
	}
	if !l.Has("starting") || l.Has("stopping") {
		t.Errorf("Has: output %q", l.String())
	}
	// From past the match: nothing more comes, and the error shows what did.
	_, _, _, err = l.Wait(regexp.MustCompile(`serving`), i+1, 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "starting\nserving") || !strings.HasPrefix(err.Error(), "testbed: ") {
		t.Fatalf("Wait past the output = %v", err)
	}
}

// fatalTB records Fatal instead of ending the test, to see what Expect fails with.
type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Helper()           {}
func (f *fatalTB) Fatal(args ...any) { f.fatal = fmt.Sprint(args...) }

func TestLinesExpectReturnsTheMatchOrFailsTheTestWithWaitsError(t *testing.T) {
	var l Lines
	l.Read(strings.NewReader("starting\nserving pid=7\n"))
	if m, _, i := l.Expect(t, regexp.MustCompile(`pid=(\d+)`), 0, 5*time.Second); m[1] != "7" || i != 1 {
		t.Fatalf("Expect = %q at %d, want pid 7 at line 1", m, i)
	}
	f := &fatalTB{TB: t}
	l.Expect(f, regexp.MustCompile(`stopping`), 0, 10*time.Millisecond)
	if !strings.HasPrefix(f.fatal, "testbed: no line matching \"stopping\"") || !strings.Contains(f.fatal, "starting\nserving pid=7") {
		t.Fatalf("Expect without a match failed the test with %q, want Wait's error", f.fatal)
	}
}
