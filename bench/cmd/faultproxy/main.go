//go:build !js

package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lifeline-go/lifeline/bench/faultproxy"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9000", "address to listen on")
	upstream := flag.String("upstream", "127.0.0.1:8080", "server to forward to")
	control := flag.String("control", "", "address of the HTTP control panel (GET/POST /mode, GET /records); empty: none")
	mode := flag.String("mode", "up", "initial mode: up, refuse, blackhole or flap")
	flapAfter := flag.Duration("flap-after", 200*time.Millisecond, "how long flap lets a connection live")
	logPath := flag.String("log", "", "file for the connection log (JSON lines); default stdout")
	flag.Parse()

	m, err := faultproxy.ParseMode(*mode)
	if err != nil {
		log.Fatal(err)
	}
	var logw io.Writer = os.Stdout
	if *logPath != "" {
		f, err := os.Create(*logPath)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		logw = f
	}
	p, err := faultproxy.Listen(*listen, *upstream, &faultproxy.Options{FlapAfter: *flapAfter, Log: logw})
	if err != nil {
		log.Fatal(err)
	}
	p.SetMode(m)
	fmt.Fprintf(os.Stderr, "faultproxy: %s -> %s, mode %s\n", p.Addr(), *upstream, m)
	if *control != "" {
		srv := &http.Server{Addr: *control, Handler: p.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() { log.Fatal(srv.ListenAndServe()) }()
		fmt.Fprintf(os.Stderr, "faultproxy: control panel on http://%s/mode\n", *control)
	}

	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			m, err := faultproxy.ParseMode(sc.Text())
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				continue
			}
			p.SetMode(m)
			fmt.Fprintf(os.Stderr, "faultproxy: mode %s\n", m)
		}
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	_ = p.Close()
}
