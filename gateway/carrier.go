package gateway

import (
	"errors"
	"time"

	"github.com/lifeline-go/lifeline/internal/tinyfmt"
)

// carrier is what carries one session's frames: a WebSocket (wsCarrier: the browser's own in
// carrier_js.go, coder/websocket natively in carrier_notjs.go), or the HTTP carrier
// (httpCarrier, for a path that will not carry a WebSocket). The session's pump is its only
// reader, its writer its only writer.
type carrier interface {
	// read returns the next frame: every frame received, in order, then why the carrier
	// ended (closeStatus reads the Host's close from it).
	read() (frameKind, []byte, error)
	// write sends one text frame, or fails once the carrier cannot take more.
	write(b []byte) error
	// hangup ends the carrier: the Host is told and given grace to answer, or, for a dead
	// link (force), the carrier is torn down at once.
	hangup(reason string, force bool, grace time.Duration)
	// settle waits until the carrier and the goroutines done stand for are gone.
	settle(grace time.Duration, force bool, done ...<-chan struct{})
	// kind names the carrier as wire does: CarrierWebSocket, CarrierStream or CarrierPoll.
	kind() string
}

// errClosedByPage is what a read or write of a carrier this page closed returns.
var errClosedByPage = errors.New("gateway: closed by the page")

// hostClosed is the HTTP carrier's close frame: what the Host said as it ended the session,
// as a WebSocket's close frame says it.
type hostClosed struct {
	code   int
	reason string
}

func (e *hostClosed) Error() string {
	return tinyfmt.Sprintf("gateway: the host closed the session with %d %q", e.code, e.reason)
}

// hostClose returns the code and reason of the HTTP carrier's close that ended a read.
func hostClose(err error) (code int, reason string, ok bool) {
	var hc *hostClosed
	if errors.As(err, &hc) {
		return hc.code, hc.reason, true
	}
	return 0, "", false
}

// leavingWait is how long a failure waits at most for the page's word that it is going away. A
// browser may close the page's sockets and abort its requests as it starts to unload it, before
// the page's pagehide (Firefox: the close event 15–25 ms after beforeunload and before
// pagehide): by then either the page is gone, and nothing of its program runs any more, or its
// pagehide has said so.
const leavingWait = 100 * time.Millisecond

// goingAwayWait is leavingWait for a socket closed with 1001, the code a browser gives the
// sockets it closes as it unloads their page (Firefox). On a loaded machine the pagehide may
// come well after the close (beyond 100 ms with both cores busy: the end-to-end suite saw a
// reload logged as the Host's error), and a 1001 from the Host itself is rare enough (its drain,
// after a goaway the page has acted on already) that a wait of a second costs nothing there.
const goingAwayWait = time.Second

// closeGoingAway is the close code of an endpoint going away (RFC 6455 §7.4.1).
const closeGoingAway = 1001
