package gateway

import (
	"fmt"
	"net/url"
	"strconv"
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

// Overrides are the options embedding code may pass directly (globalThis.lifelineOptions in
// the page). They override the bootstrap field by field and go through the same decoder and
// resolver; problems in them are reported under "lifelineOptions.".
type Overrides struct {
	Recovery wire.RawJSON `json:"recovery,omitempty"`
	Endpoint string       `json:"endpoint,omitempty"`
	// Mode is where the page's connection runs: "shared" (one per origin, in a SharedWorker,
	// where the browser has one: the default) or "in-page". The tab script acts on it; it is
	// checked here with the rest.
	Mode string `json:"mode,omitempty"`
}

// Modes a page may ask for in Overrides.Mode.
const (
	ModeShared = "shared"
	ModeInPage = "in-page"
)

// optionsPath prefixes the paths of problems found in the overrides.
const optionsPath = "lifelineOptions"

// ResolvePage reads the Host's bootstrap JSON (untrusted) and the embedding code's overrides
// (may be empty), and resolves them against the page's own URL. Both documents go through the
// decoder the Host's config file goes through (controller.DecodeDocument: exact keys, none
// twice, nothing after the document) and the one resolver; every error names the field and
// the value as written, e.g. `controller: recovery.deadlineMs: must be an integer in
// 1..2147483647, got 0`.
func ResolvePage(bootstrap, overrides []byte, pageURL string) (PageConfig, error) {
	var b wire.Bootstrap
	if _, err := controller.DecodeDocument("gateway: bootstrap", bootstrap, &b, ""); err != nil {
		return PageConfig{}, err
	}
	var rec controller.Recovery
	written, err := decodeRecovery(b.Recovery, &rec, "recovery")
	if err != nil {
		return PageConfig{}, err
	}
	var o Overrides
	if strings.TrimSpace(string(overrides)) != "" {
		if _, err := controller.DecodeDocument("gateway: options", overrides, &o, optionsPath); err != nil {
			return PageConfig{}, err
		}
	}
	if o.Mode != "" && o.Mode != ModeShared && o.Mode != ModeInPage {
		return PageConfig{}, &controller.ConfigError{Package: "gateway: options", Fields: []controller.FieldError{{
			Path: optionsPath + ".mode", Rule: `must be "` + ModeShared + `" or "` + ModeInPage + `"`, Value: strconv.Quote(wire.Truncate(o.Mode)),
		}}}
	}
	// The override is decoded onto the bootstrap's recovery: a field it names replaces the
	// bootstrap's, whatever the field.
	over, err := decodeRecovery(o.Recovery, &rec, optionsPath+".recovery")
	if err != nil {
		return PageConfig{}, err
	}
	cfg, err := controller.Resolve(rec)
	if ce, ok := err.(*controller.ConfigError); ok {
		// Name each broken value where it was written: the override, else the bootstrap.
		for i, f := range ce.Fields {
			if w, ok := over[optionsPath+"."+f.Path]; ok {
				ce.Fields[i].Path, ce.Fields[i].Value = optionsPath+"."+f.Path, w
			} else if w, ok := written[f.Path]; ok {
				ce.Fields[i].Value = w
			}
		}
	}
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

func decodeRecovery(raw wire.RawJSON, rec *controller.Recovery, path string) (map[string]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	return controller.DecodeDocument("controller", raw, rec, path)
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
	u, err := normalise(base.ResolveReference(ref))
	if err != nil {
		return "", fmt.Errorf("%w (endpoint %q, page %q)", err, endpoint, pageURL)
	}
	return u.String(), nil
}
