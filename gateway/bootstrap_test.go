package gateway_test

import (
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/gateway"
)

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
		{"an invalid bootstrap value names the field", `{"recovery":{"deadlineMs":0}}`, ``, page, "", 0, "controller: recovery.deadlineMs: must be an integer in 1..2147483647, got 0"},
		{"an invalid override is resolved too", `{}`, `{"recovery":{"jitter":2}}`, page, "", 0, "controller: recovery.jitter: must be a number in [0,1], got 2"},
		{"a string timer names the field", `{"recovery":{"deadlineMs":"x"}}`, ``, page, "", 0, "controller: recovery.deadlineMs: must be a number, got string"},
		{"an unknown bootstrap field is refused", `{"recover":{}}`, ``, page, "", 0, `gateway: bootstrap: json: unknown field "recover"`},
		{"a non-JSON bootstrap is refused", `<b>`, ``, page, "", 0, "gateway: bootstrap: invalid character '<' looking for beginning of value"},
		{"an endpoint of another scheme is refused", `{"endpoint":"ftp://x/y"}`, ``, page, "", 0, `gateway: endpoint: scheme must be ws, wss, http or https, got "ftp" in "ftp://x/y"`},
		{"a wrongly typed endpoint names the field", `{"endpoint":5}`, ``, page, "", 0, "gateway: bootstrap: endpoint: must be a string, got number"},
	}
	for _, tt := range tests {
		pc, err := gateway.ResolvePage([]byte(tt.bootstrap), []byte(tt.overrides), tt.page)
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
		if pc.URL != tt.wantURL || pc.Recovery.Deadline() != tt.wantDL {
			t.Errorf("%s: got %s deadline %v, want %s deadline %v", tt.name, pc.URL, pc.Recovery.Deadline(), tt.wantURL, tt.wantDL)
		}
	}
}
