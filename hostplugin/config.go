//go:build !js

package hostplugin

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/internal/configdoc"
	"github.com/lifeline-go/lifeline/internal/strictjson"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// ConfigFile is the Host's config as it is written: the JSON file, or a value built by embedding
// code. Every field may be absent (nil) and then takes its default; a present field must pass
// [ConfigFile.Resolve]. Numbers are float64 so that 1.5 or 1e300 reach the rules and are reported
// with the value seen, instead of failing inside the JSON decoder without a field name.
type ConfigFile struct {
	// Recovery is the page's timing (PROTOCOL.md §2.1), checked by controller.Resolve.
	Recovery controller.Recovery `json:"recovery" validate:"-"`
	// Endpoint is the URL path of the events endpoint. Default "/_lifeline/events".
	Endpoint *string `json:"endpoint,omitempty" validate:"omitnil,urlpath"`
	// HeartbeatMs: a session that sent nothing for this long gets an hb frame. Default 15000.
	HeartbeatMs *float64 `json:"heartbeatMs,omitempty" validate:"omitnil,intrange=100..600000"`
	// AllowedOrigins lists the page origins allowed besides the Host's own: full origins
	// ("https://app.example.com") or host patterns ("*.example.com", path.Match syntax).
	// Default: none, so only same-origin pages may connect.
	AllowedOrigins []string `json:"allowedOrigins,omitempty" validate:"max=256,unique,dive,origin"`
	// RingSize is how many events each stream keeps for replay. Default 1024.
	RingSize *float64 `json:"ringSize,omitempty" validate:"omitnil,intrange=1..1000000"`
	// MaxSessions caps concurrent sessions; sockets over it close with 1013. Default 10000.
	MaxSessions *float64 `json:"maxSessions,omitempty" validate:"omitnil,intrange=1..10000000"`
	// AcceptRate is how many new sessions per second the Host admits. Default 200.
	AcceptRate *float64 `json:"acceptRate,omitempty" validate:"omitnil,intrange=1..1000000"`
	// AcceptBurst is how many new sessions may arrive at once above the rate. Default 100.
	AcceptBurst *float64 `json:"acceptBurst,omitempty" validate:"omitnil,intrange=1..1000000"`
	// PerIPRate is how many sockets per second one client address may open (behind trusted
	// proxies, the client's: see TrustedProxies); over it the upgrade is refused with 429.
	// Default 20.
	PerIPRate *float64 `json:"perIPRate,omitempty" validate:"omitnil,intrange=1..1000000"`
	// PerIPBurst is how many sockets one address may open at once above its rate. Default 40.
	PerIPBurst *float64 `json:"perIPBurst,omitempty" validate:"omitnil,intrange=1..1000000"`
	// TrustedProxies lists the reverse proxies whose X-Forwarded-For is believed: IP addresses
	// ("10.0.0.5", "::1") and CIDR prefixes ("10.0.0.0/8", "fd00::/8"), at most 256. A socket
	// from one of them counts against the per-address rate of the right-most X-Forwarded-For
	// address that is not itself a trusted proxy; one that names no such address (no header,
	// only trusted hops) is not limited per address, so such a proxy must limit its clients
	// itself. X-Forwarded-For from any other peer is ignored. Default ["127.0.0.0/8", "::1"]:
	// a proxy on the same machine; [] trusts none and limits loopback like any address (see
	// SECURITY.md). Absent or null is the default, [] is not: the field is never omitted when
	// written.
	TrustedProxies []string `json:"trustedProxies" validate:"max=256,unique,dive,trustedproxy"`
	// MaxFrameBytes is the largest client frame accepted; larger ones close with 1009.
	// Default 4096 (a sub frame is at most a few hundred bytes).
	MaxFrameBytes *float64 `json:"maxFrameBytes,omitempty" validate:"omitnil,intrange=512..1048576"`
	// MaxEventBytes is the largest event data (and baseline) the Host sends: Publish refuses
	// larger data, and a larger baseline leaves its reset without one. It keeps every frame
	// within the page's read limit (1 MiB) and bounds what a stream's ring holds. Default
	// 65536.
	MaxEventBytes *float64 `json:"maxEventBytes,omitempty" validate:"omitnil,intrange=1..1000000"`
	// CallTimeoutMs bounds a call: a page gives up on its reply after it (unless the call
	// says otherwise), and a handler's context ends at it. Default 30000.
	CallTimeoutMs *float64 `json:"callTimeoutMs,omitempty" validate:"omitnil,intrange=1..3600000"`
	// CallRate is how many calls per second one session may make; over it a call is answered
	// busy with a retry-after, and the session lives on. Default 50.
	CallRate *float64 `json:"callRate,omitempty" validate:"omitnil,intrange=1..1000000"`
	// CallBurst is how many calls a session may make at once above its rate. Default 100.
	CallBurst *float64 `json:"callBurst,omitempty" validate:"omitnil,intrange=1..1000000"`
	// CallDedupMs is how long the outcome of a keyed call is kept: a re-send within it gets
	// the first outcome and runs nothing. Default 600000 (10 minutes).
	CallDedupMs *float64 `json:"callDedupMs,omitempty" validate:"omitnil,intrange=1..86400000"`
	// DrainTimeoutMs bounds how long Drain waits for sessions to leave. Default 10000.
	DrainTimeoutMs *float64 `json:"drainTimeoutMs,omitempty" validate:"omitnil,intrange=1..3600000"`
	// Reports asks pages, in their ready frame, to report what they lived through after each
	// reconnect (the time not connected, the attempts, the kinds of failure), which the Host
	// hands to its Observer; false asks for none, and refuses any sent. Default true.
	Reports *bool `json:"reports,omitempty"`
	// PresenceGraceMs is presence's grace window (Options.Presence): a member leaves only once
	// its last session has been gone this long, and a change of its count that comes back
	// within it is never shown, so a reconnect, a move or a restart shows no one leaving.
	// Default 10000.
	PresenceGraceMs *float64 `json:"presenceGraceMs,omitempty" validate:"omitnil,intrange=0..600000"`
}

