//go:build !js

package hostplugin_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/test/fieldtest"
)

func TestParseConfigRefusesEveryBrokenRuleWithItsPathAndValue(t *testing.T) {
	const knownTop = "recovery, endpoint, heartbeatMs, allowedOrigins, ringSize, maxSessions, acceptRate, acceptBurst, perIPRate, perIPBurst, trustedProxies, maxFrameBytes, maxEventBytes, callTimeoutMs, callRate, callBurst, callDedupMs, drainTimeoutMs, reports, presenceGraceMs"
	const knownRecovery = "slowAfterMs, deadlineMs, initialDelayMs, maxDelayMs, factor, jitter, stableAfterMs"
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"a zero deadline is refused by the shared resolver",
			`{"recovery":{"deadlineMs":0}}`,
			`hostplugin: recovery.deadlineMs: must be an integer in 1..2147483647, got 0`},
		{"a ladder whose first cap exceeds its top is refused",
			`{"recovery":{"initialDelayMs":20000}}`,
			`hostplugin: recovery.initialDelayMs: must be <= maxDelayMs (10000), got 20000`},
		{"a jitter above one is refused",
			`{"recovery":{"jitter":2}}`,
			`hostplugin: recovery.jitter: must be a number in [0,1], got 2`},
		{"a fractional heartbeat is refused",
			`{"heartbeatMs":1.5}`,
			`hostplugin: heartbeatMs: must be an integer in 100..600000, got 1.5`},
		{"a heartbeat below what a page accepts is refused",
			`{"heartbeatMs":99}`,
			`hostplugin: heartbeatMs: must be an integer in 100..600000, got 99`},
		{"a number beyond float64 is refused with the text written",
			`{"heartbeatMs":1e400}`,
			`hostplugin: heartbeatMs: must be a number within the float64 range, got 1e400`},
		{"a quoted number is refused",
			`{"heartbeatMs":"15000"}`,
			`hostplugin: heartbeatMs: must be a number, got "15000"`},
		{"an unknown field is refused with the known ones",
			`{"heartbeat":15000}`,
			`hostplugin: heartbeat: is not a known field (known: ` + knownTop + `)`},
		{"a field spelled with another case is unknown",
			`{"HeartbeatMs":15000}`,
			`hostplugin: HeartbeatMs: is not a known field (known: ` + knownTop + `)`},
		{"an unknown recovery field is refused with its path",
			`{"recovery":{"deadline":1000}}`,
			`hostplugin: recovery.deadline: is not a known field (known: ` + knownRecovery + `)`},
		{"a field written twice is refused",
			`{"heartbeatMs":1000,"heartbeatMs":2000}`,
			`hostplugin: heartbeatMs: appears more than once`},
		{"an endpoint without a leading slash is refused",
			`{"endpoint":"events"}`,
			`hostplugin: endpoint: must be a URL path starting with "/", without spaces, control characters, "?" or "#", got "events"`},
		{"an endpoint with a query is refused",
			`{"endpoint":"/events?x=1"}`,
			`hostplugin: endpoint: must be a URL path starting with "/", without spaces, control characters, "?" or "#", got "/events?x=1"`},
		{"an origin with another scheme is refused with its index",
			`{"allowedOrigins":["https://app.example.com","ftp://files.example.com"]}`,
			`hostplugin: allowedOrigins[1]: must be an origin like "https://app.example.com" or a host pattern like "*.example.com", got "ftp://files.example.com"`},
		{"a malformed host pattern is refused",
			`{"allowedOrigins":["[a.example.com"]}`,
			`hostplugin: allowedOrigins[0]: must be an origin like "https://app.example.com" or a host pattern like "*.example.com", got "[a.example.com"`},
		{"an origin listed twice is refused",
			`{"allowedOrigins":["a.example.com","a.example.com"]}`,
			`hostplugin: allowedOrigins: must not list an entry twice, got "a.example.com" twice`},
		{"an origin list that is not an array is refused",
			`{"allowedOrigins":"a.example.com"}`,
			`hostplugin: allowedOrigins: must be a JSON array, got "a.example.com"`},
		{"a trusted proxy that is no address is refused with its index",
			`{"trustedProxies":["10.0.0.5","proxy.internal"]}`,
			`hostplugin: trustedProxies[1]: must be an IP address like "10.0.0.5" or a CIDR prefix like "10.0.0.0/8", got "proxy.internal"`},
		{"a trusted prefix longer than its address is refused",
			`{"trustedProxies":["10.0.0.0/33"]}`,
			`hostplugin: trustedProxies[0]: must be an IP address like "10.0.0.5" or a CIDR prefix like "10.0.0.0/8", got "10.0.0.0/33"`},
		{"a trusted prefix with address bits past its length is refused with the prefix meant",
			`{"trustedProxies":["::1","10.0.0.1/8"]}`,
			`hostplugin: trustedProxies[1]: must have no address bits set past the prefix length ("10.0.0.0/8"), got "10.0.0.1/8"`},
		{"a trusted proxy with a zone is refused",
			`{"trustedProxies":["fe80::1%eth0"]}`,
			`hostplugin: trustedProxies[0]: must not carry a zone (the part from %): a peer's address is matched without one, got "fe80::1%eth0"`},
		{"a trusted proxy written as IPv4-mapped IPv6 is refused with its IPv4 form",
			`{"trustedProxies":["::ffff:10.0.0.5"]}`,
			`hostplugin: trustedProxies[0]: must write an IPv4 address as IPv4 ("10.0.0.5"), got "::ffff:10.0.0.5"`},
		{"a trusted prefix written inside IPv4-mapped IPv6 is refused",
			`{"trustedProxies":["::ffff:10.0.0.0/104"]}`,
			`hostplugin: trustedProxies[0]: must write an IPv4 prefix as IPv4, not as ::ffff:0:0/96 inside IPv6, got "::ffff:10.0.0.0/104"`},
		{"a trusted proxy with spaces is refused",
			`{"trustedProxies":[" 10.0.0.5"]}`,
			`hostplugin: trustedProxies[0]: must be an IP address like "10.0.0.5" or a CIDR prefix like "10.0.0.0/8", got " 10.0.0.5"`},
		{"more than 256 trusted proxies are refused",
			`{"trustedProxies":[` + manyAddresses(257) + `]}`,
			`hostplugin: trustedProxies: must list at most 256 entries, got 257 entries`},
		{"a trusted proxy listed twice is refused",
			`{"trustedProxies":["10.0.0.0/8","10.0.0.0/8"]}`,
			`hostplugin: trustedProxies: must not list an entry twice, got "10.0.0.0/8" twice`},
		{"a trusted proxy that is not a string is refused with its index",
			`{"trustedProxies":["10.0.0.5",10]}`,
			`hostplugin: trustedProxies[1]: must be a string, got 10`},
		{"a trusted proxy list that is a string is refused",
			`{"trustedProxies":"10.0.0.0/8"}`,
			`hostplugin: trustedProxies: must be a JSON array, got "10.0.0.0/8"`},
		{"a zero ring is refused",
			`{"ringSize":0}`,
			`hostplugin: ringSize: must be an integer in 1..1000000, got 0`},
		{"a read limit below a sub frame is refused",
			`{"maxFrameBytes":100}`,
			`hostplugin: maxFrameBytes: must be an integer in 512..1048576, got 100`},
		{"a negative session cap is refused",
			`{"maxSessions":-1}`,
			`hostplugin: maxSessions: must be an integer in 1..10000000, got -1`},
		{"a presence grace window over ten minutes is refused, naming field and value",
			`{"presenceGraceMs":600001}`,
			`hostplugin: presenceGraceMs: must be an integer in 0..600000, got 600001`},
		{"a negative presence grace window is refused",
			`{"presenceGraceMs":-1}`,
			`hostplugin: presenceGraceMs: must be an integer in 0..600000, got -1`},
		{"a zero accept rate is refused",
			`{"acceptRate":0}`,
			`hostplugin: acceptRate: must be an integer in 1..1000000, got 0`},
		{"every broken rule is listed, in field order",
			`{"recovery":{"slowAfterMs":-5,"deadlineMs":0},"heartbeatMs":50,"drainTimeoutMs":0}`,
			`hostplugin: recovery.slowAfterMs: must be an integer in 1..2147483647, got -5; ` +
				`recovery.deadlineMs: must be an integer in 1..2147483647, got 0; ` +
				`heartbeatMs: must be an integer in 100..600000, got 50; ` +
				`drainTimeoutMs: must be an integer in 1..3600000, got 0`},
		{"a recovery that is not an object is refused",
			`{"recovery":5}`,
			`hostplugin: recovery: must be a JSON object, got 5`},
		{"a document that is not an object is refused",
			`[]`,
			`hostplugin: must be a JSON object, got []`},
		{"an empty document is refused",
			"  \n",
			`hostplugin: must be a JSON object, the document is empty`},
		{"a syntax error names its line and column",
			"{\n  \"heartbeatMs\": }\n",
			`hostplugin: heartbeatMs: invalid JSON at line 2, column 18: invalid character '}' at start of value`},
		{"trailing data after the object is refused",
			`{} {}`,
			`hostplugin: must hold one JSON value and nothing after it (line 1, column 4), got {}`},
		{"a trailing brace is refused",
			`{"heartbeatMs":1000}}`,
			`hostplugin: must hold one JSON value and nothing after it (line 1, column 21), got }`},
		{"a key in upper case is unknown, not folded",
			`{"RECOVERY":{"deadlineMs":5}}`,
			`hostplugin: RECOVERY: is not a known field (known: ` + knownTop + `)`},
		{"a value beyond the browser timer range prints as written",
			`{"recovery":{"deadlineMs":2147483648}}`,
			`hostplugin: recovery.deadlineMs: must be an integer in 1..2147483647, got 2147483648`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := hostplugin.ParseConfig([]byte(tt.doc))
			if err == nil {
				t.Fatalf("ParseConfig(%s) = %+v, nil; want error %q", tt.doc, cfg, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("ParseConfig(%s) error:\n got %s\nwant %s", tt.doc, err, tt.want)
			}
			var ce *hostplugin.ConfigError
			if !errors.As(err, &ce) || len(ce.Fields) == 0 {
				t.Errorf("ParseConfig(%s) error %T is not a *ConfigError with fields", tt.doc, err)
			}
			if cfg.Valid() {
				t.Errorf("ParseConfig(%s) returned a valid config beside its error", tt.doc)
			}
		})
	}
}

