//go:build !js

package main

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/lifeline-go/lifeline/hostplugin"
)

// signOutEverywhere is the page's "Sign out everywhere" button (a POST): the user's sign-in
// stops counting, then every page of theirs, in every tab of every browser, is told so and
// shows "Sign-in required" with the reason, at once. Order matters: the credential first,
// so that a page that tries again is refused by Authenticate; then EndSessions, which ends
// the pages of every Host of a fleet sharing a Bus (Options.Bus).
func (a *app) signOutEverywhere(w http.ResponseWriter, r *http.Request) {
	if user, ok := signedIn(r); ok {
		signOuts.record(user, time.Now()) // the application's own: its sign-ins before now no longer count
		if _, err := a.host.EndSessions(r.Context(), user, hostplugin.EndOptions{
			Reason: "You signed out everywhere.", // shown on every page of the user
		}); err != nil {
			a.log.Printf("ending %s's pages on the other Hosts: %v", user, err)
		}
	}
	clearSignIn(w)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// signOuts is the sign-in stub's memory of sign-outs: a sign-in made before its user's last
// sign-out no longer counts (signedIn). A real application deletes the session behind its
// cookie instead.
var signOuts = &signOutLog{at: map[string]int64{}}

type signOutLog struct {
	mu sync.Mutex
	at map[string]int64 // user → their last sign-out, Unix nanoseconds
}

func (l *signOutLog) record(user string, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at[user] = t.UnixNano()
}

// counts reports whether a sign-in of user made at since (Unix nanoseconds) still counts.
func (l *signOutLog) counts(user string, since int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out, ok := l.at[user]
	return !ok || since > out
}

// sinceCookie carries when the browser signed in, beside the user's name.
const sinceCookie = "since"

// signedInSince reads when r's browser signed in (0 for a cookie from before the stub kept it).
func signedInSince(r *http.Request) int64 {
	c, err := r.Cookie(sinceCookie)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(c.Value, 10, 64)
	return n
}

// setSignedIn sets the cookies of a sign-in of user now.
func setSignedIn(w http.ResponseWriter, user string) {
	for _, c := range []*http.Cookie{
		{Name: cookieName, Value: user},
		{Name: sinceCookie, Value: strconv.FormatInt(time.Now().UnixNano(), 10)},
	} {
		// SameSite=Lax: a POST from another site (a forged sign-out) carries none of them.
		c.Path, c.HttpOnly, c.SameSite = "/", true, http.SameSiteLaxMode
		http.SetCookie(w, c)
	}
}

// clearSignIn expires the sign-in's cookies.
func clearSignIn(w http.ResponseWriter) {
	for _, name := range []string{cookieName, sinceCookie} {
		http.SetCookie(w, &http.Cookie{Name: name, Path: "/", MaxAge: -1})
	}
}
