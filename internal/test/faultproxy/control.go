//go:build !js

package faultproxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Handler is the proxy's control panel:
//
//	GET  /mode              the mode in force, as its name and a newline
//	POST /mode?mode=NAME    switch (or the name as the body); answers the new mode's name
//	     &latency=250ms     … and set what latency adds per direction (Go duration syntax)
//	     &jitter=100ms      … and its jitter
//	     &down=9000000      … and throttle's bandwidth towards the client, in bits per second
//	     &up=1500000        … and towards the upstream (0: unlimited)
//	GET  /latency           the latency and jitter, as {"latency":"250ms","jitter":"100ms"}
//	GET  /records           every accepted connection, as a JSON array of [Record]
//
// A bad mode, duration or bandwidth answers 400 and changes nothing.
func (p *Proxy) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /mode", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, p.Mode().String()+"\n")
	})
	mux.HandleFunc("POST /mode", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		name := q.Get("mode")
		if name == "" {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 64))
			name = strings.TrimSpace(string(body))
		}
		m, err := ParseMode(name)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		lat, jit := p.Latency()
		for _, f := range []struct {
			key string
			d   *time.Duration
		}{{"latency", &lat}, {"jitter", &jit}} {
			v := q.Get(f.key)
			if v == "" {
				continue
			}
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				http.Error(w, fmt.Sprintf("faultproxy: %s %q is not a duration ≥ 0 such as 250ms", f.key, v), http.StatusBadRequest)
				return
			}
			*f.d = d
		}
		down, up := p.Bandwidth()
		for _, f := range []struct {
			key  string
			bits *int64
		}{{"down", &down}, {"up", &up}} {
			v := q.Get(f.key)
			if v == "" {
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				http.Error(w, fmt.Sprintf("faultproxy: %s %q is not a bandwidth in bits per second ≥ 0 such as 9000000", f.key, v), http.StatusBadRequest)
				return
			}
			*f.bits = n
		}
		p.SetLatency(lat, jit)
		p.SetBandwidth(down, up)
		p.SetMode(m)
		_, _ = io.WriteString(w, m.String()+"\n")
	})
	mux.HandleFunc("GET /latency", func(w http.ResponseWriter, r *http.Request) {
		lat, jit := p.Latency()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"latency": lat.String(), "jitter": jit.String()})
	})
	mux.HandleFunc("GET /records", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(p.Records())
	})
	return mux
}
