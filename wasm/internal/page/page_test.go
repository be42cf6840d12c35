package page_test

import (
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/internal/test/fieldtest"
	"github.com/lifeline-go/lifeline/wasm/internal/page"
)

// resolve is what the hub builds a connection from: the page's config, then the gateway for
// its URL, which checks the URL and names what the page dials.
func resolve(bootstrap, options, pageURL string) (dial string, cfg page.Config, err error) {
	cfg, err = page.Resolve([]byte(bootstrap), []byte(options), pageURL)
	if err != nil {
		return "", cfg, err
	}
	gw, err := gateway.New(cfg.URL, nil)
	if err != nil {
		return "", cfg, err
	}
	defer gw.Close(nil)
	return gw.URL(), cfg, nil
}

func TestResolvePage(t *testing.T) {
	const page = "http://127.0.0.1:8080/index.html?lang=zh"
	tests := []struct {
		name      string
		bootstrap string
		overrides string
		page      string
		wantURL   string
		wantDL    time.Duration
		wantErr   string
	}{
		{"the defaults and the default path", `{}`, ``, page, "ws://127.0.0.1:8080/_lifeline/events", 15 * time.Second, ""},
		{"a path endpoint on an https page becomes wss", `{"endpoint":"/ev"}`, ``, "https://example.com/a/b", "wss://example.com/ev", 15 * time.Second, ""},
		{"an absolute ws endpoint is kept", `{"endpoint":"ws://other:9/x"}`, ``, page, "ws://other:9/x", 15 * time.Second, ""},
		{"the bootstrap's timing is used", `{"recovery":{"deadlineMs":4000}}`, ``, page, "ws://127.0.0.1:8080/_lifeline/events", 4 * time.Second, ""},
		{"an override replaces one field", `{"recovery":{"deadlineMs":4000}}`, `{"recovery":{"deadlineMs":6000}}`, page, "ws://127.0.0.1:8080/_lifeline/events", 6 * time.Second, ""},
		{"an override endpoint wins", `{"endpoint":"/a"}`, `{"endpoint":"/b"}`, page, "ws://127.0.0.1:8080/b", 15 * time.Second, ""},
		{"an invalid bootstrap value names the field", `{"recovery":{"deadlineMs":0}}`, ``, page, "", 0, "page: recovery.deadlineMs: must be an integer in 1..2147483647, got 0"},
		{"an invalid override is named where it was written", `{}`, `{"recovery":{"jitter":2}}`, page, "", 0, "page: lifelineOptions.recovery.jitter: must be a number in [0,1], got 2"},
		{"an override keeps the bootstrap's other fields", `{"recovery":{"deadlineMs":0}}`, `{"recovery":{"jitter":0.1}}`, page, "", 0, "page: recovery.deadlineMs: must be an integer in 1..2147483647, got 0"},
		{"a string timer names the field", `{"recovery":{"deadlineMs":"x"}}`, ``, page, "", 0, `page: recovery.deadlineMs: must be a number, got "x"`},
		{"an unknown bootstrap field is refused with the known ones", `{"recover":{}}`, ``, page, "", 0, `page: recover: is not a known field (known: recovery, endpoint, heartbeatMs, callTimeoutMs)`},
		{"a non-JSON bootstrap is refused", `<b>`, ``, page, "", 0, "page: invalid JSON at line 1, column 1: invalid character '<' at start of value"},
		{"an endpoint of another scheme is refused", `{"endpoint":"ftp://x/y"}`, ``, page, "", 0, `gateway: bad events URL: scheme must be ws, wss, http or https, got "ftp" in "ftp://x/y"`},
		{"a wrongly typed endpoint names the field", `{"endpoint":5}`, ``, page, "", 0, "page: endpoint: must be a string, got 5"},
		// The rules the Host's config file has (PROTOCOL.md §2.1: one decoder on both sides).
		{"keys are case-sensitive", `{"recovery":{"deadlinems":5}}`, ``, page, "", 0, "page: recovery.deadlinems: is not a known field (known: slowAfterMs, deadlineMs, initialDelayMs, maxDelayMs, factor, jitter, stableAfterMs)"},
		{"a Go field name is not a key", `{"recovery":{"DeadlineMs":5}}`, ``, page, "", 0, "page: recovery.DeadlineMs: is not a known field (known: slowAfterMs, deadlineMs, initialDelayMs, maxDelayMs, factor, jitter, stableAfterMs)"},
		{"an upper-case section is unknown", `{"RECOVERY":{"deadlineMs":5}}`, ``, page, "", 0, "page: RECOVERY: is not a known field (known: recovery, endpoint, heartbeatMs, callTimeoutMs)"},
		{"a duplicate key is refused, not won by the last", `{"recovery":{"deadlineMs":15000,"deadlineMs":5}}`, ``, page, "", 0, "page: recovery.deadlineMs: appears more than once"},
		{"a duplicate section is refused", `{"endpoint":"/a","endpoint":"/b"}`, ``, page, "", 0, "page: endpoint: appears more than once"},
		{"a trailing brace is refused", `{"recovery":{}}}`, ``, page, "", 0, "page: must hold one JSON value and nothing after it (line 1, column 16), got }"},
		{"a trailing bracket is refused", `{}]`, ``, page, "", 0, "page: must hold one JSON value and nothing after it (line 1, column 3), got ]"},
		{"values print as written", `{"recovery":{"deadlineMs":2147483648}}`, ``, page, "", 0, "page: recovery.deadlineMs: must be an integer in 1..2147483647, got 2147483648"},
		{"override values print as written", `{}`, `{"recovery":{"maxDelayMs":1e300}}`, page, "", 0, "page: lifelineOptions.recovery.maxDelayMs: must be an integer in 1..2147483647, got 1e300"},
		{"an override with an unknown key is refused", `{}`, `{"recovery":{},"modes":"x"}`, page, "", 0, "page: lifelineOptions.modes: is not a known field (known: recovery, endpoint, mode, upgradeAfterMs)"},
		{"a mode is shared or in-page", `{}`, `{"mode":"in-page"}`, page, "ws://127.0.0.1:8080/_lifeline/events", 15 * time.Second, ""},
		{"another mode is refused", `{}`, `{"mode":"worker"}`, page, "", 0, `page: lifelineOptions.mode: must be "shared" or "in-page", got "worker"`},
		{"upgradeAfterMs is a second or more", `{}`, `{"upgradeAfterMs":999}`, page, "", 0, `page: lifelineOptions.upgradeAfterMs: must be an integer in 1000..3600000, got 999`},
		{"upgradeAfterMs is an integer", `{}`, `{"upgradeAfterMs":1500.5}`, page, "", 0, `page: lifelineOptions.upgradeAfterMs: must be an integer in 1000..3600000, got 1500.5`},
		{"upgradeAfterMs at most an hour", `{}`, `{"upgradeAfterMs":3600001}`, page, "", 0, `page: lifelineOptions.upgradeAfterMs: must be an integer in 1000..3600000, got 3600001`},
		{"upgradeAfterMs in bounds is taken", `{}`, `{"upgradeAfterMs":2000}`, page, "ws://127.0.0.1:8080/_lifeline/events", 15 * time.Second, ""},
		{"an override with a duplicate key is refused", `{}`, `{"endpoint":"/a","endpoint":"/b"}`, page, "", 0, "page: lifelineOptions.endpoint: appears more than once"},
		{"an unparsable endpoint is named where it was written", `{"endpoint":"/a"}`, `{"endpoint":"ws://h/%zz"}`, page, "", 0, `page: lifelineOptions.endpoint: must be a path or a URL, got "ws://h/%zz"`},
		{"every problem of both documents is reported at once", `{"recovery":{"deadlineMs":0},"heartbeatMs":"x"}`, `{"recovery":{"jitter":2},"mode":"worker"}`, page, "", 0,
			`page: heartbeatMs: must be a number, got "x"; lifelineOptions.mode: must be "shared" or "in-page", got "worker"; ` +
				"recovery.deadlineMs: must be an integer in 1..2147483647, got 0; lifelineOptions.recovery.jitter: must be a number in [0,1], got 2"},
	}
	for _, tt := range tests {
		dial, pc, err := resolve(tt.bootstrap, tt.overrides, tt.page)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("%s: error = %v, want %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: error = %v", tt.name, err)
			continue
		}
		if dial != tt.wantURL || pc.Recovery.Deadline() != tt.wantDL {
			t.Errorf("%s: got %s deadline %v, want %s deadline %v", tt.name, dial, pc.Recovery.Deadline(), tt.wantURL, tt.wantDL)
		}
	}
}

func TestTheOptionsListTheirFieldsByTheirTags(t *testing.T) {
	fieldtest.Check(t, page.NewOptions())
}
