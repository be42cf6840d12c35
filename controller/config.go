package controller

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lifeline-go/lifeline/internal/strictjson"
)

// Recovery is the timing config as it travels: in the Host's config file, in the page's
// bootstrap, and in options passed by embedding code. All durations are milliseconds. A nil
// field takes its default; a present field must pass [Resolve]. It is untrusted input.
//
// The fields are pointers so that an absent field (default) and a zero (an error) differ.
// Go 1.26's new(expr) builds one inline: Recovery{DeadlineMs: new(15000.0)}.
type Recovery struct {
	// SlowAfterMs: a handshake still pending after this is reported as a slow Host. Default 3000.
	SlowAfterMs *float64 `json:"slowAfterMs,omitempty"`
	// DeadlineMs: a handshake still pending after this is cancelled. Default 15000.
	DeadlineMs *float64 `json:"deadlineMs,omitempty"`
	// InitialDelayMs: the first cap of the retry ladder. Default 500.
	InitialDelayMs *float64 `json:"initialDelayMs,omitempty"`
	// MaxDelayMs: the top cap; failures at the top cap keep retrying forever. Default 10000.
	MaxDelayMs *float64 `json:"maxDelayMs,omitempty"`
	// Factor: cap growth per failure; 1 means a fixed cap. Default 2.
	Factor *float64 `json:"factor,omitempty"`
	// Jitter: the delay is cap × (1 − jitter × U[0,1)). Default 0.5 (50–100% of the cap).
	Jitter *float64 `json:"jitter,omitempty"`
	// StableAfterMs: how long a generation must stay ready before the ladder resets to its
	// first cap (flap damping); 0 resets on ready. Default 10000.
	StableAfterMs *float64 `json:"stableAfterMs,omitempty"`
}

// JSONFields lists the members a recovery document may have: each field, by its json tag
// (internal/strictjson decodes the documents by it; the tests hold it to the tags).
func (r *Recovery) JSONFields() []strictjson.Field {
	return []strictjson.Field{
		{Name: "slowAfterMs", Ptr: &r.SlowAfterMs},
		{Name: "deadlineMs", Ptr: &r.DeadlineMs},
		{Name: "initialDelayMs", Ptr: &r.InitialDelayMs},
		{Name: "maxDelayMs", Ptr: &r.MaxDelayMs},
		{Name: "factor", Ptr: &r.Factor},
		{Name: "jitter", Ptr: &r.Jitter},
		{Name: "stableAfterMs", Ptr: &r.StableAfterMs},
	}
}

// Config is a resolved, valid timing config. The only ways to get one are [DefaultConfig] and
// [Resolve], so a config that broke a rule cannot reach a [Controller]. The zero Config is not
// valid: [New] refuses it.
type Config struct {
	slowAfter    time.Duration
	deadline     time.Duration
	initialDelay time.Duration
	maxDelay     time.Duration
	factor       float64
	jitter       float64
	stableAfter  time.Duration
}

// The defaults (README's config table); DefaultConfig is where embedding code reads them.
const (
	defaultSlowAfter    = 3 * time.Second
	defaultDeadline     = 15 * time.Second
	defaultInitialDelay = 500 * time.Millisecond
	defaultMaxDelay     = 10 * time.Second
	defaultFactor       = 2.0
	defaultJitter       = 0.5
	defaultStableAfter  = 10 * time.Second
)

// maxTimerMs is the largest timer value a browser honours (setTimeout's signed 32-bit range).
const maxTimerMs = math.MaxInt32

// DefaultConfig returns the default timing config: the one Resolve gives for an empty
// [Recovery] (each field's default is stated on Recovery).
func DefaultConfig() Config {
	return Config{
		slowAfter:    defaultSlowAfter,
		deadline:     defaultDeadline,
		initialDelay: defaultInitialDelay,
		maxDelay:     defaultMaxDelay,
		factor:       defaultFactor,
		jitter:       defaultJitter,
		stableAfter:  defaultStableAfter,
	}
}

// SlowAfter is when a pending handshake is reported as slow.
func (c Config) SlowAfter() time.Duration { return c.slowAfter }

// Deadline is when a pending handshake is cancelled.
func (c Config) Deadline() time.Duration { return c.deadline }

// InitialDelay is the first cap of the retry ladder.
func (c Config) InitialDelay() time.Duration { return c.initialDelay }

// MaxDelay is the top cap of the retry ladder.
func (c Config) MaxDelay() time.Duration { return c.maxDelay }

// Factor is the cap growth per failure.
func (c Config) Factor() float64 { return c.factor }

// Jitter is the share of the cap that is randomised away.
func (c Config) Jitter() float64 { return c.jitter }

// StableAfter is how long a generation must stay ready before the ladder resets.
func (c Config) StableAfter() time.Duration { return c.stableAfter }

// Valid reports whether c came from [Resolve] or [DefaultConfig].
func (c Config) Valid() bool { return c.deadline > 0 }

// Recovery returns c in its wire form, every field present. Resolve(c.Recovery()) == c.
func (c Config) Recovery() Recovery {
	ms := func(d time.Duration) *float64 { v := float64(d / time.Millisecond); return &v }
	f, j := c.factor, c.jitter
	return Recovery{
		SlowAfterMs:    ms(c.slowAfter),
		DeadlineMs:     ms(c.deadline),
		InitialDelayMs: ms(c.initialDelay),
		MaxDelayMs:     ms(c.maxDelay),
		Factor:         &f,
		Jitter:         &j,
		StableAfterMs:  ms(c.stableAfter),
	}
}

