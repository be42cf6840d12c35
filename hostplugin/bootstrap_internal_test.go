//go:build !js

package hostplugin

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestBootstrapNeverHoldsRawScriptBreakers proves the guarantee Config.Bootstrap documents,
// for every character that could end the script element or break the JSON as JavaScript:
// it holds on a value the config validation would refuse (U+2028, U+2029), so it does not
// rest on that validation.
func TestBootstrapNeverHoldsRawScriptBreakers(t *testing.T) {
	c := DefaultConfig()
	c.endpoint = "/</script><script>alert(1)</script><!--&amp;-->\u2028\u2029>"
	b := c.bootstrap()
	for _, raw := range []string{"<", ">", "&", "\u2028", "\u2029"} {
		if bytes.Contains(b, []byte(raw)) {
			t.Errorf("bootstrap holds a raw %+q: %s", raw, b)
		}
	}
	var got struct{ Endpoint string }
	if err := json.Unmarshal(b, &got); err != nil || got.Endpoint != c.endpoint {
		t.Errorf("bootstrap endpoint = %+q (%v), want %+q", got.Endpoint, err, c.endpoint)
	}
}