func TestParseConfigAcceptsValidDocuments(t *testing.T) {
	tests := []struct {
		name  string
		doc   string
		check func(t *testing.T, c hostplugin.Config)
	}{
		{"an empty object is the default config", `{}`, func(t *testing.T, c hostplugin.Config) {
			if !reflect.DeepEqual(c, hostplugin.DefaultConfig()) {
				t.Errorf("got %+v, want DefaultConfig() %+v", c.File(), hostplugin.DefaultConfig().File())
			}
		}},
		{"null fields take their defaults", `{"recovery":null,"heartbeatMs":null,"allowedOrigins":null,"trustedProxies":null}`, func(t *testing.T, c hostplugin.Config) {
			if !reflect.DeepEqual(c, hostplugin.DefaultConfig()) {
				t.Errorf("got %+v, want the defaults", c.File())
			}
		}},
		{"every field is read", `{
			"recovery": {"deadlineMs": 20000, "stableAfterMs": 0},
			"endpoint": "/ws",
			"heartbeatMs": 5000,
			"allowedOrigins": ["https://app.example.com", "*.example.org"],
			"ringSize": 16,
			"maxSessions": 50,
			"acceptRate": 7,
			"acceptBurst": 3,
			"trustedProxies": ["10.0.0.0/8", "192.0.2.7", "fd00::/8", "2001:db8::7"],
			"maxFrameBytes": 1024,
			"drainTimeoutMs": 2500
		}`, func(t *testing.T, c hostplugin.Config) {
			got := []any{c.Recovery().Deadline(), c.Recovery().StableAfter(), c.Endpoint(), c.Heartbeat(),
				c.AllowedOrigins(), c.RingSize(), c.MaxSessions(), c.AcceptRate(), c.AcceptBurst(),
				fmt.Sprint(c.TrustedProxies()), c.MaxFrameBytes(), c.DrainTimeout()}
			want := []any{20 * time.Second, time.Duration(0), "/ws", 5 * time.Second,
				[]string{"https://app.example.com", "*.example.org"}, 16, 50, 7, 3,
				"[10.0.0.0/8 192.0.2.7/32 fd00::/8 2001:db8::7/128]", 1024, 2500 * time.Millisecond}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v\nwant %v", got, want)
			}
		}},
		{"a config survives its own written form", `{"recovery":{"jitter":0.25},"heartbeatMs":1000,"allowedOrigins":["a.example.com"],"trustedProxies":["10.0.0.0/8","::1"]}`, roundTrips},
		{"the default config survives its own written form", `{}`, roundTrips},
		{"a config trusting no proxy survives its own written form", `{"trustedProxies":[]}`, func(t *testing.T, c hostplugin.Config) {
			if got := c.TrustedProxies(); len(got) != 0 {
				t.Errorf("TrustedProxies() = %v, want none: [] is not the default", got)
			}
			roundTrips(t, c)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := hostplugin.ParseConfig([]byte(tt.doc))
			if err != nil {
				t.Fatalf("ParseConfig: %v", err)
			}
			tt.check(t, c)
		})
	}
}

