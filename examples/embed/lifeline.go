//go:build !js

package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/lifeline-go/lifeline/hostplugin"
)

// withLifeline puts the Host plugin in front of the application: it serves the events
// endpoint and the client, and injects the client into every HTML page the application
// serves. These are the lines an embedder writes; the hooks below are the application's say.
func withLifeline(cfg hostplugin.Config, a *app) (*hostplugin.Host, http.Handler, error) {
	h, err := hostplugin.New(cfg, &hostplugin.Options{
		Authenticate: authenticate,
		Authorize:    authorize, // required: hostplugin.PublicStreams if every stream is public
	})
	if err != nil {
		return nil, nil, err
	}
	h.HandleCall("memo.save", a.saveMemo) // the page's lifeline.call('memo.save', …)
	// The page's Content-Security-Policy: scripts of its own origin only, the wasm's compile,
	// and the boot Lifeline injects inline, by its hash.
	a.csp = "script-src 'self' 'wasm-unsafe-eval' " + h.BootHash()
	h.SetReady(true)
	return h, h.Handler(a.mux()), nil
}

// authenticate says who is connecting: the signed-in user, or HTTP 401 (the page shows
// "Sign-in required" and retries at the top cap only, until the user signs in).
func authenticate(r *http.Request) (string, error) {
	user, ok := signedIn(r) // the application's own sign-in check (here a cookie stub, in main.go)
	if !ok {
		return "", hostplugin.ErrUnauthenticated
	}
	return user, nil
}

// authorize lets a user read their own stream only. A refusal ends that one subscription on
// the page (denied: true, reason: this error's text); the session and its other streams go on.
func authorize(user, stream string) error {
	if user == "" || stream != streamOf(user) {
		return errNotYours
	}
	return nil
}

// errNotYours is shown to the page that asked (a denied frame's reason): it names no secret.
var errNotYours = errors.New("this stream belongs to another user")

// streamOf names the private stream of a user.
func streamOf(user string) string { return "user." + user }

// saveMemo answers the page's lifeline.call('memo.save', {user, text}, {key}). Authorization
// is the handler's own: c.Identity is who Authenticate said the session is, and a user may
// write their own memo only. The page gives each save a fresh key, so a save that Lifeline
// sends again after a reconnect is made once and answered with the first reply.
func (a *app) saveMemo(_ context.Context, c *hostplugin.Call) (json.RawMessage, error) {
	var in struct {
		User string `json:"user"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(c.Data, &in); err != nil {
		return nil, errMemoData
	}
	if c.Identity == "" || in.User != c.Identity {
		return nil, errNotYourMemo
	}
	m, err := a.writeMemo(c.Identity, in.Text) // the application's own store (main.go)
	if err != nil {
		return nil, err // the page is shown the error's first line: it names no secret
	}
	return json.Marshal(m)
}

// The errors a page is shown for a memo it may not save.
var (
	errMemoData    = errors.New(`a memo is saved as {"user": "…", "text": "…"}`)
	errNotYourMemo = errors.New("this memo belongs to another user")
)

// publishTo sends user an event on their private stream: every page of theirs subscribed to it
// receives it at once, and a page that was away replays what it missed when it is back.
func publishTo(ctx context.Context, h *hostplugin.Host, user string, ev any) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	_, err = h.Publish(ctx, streamOf(user), data)
	return err
}
