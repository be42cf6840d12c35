// Package testlog records what code under test logs through log/slog, for tests that assert a
// line was (or was not) written. Test helpers only: nothing a build of the product links.
package testlog

import (
	"context"
	"log/slog"
	"strings"
	"sync"
)

// Recorder is a slog.Handler that keeps every record. Has, Count and String see each as one
// line: the level, the message and each attribute as key=value; Messages and Record look at
// the messages only. The zero value is ready to use; it is safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *Recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *Recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *Recorder) WithGroup(string) slog.Handler            { return r }

func (r *Recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}

// line is a record as Has, Count and String see it.
func line(rec slog.Record) string {
	var b strings.Builder
	b.WriteString(rec.Level.String() + " " + rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + a.Value.String())
		return true
	})
	return b.String()
}

// Has reports whether one line contains every part.
func (r *Recorder) Has(parts ...string) bool { return r.Count(parts...) > 0 }

// Count is how many lines contain every part.
func (r *Recorder) Count(parts ...string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
next:
	for _, rec := range r.records {
		l := line(rec)
		for _, p := range parts {
			if !strings.Contains(l, p) {
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
	lines := make([]string, len(r.records))
	for i, rec := range r.records {
		lines[i] = line(rec)
	}
	return strings.Join(lines, "\n")
}

// Messages is "LEVEL message" for every record whose message contains substr (every record
// for ""), in the order they were logged.
func (r *Recorder) Messages(substr string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.records {
		if strings.Contains(rec.Message, substr) {
			out = append(out, rec.Level.String()+" "+rec.Message)
		}
	}
	return out
}

// Record is the first record whose message contains substr, for a test that reads an
// attribute as its kind (a duration, a number) rather than as text.
func (r *Recorder) Record(substr string) (slog.Record, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.records {
		if strings.Contains(rec.Message, substr) {
			return rec, true
		}
	}
	return slog.Record{}, false
}
