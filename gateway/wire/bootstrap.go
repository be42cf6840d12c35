package wire

// BootstrapID is the id of the <script type="application/json"> element the Host injects into
// every HTML page.
const BootstrapID = "lifeline-bootstrap"

// Bootstrap is the JSON the Host injects into every page: the resolved, non-secret timing and
// where the events endpoint is. The page treats it as untrusted and resolves it again.
type Bootstrap struct {
	// Recovery is the timing config (SPEC section 2), kept raw here so this package needs no
	// other; the page decodes it with controller.DecodeDocument onto its Recovery.
	Recovery RawJSON `json:"recovery,omitempty"`
	// Endpoint is the events endpoint: a path on the page's own host, or an absolute ws(s)://
	// or http(s):// URL.
	Endpoint string `json:"endpoint,omitempty"`
	// HeartbeatMs is the Host's heartbeat interval, for information; the ready frame is
	// authoritative.
	HeartbeatMs int64 `json:"heartbeatMs,omitempty"`
}
