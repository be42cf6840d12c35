package testbed

import (
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
