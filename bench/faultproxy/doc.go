// Package faultproxy is the TCP proxy every benchmarked client sits behind: one per server,
// all switched on the same schedule, logging every connection it accepts with a timestamp.
//
// Modes:
//
//   - up: forward to the upstream server.
//   - refuse: accept and reset at once (SO_LINGER 0, then close): the client sees ECONNRESET,
//     as from a host whose service is down behind a load balancer that still accepts.
//   - blackhole: accept, never forward, never close; the proxy only notices when the client
//     gives up and closes. How long that takes is what the blackhole scenario measures.
//   - flap: forward, and reset each connection FlapAfter (200 ms) after its accept.
//
// Leaving up (for any other mode) resets every forwarded connection, so that an outage starts
// for every client at the same moment. Connections held by blackhole stay held when the mode
// changes again: their packets are as lost as they were.
//
// A Proxy is safe for concurrent use. Its zero value is not usable: call [Listen].
//
// It builds natively only (it runs processes and sockets the browser build has not).
package faultproxy