// MarshalJSON encodes c in its wire form (milliseconds), so a resolved config can be injected
// into a page as it is. (Written out rather than with encoding/json, which the browser build
// must not link.)
func (c Config) MarshalJSON() ([]byte, error) {
	ms := func(b []byte, name string, d time.Duration) []byte {
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		return strconv.AppendInt(b, int64(d/time.Millisecond), 10)
	}
	b := []byte{'{'}
	b = ms(b, "slowAfterMs", c.slowAfter)
	b = ms(append(b, ','), "deadlineMs", c.deadline)
	b = ms(append(b, ','), "initialDelayMs", c.initialDelay)
	b = ms(append(b, ','), "maxDelayMs", c.maxDelay)
	b = strconv.AppendFloat(append(b, `,"factor":`...), c.factor, 'g', -1, 64)
	b = strconv.AppendFloat(append(b, `,"jitter":`...), c.jitter, 'g', -1, 64)
	b = ms(append(b, ','), "stableAfterMs", c.stableAfter)
	return append(b, '}'), nil
}

// FieldError is one broken rule of a config, the page's or the Host's: the field's path, what
// it must be, and the value seen, as written.
type FieldError struct {
	Path  string // "recovery.deadlineMs", "allowedOrigins[2]"; "" for the document itself
	Rule  string // "must be an integer in 1..2147483647"
	Value string // "0", `"x"`; as the document had it, "" when there is none to show
}

func (e FieldError) Error() string {
	var b strings.Builder
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Rule)
	if e.Value != "" {
		b.WriteString(", got ")
		b.WriteString(e.Value)
	}
	return b.String()
}

// ConfigError lists every rule a config broke, in the order of the fields.
type ConfigError struct {
	// Package names what found the errors, the resolver or the reader of the document they
	// were in ("hostplugin" for the Host's config file); the message begins with it.
	// Default "controller".
	Package string
	Fields  []FieldError
}

func (e *ConfigError) Error() string {
	msgs := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		msgs[i] = f.Error()
	}
	pkg := e.Package
	if pkg == "" {
		pkg = "controller"
	}
	return pkg + ": " + strings.Join(msgs, "; ")
}

// Unwrap exposes each [FieldError] to errors.Is and errors.As.
func (e *ConfigError) Unwrap() []error {
	errs := make([]error, len(e.Fields))
	for i, f := range e.Fields {
		errs[i] = f
	}
	return errs
}

const recoveryPath = "recovery."

// Resolve checks every rule of PROTOCOL.md §2.1 and returns the resolved config, or a
// *[ConfigError] naming every broken field with the value seen. Absent fields take defaults.
// It is the one resolver: the Host plugin, the page and embedding code all go through it.
func Resolve(r Recovery) (Config, error) {
	c := DefaultConfig()
	var errs []FieldError
	timer := func(name string, p *float64, dst *time.Duration) {
		if p == nil {
			return
		}
		v := *p
		// NaN fails every comparison, so it must be rejected before the range check passes it.
		if math.IsNaN(v) || math.IsInf(v, 0) || v != math.Trunc(v) || v < 1 || v > maxTimerMs {
			errs = append(errs, FieldError{recoveryPath + name, "must be an integer in 1..2147483647", strictjson.FormatNumber(v)})
			return
		}
		*dst = time.Duration(v) * time.Millisecond
	}
	timer("slowAfterMs", r.SlowAfterMs, &c.slowAfter)
	timer("deadlineMs", r.DeadlineMs, &c.deadline)
	timer("initialDelayMs", r.InitialDelayMs, &c.initialDelay)
	timer("maxDelayMs", r.MaxDelayMs, &c.maxDelay)
	if p := r.Factor; p != nil {
		if v := *p; math.IsNaN(v) || math.IsInf(v, 0) || v < 1 {
			errs = append(errs, FieldError{recoveryPath + "factor", "must be a finite number >= 1", strictjson.FormatNumber(v)})
		} else {
			c.factor = v
		}
	}
	if p := r.Jitter; p != nil {
		if v := *p; math.IsNaN(v) || v < 0 || v > 1 {
			errs = append(errs, FieldError{recoveryPath + "jitter", "must be a number in [0,1]", strictjson.FormatNumber(v)})
		} else {
			c.jitter = v
		}
	}
	if p := r.StableAfterMs; p != nil {
		// 0 is legal here: it restores the immediate reset on ready.
		if v := *p; math.IsNaN(v) || math.IsInf(v, 0) || v != math.Trunc(v) || v < 0 || v > maxTimerMs {
			errs = append(errs, FieldError{recoveryPath + "stableAfterMs", "must be an integer in 0..2147483647", strictjson.FormatNumber(v)})
		} else {
			c.stableAfter = time.Duration(v) * time.Millisecond
		}
	}
	// Only compare the ladder's ends when both are themselves valid, so one mistake is
	// reported once.
	if !hasField(errs, "initialDelayMs") && !hasField(errs, "maxDelayMs") && c.initialDelay > c.maxDelay {
		errs = append(errs, FieldError{recoveryPath + "initialDelayMs",
			"must be <= maxDelayMs (" + strconv.FormatInt(int64(c.maxDelay/time.Millisecond), 10) + ")",
			strictjson.FormatNumber(float64(c.initialDelay / time.Millisecond))})
	}
	if len(errs) > 0 {
		return Config{}, &ConfigError{Fields: errs}
	}
	return c, nil
}

func hasField(errs []FieldError, name string) bool {
	return slices.ContainsFunc(errs, func(e FieldError) bool { return e.Path == recoveryPath+name })
}