// JSONFields lists the members a config file may have: each field, by its json tag
// (internal/strictjson decodes the file by it; hostplugin's tests hold it to the tags).
func (f *ConfigFile) JSONFields() []strictjson.Field {
	return []strictjson.Field{
		{Name: "recovery", Ptr: &f.Recovery},
		{Name: "endpoint", Ptr: &f.Endpoint},
		{Name: "heartbeatMs", Ptr: &f.HeartbeatMs},
		{Name: "allowedOrigins", Ptr: &f.AllowedOrigins},
		{Name: "ringSize", Ptr: &f.RingSize},
		{Name: "maxSessions", Ptr: &f.MaxSessions},
		{Name: "acceptRate", Ptr: &f.AcceptRate},
		{Name: "acceptBurst", Ptr: &f.AcceptBurst},
		{Name: "perIPRate", Ptr: &f.PerIPRate},
		{Name: "perIPBurst", Ptr: &f.PerIPBurst},
		{Name: "trustedProxies", Ptr: &f.TrustedProxies},
		{Name: "maxFrameBytes", Ptr: &f.MaxFrameBytes},
		{Name: "maxEventBytes", Ptr: &f.MaxEventBytes},
		{Name: "callTimeoutMs", Ptr: &f.CallTimeoutMs},
		{Name: "callRate", Ptr: &f.CallRate},
		{Name: "callBurst", Ptr: &f.CallBurst},
		{Name: "callDedupMs", Ptr: &f.CallDedupMs},
		{Name: "drainTimeoutMs", Ptr: &f.DrainTimeoutMs},
		{Name: "reports", Ptr: &f.Reports},
		{Name: "presenceGraceMs", Ptr: &f.PresenceGraceMs},
	}
}

// Defaults of the fields of [ConfigFile] that are not part of the recovery config.
const (
	DefaultEndpoint      = wire.DefaultPath
	DefaultHeartbeat     = 15 * time.Second
	DefaultRingSize      = 1024
	DefaultMaxSessions   = 10000
	DefaultAcceptRate    = 200
	DefaultAcceptBurst   = 100
	DefaultPerIPRate     = 20
	DefaultPerIPBurst    = 40
	DefaultMaxFrameBytes = 4096
	DefaultMaxEventBytes = 65536
	DefaultCallTimeout   = 30 * time.Second
	DefaultCallRate      = 50
	DefaultCallBurst     = 100
	DefaultCallDedup     = 10 * time.Minute
	DefaultDrainTimeout  = 10 * time.Second
	DefaultPresenceGrace = 10 * time.Second
)

// Config is a resolved, valid Host config. The only ways to get one are [DefaultConfig],
// [ParseConfig], [LoadConfig] and [ConfigFile.Resolve], so a config that broke a rule cannot
// reach a [Host]. The zero Config is not valid: [New] refuses it.
type Config struct {
	recovery       controller.Config
	endpoint       string
	heartbeat      time.Duration
	allowedOrigins []string
	ringSize       int
	maxSessions    int
	acceptRate     int
	acceptBurst    int
	perIPRate      int
	perIPBurst     int
	trustedProxies []netip.Prefix
	maxFrameBytes  int
	maxEventBytes  int
	callTimeout    time.Duration
	callRate       int
	callBurst      int
	callDedup      time.Duration
	drainTimeout   time.Duration
	reports        bool
	presenceGrace  time.Duration
}

