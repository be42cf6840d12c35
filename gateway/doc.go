// Package gateway is Lifeline's WebSocket carrier: the [controller.Source] a
// [controller.Controller] drives, the event pump of each generation, the domain streams that
// survive every reconnect, and GOAWAY handling. The same code builds natively, over
// github.com/coder/websocket, and for the browser (GOOS=js GOARCH=wasm), over the browser's
// own WebSocket (carrier_js.go, through syscall/js: no net/http, so none of its crypto in the
// page's wasm); it knows nothing of the DOM.
//
// # Wiring
//
//	gw, err := gateway.New("wss://example.com/_lifeline/events", nil)
//	ctl, err := controller.New(gw, cfg, nil)
//	sub := gw.Subscribe("prices", func(d gateway.Delivery) { ... })
//	ctl.Start()
//	...
//	ctl.Stop()
//	gw.Close(nil) // ends sub with ErrClosed
//
// The controller owns every timer: the readiness deadline and the slow warning, the retry
// ladder, flap and redirect-loop damping. The gateway never retries on its own.
//
// # Generations
//
// Each Run dials exactly one socket (gen.Target(), or the gateway's URL), requires the
// lifeline.v1 subprotocol, and waits for the Host's ready frame, which must come first and
// validate (a session, a heartbeat in 100 ms..10 min); anything else first is a protocol
// error that fails the attempt (an error frame is allowed: a Host refusing the page may say
// why). Both stalled phases, a socket that never opens and one that opens without ready, end
// when the controller cancels at its deadline: the socket is closed and the goroutines are
// gone before Run returns. After ready a watchdog ends the generation once no frame arrived
// for 2.5 × the heartbeat (half-open links, sleeping laptops): heartbeats are application
// frames, since WebSocket pings do not exist in the browser.
//
// Each connection has one reader (the pump) with one context for its whole life, never a
// per-read timeout, a writer that sends subscription changes, and Run, which owns the
// watchdog and the end. A 1013 close whose reason is retry-after=<ms> (or an error frame
// "retry-after=<ms>") makes Run return a *controller.RetryAfterError, capped at 60 s; the
// controller waits the longer of it and its ladder.
//
// A Host that refuses the page's credentials answers the upgrade with HTTP 401 or 403; Run
// then fails with a *[UnauthorizedError] carrying the Host's reason, which wraps ErrDial and
// satisfies errors.Is(err, controller.ErrUnauthorized): the controller shows it as
// Unauthorized and retries at its top cap only, since retrying sooner would not change the
// credential.
//
// # Streams
//
// A subscription's cursor (the log's epoch and the last seq delivered) is shared by every
// generation. Each generation subscribes from the latest cursor once it is ready; events are
// delivered once each and in order: a replay overlapping what was delivered is dropped by
// seq, a gap is a protocol error (the next generation asks again from the cursor), and a
// reset (a new log, or a cursor too old) is delivered as such, with its baseline. A fresh
// subscription starts with the Host's reset, or, given a cursor another follower reached
// ([SubscribeOptions].From: the shared hub that replaces one that ended), with the events
// after it. [Subscription.Rewind] moves a cursor back within its log, for a follower that
// fans the stream out to readers at different points and drops what each has had.
//
// Subscribe and Unsubscribe only change the desired state and wake the writers; what goes on
// the wire is the difference between the desired state and what the session already said.
// Any number of calls while disconnected therefore collapse to one action per stream holding
// the newest request, and a new generation sends one sub per subscribed stream.
//
// Handlers run on a goroutine of their subscription, one call at a time, behind a queue of
// Options.QueueLen deliveries, so a handler that blocks holds up only its own stream: never
// the pump, the watchdog or other streams. A handler that falls a whole queue behind stalls
// its stream (further deliveries are dropped, nothing is asked of the Host); once it returns,
// the stream resubscribes from a fresh baseline, so it never sees a silent gap. A panicking
// handler is recovered and logged, and delivery goes on with the next event.
//
// # GOAWAY
//
// A goaway frame is passed to gen.GoAway, its uri resolved against the current URL and
// normalised like [Gateway.URL] (the controller compares endpoints as strings; a uri naming
// the current URL means "come back here", as an empty one does). The generation keeps
// running, and delivering, while the controller dials the target; when the target is ready
// the controller cancels the draining generation before it lets the new one subscribe, and
// frames of a cancelled generation are dropped, so no two generations ever feed a stream and
// the new one resubscribes from a final cursor: nothing is lost or delivered twice.
//
// # Closing
//
// Close ends every subscription with its cause and every session, refuses later
// generations, and returns once every Run in progress has closed its socket. A dial that
// completes during Close is closed at once.
//
// # Under js/wasm
//
// The carrier is the browser's WebSocket object, whose rules differ from a native socket's:
//
//   - Its listeners are registered as the socket is made, so no event is missed, and its
//     messages are queued: frames the Host sends at once (a ready frame, a refusal's error
//     frame) wait even if they come before the page has seen the socket open, and every
//     frame sent before a close is read before the close is.
//   - A socket still connecting is closed as soon as the attempt gives up on it (close()
//     fails a connecting socket). That matters beyond tidiness: Chromium lets only one
//     WebSocket per host connect at a time, so a stalled handshake left pending would hold up
//     every later attempt. A socket that opens after all is closed by the same call.
//   - Closing is the browser's handshake: Run waits for its close event up to
//     Options.CloseGrace, or not at all for a dead link, and then lets the socket go (the
//     event, when it comes, releases the listeners).
//   - The close code and reason are the CloseEvent's; a dropped connection is 1006, which is
//     not a close frame. The page can only close with 1000, so a frame over Options.ReadLimit
//     ends the session with 1000 (natively 1009); the browser has received it whole by then.
//   - A write never waits: a link that stopped draining shows only as the socket's
//     bufferedAmount, and once that passes 1 MiB the next write fails the session.
//   - Binary frames are read (binaryType "arraybuffer") and refused, as natively.
//   - The HTTP status of a refused handshake is not visible (the WebSocket API reports a
//     generic error). So a failed dial is followed by the refusal query: a fetch of the endpoint's
//     http(s) URL without upgrade headers, with the page's cookies (credentials "include"),
//     no cache and no redirects, at most 2 s and within the attempt's deadline. A Host that
//     answers it 401 or 403 (hostplugin does, with the status its upgrade had) turns the
//     failure into the *UnauthorizedError; any other answer, a network error, or an answer a
//     cross-origin page may not read (no CORS header for its origin) leaves the dial's own
//     error. Natively the handshake's answer is read directly and no query is made.
//   - Options.Handshake is empty: the browser sets the handshake's headers itself.
package gateway
