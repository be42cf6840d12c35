//go:build !js

package testserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/test/pathproxy"
)

// paths is the real Host and its middleboxes, made at their first use.
type paths struct {
	once    sync.Once
	host    *hostplugin.Host
	srv     *httptest.Server
	proxies map[string]http.Handler
	stop    context.CancelFunc
	err     error
}

func (p *paths) serve(w http.ResponseWriter, r *http.Request) {
	p.once.Do(p.start)
	if p.err != nil {
		http.Error(w, p.err.Error(), http.StatusInternalServerError)
		return
	}
	mode, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, PathPrefix), "/")
	h := p.proxies[mode]
	if h == nil {
		http.Error(w, "testserver: no path mode "+mode, http.StatusNotFound)
		return
	}
	h.ServeHTTP(w, r)
}

func (p *paths) start() {
	cfg, err := hostplugin.ParseConfig([]byte(`{"allowedOrigins":["127.0.0.1:*","localhost:*"],"heartbeatMs":1000}`))
	if err != nil {
		p.err = err
		return
	}
	var mu sync.Mutex
	runs := map[string]int{}
	h, err := hostplugin.New(cfg, &hostplugin.Options{
		Logger: slog.New(slog.DiscardHandler), Authorize: hostplugin.PublicStreams, NoClient: true,
	})
	if err != nil {
		p.err = err
		return
	}
	h.HandleCall(CountCall, func(_ context.Context, c *hostplugin.Call) (json.RawMessage, error) {
		mu.Lock()
		defer mu.Unlock()
		runs[c.Key]++
		return json.RawMessage(fmt.Sprint(runs[c.Key])), nil
	})
	h.SetReady(true)
	p.host = h
	p.srv = httptest.NewServer(h.Handler(http.NotFoundHandler()))
	ctx, stop := context.WithCancel(context.Background())
	p.stop = stop
	go func() {
		t := time.NewTicker(TicksEvery)
		defer t.Stop()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_, _ = h.Publish(ctx, TicksStream, json.RawMessage(fmt.Sprint(n)))
			}
		}
	}()
	p.proxies = map[string]http.Handler{}
	for m := pathproxy.Open; m <= pathproxy.Buffer; m++ {
		px, err := pathproxy.New(p.srv.URL, m)
		if err != nil {
			p.err = err
			return
		}
		p.proxies[m.String()] = http.StripPrefix(PathPrefix+m.String(), px)
	}
}

func (p *paths) close() {
	if p.host != nil {
		p.stop()
		_ = p.host.Close()
		p.srv.Close()
	}
}
