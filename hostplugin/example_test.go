//go:build !js

package hostplugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// The usual wiring: a config file, the Host in front of the site, ready once the application
// is, stopped on the way out (package hostplugin/restart adds handing the socket to a
// successor).
func ExampleNew() {
	cfg, err := hostplugin.LoadConfig("lifeline.json")
	if err != nil {
		log.Fatal(err) // names the field and the value: hostplugin: heartbeatMs: must be ...
	}
	h, err := hostplugin.New(cfg, &hostplugin.Options{
		// Every stream of this site is public. (ExampleOptions_authorize keeps them private.)
		Authorize: hostplugin.PublicStreams,
	})
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: h.Handler(http.FileServer(http.Dir("web")))}
	go func() { _ = srv.ListenAndServe() }()
	h.SetReady(true)

	// ... on SIGHUP (the Host watches no signal): h.Reload("lifeline.json"); on SIGTERM:
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Nobody serves in this process's place: every page gets 1012 now, and so does a socket
	// that arrives before the server stops. (Behind a load balancer whose other Hosts take
	// the pages, h.Drain(ctx, "") first.)
	if err := h.Shutdown(ctx, srv); err != nil {
		log.Print(err)
	}

}

// Every mistake of a file is reported at once, each with its path and the value seen.
func ExampleParseConfig() {
	_, err := hostplugin.ParseConfig([]byte(`{"recovery":{"deadlineMs":0},"heartbeatMs":50,"endpoint":"events"}`))
	var ce *hostplugin.ConfigError
	if errors.As(err, &ce) {
		for _, f := range ce.Fields {
			fmt.Println(f)
		}
	}
	// Output:
	// recovery.deadlineMs: must be an integer in 1..2147483647, got 0
	// endpoint: must be a URL path starting with "/", without spaces, control characters, "?" or "#", got "events"
	// heartbeatMs: must be an integer in 100..600000, got 50
}

func ExampleConfigFile_Resolve() {
	_, err := hostplugin.ConfigFile{HeartbeatMs: new(50.0)}.Resolve()
	fmt.Println(err)
	// Output:
	// hostplugin: heartbeatMs: must be an integer in 100..600000, got 50
}

// Every HTML page of the application gets the bootstrap and the client at the end of its head.
func ExampleHost_Handler() {
	h, _ := hostplugin.New(hostplugin.DefaultConfig(), &hostplugin.Options{Authorize: hostplugin.PublicStreams})
	defer h.Close()
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<!doctype html><head><title>Hi</title></head><body>Hi</body>")
	})
	rec := httptest.NewRecorder()
	h.Handler(page).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	// (The client's names carry a hash of their content, shown here as <hash>; the inline boot,
	// which starts loading the hub before the tab script has come, as ….)
	out := regexp.MustCompile(`(?s)(<script data-[^>]*>).*?</script>`).ReplaceAllString(rec.Body.String(), "$1…</script>")
	out = regexp.MustCompile(`\.[0-9a-f]{16}\.`).ReplaceAllString(out, ".<hash>.")
	fmt.Println(strings.ReplaceAll(out, "><", ">\n<"))
	// Output:
	// <!doctype html>
	// <head>
	// <title>Hi</title>
	// <script type="application/json" id="lifeline-bootstrap">{"recovery":{"slowAfterMs":3000,"deadlineMs":15000,"initialDelayMs":500,"maxDelayMs":10000,"factor":2,"jitter":0.5,"stableAfterMs":10000},"endpoint":"/_lifeline/events","heartbeatMs":15000,"callTimeoutMs":30000}</script>
	// <script data-wasm="/_lifeline/client/lifeline.<hash>.wasm" data-run="/_lifeline/client/run.<hash>.js" data-worker="/_lifeline/client/worker.<hash>.js">…</script>
	// <script src="/_lifeline/client/lifeline.<hash>.js" data-wasm="/_lifeline/client/lifeline.<hash>.wasm" data-run="/_lifeline/client/run.<hash>.js" data-worker="/_lifeline/client/worker.<hash>.js" async>
	// </script>
	// </head>
	// <body>Hi</body>
}

