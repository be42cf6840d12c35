package testbed

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Lines is a process's output as it arrives, line by line, with when each line came: what a
// test waits on ("the successor says it is serving") and prints when a wait fails. The zero
// value is ready to use.
type Lines struct {
	mu      sync.Mutex
	list    []string
	at      []time.Time
	changed chan struct{} // closed, and replaced, at every new line
}

// Read appends the lines of r until it ends (a line over 1 MiB ends it early).
func (l *Lines) Read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l.mu.Lock()
		l.list = append(l.list, sc.Text())
		l.at = append(l.at, time.Now())
		if l.changed != nil {
			close(l.changed)
			l.changed = nil
		}
		l.mu.Unlock()
	}
}

// String is every line so far, joined by newlines.
func (l *Lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.list, "\n")
}

// Has reports whether some line so far contains s.
func (l *Lines) Has(s string) bool { return strings.Contains(l.String(), s) }

// Wait returns the first line from index from on that matches re: its submatches, when it
// arrived and its index. It waits for one up to within, then fails with an error naming re
// and the output so far.
func (l *Lines) Wait(re *regexp.Regexp, from int, within time.Duration) ([]string, time.Time, int, error) {
	timeout := time.NewTimer(within)
	defer timeout.Stop()
	for {
		l.mu.Lock()
		for i := max(from, 0); i < len(l.list); i++ {
			if m := re.FindStringSubmatch(l.list[i]); m != nil {
				at := l.at[i]
				l.mu.Unlock()
				return m, at, i, nil
			}
		}
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-timeout.C:
			return nil, time.Time{}, 0, fmt.Errorf("testbed: no line matching %q within %v; output:\n%s", re, within, l)
		}
	}
}

// Expect is Wait for a test: it returns the same, or fails t with Wait's error.
func (l *Lines) Expect(t testing.TB, re *regexp.Regexp, from int, within time.Duration) ([]string, time.Time, int) {
	t.Helper()
	m, at, i, err := l.Wait(re, from, within)
	if err != nil {
		t.Fatal(err)
	}
	return m, at, i
}
