//go:build !js

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/lifeline-go/lifeline/hostplugin"
)

// The demo's sign-in (-signouts FILE), for the fleet test and the access bench: a page names its
// user in the cookie lifeline-user (none: anonymous, as the demo always was), and
// POST /_lifeline/signout?user=NAME[&reason=…][&reauth=1] (loopback clients only) signs NAME
// out on every Host given the same FILE (a line appended to it), then ends NAME's pages on
// every Host of the fleet (Host.EndSessions, over the fleet's bus). The order is the one an
// application keeps: the credential first, then the end.

// userCookie names the demo's user.
const userCookie = "lifeline-user"

// signoutPath is where a sign-out is asked for.
const signoutPath = "/_lifeline/signout"

var demoUser = regexp.MustCompile(`^[a-z0-9._-]{1,64}$`)

// signIns is the demo's record of sign-outs: the file every Host of a fleet shares, read again
// whenever it changed.
type signIns struct {
	path string

	mu   sync.Mutex
	seen int64 // the file's size when out was read: it only grows
	out  map[string]bool
}

func newSignIns(path string) (*signIns, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	_ = f.Close()
	return &signIns{path: path, out: map[string]bool{}}, nil
}

// authenticate is the demo's Authenticate: the cookie's user, unless signed out; without
// one, demoAuthenticate's.
func (s *signIns) authenticate(r *http.Request) (string, error) {
	c, err := r.Cookie(userCookie)
	if err != nil || !demoUser.MatchString(c.Value) {
		// No sign-in: who the presence demo's cookie says, else anonymous (the demo's streams
		// are public). The fleet runs its Hosts with -signouts, and its presence pages name
		// themselves by that cookie.
		return demoAuthenticate(r)
	}
	if s.signedOut(c.Value) {
		return "", fmt.Errorf("%w: %s signed out", hostplugin.ErrUnauthenticated, c.Value)
	}
	return c.Value, nil
}

// signedOut reports whether user signed out, reading what the file gained since the last look.
func (s *signIns) signedOut(user string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, err := os.Stat(s.path); err == nil && st.Size() > s.seen {
		if f, err := os.Open(s.path); err == nil {
			if _, err := f.Seek(s.seen, 0); err == nil {
				sc := bufio.NewScanner(f)
				for sc.Scan() {
					s.seen += int64(len(sc.Bytes())) + 1
					s.out[string(bytes.TrimSpace(sc.Bytes()))] = true
				}
			}
			_ = f.Close()
		}
	}
	return s.out[user]
}

// signOut records user's sign-out in the file, for every Host.
func (s *signIns) signOut(user string) error {
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write([]byte(user + "\n")) // one write of a whole line: O_APPEND lands it whole
	return err
}

// serveSignOut answers a sign-out: {"ended":n,"ms":…} with the sessions ended on this Host and
// how long the call took, or a refusal.
func (s *signIns) serveSignOut(h *hostplugin.Host) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !fromLoopback(r) {
			http.Error(w, "host: the sign-out answers loopback clients only", http.StatusForbidden)
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			http.Error(w, "host: POST a sign-out", http.StatusMethodNotAllowed)
			return
		}
		user := r.URL.Query().Get("user")
		if !demoUser.MatchString(user) {
			http.Error(w, fmt.Sprintf("host: user must match %s, got %q", demoUser, user), http.StatusBadRequest)
			return
		}
		opts := hostplugin.EndOptions{Reason: r.URL.Query().Get("reason"), Reauthenticate: r.URL.Query().Get("reauth") == "1"}
		start := time.Now()
		if !opts.Reauthenticate {
			if err := s.signOut(user); err != nil {
				http.Error(w, "host: recording the sign-out: "+err.Error(), http.StatusInternalServerError)
				return
			}
		}
		n, err := h.EndSessions(r.Context(), user, opts)
		ans := map[string]any{"ended": n, "ms": float64(time.Since(start).Microseconds()) / 1000}
		if err != nil {
			ans["error"] = err.Error()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(ans)
	})
}

// fromLoopback reports whether r's peer is on this machine.
func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}
