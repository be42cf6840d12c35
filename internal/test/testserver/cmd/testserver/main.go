//go:build !js

// Command testserver runs the gateway's scriptable test Host natively, for the gateway tests
// that run under js/wasm (which cannot listen). It prints the server's base URL as its first
// line of output, then serves until SIGINT or SIGTERM:
//
//	$ testserver -addr 127.0.0.1:0
//	ws://127.0.0.1:40467
//
// Give that URL to the tests in the LIFELINE_TEST_SERVER environment variable.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/lifeline-go/lifeline/internal/test/testserver"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("testserver: ")

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	ts := testserver.New()
	srv := &http.Server{Handler: ts}
	fmt.Printf("ws://%s\n", ln.Addr())
	os.Stdout.Sync()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		ts.Close()
		srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
