// Command host is Lifeline's demo Host: it serves the demo page from -web through the Host
// plugin, as an embedder's app would be (the plugin injects the bootstrap and its client, and
// serves the client: the wasm, pre-compressed, and its scripts), the events endpoint, and a
// demo stream "ticks" that publishes {"n":<counter>,"at":<unix ms>} once a second.
//
// Usage:
//
//	host [-addr 127.0.0.1:8080] [-config lifeline.json] [-web web] [-faults] [-client dir]
//	     [-ledger file] [-id name] [-ticks=false] [-nats url | -nats-embedded dir [-nats-addr 127.0.0.1:4222]]
//	     [-nats-replicas 1] [-nats-max-events 4096]
//	     [-pidfile file] [-drain-on-stop] [-stop-retry-after 0s] [-cert file -key file]
//	     [-metrics 127.0.0.1:9464] [-signouts file]
//
// -faults, -client and -ledger are the repository's tooling, in a build with -tags
// lifeline_faults only (scripts/build.sh builds bin/host so; go build -tags lifeline_faults
// ./cmd/host): a build without the tag, like an embedder's Host, has no fault injection, and
// refuses the three flags at once. -client serves the client in a directory, laid out as
// scripts/assets.sh writes it, instead of the built-in one. -ledger registers the call
// "ledger.run" (the chaos soak's), which answers with the call's data and appends each run to
// the file, which every Host given it shares; /_lifeline/ledger (loopback clients only)
// answers the runs counted per (identity, key), and per (identity, data) for unkeyed calls.
//
// -signouts is the demo's sign-in (access.go; the fleet test's and the access bench's): a page
// names its user in the cookie lifeline-user (none: anonymous, as without the flag), and POST
// /_lifeline/signout?user=NAME[&reason=…][&reauth=1] (loopback clients only) signs NAME out on
// every Host given the same file, then ends NAME's pages on every Host of the fleet
// (Host.EndSessions, passed on over NATS with -nats); it answers {"ended":n,"ms":…}.
//
// A fleet: with -nats (or -nats-embedded, which starts a NATS server with JetStream inside
// this Host for a one-machine demo) the stream logs live in NATS JetStream, shared by every
// Host that uses the same NATS, so a page resumes by its cursor on any of them. Every Host
// publishes ticks with the second as a JetStream message id: exactly one tick per second
// lands, whichever Hosts are up (-ticks=false turns a Host's publisher off). A page
// subscribing to the stream "host" is answered with a reset whose baseline is {"host":<id>}
// of the Host serving its socket; the demo page shows it. /_lifeline/health adds "host" and,
// in a fleet, "log" (the NATS connection), and answers 503 while NATS is lost.
//
// An invalid config refuses to start (exit status 1, the error on stderr, naming the field
// and the value). SIGHUP reloads the config file: pages loaded afterwards get the new timing;
// an invalid file is refused and logged, the running config stays.
//
// Restarts (package hostplugin/restart):
//
//   - SIGUSR2 replaces the process without closing its port: it starts its successor (the
//     same binary path and arguments; replace the binary first to deploy new code) with
//     the listening socket inherited; once the successor serves and says it is ready, this
//     process stops accepting, drains every page to it (a goaway back to the same place,
//     which the page follows make-before-break: its dial lands on the successor) and exits.
//     Nobody sees a disconnect. If the successor fails or is not ready within a minute,
//     this process carries on. -pidfile names a file that holds the PID of the serving
//     process (the successor's once it is ready), for systemd's PIDFile=. Not with
//     -nats-embedded (the successor would need the same NATS address and store).
//   - Socket activation: started by systemd with a socket (LISTEN_FDS, LISTEN_PID), the Host
//     serves that socket whatever -addr says, and hands it on at SIGUSR2 like its own; a
//     systemctl restart keeps the port open (connections wait in its backlog). See
//     deploy/lifeline-host.socket and deploy/lifeline-host.service.
//   - SIGTERM or SIGINT with no successor closes every session at once with 1012 (service
//     restart), after an error frame "service-restart" (with " retry-after=<ms>" from
//     -stop-retry-after) that a browser page can read, and exits: there is nobody a goaway
//     could send the pages to, and a drain would only hold the process for drainTimeoutMs.
//     With -drain-on-stop (a Host behind a load balancer whose other Hosts take its pages)
//     it drains instead: a goaway back to the same place, up to drainTimeoutMs. A second
//     signal exits at once.
//
// /_lifeline/health answers {"ready","draining","fault","sessions","open","accepted"}, with
// 503 while not ready or draining (but for a drain to a successor, which serves the same
// address). /_lifeline/live and /_lifeline/ready are the plugin's probes for a load balancer
// or Kubernetes (Host.LivenessHandler, Host.ReadinessHandler). -metrics serves the Host's
// Prometheus metrics (hostplugin/metrics, with the Go runtime's and the process's) at
// /metrics on an address of its own, loopback's for a bare :port; without it the Host keeps
// none.
// With -faults, /_lifeline/faults (loopback clients only) shows the fault mode on GET and
// sets it on POST (body or ?mode=): up, refuse, stall-open, stall-ready, flap=<ms>,
// drain=<uri>, overload=<ms>, outage.
//
// The command builds natively only (the Host side never runs in a browser).
package main
