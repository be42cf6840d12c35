//go:build !js

package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/hostplugin/jetstream"
)

// The demo's presence: the streams named room.<anything> carry it, and a page is who its
// cookie lifeline-demo-user says (a name the demo page lets its user pick; no cookie: the
// identity "", one member for every anonymous page). A name is a demo's stand-in for a real
// sign-in: Authenticate here trusts it, which no real application may do.

const (
	demoUserCookie = "lifeline-demo-user"
	// maxDemoUser bounds a demo name, in bytes (well within a member's 256).
	maxDemoUser = 64
	roomPrefix  = "room."
)

// demoAuthenticate is who the page's cookie says it is; a name that is no short UTF-8 text is
// refused, naming the limit.
func demoAuthenticate(r *http.Request) (string, error) {
	c, err := r.Cookie(demoUserCookie)
	if err != nil {
		return "", nil
	}
	if len(c.Value) > maxDemoUser || !utf8.ValidString(c.Value) {
		return "", errors.New("host: the cookie " + demoUserCookie + " must be a UTF-8 name of at most 64 bytes")
	}
	return c.Value, nil
}

// demoPresence is the demo's presence, fleet-wide on the NATS of log when there is one.
func demoPresence(shared sharedLog) *hostplugin.Presence {
	p := &hostplugin.Presence{
		Streams: func(stream string) bool { return strings.HasPrefix(stream, roomPrefix) },
		Meta: func(identity string) (json.RawMessage, error) {
			if identity == "" {
				return nil, nil
			}
			return json.Marshal(struct {
				Name string `json:"name"`
			}{identity})
		},
	}
	if log, ok := shared.(*jetstream.Log); ok {
		p.Fleet = jetstream.NewPresence(log)
	}
	return p
}
