//go:build !js

package main

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"html/template"
	"io"
	"log"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/lifeline-go/lifeline/hostplugin"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	flags := flag.NewFlagSet("embed", flag.ContinueOnError)
	flags.SetOutput(stderr)
	addr := flags.String("addr", "127.0.0.1:8090", "`address` to listen on")
	configPath := flags.String("config", "", "Lifeline config `file` (JSON); default: the built-in defaults")
	if err := flags.Parse(args); err != nil {
		return err
	}
	cfg := hostplugin.DefaultConfig()
	if *configPath != "" {
		var err error
		if cfg, err = hostplugin.LoadConfig(*configPath); err != nil {
			return err // names the field and the value seen
		}
	}

	logger := log.New(stderr, "embed: ", log.LstdFlags)
	a := newApp()
	a.log = logger
	h, handler, err := withLifeline(cfg, a)
	if err != nil {
		return err
	}
	defer h.Close()
	a.host = h // the sign-out button ends the user's pages (signout.go)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go a.publish(ctx, h, time.Second)

	srv := &http.Server{Addr: *addr, Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()
	logger.Printf("serving http://%s/ (sign in: /login?user=alice)", *addr)
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// Nobody serves in this process's place: every page is told the Host is restarting
	// (close 1012) and comes back soon, then the Host closes, then the server shuts down.
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return h.Shutdown(sctx, srv)
}

// app is the application: a page, a sign-in stub, the users whose streams it publishes, and
// each user's memo.
type app struct {
	log   *log.Logger
	csp   string           // the page's Content-Security-Policy (withLifeline)
	host  *hostplugin.Host // ends a user's pages when they sign out everywhere (signout.go)
	mu    sync.Mutex
	users map[string]uint64 // signed-in users → events published to their stream
	memos map[string]memo   // by user
}

func newApp() *app {
	return &app{log: log.Default(), users: map[string]uint64{}, memos: map[string]memo{}}
}

func (a *app) mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", a.page)
	mux.HandleFunc("GET "+appJSPath, a.script)
	mux.HandleFunc("GET /login", a.login)
	mux.HandleFunc("GET /logout", a.logout)
	mux.HandleFunc("POST /signout", a.signOutEverywhere)
	return mux
}

//go:embed index.html
var indexHTML string

//go:embed app.js
var appJS string

// appJSPath names the page's script by its content, so that it is cached for good and a new
// one is a new name (as the client Lifeline serves is).
var appJSPath = func() string {
	sum := sha256.Sum256([]byte(appJS))
	return "/app." + hex.EncodeToString(sum[:8]) + ".js"
}()

var pageTemplate = template.Must(template.New("index.html").Parse(indexHTML))

// page serves the application's page. It has no Lifeline markup: the Host plugin injects the
// client into its head, and the client adds the connection indicator.
func (a *app) page(w http.ResponseWriter, r *http.Request) {
	user, _ := signedIn(r)
	a.mu.Lock()
	m := a.memos[user]
	a.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache") // a page per user: always asked for again
	if a.csp != "" {
		w.Header().Set("Content-Security-Policy", a.csp)
	}
	if err := pageTemplate.Execute(w, struct{ User, Memo, Script string }{user, m.Text, appJSPath}); err != nil {
		a.log.Printf("rendering the page: %v", err)
	}
}

// script serves the page's own code.
func (a *app) script(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	_, _ = io.WriteString(w, appJS)
}

// The sign-in stub. A name is a few lower-case letters or digits, so that it is a valid
// stream name and a cookie value as it is.
const cookieName = "user"

var validUser = regexp.MustCompile(`^[a-z0-9]{1,32}$`)

// maxUsers bounds the users the stub publishes for: anyone may sign in as any name.
const maxUsers = 100

// signedIn returns the user the request's cookie names, unless they signed out everywhere
// since this browser signed in (signout.go).
func signedIn(r *http.Request) (string, bool) {
	c, err := r.Cookie(cookieName)
	if err != nil || !validUser.MatchString(c.Value) || !signOuts.counts(c.Value, signedInSince(r)) {
		return "", false
	}
	return c.Value, true
}

func (a *app) login(w http.ResponseWriter, r *http.Request) {
	user := r.URL.Query().Get("user")
	if !validUser.MatchString(user) {
		http.Error(w, fmt.Sprintf("embed: user must be 1 to 32 lower-case letters or digits, got %q", user), http.StatusBadRequest)
		return
	}
	if err := a.signIn(user); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	setSignedIn(w, user)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (a *app) logout(w http.ResponseWriter, r *http.Request) {
	clearSignIn(w)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

var errTooManyUsers = fmt.Errorf("embed: this demo publishes for at most %d users", maxUsers)

func (a *app) signIn(user string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.users[user]; ok {
		return nil
	}
	if len(a.users) >= maxUsers {
		return errTooManyUsers
	}
	a.users[user] = 0
	return nil
}

// memo is a user's memo, and what a save of it is answered with.
type memo struct {
	Text    string `json:"text"`
	Version int    `json:"version"` // the saves that made it: 1 for the first
	At      int64  `json:"at"`      // Unix milliseconds
}

// maxMemo bounds a memo, in characters.
const maxMemo = 1000

// writeMemo saves text as user's memo. The stub keeps memos for as many users as it publishes
// for.
func (a *app) writeMemo(user, text string) (memo, error) {
	if n := utf8.RuneCountInString(text); n > maxMemo {
		return memo{}, fmt.Errorf("embed: a memo is at most %d characters, got %d", maxMemo, n)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	old, ok := a.memos[user]
	if !ok && len(a.memos) >= maxUsers {
		return memo{}, fmt.Errorf("embed: this demo keeps memos for at most %d users", maxUsers)
	}
	m := memo{Text: text, Version: old.Version + 1, At: time.Now().UnixMilli()}
	a.memos[user] = m
	return m, nil
}

// event is what the application publishes to a user's stream.
type event struct {
	N    uint64 `json:"n"`
	Text string `json:"text"`
	At   int64  `json:"at"` // Unix milliseconds
}

// publish sends every signed-in user an event on their stream, every interval, until ctx ends.
func (a *app) publish(ctx context.Context, h *hostplugin.Host, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if err := a.publishOnce(ctx, h, now); err != nil {
				a.log.Print(err)
			}
		}
	}
}

// publishOnce publishes the next event of every signed-in user's stream.
func (a *app) publishOnce(ctx context.Context, h *hostplugin.Host, now time.Time) error {
	a.mu.Lock()
	events := make(map[string]event, len(a.users))
	for u, n := range a.users {
		a.users[u] = n + 1
		events[u] = event{N: n + 1, Text: fmt.Sprintf("hello %s, this is your event %d", u, n+1), At: now.UnixMilli()}
	}
	a.mu.Unlock()
	var errs []error
	for _, u := range slices.Sorted(maps.Keys(events)) {
		if err := publishTo(ctx, h, u, events[u]); err != nil {
			errs = append(errs, fmt.Errorf("publishing to %s: %w", streamOf(u), err))
		}
	}
	return errors.Join(errs...)
}
