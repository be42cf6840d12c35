package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway/wire"
)

// PageConfig is what a page needs to build its controller and gateway: the resolved timing
// and the absolute WebSocket URL of the events endpoint.
type PageConfig struct {
	Recovery controller.Config
	URL      string
}

// Overrides are the options embedding code may pass directly. They override the bootstrap
// field by field, and go through the same resolver.
type Overrides struct {
	Recovery json.RawMessage `json:"recovery,omitempty"`
	Endpoint string          `json:"endpoint,omitempty"`
}

// ResolvePage reads the Host's bootstrap JSON (untrusted) and the embedding code's overrides
// (may be empty), and resolves them against the page's own URL. Every error names the field
// and the value, e.g. `controller: recovery.deadlineMs: must be an integer in
// 1..2147483647, got 0`.
func ResolvePage(bootstrap, overrides []byte, pageURL string) (PageConfig, error) {
	var b wire.Bootstrap
	if err := strictJSON(bootstrap, &b); err != nil {
		return PageConfig{}, fmt.Errorf("gateway: bootstrap: %w", err)
	}
	var o Overrides
	if len(bytes.TrimSpace(overrides)) > 0 {
		if err := strictJSON(overrides, &o); err != nil {
			return PageConfig{}, fmt.Errorf("gateway: options: %w", err)
		}
	}
	rec, err := controller.ParseRecovery(b.Recovery)
	if err != nil {
		return PageConfig{}, err
	}
	over, err := controller.ParseRecovery(o.Recovery)
	if err != nil {
		return PageConfig{}, err
	}
	merge(&rec.SlowAfterMs, over.SlowAfterMs)
	merge(&rec.DeadlineMs, over.DeadlineMs)
	merge(&rec.InitialDelayMs, over.InitialDelayMs)
	merge(&rec.MaxDelayMs, over.MaxDelayMs)
	merge(&rec.Factor, over.Factor)
	merge(&rec.Jitter, over.Jitter)
	merge(&rec.StableAfterMs, over.StableAfterMs)
	cfg, err := controller.Resolve(rec)
	if err != nil {
		return PageConfig{}, err
	}
	endpoint := b.Endpoint
	if o.Endpoint != "" {
		endpoint = o.Endpoint
	}
	u, err := EventsURL(pageURL, endpoint)
	if err != nil {
		return PageConfig{}, err
	}
	return PageConfig{Recovery: cfg, URL: u}, nil
}

func merge(dst **float64, over *float64) {
	if over != nil {
		*dst = over
	}
}

func strictJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("%s: must be a %s, got %s", te.Field, te.Type, te.Value)
		}
		return err
	}
	if d.More() {
		return errors.New("trailing data after the object")
	}
	return nil
}

// EventsURL resolves an endpoint (a path, or an absolute URL) against the page's URL and
// returns the WebSocket URL to dial: http becomes ws, https becomes wss. An empty endpoint is
// the default path.
func EventsURL(pageURL, endpoint string) (string, error) {
	if endpoint == "" {
		endpoint = wire.DefaultPath
	}
	base, err := url.Parse(pageURL)
	if err != nil {
		return "", fmt.Errorf("gateway: page URL %q: %v", pageURL, err)
	}
	ref, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("gateway: endpoint: must be a path or a URL, got %q", endpoint)
	}
	u := base.ResolveReference(ref)
	switch strings.ToLower(u.Scheme) {
	case "http", "ws":
		u.Scheme = "ws"
	case "https", "wss":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("gateway: endpoint: scheme must be ws, wss, http or https, got %q in %q", u.Scheme, endpoint)
	}
	if u.Host == "" {
		return "", fmt.Errorf("gateway: endpoint: no host in %q (page %q)", endpoint, pageURL)
	}
	u.Fragment = ""
	return u.String(), nil
}
