//go:build !js

package hostplugin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"golang.org/x/time/rate"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/hostplugin/internal/client"
	"github.com/lifeline-go/lifeline/hostplugin/internal/inject"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// pageState is everything derived from one applied Config, swapped as a whole so that a
// request sees one config from start to end.
type pageState struct {
	cfg       Config
	bootstrap []byte          // the bootstrap element alone
	page      inject.Page     // what pages get: the bootstrap and the client's tags, hashed and dated
	client    *client.Client  // the client served; nil with Options.NoClient
	clients   map[string]bool // the prefixes the client is served under: every one announced
	endpoints map[string]bool // every endpoint announced so far: older pages still use theirs
}

// Apply makes cfg the Host's config. Pages loaded afterwards carry its timing and endpoint;
// sessions opened afterwards use its heartbeat and limits; the session cap, accept rate and
// ring size apply at once. Sessions already open keep the heartbeat they announced.
func (h *Host) Apply(cfg Config) error {
	if !cfg.Valid() {
		return ErrInvalidConfig
	}
	h.apply(cfg)
	return nil
}

// Reload reads the config file at path and applies it. An invalid file changes nothing: the
// Host keeps its config, logs why, and returns the error. The Host watches no file and no
// signal: the application calls Reload when it wants the file read again (on SIGHUP, say).
func (h *Host) Reload(path string) error {
	cfg, err := LoadConfig(path)
	if err != nil {
		h.logger.Error("hostplugin: config reload refused, keeping the current config", "path", path, "err", err)
		return err
	}
	h.apply(cfg)
	h.logger.Info("hostplugin: config reloaded", "path", path)
	return nil
}

// Config returns the config in force.
func (h *Host) Config() Config { return h.state.Load().cfg }

func (h *Host) apply(cfg Config) {
	h.applyMu.Lock()
	defer h.applyMu.Unlock()
	bootstrap := bootstrapElement(cfg)
	element := bootstrap
	clients := map[string]bool{}
	if h.client != nil {
		prefix := ClientPrefix(cfg.endpoint)
		element = append(append([]byte(nil), bootstrap...), h.client.Tags(prefix)...)
		clients[prefix] = true
	}
	sum := sha256.Sum256(element)
	endpoints := map[string]bool{cfg.endpoint: true}
	// at dates the bootstrap for Last-Modified, whose resolution is a second: two configs
	// applied within one second must still get different dates, or a cache validating by
	// date would keep the older bootstrap. A config with the same bootstrap keeps the date,
	// so caches stay valid.
	at := time.Now().Truncate(time.Second)
	if old := h.state.Load(); old != nil {
		for ep := range old.endpoints {
			endpoints[ep] = true
		}
		for p := range old.clients {
			clients[p] = true
		}
		switch {
		case string(old.page.Element) == string(element):
			at = old.page.Applied
		case !at.After(old.page.Applied):
			at = old.page.Applied.Add(time.Second)
		}
	}
	h.state.Store(&pageState{
		cfg:       cfg,
		bootstrap: bootstrap,
		page:      inject.Page{Element: element, Hash: hex.EncodeToString(sum[:4]), Applied: at},
		client:    h.client,
		clients:   clients,
		endpoints: endpoints,
	})
	h.adm.configure(rate.Limit(cfg.acceptRate), cfg.acceptBurst)
	h.perIP.configure(cfg.perIPRate, cfg.perIPBurst)
	if h.ring != nil {
		h.ring.SetSize(cfg.ringSize)
	}
	if h.memCalls != nil {
		h.memCalls.SetWindow(cfg.callDedup)
	}
}

// bootstrap returns the JSON that pages receive in their bootstrap element: the resolved
// timing, the endpoint and the heartbeat; nothing secret. It is safe inside an HTML script
// element: "<", ">", "&", U+2028 and U+2029 appear only as \u escapes.
func (c Config) bootstrap() []byte {
	// json.Marshal escapes all five: <, > and & because it escapes HTML by default (only an
	// Encoder with SetEscapeHTML(false) does not), U+2028 and U+2029 always. The guarantee
	// rests on that, and TestBootstrapNeverHoldsRawScriptBreakers holds it to it.
	b, err := json.Marshal(struct {
		Recovery      controller.Config `json:"recovery"`
		Endpoint      string            `json:"endpoint"`
		HeartbeatMs   int64             `json:"heartbeatMs"`
		CallTimeoutMs int64             `json:"callTimeoutMs"`
	}{c.recovery, c.endpoint, c.heartbeat.Milliseconds(), c.callTimeout.Milliseconds()})
	if err != nil {
		// Every field is a plain number or a string: Marshal cannot fail.
		panic(fmt.Sprintf("hostplugin: encoding the bootstrap: %v", err))
	}
	return b
}

const (
	scriptOpen  = `<script type="application/json" id="` + wire.BootstrapID + `">`
	scriptClose = `</script>`
)

func bootstrapElement(cfg Config) []byte {
	b := cfg.bootstrap()
	out := make([]byte, 0, len(scriptOpen)+len(b)+len(scriptClose))
	out = append(out, scriptOpen...)
	out = append(out, b...)
	return append(out, scriptClose...)
}

// BootstrapElement returns the bootstrap element of the config in force,
//
//	<script type="application/json" id="lifeline-bootstrap">{…}</script>
//
// and nothing else: for a page that loads a client of its own (Options.NoClient) and renders
// its head itself.
func (h *Host) BootstrapElement() []byte {
	return append([]byte(nil), h.state.Load().bootstrap...)
}

// BootHash returns the Content-Security-Policy source of the boot script Handler injects
// inline ('sha256-…'), or "" with Options.NoClient. A page whose policy allows no inline
// script lists it in script-src, beside 'self' (the tab script, the runner and the worker are
// served from the page's origin) and 'wasm-unsafe-eval' (to compile the wasm):
//
//	Content-Security-Policy: script-src 'self' 'wasm-unsafe-eval' 'sha256-…'
//
// Without it the browser refuses the boot, says so on the console, and the tab script boots
// the client when it has come: the page still connects, later. The bootstrap element is JSON,
// which no policy runs, and needs nothing. The hash changes only with the client, never with
// the config.
func (h *Host) BootHash() string {
	if h.client == nil {
		return ""
	}
	return h.client.BootHash()
}

// HeadElements returns what [Host.Handler] inserts at the end of every page's head under the
// config in force: the bootstrap element, then the client's script tag (none with
// Options.NoClient). It is for a page that Handler cannot inject into (one compressed before
// it reaches the Host, say) and renders its head itself; such a page must render it anew
// whenever a config is applied, since both change with it.
func (h *Host) HeadElements() []byte {
	return append([]byte(nil), h.state.Load().page.Element...)
}
