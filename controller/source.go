package controller

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/lifeline-go/lifeline/internal/tinyfmt"
)

// Source opens generations for a [Controller]. The gateway implements it over WebSockets;
// tests implement it with channels. The controller calls Run for one generation at a time
// (except during a GOAWAY handover, where a draining generation may still run beside the one
// handshake in flight).
type Source interface {
	// Run performs one generation: it dials gen.Target() (its own endpoint when that is
	// ""), completes the handshake, calls gen.Ready once, then carries the connection until
	// it ends, and returns why it ended.
	//
	// Run must return promptly once ctx is cancelled, and only after it has released
	// everything it holds (socket, listeners, goroutines): its return is the settle the
	// controller waits for before it starts another attempt. A Run that ignores cancellation
	// delays the next attempt; it never overlaps it.
	Run(ctx context.Context, gen *Generation) error
}

// StatusObserver is implemented by a [Source] that wants the controller's statuses: each one
// is passed to ObserveStatus, in order and one at a time, before Options.OnChange sees it, on
// the goroutine that delivers them (never the loop's: it may call the controller). The gateway
// implements it to tell the Host what the page lived through between two connections.
type StatusObserver interface {
	ObserveStatus(Status)
}

// SourceFunc adapts a function to [Source].
type SourceFunc func(ctx context.Context, gen *Generation) error

// Run calls f.
func (f SourceFunc) Run(ctx context.Context, gen *Generation) error { return f(ctx, gen) }

// Errors a Source or a caller may see.
var (
	// ErrStale is returned by Generation.Ready and GoAway when the generation is no longer
	// the current one (cancelled, replaced, or the controller stopped).
	ErrStale = errors.New("controller: generation is no longer current")
	// ErrEnded stands for the failure of a generation whose Run returned nil: the source
	// gave no reason, but the generation is over all the same.
	ErrEnded = errors.New("controller: generation ended without a reason")
	// ErrDeadline is the cause of a handshake cancelled at the deadline.
	ErrDeadline = errors.New("controller: handshake deadline exceeded")
	// ErrStopped is the cause of a generation cancelled by Stop.
	ErrStopped = errors.New("controller: stopped")
	// ErrReplaced is the cause of a generation cancelled by ReconnectNow or by a GOAWAY
	// handover that completed.
	ErrReplaced = errors.New("controller: generation replaced")
	// ErrHostRestarting is wrapped by the end of a session the Host closed because it is
	// stopping without a successor (close 1012 "service restart", or its error frame). It is
	// a hint that the Host comes back soon: see [Controller] for the restart window.
	ErrHostRestarting = errors.New("controller: the host is restarting")
	// ErrUnauthorized is wrapped by the failure of an attempt the Host refused for the page's
	// credentials (HTTP 401 or 403 before the upgrade). It is not an outage: the controller
	// reports it as [Unauthorized] and retries at the top cap only, since retrying sooner would
	// not change the credential and would only load the Host.
	ErrUnauthorized = errors.New("controller: the host refused the page's credentials")
	// ErrOffline is the cause of a generation cancelled because the browser went offline.
	ErrOffline = errors.New("controller: browser offline")
	// ErrLeaving is wrapped by the end of a generation whose page is going away: a browser
	// that closes the page's sockets as it unloads the page (Firefox reports each as closed
	// with 1001 before the page's own stop arrives). It is a failure like any other, but
	// nobody failed: it is logged at Info, never as an error on the developer's console.
	ErrLeaving = errors.New("controller: the page is going away")
	// ErrUnresolvedConfig is returned by New for a Config that did not come from Resolve.
	ErrUnresolvedConfig = errors.New("controller: config was not resolved (use Resolve or DefaultConfig)")
	// ErrNilSource is returned by New without a Source.
	ErrNilSource = errors.New("controller: nil source")
)

