// Package hostplugin is the Host side of Lifeline: a validated config, the middleware that
// injects the page's bootstrap, and the events endpoint with its streams.
//
// A Host is built from a [Config] ([LoadConfig], [ParseConfig] or [DefaultConfig]); every
// config goes through validator/v10 and through controller.Resolve, the resolver the page
// uses too, so the Host can never hand a page timing the page would refuse.
//
//	cfg, err := hostplugin.LoadConfig("lifeline.json")
//	h, err := hostplugin.New(cfg, &hostplugin.Options{Authorize: authorize})
//	h.SetReady(true) // once the application can serve; until then sockets wait for it
//	http.ListenAndServe(addr, h.Handler(app))
//
// [Host.Handler] is the Host's one entry point: it serves the events endpoint and the client,
// and passes everything else to the application, inserting
//
//	<script type="application/json" id="lifeline-bootstrap">{…}</script>
//	<script src="/_lifeline/client/lifeline.<hash>.js" … async></script>
//
// at the end of the head of every HTML page ([Host.HeadElements]). The page's Content-Length
// and ETag are made to fit what it now holds, and its Last-Modified moves up to when the
// config was applied: the page changed then, and a cache that validates by date alone must
// see it, or it would keep the page with an older bootstrap. [Host.Publish] appends to a
// stream; pages subscribed to it
// receive events live and, after a reconnect, replay what they missed from the [StreamLog]
// ([Ring] by default) or are reset with a baseline. [Host.Shutdown] ends a Host and its server
// in one call: every page is closed at once with 1012 (service restart), rather than wait out
// a drain nobody can take; [Host.Drain] before it sends every page elsewhere, when something
// serves in the Host's place. Package hostplugin/restart hands the listening socket to a
// successor process (and takes one from systemd socket activation), so that a restart
// costs no page anything. The session cap and the accept rate turn a returning herd into a
// queue (close code 1013 with a retry-after that spreads it).
//
// The stream log is an interface, [StreamLog] (Append, Since, Follow): a log shared by a fleet
// of Hosts plugs in through [Options].Log. Sessions deduplicate by sequence number and turn
// any gap or epoch change into a reset, so a log only has to keep its own promises.
//
// # Who may connect, and what they may read
//
// The application decides, through two hooks of [Options]. Authorize is required: an
// application whose every stream is public says so with [PublicStreams]. Without
// Authenticate every page may connect, with the identity "".
//
//   - Authenticate(r) runs before the upgrade, for every socket and every refusal query (after the per-address rate,
//     before the session cap and the accept rate: a refused credential costs no session slot
//     and no accept token). It returns the identity kept on the session, or refuses: an error
//     wrapping [ErrUnauthenticated] answers HTTP 401, [ErrForbidden] or any other error 403,
//     a panic 500 (logged with its stack; the Host carries on). A refused origin is refused
//     after the upgrade (close 1008) without asking Authenticate, so that how its handshake
//     fails tells a foreign page nothing about its visitor's credential.
//   - Authorize(identity, stream) runs for every sub frame, resubscriptions by cursor after a
//     reconnect included. A refusal (or a panic, as "internal error") is answered with the
//     frame {"t":"denied","stream":"S","reason":"…"} and nothing else of that stream; the
//     session and its other streams carry on.
//
// Reasons are the first line of the hook's error, control characters replaced by spaces, at
// most 160 bytes: the page shows them, so they must name no secret. A panic's text never
// reaches the page.
//
// # The refusal query
//
// A browser does not tell a page the HTTP status of a refused WebSocket handshake (the
// WebSocket API reports only a generic error), so after a failed dial the page asks: the
// refusal query, a plain GET (or HEAD) of the events endpoint without upgrade headers,
// carrying the page's cookies
// (fetch(url, {credentials: "include", cache: "no-store"})). It runs the same checks as the
// upgrade, up to Authenticate, and answers with a small JSON body:
//
//	401 {"error":"unauthorized","reason":"…"}  Authenticate refused, wrapping ErrUnauthenticated
//	403 {"error":"forbidden","reason":"…"}     Authenticate refused otherwise
//	500 {"error":"internal error","reason":"internal error"}  Authenticate panicked
//	426 {"error":"upgrade required"}           Authenticate let it through (or is nil)
//	403 {"error":"origin not allowed"}         Origin not in allowedOrigins (Authenticate not asked)
//	405 {"error":"method not allowed"}         neither GET nor HEAD
//	429 {"error":"too many sockets","retryAfterMs":N}  over the per-address rate, as an upgrade would be
//
// Every answer is Cache-Control: no-store and Vary: Origin. A page of an allowed origin
// (allowedOrigins, or the endpoint's own) is given Access-Control-Allow-Origin: <its origin>
// and Access-Control-Allow-Credentials: true, so a cross-origin page's fetch can read the
// status; any other origin gets no CORS header and its browser keeps the answer from it. The
// query reveals nothing the upgrade would not: the same request as an upgrade is refused
// with the same status and body. Queries count against the per-address rate and are not
// counted in [Stats].Accepted (they are no sockets). ("Probe" is the page's liveness ping
// over an open session, another thing.)
//
// # Running a Host
//
// [Host.Stats] reports sessions and sockets for health checks ([Host.Sessions] the count
// alone); [Host.LivenessHandler] and [Host.ReadinessHandler] answer a load balancer's and
// Kubernetes' probes ([Host.Readiness]: the gate open, not draining, the log reachable when it
// is a [LogChecker]). An [Observer] in [Options] is told every event the operator's metrics
// count; package hostplugin/metrics is one for Prometheus, which only importing it links. The
// Host watches no signal and no file: the application calls [Host.Reload] (on SIGHUP, say)
// or [Host.Apply]. A process on its way out calls [Host.Shutdown] with its
// http.Server (package hostplugin/restart's Restarter.Shutdown calls it too, after stopping
// accepting and, for a successor, a drain).
//
// A stream log shared by a fleet of Hosts, on NATS JetStream, is package
// hostplugin/jetstream: a package of its own, so that a Host on the default [Ring] links no
// NATS client.
//
// One idle session costs one goroutine (with the smallest stack), one timer and about 6.5 KiB
// of Go memory (measured with 10,000 sessions: BenchmarkIdleSessionMemory).
//
// The package builds natively only: it imports validator/v10, which must never reach the
// browser build (it defeats the linker's dead-code elimination), and the server half of
// coder/websocket.
package hostplugin
