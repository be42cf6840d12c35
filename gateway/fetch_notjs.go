//go:build !js

package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
)

// doHTTP makes one request with net/http, with the handshake's headers (a native page's
// cookie, its Origin), following no redirect. Ending ctx aborts the request and the reading
// of its body, which is read as it arrives.
func doHTTP(ctx context.Context, req httpRequest) (*httpAnswer, error) {
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	r, err := http.NewRequestWithContext(ctx, req.method, req.url, body)
	if err != nil {
		return nil, fmt.Errorf("gateway: %s %s: %w", req.method, req.url, err)
	}
	for k, v := range req.header {
		r.Header[k] = v
	}
	if req.body != nil {
		r.Header.Set("Content-Type", req.contentType)
	}
	r.Header.Set("Cache-Control", "no-store")
	client := *httpClient()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(r)
	if err != nil {
		return nil, fmt.Errorf("gateway: %s %s: %w", req.method, req.url, err)
	}
	a := &httpAnswer{
		status:      resp.StatusCode,
		contentType: resp.Header.Get("Content-Type"),
		retryAfter:  resp.Header.Get("Retry-After"),
		close:       func() { resp.Body.Close() },
	}
	buf := make([]byte, 32<<10)
	a.next = func(ctx context.Context) ([]byte, error) {
		if err := ctx.Err(); err != nil {
			resp.Body.Close()
			return nil, context.Cause(ctx)
		}
		n, err := resp.Body.Read(buf)
		if n > 0 {
			return bytes.Clone(buf[:n]), nil
		}
		if err == nil {
			err = io.ErrNoProgress
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	return a, nil
}

// httpClient is the client of the HTTP carrier and the refusal query: the handshake's (a test's
// in-memory transport), or http.DefaultClient.
func httpClient() *http.Client {
	if handshakeClient != nil {
		return handshakeClient
	}
	return http.DefaultClient
}