// RetryAfterError is a failure for which the Host asked the page to wait at least After before
// the next attempt (a 1013 close). The controller waits the longer of After, capped at
// wire.MaxRetryAfter (60 s), and its ladder delay: a retry-after can slow the ladder down,
// never speed it up, and never hold a page back longer than the protocol allows.
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	return tinyfmt.Sprintf("%v (retry after %v)", e.Err, e.After)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// RedirectError is the failure of an attempt that a draining Host turned away before it was
// ready, naming another place to go (a GOAWAY before the ready frame). To names the place as
// [Generation.GoAway] does: "" is the source's own endpoint. The next attempt goes there, at
// the ladder's pace: the page was not connected, so there is nothing to make before
// breaking, and two Hosts that send arriving pages to each other cannot make it storm. (A
// Host that turns the attempt away to the same place is restarting: wrap
// [ErrHostRestarting] instead.)
type RedirectError struct {
	To  string
	Err error
}

func (e *RedirectError) Error() string {
	return tinyfmt.Sprintf("%v (redirected to %q)", e.Err, e.To)
}

func (e *RedirectError) Unwrap() error { return e.Err }

// Generation is the handle a [Source] gets for one attempt. Its methods are safe from any
// goroutine; once the generation is stale they do nothing but report [ErrStale].
type Generation struct {
	n      uint64
	target string
	ctx    context.Context
	events chan<- event
	done   <-chan struct{} // closed when the controller's loop has ended
}

// Number is the generation's attempt number.
func (g *Generation) Number() uint64 { return g.n }

// Target is the place to dial: "" for the source's own endpoint (the page's home: where every
// sequence starts, and where the page goes back to when a redirect target keeps failing or a
// session ends), or the place a GOAWAY moved the page to, as the source named it in
// [Generation.GoAway].
func (g *Generation) Target() string { return g.target }

// Ready reports that the handshake completed (a fresh ready frame arrived). It returns nil if
// the generation is now the connected one. Otherwise it returns [ErrStale] after closing c: a
// cancelled attempt's late ready can never establish a connection, and the carrier it brought
// is not left open. c may be nil.
func (g *Generation) Ready(c io.Closer) error {
	err := ErrStale
	if g.ctx.Err() == nil {
		reply := make(chan error, 1)
		select {
		case g.events <- event{kind: evReady, gen: g, reply: reply}:
			err = <-reply
		case <-g.ctx.Done():
		case <-g.done:
		}
	}
	if err != nil && c != nil {
		c.Close()
	}
	return err
}

// GoAway reports that the Host is draining this generation and sends the page to the place
// uri, named as [Generation.Target] names places: "" is the source's own endpoint, the
// generation's own Target is the same place (the Host restarts: come back here, never a
// loop), and any other string is a place elsewhere. The controller compares places as
// strings (to find redirect loops and the way home), so a source names each place with one
// string only. The generation keeps running (and delivering) until the controller replaces
// it or it ends on its own.
func (g *Generation) GoAway(uri string) error {
	if g.ctx.Err() != nil {
		return ErrStale
	}
	reply := make(chan error, 1)
	select {
	case g.events <- event{kind: evGoAway, gen: g, uri: uri, reply: reply}:
		return <-reply
	case <-g.ctx.Done():
	case <-g.done:
	}
	return ErrStale
}

// Replace asks for a new generation to the same place, made before this one is broken: the
// source has found a better way there (a WebSocket through a path that held one back before).
// The generation keeps running, and delivering, until the new one is ready, as after a GOAWAY
// back to the same place; but nothing is wrong with the Host, so no restart window opens and
// the ladder does not move. It returns [ErrStale] unless the generation is the connected one.
func (g *Generation) Replace() error {
	if g.ctx.Err() != nil {
		return ErrStale
	}
	reply := make(chan error, 1)
	select {
	case g.events <- event{kind: evReplace, gen: g, reply: reply}:
		return <-reply
	case <-g.ctx.Done():
	case <-g.done:
	}
	return ErrStale
}