// A page subscribes to a stream: a fresh subscription is reset to the head (with the stream's
// baseline), then receives the events published afterwards.
func ExampleHost_Publish() {
	h, _ := hostplugin.New(hostplugin.DefaultConfig(), &hostplugin.Options{Authorize: hostplugin.PublicStreams})
	defer h.Close()
	h.SetReady(true)
	count := 0
	h.SetBaseline("ticks", func(string, hostplugin.Cursor) (json.RawMessage, error) {
		return json.RawMessage(fmt.Sprintf(`{"n":%d}`, count)), nil
	})
	for count < 2 {
		count++
		_, _ = h.Publish(context.Background(), "ticks", json.RawMessage(fmt.Sprintf(`{"n":%d}`, count)))
	}
	srv := httptest.NewServer(h.Handler(http.NotFoundHandler()))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+h.Config().Endpoint(),
		&websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.CloseNow()
	next := func() wire.HostFrame {
		_, b, _ := c.Read(ctx)
		f, _ := wire.DecodeHost(b)
		return f
	}
	fmt.Println(next().T)
	_ = c.Write(ctx, websocket.MessageText, []byte(`{"t":"sub","stream":"ticks"}`))
	r := next()
	fmt.Println(r.T, r.Seq, string(r.Baseline))
	count++
	_, _ = h.Publish(ctx, "ticks", json.RawMessage(`{"n":3}`))
	e := next()
	fmt.Println(e.T, e.Seq, string(e.Data))
	// Output:
	// ready
	// reset 2 {"n":2}
	// event 3 {"n":3}
}

// The application decides who may connect and what they may read: here the cookie "user"
// names the user, and user U may read the stream "user.U" only. Without a cookie the
// handshake is refused with 401 before any upgrade; a page asking for another user's stream
// gets a denied frame for it, and its session carries on.
func ExampleOptions_authorize() {
	h, _ := hostplugin.New(hostplugin.DefaultConfig(), &hostplugin.Options{
		Authenticate: func(r *http.Request) (string, error) {
			c, err := r.Cookie("user")
			if err != nil || c.Value == "" {
				return "", fmt.Errorf("%w: sign in first", hostplugin.ErrUnauthenticated)
			}
			return c.Value, nil // a real app checks a signed session here
		},
		Authorize: func(identity, stream string) error {
			if stream != "user."+identity {
				return errors.New("not your stream")
			}
			return nil
		},
	})
	defer h.Close()
	h.SetReady(true)
	srv := httptest.NewServer(h.Handler(http.NotFoundHandler()))
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + h.Config().Endpoint()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	dial := func(header http.Header) (*websocket.Conn, *http.Response, error) {
		return websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}, HTTPHeader: header})
	}

	_, resp, err := dial(nil)
	if err != nil && resp != nil {
		body, _ := io.ReadAll(resp.Body)
		fmt.Print("no cookie: ", resp.StatusCode, " ", string(body))
	}

	c, _, err := dial(http.Header{"Cookie": {"user=alice"}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.CloseNow()
	next := func() wire.HostFrame {
		_, b, _ := c.Read(ctx)
		f, _ := wire.DecodeHost(b)
		return f
	}
	fmt.Println("alice:", next().T)
	_ = c.Write(ctx, websocket.MessageText, []byte(`{"t":"sub","stream":"user.bob"}`))
	d := next()
	fmt.Println("user.bob:", d.T, d.Reason)
	_ = c.Write(ctx, websocket.MessageText, []byte(`{"t":"sub","stream":"user.alice"}`))
	fmt.Println("user.alice:", next().T)
	// Output:
	// no cookie: 401 {"error":"unauthorized","reason":"hostplugin: unauthenticated: sign in first"}
	// alice: ready
	// user.bob: denied not your stream
	// user.alice: reset
}
