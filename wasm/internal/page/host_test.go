//go:build !js

package page_test

import (
	"strings"
	"testing"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/wasm/internal/page"
)

// TestHostAndPageAcceptTheSameRecovery: the Host's config file and the page's bootstrap go
// through one decoder and one resolver, so a recovery section is accepted or refused by both,
// with the same field path and the value as written.
func TestHostAndPageAcceptTheSameRecovery(t *testing.T) {
	for _, rec := range []string{
		`{}`, `{"deadlineMs":5000}`, `{"deadlineMs":5}`, `{"deadlinems":5}`, `{"DeadlineMs":5}`,
		`{"deadlineMs":15000,"deadlineMs":5}`, `{"jitter":2}`, `{"deadlineMs":2147483648}`,
		`{"factor":"2"}`, `{"initialDelayMs":20000}`, `{"maxDelayMs":1e400}`, `{"stableAfterMs":0}`,
		`[]`, `5`, `null`,
	} {
		doc := `{"recovery":` + rec + `}`
		_, hostErr := hostplugin.ParseConfig([]byte(doc))
		_, pageErr := page.Resolve([]byte(doc), nil, "http://h/")
		if (hostErr == nil) != (pageErr == nil) {
			t.Errorf("recovery %s: Host says %v, page says %v", rec, hostErr, pageErr)
			continue
		}
		if hostErr == nil {
			continue
		}
		// Same rule, same path, same value: only the package prefix differs.
		h := strings.TrimPrefix(hostErr.Error(), "hostplugin: ")
		p := strings.TrimPrefix(pageErr.Error(), "page: ")
		if h != p {
			t.Errorf("recovery %s:\n Host %s\n page %s", rec, hostErr, pageErr)
		}
	}
}
