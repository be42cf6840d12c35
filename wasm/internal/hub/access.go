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

// renewers are the tabs whose page code set a renewer, and the one question out to them: the
// gateway renews one session at a time, so one question is out at most.
type renewers struct {
	mu      sync.Mutex
	tabs    []*Conn // in the order they set one
	id      int     // the question out, or the last one
	answer  chan struct{}
	token   string // the answer's, once answer is signalled
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

// tokenAnswered takes a tab's answer to question id; a late answer to an earlier one is
// dropped.
func (h *Hub) tokenAnswered(id int, token, failure string) {
	r := &h.renew
	r.mu.Lock()
	defer r.mu.Unlock()
	if id != r.id || r.answer == nil {
		return
	}
	r.token, r.failure = token, failure
	close(r.answer)
	r.answer = nil
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
	err := errNoToken
	for i := len(tabs) - 1; i >= 0 && ctx.Err() == nil; i-- {
		var token string
		if token, err = h.askFor(ctx, tabs[i]); err == nil {
			return token, nil
		}
	}
	return "", err
}

// askFor asks conn's page for a token and waits, at most askTab, for its answer.
func (h *Hub) askFor(ctx context.Context, conn *Conn) (string, error) {
	r := &h.renew
	answer := make(chan struct{})
	r.mu.Lock()
	r.id++
	id := r.id
	r.answer = answer
	r.mu.Unlock()
	conn.send(func(t Tab) {
		if rt, ok := t.(Renewer); ok {
			rt.Renew(id)
			return
		}
		h.tokenAnswered(id, "", "this tab cannot be asked for a token")
	})
	t := time.NewTimer(askTab)
	defer t.Stop()
	why := ""
	select {
	case <-answer:
		r.mu.Lock()
		token, failure := r.token, r.failure
		r.mu.Unlock()
		if token != "" && failure == "" {
			return token, nil
		}
		why = "the page's renewer gave no token: " + failure
	case <-conn.done:
		why = "the tab asked for a token left"
	case <-t.C:
		why = "the tab asked for a token did not answer in time"
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
	return "", errors.New("hub: " + why)
}