// DefaultConfig returns the config of an empty file.
func DefaultConfig() Config {
	return Config{
		recovery:       controller.DefaultConfig(),
		endpoint:       DefaultEndpoint,
		heartbeat:      DefaultHeartbeat,
		ringSize:       DefaultRingSize,
		maxSessions:    DefaultMaxSessions,
		acceptRate:     DefaultAcceptRate,
		acceptBurst:    DefaultAcceptBurst,
		perIPRate:      DefaultPerIPRate,
		perIPBurst:     DefaultPerIPBurst,
		trustedProxies: mustTrustedProxies(defaultTrustedProxies),
		maxFrameBytes:  DefaultMaxFrameBytes,
		maxEventBytes:  DefaultMaxEventBytes,
		callTimeout:    DefaultCallTimeout,
		callRate:       DefaultCallRate,
		callBurst:      DefaultCallBurst,
		callDedup:      DefaultCallDedup,
		drainTimeout:   DefaultDrainTimeout,
		reports:        true,
		presenceGrace:  DefaultPresenceGrace,
	}
}

// Recovery is the resolved page timing the bootstrap carries.
func (c Config) Recovery() controller.Config { return c.recovery }

// Endpoint is the URL path of the events endpoint.
func (c Config) Endpoint() string { return c.endpoint }

// Heartbeat is the idle time after which a session gets an hb frame.
func (c Config) Heartbeat() time.Duration { return c.heartbeat }

// AllowedOrigins returns a copy of the origins allowed besides the Host's own.
func (c Config) AllowedOrigins() []string { return slices.Clone(c.allowedOrigins) }

// RingSize is how many events each stream of the default log keeps for replay.
func (c Config) RingSize() int { return c.ringSize }

// MaxSessions is the session cap.
func (c Config) MaxSessions() int { return c.maxSessions }

// PerIPRate is how many sockets per second one remote address may open.
func (c Config) PerIPRate() int { return c.perIPRate }

// PerIPBurst is how many sockets one remote address may open at once above its rate.
func (c Config) PerIPBurst() int { return c.perIPBurst }

// TrustedProxies returns a copy of the prefixes of the proxies whose X-Forwarded-For is
// believed; an address alone is a prefix of its full length.
func (c Config) TrustedProxies() []netip.Prefix { return slices.Clone(c.trustedProxies) }

// AcceptRate is the number of sessions admitted per second.
func (c Config) AcceptRate() int { return c.acceptRate }

// AcceptBurst is the number of sessions admitted at once above the rate.
func (c Config) AcceptBurst() int { return c.acceptBurst }

// MaxFrameBytes is the read limit for client frames.
func (c Config) MaxFrameBytes() int { return c.maxFrameBytes }

// MaxEventBytes is the largest event data or baseline the Host sends.
func (c Config) MaxEventBytes() int { return c.maxEventBytes }

// CallTimeout bounds a call, on the page and in its handler.
func (c Config) CallTimeout() time.Duration { return c.callTimeout }

// CallRate is how many calls per second one session may make.
func (c Config) CallRate() int { return c.callRate }

// CallBurst is how many calls a session may make at once above its rate.
func (c Config) CallBurst() int { return c.callBurst }

// CallDedup is how long the outcome of a keyed call is kept.
func (c Config) CallDedup() time.Duration { return c.callDedup }

// DrainTimeout bounds how long Drain waits for sessions to leave.
func (c Config) DrainTimeout() time.Duration { return c.drainTimeout }

// PresenceGrace is presence's grace window.
func (c Config) PresenceGrace() time.Duration { return c.presenceGrace }

// Reports is whether pages are asked to report what they lived through after a reconnect.
func (c Config) Reports() bool { return c.reports }

// Valid reports whether c came from a resolver or [DefaultConfig].
func (c Config) Valid() bool { return c.recovery.Valid() && c.endpoint != "" }

// FieldError is one broken rule of a config: the field's JSON path, what it must be, and the
// value seen, as written. It is the controller's type: the Host and the page report config
// errors alike.
type FieldError = controller.FieldError

// ConfigError lists every rule a config broke, in the order the fields appear; its message
// begins "hostplugin:".
type ConfigError = controller.ConfigError

// ErrNoConfigFile is wrapped by [LoadConfig] when the file cannot be read.
var ErrNoConfigFile = errors.New("hostplugin: cannot read the config file")

// LoadConfig reads and resolves the config file at path. It returns every broken rule at once,
// as a *[ConfigError] (shape errors such as unknown fields first, then the rules the other
// fields break); nothing of an invalid file is ever used.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("%w %s: %w", ErrNoConfigFile, path, err)
	}
	return ParseConfig(data)
}

