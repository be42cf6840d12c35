//go:build !js

// Command pathproxy runs a middlebox (package pathproxy) in front of a Host, for the end-to-end
// suite: it prints one JSON line, {"listen":"…","control":"…"}, then serves until stdin ends.
// POST /mode?mode=<name> on the control address changes the mode; GET /upgrades says how many
// upgrade requests reached the path.
//
//	pathproxy -backend http://127.0.0.1:8080 -mode strip-upgrade
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/lifeline-go/lifeline/internal/test/pathproxy"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("pathproxy: ")
	backend := flag.String("backend", "http://127.0.0.1:8080", "the Host's base `URL`")
	mode := flag.String("mode", "open", "the path's `mode`: open, strip-upgrade, refuse-403, close-at-once, silent or buffer")
	listen := flag.String("listen", "127.0.0.1:0", "`address` to listen on")
	flag.Parse()
	m, err := pathproxy.ParseMode(*mode)
	if err != nil {
		log.Fatal(err)
	}
	p, err := pathproxy.New(*backend, m)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	cl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	control := http.NewServeMux()
	control.HandleFunc("POST /mode", func(w http.ResponseWriter, r *http.Request) {
		m, err := pathproxy.ParseMode(r.URL.Query().Get("mode"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		p.SetMode(m)
		if m == pathproxy.Open {
			return
		}
		p.Cut() // a path that closes again drops what went through it
	})
	control.HandleFunc("GET /upgrades", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, p.Upgrades())
	})
	go func() { log.Fatal(http.Serve(cl, control)) }()
	go func() { log.Fatal(http.Serve(ln, p)) }()
	_ = json.NewEncoder(os.Stdout).Encode(map[string]string{"listen": ln.Addr().String(), "control": cl.Addr().String()})
	_, _ = io.Copy(io.Discard, os.Stdin)
}
