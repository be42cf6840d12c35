//go:build !js

package main

import (
	"context"
	_ "embed"
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
	h, handler, err := withLifeline(cfg, a.mux())
	if err != nil {
		return err
	}
	defer h.Close()

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
	// Nobody serves in this process's place: every page is told the Host is restarting and
	// retries; then the listener closes.
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h.Stop(sctx, 0)
	_ = h.Close()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	return nil
}

// app is the application: a page, a sign-in stub, and the users whose streams it publishes.
type app struct {
	log   *log.Logger
	mu    sync.Mutex
	users map[string]uint64 // signed-in users → events published to their stream
}

func newApp() *app { return &app{log: log.Default(), users: map[string]uint64{}} }

func (a *app) mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", a.page)
	mux.HandleFunc("GET /login", a.login)
	mux.HandleFunc("GET /logout", a.logout)
	return mux
}

//go:embed index.html
var indexHTML string

var pageTemplate = template.Must(template.New("index.html").Parse(indexHTML))

// page serves the application's page. It has no Lifeline markup: the Host plugin injects the
// client into its head, and the client adds the connection indicator.
func (a *app) page(w http.ResponseWriter, r *http.Request) {
	user, _ := signedIn(r)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache") // a page per user: always asked for again
	if err := pageTemplate.Execute(w, struct{ User string }{user}); err != nil {
		a.log.Printf("rendering the page: %v", err)
	}
}

// The sign-in stub. A name is a few lower-case letters or digits, so that it is a valid
// stream name and a cookie value as it is.
const cookieName = "user"

var validUser = regexp.MustCompile(`^[a-z0-9]{1,32}$`)

// maxUsers bounds the users the stub publishes for: anyone may sign in as any name.
const maxUsers = 100

// signedIn returns the user the request's cookie names.
func signedIn(r *http.Request) (string, bool) {
	c, err := r.Cookie(cookieName)
	if err != nil || !validUser.MatchString(c.Value) {
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
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: user, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (a *app) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Path: "/", MaxAge: -1})
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