// manyAddresses is a JSON list body of n distinct IPv4 addresses.
func manyAddresses(n int) string {
	list := make([]string, n)
	for i := range list {
		list[i] = fmt.Sprintf(`"10.0.%d.%d"`, i/256, i%256)
	}
	return strings.Join(list, ",")
}

func roundTrips(t *testing.T, c hostplugin.Config) {
	t.Helper()
	b, err := json.Marshal(c.File())
	if err != nil {
		t.Fatal(err)
	}
	again, err := hostplugin.ParseConfig(b)
	if err != nil {
		t.Fatalf("ParseConfig(%s): %v", b, err)
	}
	if !reflect.DeepEqual(again, c) {
		t.Errorf("round trip through %s changed the config", b)
	}
}

func TestConfigFileResolveGoesThroughTheSameRules(t *testing.T) {
	f := hostplugin.ConfigFile{
		Recovery:    controller.Recovery{Factor: new(0.5)},
		HeartbeatMs: new(2e6),
	}
	_, err := f.Resolve()
	want := "hostplugin: recovery.factor: must be a finite number >= 1, got 0.5; heartbeatMs: must be an integer in 100..600000, got 2000000"
	if err == nil || err.Error() != want {
		t.Errorf("Resolve() error = %v, want %s", err, want)
	}
}

func TestLoadConfigNamesAMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.json")
	_, err := hostplugin.LoadConfig(path)
	if !errors.Is(err, hostplugin.ErrNoConfigFile) || !strings.Contains(err.Error(), path) {
		t.Errorf("LoadConfig(%s) error = %v, want ErrNoConfigFile naming the path", path, err)
	}
}

func TestNewRefusesAnUnresolvedConfig(t *testing.T) {
	if _, err := hostplugin.New(hostplugin.Config{}, nil); !errors.Is(err, hostplugin.ErrInvalidConfig) {
		t.Errorf("New(Config{}) error = %v, want ErrInvalidConfig", err)
	}
}

func TestReloadAppliesAValidFileAndKeepsTheConfigOnAnInvalidOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lifeline.json")
	write := func(doc string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l := &logs{}
	h, err := hostplugin.New(hostplugin.DefaultConfig(), &hostplugin.Options{Logger: slog.New(l), Authorize: hostplugin.PublicStreams})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()

	write(`{"heartbeatMs":2000,"recovery":{"deadlineMs":9000}}`)
	if err := h.Reload(path); err != nil {
		t.Fatalf("Reload(valid) = %v", err)
	}
	if got := h.Config().Heartbeat(); got != 2*time.Second {
		t.Fatalf("after a valid reload Heartbeat() = %v, want 2s", got)
	}

	write(`{"heartbeatMs":3000,"recovery":{"deadlineMs":0}}`)
	err = h.Reload(path)
	want := "hostplugin: recovery.deadlineMs: must be an integer in 1..2147483647, got 0"
	if err == nil || err.Error() != want {
		t.Fatalf("Reload(invalid) = %v, want %s", err, want)
	}
	if got := h.Config(); got.Heartbeat() != 2*time.Second || got.Recovery().Deadline() != 9*time.Second {
		t.Errorf("an invalid reload was half applied: heartbeat %v, deadline %v", got.Heartbeat(), got.Recovery().Deadline())
	}
	if !l.Has("reload refused", "recovery.deadlineMs") {
		t.Errorf("the refused reload was not logged with its reason; logs:\n%s", l)
	}
}

func TestParseConfigReportsShapeAndRuleErrorsTogether(t *testing.T) {
	_, err := hostplugin.ParseConfig([]byte(`{"heartbeat":1,"ringSize":"big","allowedOrigins":[1],"HeartbeatMs":5,"recovery":{"jitter":-1,"x":1},"maxSessions":0}`))
	want := `hostplugin: heartbeat: is not a known field (known: recovery, endpoint, heartbeatMs, allowedOrigins, ringSize, maxSessions, acceptRate, acceptBurst, perIPRate, perIPBurst, trustedProxies, maxFrameBytes, maxEventBytes, callTimeoutMs, callRate, callBurst, callDedupMs, drainTimeoutMs, reports, presenceGraceMs); ` +
		`ringSize: must be a number, got "big"; ` +
		`allowedOrigins[0]: must be a string, got 1; ` +
		`HeartbeatMs: is not a known field (known: recovery, endpoint, heartbeatMs, allowedOrigins, ringSize, maxSessions, acceptRate, acceptBurst, perIPRate, perIPBurst, trustedProxies, maxFrameBytes, maxEventBytes, callTimeoutMs, callRate, callBurst, callDedupMs, drainTimeoutMs, reports, presenceGraceMs); ` +
		`recovery.x: is not a known field (known: slowAfterMs, deadlineMs, initialDelayMs, maxDelayMs, factor, jitter, stableAfterMs); ` +
		`recovery.jitter: must be a number in [0,1], got -1; ` +
		`maxSessions: must be an integer in 1..10000000, got 0`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n got %v\nwant %s", err, want)
	}
}

func TestTheConfigFileListsItsFieldsByTheirTags(t *testing.T) {
	fieldtest.Check(t, &hostplugin.ConfigFile{})
}
