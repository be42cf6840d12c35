// Package page reads what a page is configured by, the Host's bootstrap (the
// #lifeline-bootstrap element) and the embedding code's globalThis.lifelineOptions, into what
// its connection is built from: the resolved timing and the URL of the events endpoint. Both
// documents are untrusted. They are read the way the Host reads its config file
// (internal/configdoc: the strict decoder, the one resolver, every broken field named where
// it was written with the value as written), so that the Host and the page never accept
// different documents.
package page

import (
	"bytes"
	"strconv"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/internal/configdoc"
	"github.com/lifeline-go/lifeline/internal/strictjson"
	"github.com/lifeline-go/lifeline/internal/tinyfmt"
	"github.com/lifeline-go/lifeline/internal/weburl"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// Config is what a page's connection is built from.
type Config struct {
	// Recovery is the resolved timing: the bootstrap's, overridden field by field by the
	// options'.
	Recovery controller.Config
	// URL is the events endpoint resolved against the page's URL, for gateway.New (which
	// checks it, and makes http ws and https wss).
	URL string
	// CallTimeout is the timeout of a call that sets none: the bootstrap's callTimeoutMs, or
	// 0 for the gateway's default.
	CallTimeout time.Duration
	// UpgradeAfter is the options' upgradeAfterMs: how soon a page on the HTTP carrier first
	// tries a WebSocket again (gateway.Options.UpgradeAfter); 0 for the gateway's default.
	UpgradeAfter time.Duration
}

// options are what embedding code may pass directly (globalThis.lifelineOptions). They
// override the bootstrap field by field; problems in them are reported under optionsPath.
type options struct {
	Recovery wire.RawJSON `json:"recovery,omitempty"`
	Endpoint string       `json:"endpoint,omitempty"`
	// Mode is where the page's connection runs: modeShared (one per origin, in a
	// SharedWorker, where the browser has one: the default) or modeInPage. The tab script
	// (web/lifeline.js) acts on it; it is checked here with the rest.
	Mode string `json:"mode,omitempty"`
	// UpgradeAfterMs is how soon a page on the HTTP carrier first tries a WebSocket again.
	UpgradeAfterMs *float64 `json:"upgradeAfterMs,omitempty"`
}

// JSONFields lists the members the options may have, by their json tags (the tests hold it
// to them).
func (o *options) JSONFields() []strictjson.Field {
	return []strictjson.Field{
		{Name: "recovery", Ptr: (*[]byte)(&o.Recovery)},
		{Name: "endpoint", Ptr: &o.Endpoint},
		{Name: "mode", Ptr: &o.Mode},
		{Name: "upgradeAfterMs", Ptr: &o.UpgradeAfterMs},
	}
}

// Bounds of upgradeAfterMs: not a storm, not forever.
const (
	minUpgradeAfterMs = 1000
	maxUpgradeAfterMs = 3600000
)

const (
	modeShared = "shared"
	modeInPage = "in-page"
)

// optionsPath is where the options stand in error messages.
const optionsPath = "lifelineOptions"

// Resolve reads the bootstrap JSON and the options JSON (empty for none) and resolves the
// endpoint against pageURL. Every problem of both documents is reported at once, as a
// *controller.ConfigError beginning "page:", e.g. `page: recovery.deadlineMs: must be an
// integer in 1..2147483647, got 0` or `page: lifelineOptions.recovery.jitter: must be a
// number in [0,1], got 2`.
func Resolve(bootstrap, opts []byte, pageURL string) (Config, error) {
	doc := configdoc.New("page")
	var b wire.Bootstrap
	if !doc.Decode(bootstrap, &b, "", "") {
		return Config{}, doc.Err()
	}
	var rec controller.Recovery
	if len(b.Recovery) > 0 {
		doc.Decode(b.Recovery, &rec, "", "recovery")
	}
	var o options
	if len(bytes.TrimSpace(opts)) > 0 && doc.Decode(opts, &o, optionsPath, "") {
		if o.Mode != "" && o.Mode != modeShared && o.Mode != modeInPage {
			doc.Refuse(controller.FieldError{
				Path: optionsPath + ".mode", Rule: `must be "` + modeShared + `" or "` + modeInPage + `"`,
				Value: strconv.Quote(wire.Truncate(o.Mode)),
			})
		}
		if u := o.UpgradeAfterMs; u != nil && (*u != float64(int64(*u)) || *u < minUpgradeAfterMs || *u > maxUpgradeAfterMs) {
			doc.Refuse(controller.FieldError{
				Path: optionsPath + ".upgradeAfterMs", Rule: tinyfmt.Sprintf("must be an integer in %d..%d", minUpgradeAfterMs, maxUpgradeAfterMs),
				Value: strconv.FormatFloat(*u, 'f', -1, 64),
			})
		}
		if len(o.Recovery) > 0 {
			// Onto the bootstrap's recovery: a field the options name replaces the bootstrap's.
			doc.Decode(o.Recovery, &rec, optionsPath, "recovery")
		}
	}
	cfg, err := controller.Resolve(rec)
	doc.Check(err)
	if b.CallTimeoutMs < 0 || b.CallTimeoutMs > wire.MaxCallTimeoutMs {
		doc.Refuse(controller.FieldError{Path: "callTimeoutMs", Rule: tinyfmt.Sprintf("must be an integer in 1..%d", wire.MaxCallTimeoutMs), Value: strconv.FormatInt(b.CallTimeoutMs, 10)})
	}
	endpoint, at := b.Endpoint, "endpoint"
	if o.Endpoint != "" {
		endpoint, at = o.Endpoint, optionsPath+".endpoint"
	}
	if endpoint == "" {
		endpoint = wire.DefaultPath
	}
	ref, err := weburl.Parse(endpoint)
	if err != nil {
		doc.Refuse(controller.FieldError{Path: at, Rule: "must be a path or a URL", Value: strconv.Quote(wire.Truncate(endpoint))})
	}
	if err := doc.Err(); err != nil {
		return Config{}, err
	}
	base, err := weburl.Parse(pageURL)
	if err != nil {
		return Config{}, tinyfmt.Errorf("page: the page's URL %q: %v", pageURL, err)
	}
	c := Config{Recovery: cfg, URL: base.ResolveReference(ref).String(), CallTimeout: time.Duration(b.CallTimeoutMs) * time.Millisecond}
	if o.UpgradeAfterMs != nil {
		c.UpgradeAfter = time.Duration(*o.UpgradeAfterMs) * time.Millisecond
	}
	return c, nil
}
