package hub

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Renewing a credential that expires (PROTOCOL.md §12.3): the gateway renews the session
// before its expiry with the page's cookies, and with a token when the page's code hands one
// over (lifeline.onRenew). Only a tab runs the page's code, so the hub asks one: the tabs that
// set a renewer, the latest first, each for at most askTab, until one answers with a token.
// In shared mode that is one request for every tab of the browser, as the session is one.

// Renewer is a Tab that can be asked for a token (web/lifeline.js through wasm/port.go): it
// runs the page's renewer and answers with MsgToken under id. A Tab without it is never
// asked.
type Renewer interface {
	Renew(id int)
}

// askTab bounds the wait for one tab's token: a tab whose renewer never settles must leave
// time for another within the gateway's bound of a renewal (10 s).
const askTab = 4 * time.Second

// errNoToken is the renewal's failure when every tab that set a renewer failed to give a token.
var errNoToken = errors.New("hub: no tab gave a token for the renewal")

// renewers are the tabs whose page code set a renewer, and the questions out to them.
type renewers struct {
	mu      sync.Mutex
	tabs    []*Conn // in the order they set one
	next    int
	waiting map[int]chan tokenAnswer
}

type tokenAnswer struct {
	token   string
	failure string
}

// setRenewer records whether conn's page has a renewer.
func (h *Hub) setRenewer(conn *Conn, on bool) {
	r := &h.renew
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, c := range r.tabs {
		if c == conn {
			r.tabs = append(r.tabs[:i], r.tabs[i+1:]...)
			break
		}
	}
	if on {
		r.tabs = append(r.tabs, conn)
	}
}

// tokenAnswered takes a tab's answer to question id.
func (h *Hub) tokenAnswered(id int, token, failure string) {
	r := &h.renew
	r.mu.Lock()
	ch := r.waiting[id]
	delete(r.waiting, id)
	r.mu.Unlock()
	if ch != nil {
		ch <- tokenAnswer{token: token, failure: failure}
	}
}

// renewToken is the gateway's Options.RenewToken: a token from the page's code, or "" when no
// tab set a renewer (the renewal then carries the cookies alone).
func (h *Hub) renewToken(ctx context.Context) (string, error) {
	r := &h.renew
	r.mu.Lock()
	tabs := append([]*Conn(nil), r.tabs...)
	r.mu.Unlock()
	if len(tabs) == 0 {
		return "", nil
	}
	var last error = errNoToken
	for i := len(tabs) - 1; i >= 0; i-- {
		token, err := h.askFor(ctx, tabs[i])
		if err == nil {
			return token, nil
		}
		if ctx.Err() != nil {
			return "", context.Cause(ctx)
		}
		last = err
	}
	return "", last
}

// askFor asks conn's page for a token and waits, at most askTab, for its answer.
func (h *Hub) askFor(ctx context.Context, conn *Conn) (string, error) {
	r := &h.renew
	ch := make(chan tokenAnswer, 1)
	r.mu.Lock()
	r.next++
	id := r.next
	if r.waiting == nil {
		r.waiting = map[int]chan tokenAnswer{}
	}
	r.waiting[id] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.waiting, id)
		r.mu.Unlock()
	}()
	conn.send(func(t Tab) {
		if rt, ok := t.(Renewer); ok {
			rt.Renew(id)
			return
		}
		h.tokenAnswered(id, "", "this tab cannot be asked for a token")
	})
	t := time.NewTimer(askTab)
	defer t.Stop()
	select {
	case a := <-ch:
		if a.failure != "" || a.token == "" {
			if a.failure == "" {
				a.failure = "the page's renewer gave no token"
			}
			return "", errors.New("hub: " + a.failure)
		}
		return a.token, nil
	case <-conn.done:
		return "", errors.New("hub: the tab asked for a token left")
	case <-t.C:
		return "", errors.New("hub: the tab asked for a token did not answer in time")
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
}
