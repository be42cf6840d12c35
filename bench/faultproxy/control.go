//go:build !js

package faultproxy

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// Handler is the proxy's control panel:
//
//	GET  /mode              the mode in force
//	POST /mode?mode=NAME    switch (or the name as the body)
//	GET  /records           every accepted connection, as a JSON array of [Record]
func (p *Proxy) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /mode", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, p.Mode().String()+"\n")
	})
	mux.HandleFunc("POST /mode", func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("mode")
		if name == "" {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 64))
			name = strings.TrimSpace(string(body))
		}
		m, err := ParseMode(name)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		p.SetMode(m)
		_, _ = io.WriteString(w, m.String()+"\n")
	})
	mux.HandleFunc("GET /records", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(p.Records())
	})
	return mux
}
