//go:build !js

package testbed

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/lifeline-go/lifeline/hostplugin"
)

// httpClient bounds every request of the test bed.
var httpClient = &http.Client{Timeout: 2 * time.Second}

// Health is what bin/host answers at /_lifeline/health.
type Health struct {
	hostplugin.Stats
	Fault string `json:"fault"` // the fault mode, as the fault panel reads it
	Host  string `json:"host"`  // the Host's -id
}

// GetHealth reads the health of the Host at base ("http://127.0.0.1:8080"). The Host answers
// 503 while it is not ready or draining, with the same body: that is not an error here.
func GetHealth(ctx context.Context, base string) (Health, error) {
	var h Health
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/_lifeline/health", nil)
	if err != nil {
		return h, fmt.Errorf("testbed: health: %w", err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return h, fmt.Errorf("testbed: health of %s: %w", base, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&h); err != nil {
		return h, fmt.Errorf("testbed: health of %s (%s): %w", base, resp.Status, err)
	}
	return h, nil
}

// SetFault posts mode (internal/fault.Parse's syntax: "up", "outage", "drain=ws://…") to the
// fault panel of the Host at base, which bin/host serves with -faults.
func SetFault(ctx context.Context, base, mode string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/_lifeline/faults", strings.NewReader(mode))
	if err != nil {
		return fmt.Errorf("testbed: fault %q: %w", mode, err)
	}
	req.Header.Set("Content-Type", "text/plain")
	resp, err := httpClient.Do(req)
	if err != nil {
		return fmt.Errorf("testbed: fault %q at %s: %w", mode, base, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("testbed: fault %q at %s: %s: %s", mode, base, resp.Status, strings.TrimSpace(string(b)))
	}
	return nil
}
