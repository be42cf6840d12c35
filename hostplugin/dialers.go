//go:build !js

package hostplugin

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// A page cannot always end a handshake it gave up on. Firefox, asked to close a WebSocket that
// is still connecting (the page's deadline, Reconnect now), fires the close event at once but
// never cancels the HTTP upgrade underneath: the request stays open at the Host until the
// browser exits, whatever the page does. A Host that holds upgrades (a slow Authenticate, a
// wait for a session slot, a stalled handshake) then keeps every abandoned one, and each holds
// one of the browser's six connections to the origin. So every dial of a page names its
// dialer (wire.DialerParam: random per hub, the same on each attempt), and the Host holds at
// most one handshake per dialer: a newer one cancels the older one's context (the generation
// source's: Authenticate sees it, admission lets go) and waits for it to settle before it goes
// on itself. The older one is answered 409 with Connection: close, which ends its connection.

// errSuperseded is the cause with which a newer handshake of the same dialer cancels an older
// one.
var errSuperseded = errors.New("hostplugin: a newer handshake of the same page replaced this one")

// dialers are the handshakes under way, by dialer id.
type dialers struct {
	mu sync.Mutex
	m  map[string]*handshake
}

// handshake is one upgrade's hold: cancel ends it, done is closed once it settled.
type handshake struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// enter registers the upgrade r of dialer id: it cancels the dialer's handshake under way, if
// any, and waits until that one has settled or r's own context ends. It returns the context
// the hold steps must use, and settled, which the caller calls (once or more) when it no
// longer holds the upgrade: past Authenticate and admission.
func (d *dialers) enter(ctx context.Context, id string) (_ context.Context, settled func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	me := &handshake{cancel: cancel, done: make(chan struct{})}
	d.mu.Lock()
	if d.m == nil {
		d.m = make(map[string]*handshake)
	}
	old := d.m[id]
	d.m[id] = me
	d.mu.Unlock()
	if old != nil {
		old.cancel(errSuperseded)
		select {
		case <-old.done:
		case <-ctx.Done():
		}
	}
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			d.mu.Lock()
			if d.m[id] == me {
				delete(d.m, id)
			}
			d.mu.Unlock()
			close(me.done)
		})
	}
}

// superseded reports whether ctx ended because a newer handshake of its dialer replaced it,
// and if so answers the upgrade (409, Connection: close): the browser that left it pending
// learns that it is over, and its connection ends.
func superseded(w http.ResponseWriter, ctx context.Context) bool {
	if !errors.Is(context.Cause(ctx), errSuperseded) {
		return false
	}
	w.Header().Set("Connection", "close")
	http.Error(w, errSuperseded.Error(), http.StatusConflict)
	return true
}

// dialerOf returns the dialer id of the upgrade r, "" for none (a page from before dialers,
// a native client of another make). A malformed one is answered 400, naming it: false. The
// last one counts: the gateway appends its own, after whatever the configured endpoint's
// query held (one written into the config would make every page one dialer).
func dialerOf(w http.ResponseWriter, r *http.Request) (string, bool) {
	ids := r.URL.Query()[wire.DialerParam]
	if len(ids) == 0 {
		return "", true
	}
	id := ids[len(ids)-1]
	if err := wire.CheckDialer(id); err != nil {
		http.Error(w, "hostplugin: "+err.Error(), http.StatusBadRequest)
		return "", false
	}
	return id, true
}
