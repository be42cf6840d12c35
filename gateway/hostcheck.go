package gateway

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/lifeline-go/lifeline/internal/tinyfmt"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// The refusal query (PROTOCOL.md §2.4): a plain GET of the events endpoint, with the page's
// cookies, which the Host answers as it would answer an upgrade. A browser hides the status of
// a refused WebSocket handshake, so after a failed dial the page asks why; and the same answer
// tells a Host that is down from a path that does not carry WebSockets (§11.3), and, before a
// WebSocket is dialed again after a failure, whether there is any point in dialing it.

// queryTimeout bounds the refusal query. It runs inside an attempt, so the attempt's deadline
// bounds it too; a Host too slow to answer a GET in this long is one that did not say.
const queryTimeout = 2 * time.Second

// hostCheck is what the refusal query found.
type hostCheck struct {
	// refused is the Host's refusal of the page: an *UnauthorizedError (401, 403) or, for
	// 429, a *controller.RetryAfterError wrapping ErrOverloaded. nil otherwise.
	refused error
	// up: the Host answered that it would take a socket now (426, its readiness gate open).
	up bool
	// gated: the Host answered, but its readiness gate is closed: a socket opens there and
	// waits for its ready frame.
	gated bool
	// carriers: the Host has the HTTP carrier (its 426 names it).
	carriers bool
	// seen says what else came back: the status, or the request's error.
	seen error
}

// errQueryTimeout is the cause of a refusal query that ran out of time.
var errQueryTimeout = errors.New("gateway: the refusal query timed out")

// checkHost asks the Host of the events URL wsURL (ws or wss) what it would make of a socket,
// within queryTimeout. (checkFirst's query has the attempt's whole deadline: see askHost.)
func (g *Gateway) checkHost(ctx context.Context, wsURL string) hostCheck {
	ctx, cancel := context.WithTimeoutCause(ctx, queryTimeout, errQueryTimeout)
	defer cancel()
	return g.askHost(ctx, wsURL)
}

// askHost is the refusal query, bounded by ctx alone.
func (g *Gateway) askHost(ctx context.Context, wsURL string) hostCheck {
	a, err := doHTTP(ctx, httpRequest{method: methodGet, url: httpURL(wsURL), header: g.handshake.header()})
	if err != nil {
		return hostCheck{seen: err}
	}
	body := a.readAll(ctx, wire.MaxRefusalBody)
	if refused := refusedBy(a.status, a.retryAfter, body); refused != nil {
		return hostCheck{refused: refused}
	}
	r, derr := wire.DecodeRefusal(body)
	switch {
	case derr != nil:
		return hostCheck{seen: tinyfmt.Errorf("gateway: the refusal query was answered %d, not by a Lifeline Host", a.status)}
	case a.status == statusUpgradeRequired && r.Error == wire.RefusalUpgradeRequired:
		return hostCheck{up: true, carriers: slices.Contains(r.Carriers, wire.CarrierStream)}
	case a.status == statusServiceUnavailable && r.Error == wire.RefusalNotReady:
		return hostCheck{gated: true}
	}
	return hostCheck{seen: tinyfmt.Errorf("gateway: the refusal query was answered %d %q", a.status, r.Error)}
}

// explain is what a failed dial's error becomes once the refusal query has said why: the
// Host's refusal (wrapping ErrDial), or the dial's error unchanged. If ctx ended meanwhile,
// its cause.
func explain(ctx context.Context, dialErr error, hc hostCheck) error {
	switch {
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case hc.refused != nil:
		return tinyfmt.Errorf("%w: %w", ErrDial, hc.refused)
	case hc.seen != nil && !errors.Is(hc.seen, errQueryTimeout):
		return tinyfmt.Errorf("%w (the refusal query could not tell why: %v)", dialErr, hc.seen)
	}
	return dialErr
}

// httpURL is the events endpoint as an HTTP request reaches it: ws and wss become http and
// https.
func httpURL(wsURL string) string {
	if rest, ok := strings.CutPrefix(wsURL, "ws"); ok {
		return "http" + rest
	}
	return wsURL
}
