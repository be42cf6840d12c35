//go:build !js

package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/hostplugin/metrics"
)

// metricsServer serves the Host's Prometheus metrics, with the Go runtime's and the
// process's, at /metrics on a listener of its own (-metrics): an operator's scraper, never the
// pages, reaches it. A nil *metricsServer (no -metrics) serves nothing and costs the Host
// nothing: its Observer stays the default.
type metricsServer struct {
	ln  net.Listener
	m   *metrics.Metrics
	srv *http.Server
}

// listenMetrics listens on addr for the metrics (nil for ""). An address without a host
// (":9464") is loopback's: the metrics say how many pages a Host carries and why they were
// refused, which is the operator's business, so serving them to the network takes naming an
// interface (0.0.0.0:9464).
func listenMetrics(addr string) (*metricsServer, error) {
	if addr == "" {
		return nil, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("-metrics %q: %v", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("-metrics: %v", err)
	}
	return &metricsServer{ln: ln, m: metrics.New()}, nil
}

// observe makes the metrics the Host's Observer.
func (ms *metricsServer) observe(opts *hostplugin.Options) {
	if ms != nil {
		opts.Observer = ms.m
	}
}

// serve starts serving /metrics.
func (ms *metricsServer) serve(logger *slog.Logger) {
	if ms == nil {
		return
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(ms.m, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelError)}))
	ms.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := ms.srv.Serve(ms.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("host: the metrics server stopped", "err", err)
		}
	}()
	logger.Info("host: metrics", "url", "http://"+ms.ln.Addr().String()+"/metrics")
}

// Close stops serving the metrics.
func (ms *metricsServer) Close() {
	if ms == nil {
		return
	}
	if ms.srv != nil {
		_ = ms.srv.Close()
	}
	_ = ms.ln.Close()
}
