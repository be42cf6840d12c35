//go:build !js

package restart_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/hostplugin/restart"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// A Host's main with graceful restarts: SIGUSR2 starts a successor that inherits the port and
// drains every page to it; SIGTERM (a plain stop, with no successor) closes every page at
// once with 1012 instead of waiting out a drain nobody can take.
func Example_main() {
	h, err := hostplugin.New(hostplugin.DefaultConfig(), &hostplugin.Options{Authorize: hostplugin.PublicStreams})
	if err != nil {
		log.Fatal(err)
	}
	r, err := restart.New(&restart.Options{PIDFile: "/run/lifeline-host/host.pid"})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Stop()
	// The predecessor's socket, systemd's (socket activation), or a new one.
	ln, err := r.Listen("tcp", "127.0.0.1:8080")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: h.Handler(http.FileServer(http.Dir("web")))}
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}()
	h.SetReady(true)
	if err := r.Ready(); err != nil { // the predecessor, if any, now drains to us
		log.Fatal(err)
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR2, syscall.SIGTERM, syscall.SIGINT)
	for {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGUSR2 {
				go func() {
					if err := r.Upgrade(); err != nil {
						log.Print(err) // this process carries on serving
					}
				}()
				continue
			}
		case <-r.Replaced():
		}
		break
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.Config().DrainTimeout()+5*time.Second)
	defer cancel()
	if _, err := r.Shutdown(ctx, srv, h); err != nil {
		log.Print(err)
	}
}

// What a page sees when its Host stops with no successor: the restart message, which a browser
// page can read, then close 1012 with the same reason; at once, not after drainTimeoutMs.
func ExampleRestarter_Shutdown() {
	quiet := slog.New(slog.DiscardHandler)
	h, _ := hostplugin.New(hostplugin.DefaultConfig(), &hostplugin.Options{Logger: quiet, Authorize: hostplugin.PublicStreams})
	r, _ := restart.New(&restart.Options{Logger: quiet, RetryAfter: 200 * time.Millisecond})
	ln, _ := r.Listen("tcp", "127.0.0.1:0")
	srv := &http.Server{Handler: h.Handler(http.NotFoundHandler())}
	go func() { _ = srv.Serve(ln) }()
	h.SetReady(true)
	_ = r.Ready()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	page, _, err := websocket.Dial(ctx, "ws://"+ln.Addr().String()+wire.DefaultPath,
		&websocket.DialOptions{Subprotocols: []string{wire.Subprotocol}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer page.CloseNow()
	frames := make(chan string, 4)
	go func() {
		for {
			_, b, err := page.Read(ctx)
			if err != nil {
				frames <- fmt.Sprintf("closed %d %q", websocket.CloseStatus(err), closeReason(err))
				return
			}
			frames <- string(b)
		}
	}()
	fmt.Println(trimSession(<-frames))

	// SIGTERM, and nothing took over.
	closed, err := r.Shutdown(ctx, srv, h)
	fmt.Println("sessions closed:", closed, err)
	fmt.Println(<-frames)
	fmt.Println(<-frames)
	// Output:
	// {"t":"ready","heartbeatMs":15000,"dedupMs":600000,"maxFrameBytes":4096,"report":true}
	// sessions closed: 1 <nil>
	// {"t":"error","message":"service-restart retry-after=200"}
	// closed 1012 "service-restart retry-after=200"
}

func closeReason(err error) string {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return ce.Reason
	}
	return err.Error()
}

// trimSession leaves out the ready frame's session id and dedup epoch, which are random.
func trimSession(frame string) string {
	f, err := wire.DecodeHost([]byte(frame))
	if err != nil || f.T != wire.TypeReady {
		return frame
	}
	f.Session, f.Dedup, f.Who = "", "", "" // random per Host, and the tag of the identity with it
	b, _ := f.Encode()
	return string(b)
}
