package wsheader_test

import (
	"net/http"
	"testing"

	"github.com/lifeline-go/lifeline/internal/wsheader"
)

func TestIsUpgradeReadsEveryTokenOfEveryLineWithoutCase(t *testing.T) {
	tests := []struct {
		name string
		h    http.Header
		want bool
	}{
		{"a browser's upgrade", http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}}, true},
		{"a token among others, in another case", http.Header{"Connection": {"keep-alive, UPGRADE"}, "Upgrade": {"WebSocket"}}, true},
		{"a token on a second line", http.Header{"Connection": {"keep-alive", " upgrade "}, "Upgrade": {"h2c", "websocket"}}, true},
		{"a plain GET (a refusal query)", http.Header{}, false},
		{"an upgrade to another protocol", http.Header{"Connection": {"Upgrade"}, "Upgrade": {"h2c"}}, false},
		{"an Upgrade header without Connection: upgrade", http.Header{"Connection": {"keep-alive"}, "Upgrade": {"websocket"}}, false},
		{"a token that only contains the word", http.Header{"Connection": {"upgraded"}, "Upgrade": {"websocket"}}, false},
	}
	for _, tt := range tests {
		if got := wsheader.IsUpgrade(tt.h); got != tt.want {
			t.Errorf("%s: IsUpgrade(%v) = %v, want %v", tt.name, tt.h, got, tt.want)
		}
	}
}

func TestOffersSubprotocolComparesNamesExactly(t *testing.T) {
	tests := []struct {
		name string
		h    http.Header
		want bool
	}{
		{"the only offer", http.Header{"Sec-Websocket-Protocol": {"lifeline.v1"}}, true},
		{"one of several, on several lines", http.Header{"Sec-Websocket-Protocol": {"chat", "x, lifeline.v1 "}}, true},
		{"no offer", http.Header{}, false},
		{"another case is another name", http.Header{"Sec-Websocket-Protocol": {"Lifeline.V1"}}, false},
		{"a longer name", http.Header{"Sec-Websocket-Protocol": {"lifeline.v10"}}, false},
	}
	for _, tt := range tests {
		if got := wsheader.OffersSubprotocol(tt.h, "lifeline.v1"); got != tt.want {
			t.Errorf("%s: OffersSubprotocol(%v, lifeline.v1) = %v, want %v", tt.name, tt.h, got, tt.want)
		}
	}
}
