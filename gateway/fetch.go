package gateway

import "context"

// The HTTP words the carrier and the refusal query use. Spelled here, not taken from net/http:
// the wasm links no net/http (its init alone keeps crypto/tls).
const (
	methodGet  = "GET"
	methodPost = "POST"

	statusOK                 = 200
	statusNoContent          = 204
	statusNotFound           = 404
	statusUpgradeRequired    = 426
	statusServiceUnavailable = 503
)

// httpRequest is one request of the HTTP carrier or the refusal query.
type httpRequest struct {
	method      string
	url         string
	body        []byte // nil for none
	contentType string // the body's
	header      map[string][]string
}

// httpAnswer is a request's answer, its body read chunk by chunk as it arrives.
type httpAnswer struct {
	status      int
	contentType string
	retryAfter  string
	// next returns the next chunk of the body, io.EOF at its end; ending ctx aborts it.
	next func(ctx context.Context) ([]byte, error)
	// close abandons the answer (and the rest of its body).
	close func()
}

// readAll reads up to limit bytes of the answer's body, then abandons the rest.
func (a *httpAnswer) readAll(ctx context.Context, limit int) []byte {
	defer a.close()
	var b []byte
	for len(b) < limit {
		chunk, err := a.next(ctx)
		b = append(b, chunk...)
		if err != nil {
			break
		}
	}
	if len(b) > limit {
		b = b[:limit]
	}
	return b
}
