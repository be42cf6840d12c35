// Package testlog records what code under test logs through log/slog, for tests that assert a
// line was (or was not) written. Test helpers only: nothing a build of the product links.
package testlog

import (
	"context"
	"log/slog"
	"strings"
	"sync"
)

// Recorder is a slog.Handler that keeps every record as one line: the level, the message and
// each attribute as key=value. The zero value is ready to use; it is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *Recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *Recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *Recorder) WithGroup(string) slog.Handler            { return r }

func (r *Recorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Level.String() + " " + rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + a.Value.String())
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, b.String())
	return nil
}

// Has reports whether one line contains every part.
func (r *Recorder) Has(parts ...string) bool { return r.Count(parts...) > 0 }

// Count is how many lines contain every part.
func (r *Recorder) Count(parts ...string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
next:
	for _, line := range r.lines {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue next
			}
		}
		n++
	}
	return n
}

// String is every line, joined by newlines.
func (r *Recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "\n")
}
