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
func withLifeline(cfg hostplugin.Config, app http.Handler) (*hostplugin.Host, http.Handler, error) {
	h, err := hostplugin.New(cfg, &hostplugin.Options{
		Authenticate: authenticate,
		Authorize:    authorize,
	})
	if err != nil {
		return nil, nil, err
	}
	h.SetReady(true)
	return h, h.Handler(app), nil
}

// authenticate says who is connecting: the signed-in user, or HTTP 401 (the page shows
// "Sign-in required" and retries at the top cap only, until the user signs in).
func authenticate(r *http.Request) (string, error) {
	user, ok := signedIn(r)
	if !ok {
		return "", hostplugin.ErrUnauthenticated
	}
	return user, nil
}

// authorize lets a user read their own stream only. A refusal ends that one subscription on
// the page (denied: true, with this error's text); the session and its other streams go on.
func authorize(user, stream string) error {
	if user == "" || stream != streamOf(user) {
		return errNotYours
	}
	return nil
}

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

// errNotYours is shown to the page that asked (a denied frame's reason): it names no secret.
var errNotYours = errors.New("this stream belongs to another user")

// streamOf names the private stream of a user.
func streamOf(user string) string { return "user." + user }