// ParseConfig decodes and resolves a config document. It is read the way the page reads its
// bootstrap (internal/configdoc: keys exactly as written here, none twice, no unknown ones,
// nothing after the document), then every rule is checked; it returns every broken rule at
// once, with the values as the document wrote them.
func ParseConfig(data []byte) (Config, error) {
	doc := configdoc.New(configPackage)
	var f ConfigFile
	if !doc.Decode(data, &f, "", "") {
		return Config{}, doc.Err() // not a document at all: nothing more can be checked
	}
	cfg, err := f.Resolve()
	doc.Check(err)
	if err := doc.Err(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// configPackage begins the message of every config error of the Host.
const configPackage = "hostplugin"

// Resolve checks every rule and returns the resolved config, or a *[ConfigError] naming each
// broken field with the value seen. The recovery section goes through controller.Resolve, the
// same resolver the page uses on its bootstrap.
func (f ConfigFile) Resolve() (Config, error) {
	c := DefaultConfig()
	var errs []FieldError

	rec, err := controller.Resolve(f.Recovery)
	var cerr *controller.ConfigError
	switch {
	case errors.As(err, &cerr):
		errs = append(errs, cerr.Fields...)
	case err != nil:
		errs = append(errs, FieldError{Path: "recovery", Rule: err.Error()})
	default:
		c.recovery = rec
	}
	errs = append(errs, validateStruct(f)...)
	if len(errs) > 0 {
		return Config{}, &ConfigError{Package: configPackage, Fields: errs}
	}

	if f.Endpoint != nil {
		c.endpoint = *f.Endpoint
	}
	ms := func(p *float64, dst *time.Duration) {
		if p != nil {
			*dst = time.Duration(*p) * time.Millisecond
		}
	}
	count := func(p *float64, dst *int) {
		if p != nil {
			*dst = int(*p)
		}
	}
	ms(f.HeartbeatMs, &c.heartbeat)
	ms(f.DrainTimeoutMs, &c.drainTimeout)
	ms(f.CallTimeoutMs, &c.callTimeout)
	ms(f.CallDedupMs, &c.callDedup)
	ms(f.PresenceGraceMs, &c.presenceGrace)
	count(f.CallRate, &c.callRate)
	count(f.CallBurst, &c.callBurst)
	count(f.RingSize, &c.ringSize)
	count(f.MaxSessions, &c.maxSessions)
	count(f.AcceptRate, &c.acceptRate)
	count(f.AcceptBurst, &c.acceptBurst)
	count(f.PerIPRate, &c.perIPRate)
	count(f.PerIPBurst, &c.perIPBurst)
	count(f.MaxFrameBytes, &c.maxFrameBytes)
	count(f.MaxEventBytes, &c.maxEventBytes)
	if f.Reports != nil {
		c.reports = *f.Reports
	}
	c.allowedOrigins = slices.Clone(f.AllowedOrigins)
	if f.TrustedProxies != nil {
		c.trustedProxies = mustTrustedProxies(f.TrustedProxies) // validated above
	}
	return c, nil
}

// File returns c in its written form, every field present. ParseConfig of its JSON yields c.
func (c Config) File() ConfigFile {
	num := func(v float64) *float64 { return &v }
	ep := c.endpoint
	proxies := make([]string, 0, len(c.trustedProxies)) // never nil: nil is the default
	for _, p := range c.trustedProxies {
		proxies = append(proxies, formatTrustedProxy(p))
	}
	return ConfigFile{
		Recovery:        c.recovery.Recovery(),
		Endpoint:        &ep,
		HeartbeatMs:     num(float64(c.heartbeat.Milliseconds())),
		AllowedOrigins:  slices.Clone(c.allowedOrigins),
		RingSize:        num(float64(c.ringSize)),
		MaxSessions:     num(float64(c.maxSessions)),
		AcceptRate:      num(float64(c.acceptRate)),
		AcceptBurst:     num(float64(c.acceptBurst)),
		PerIPRate:       num(float64(c.perIPRate)),
		PerIPBurst:      num(float64(c.perIPBurst)),
		TrustedProxies:  proxies,
		MaxFrameBytes:   num(float64(c.maxFrameBytes)),
		MaxEventBytes:   num(float64(c.maxEventBytes)),
		CallTimeoutMs:   num(float64(c.callTimeout.Milliseconds())),
		CallRate:        num(float64(c.callRate)),
		CallBurst:       num(float64(c.callBurst)),
		CallDedupMs:     num(float64(c.callDedup.Milliseconds())),
		DrainTimeoutMs:  num(float64(c.drainTimeout.Milliseconds())),
		Reports:         &c.reports,
		PresenceGraceMs: num(float64(c.presenceGrace.Milliseconds())),
	}
}

// quote formats a string value for an error message, shortened so that a hostile file cannot
// flood the log.
func quote(s string) string {
	const max = 64
	if len(s) > max {
		s = s[:max] + "…"
	}
	return strconv.Quote(s)
}
