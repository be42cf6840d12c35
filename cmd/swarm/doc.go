// Command swarm is Lifeline's native load and demo client: a swarm of N independent native
// pages, each a controller + gateway against one Host with its own random source, printing
// one JSON line per event on stdout (internal/swarmline is the format, and its readers'):
//
//	{"t":1764438000123.456,"id":0,"event":"attempt"}
//
// t is milliseconds since the Unix epoch (fractional), id the page's index, and event one
// of attempt (a generation started), connected, disconnected (left connected) and slow (a
// handshake passed slowAfterMs). With -sub each page follows a stream; its deliveries are
// checked (once each, in order, or a reset) and any violation is printed as event
// "violation"; -deliveries prints every delivery too (event "delivery", with stream, seq,
// reset). Benchmarks and soak tests read these lines. With -user NAME every page carries the
// cookie lifeline-user=NAME (with -users K, page i is NAME<i mod K>: bin/host -signouts reads
// it), and a page that becomes unauthorized (refused, or its access ended) prints event
// "unauthorized".
//
// With -calls N each page makes N calls to the Host's handler -call-name, one every
// -call-every (the pages' calls spread evenly over that interval; at most -calls-in-flight of
// a page's at once, a later one waiting its turn), a fraction -keyed of them with an
// idempotency key: call k of page i has the data "<prefix>/<i>/<k>" (a JSON string,
// unique within a run for the -call-prefix given), and the same text as its key when keyed.
// Each outcome is printed as event "call": its number, whether keyed, when it was made, the
// dedup epoch it was last sent under, and the reply, or the failure's kind, sent, code and
// message. bin/host
// -ledger answers "ledger.run" with the data and counts its runs.
//
// With -stats, SIGUSR1 makes the process collect garbage and print one line
// {"t":…,"id":-1,"event":"stats","goroutines":…,"heapInuse":…,"heapAlloc":…} (soak tests
// compare them before and after a run of faults). So that they compare the clients' own state, the process
// first runs warmGoroutines per client at once: the runtime keeps the struct of every
// goroutine it has run at once (it frees none), so the heap would otherwise grow, once, to a
// later peak (a make-before-break move has two sessions' goroutines at once).
//
// SIGINT or SIGTERM (or -for) stops every controller, closes every gateway and exits 0;
// events of the shutdown itself are not printed. A second signal exits at once.
//
//	swarm -url ws://127.0.0.1:8080/_lifeline/events -n 100
package main
