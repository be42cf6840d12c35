package swarmline

import (
	"io"
	"sync"
	"time"
)

// A Printer writes lines to its writer, one at a time, from any goroutine, until Quiet: a
// process that prints these lines stops them at its shutdown, whose own events are not the
// run's. It keeps the first write error, which Err returns.
type Printer struct {
	mu      sync.Mutex
	w       io.Writer
	stopped bool
	werr    error
	buf     []byte
}

// NewPrinter returns a Printer writing to w.
func NewPrinter(w io.Writer) *Printer { return &Printer{w: w} }

// Print stamps l with the time and writes it.
func (p *Printer) Print(l Line) {
	l.T = Stamp(time.Now())
	p.Write(l.Append)
}

// Write writes the line appendLine appends (a line of another format that shares this one's
// stream: the bench's call outcomes).
func (p *Printer) Write(appendLine func([]byte) []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.werr != nil {
		return
	}
	p.buf = appendLine(p.buf[:0])
	_, p.werr = p.w.Write(p.buf)
}

// Event prints one of the events that carry nothing but the page's id.
func (p *Printer) Event(id int, ev string) { p.Print(Line{ID: id, Event: ev}) }

// Quiet stops the printing: nothing is written after it returns.
func (p *Printer) Quiet() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
}

// Err returns the first write error.
func (p *Printer) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.werr
}
