package wire

import "github.com/lifeline-go/lifeline/internal/strictjson"

// BootstrapID is the id of the <script type="application/json"> element the Host injects into
// every HTML page.
const BootstrapID = "lifeline-bootstrap"

// Bootstrap is the JSON the Host injects into every page: the resolved, non-secret timing and
// where the events endpoint is. The page treats it as untrusted and resolves it again.
type Bootstrap struct {
	// Recovery is the timing config (PROTOCOL.md §2.1), kept raw here so this package needs no
	// other; the page decodes it onto a controller.Recovery (wasm/internal/page), and the
	// options' recovery after it.
	Recovery RawJSON `json:"recovery,omitempty"`
	// Endpoint is the events endpoint: a path on the page's own host, or an absolute ws(s)://
	// or http(s):// URL.
	Endpoint string `json:"endpoint,omitempty"`
	// HeartbeatMs is the Host's heartbeat interval, for information; the ready frame is
	// authoritative.
	HeartbeatMs int64 `json:"heartbeatMs,omitempty"`
	// CallTimeoutMs is the timeout of a call that sets none (1..MaxCallTimeoutMs; absent: the
	// page's default, 30 s).
	CallTimeoutMs int64 `json:"callTimeoutMs,omitempty"`
}

// JSONFields lists the members a bootstrap may have: each field, by its json tag (the page
// decodes the bootstrap by it, with internal/strictjson; the tests hold it to the tags).
func (b *Bootstrap) JSONFields() []strictjson.Field {
	return []strictjson.Field{
		{Name: "recovery", Ptr: (*[]byte)(&b.Recovery)},
		{Name: "endpoint", Ptr: &b.Endpoint},
		{Name: "heartbeatMs", Ptr: &b.HeartbeatMs},
		{Name: "callTimeoutMs", Ptr: &b.CallTimeoutMs},
	}
}

// MaxCallTimeoutMs is the longest call timeout a bootstrap may give: an hour.
const MaxCallTimeoutMs = 3_600_000
