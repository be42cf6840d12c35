// Command host is Lifeline's demo Host: it serves the demo page from -web with the bootstrap
// injected, the wasm build (pre-compressed when the browser accepts it), wasm_exec.js, the
// events endpoint, and a demo stream "ticks" that publishes {"n":<counter>,"at":<unix ms>}
// once a second.
//
// Usage:
//
//	host [-addr 127.0.0.1:8080] [-config lifeline.json] [-web web] [-faults]
//	     [-id name] [-ticks=false] [-nats url | -nats-embedded dir [-nats-addr 127.0.0.1:4222]]
//	     [-nats-replicas 1] [-nats-max-events 4096]
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
// an invalid file is refused and logged, the running config stays. SIGTERM or SIGINT drains
// (every page gets a goaway and comes back once a Host is up again), then exits; a second
// signal exits at once.
//
// /_lifeline/health answers {"ready","draining","fault","sessions","open","accepted"}.
// With -faults, /_lifeline/faults (loopback clients only) shows the fault mode on GET and
// sets it on POST (body or ?mode=): up, refuse, stall-open, stall-ready, flap=<ms>,
// drain=<uri>, overload=<ms>, outage.
//
// The command builds natively only (the Host side never runs in a browser).
package main
