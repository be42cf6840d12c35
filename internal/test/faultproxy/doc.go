// Package faultproxy is the TCP proxy every benchmarked client sits behind: one per server,
// all switched on the same schedule, logging every connection it accepts with a timestamp.
// The chaos soak (e2e/soak) puts its pages and clients behind one too (latency, reset, stall).
//
// Modes:
//
//   - up: forward to the upstream server.
//   - refuse: accept and reset at once (SO_LINGER 0, then close): the client sees ECONNRESET,
//     as from a host whose service is down behind a load balancer that still accepts.
//   - blackhole: accept, never forward, never close; the proxy only notices when the client
//     gives up and closes. How long that takes is what the blackhole scenario measures.
//   - flap: forward, and reset each connection FlapAfter (200 ms) after its accept.
//   - latency: forward, holding each direction's bytes for Latency (± Jitter) first: a slow
//     path, not a broken one.
//   - reset: reset every open connection at once (an RST, SO_LINGER 0), whatever mode it
//     came in, and each new one at the first byte its upstream sends back (the request
//     reaches the server; its answer does not), as a middlebox that drops the connections it
//     carries.
//   - stall: freeze every connection, open or new: forward nothing in either direction,
//     close nothing. It is the half-open link a sleeping laptop or a dropped Wi-Fi leaves:
//     the client learns nothing until its own timers give up, and neither does the server
//     (a new connection is held, as by blackhole: it never reaches the upstream).
//   - throttle: forward over a slow link (the page-load benchmark's 4G): each direction's
//     bytes go through a bottleneck every connection shares (Down, Up bits per second), then
//     wait the latency (one way); a new connection's first bytes wait a round trip more, the
//     TCP handshake a real link would have cost before the client could send them.
//
// Connections forwarded in up, latency, reset or throttle follow the mode: refuse, blackhole
// and flap reset them (so that an outage starts for every client at the same moment), stall
// freezes them, up, latency and throttle keep them. A frozen connection stays frozen whatever
// the mode does
// next, until reset resets it: the bytes it lost are lost, and its client never hears from
// it again, not even when its upstream closes; when the client closes it, the proxy closes
// the upstream side too (as a server would in the end learn). Connections held by blackhole
// or stall stay held when the mode changes again (but for reset), for the same reason. A new
// connection after the stall is forwarded: a woken laptop's old socket is dead, its new ones
// work. Stall, then reset, then up is the link that comes back and finds its old connections
// gone.
//
// A Proxy is safe for concurrent use. Its zero value is not usable: call [Listen]. The
// control panel ([Proxy.Handler]) and the command internal/test/faultproxy/cmd/faultproxy switch it from
// another process (a Node test, a shell).
//
// It builds natively only (it runs processes and sockets the browser build has not).
package faultproxy
