// Package hostplugin is the Host side of Lifeline: a validated config, the middleware that
// injects the page's bootstrap, and the events endpoint with its streams.
//
// A Host is built from a [Config] ([LoadConfig], [ParseConfig] or [DefaultConfig]); every
// config goes through validator/v10 and through controller.Resolve, the resolver the page
// uses too, so the Host can never hand a page timing the page would refuse.
//
//	cfg, err := hostplugin.LoadConfig("lifeline.json")
//	h, err := hostplugin.New(cfg, nil)
//	h.SetReady(true) // once the application can serve; until then sockets wait for it
//	http.ListenAndServe(addr, h.Handler(http.FileServer(http.Dir("web"))))
//
// [Host.Handler] routes the events endpoint to the Host and everything else through
// [Host.Inject], which inserts
//
//	<script type="application/json" id="lifeline-bootstrap">{…}</script>
//
// into the head of every HTML page. [Host.Publish] appends to a stream; pages subscribed to it
// receive events live and, after a reconnect, replay what they missed from the [StreamLog]
// ([Ring] by default) or are reset with a baseline. [Host.Drain] sends every page elsewhere
// before a restart, when something serves in the Host's place; [Host.Stop], for a Host with
// no successor, closes every page at once with 1012 (service restart) rather than wait out a
// drain nobody can take. Package hostplugin/restart hands the listening socket to a
// successor process (and takes one from systemd socket activation), so that a restart
// costs no page anything. The session cap and the accept rate turn a returning herd into a
// queue (close code 1013 with a retry-after that spreads it).
//
// The stream log is an interface, [StreamLog] (Append, Since, Follow): a log shared by a fleet
// of Hosts plugs in through [Options].Log. Sessions deduplicate by sequence number and turn
// any gap or epoch change into a reset, so a log only has to keep its own promises.
//
// [Host.SetFault] and [Host.FaultPanel] put the endpoint into failure modes (refuse, stall,
// flap, drain, overload, outage) for demos and tests of the page's recovery; [Host.Stats]
// reports sessions and sockets for health checks.
//
// One idle session costs one goroutine, one timer and about 9 KiB (measured with 10,000
// sessions: BenchmarkIdleSessionMemory).
//
// The package builds natively only: it imports validator/v10, which must never reach the
// browser build (it defeats the linker's dead-code elimination), and the server half of
// coder/websocket.
package hostplugin
