// Command faultproxy runs one fault proxy (internal/test/faultproxy) in front of a server:
// for trying a client by hand, or from a test in another language (the e2e suite's half-open
// links). The benchmark harness and the soak run the same proxy in-process.
//
//	go run ./internal/test/faultproxy/cmd/faultproxy -listen 127.0.0.1:9000 -upstream 127.0.0.1:8080 -control 127.0.0.1:9001
//
// Flags:
//
//	-listen ADDR       where clients connect (default 127.0.0.1:9000; port 0: any free one)
//	-upstream ADDR     the server to forward to (default 127.0.0.1:8080)
//	-control ADDR      the HTTP control panel (default none; port 0: any free one)
//	-mode NAME         the first mode: up, refuse, blackhole, flap, latency, reset, stall, throttle (default up)
//	-flap-after D      how long flap lets a connection live (default 200ms)
//	-latency D         what latency adds to each direction (default 200ms)
//	-jitter D          the latency's spread: each chunk is held latency ± jitter (default 0)
//	-down BITS         throttle's bandwidth towards the client, bits per second (default 0: unlimited)
//	-up BITS           throttle's bandwidth towards the upstream (default 0: unlimited)
//	-log FILE          the connection log (default stdout, after the ready line)
//	-exit-on-eof       exit when stdin ends
//
// The modes are internal/test/faultproxy's: stall freezes every connection, open or new (nothing
// forwarded either way, nothing closed: a half-open link), and a connection frozen once stays
// frozen when the mode goes back to up, while new ones are forwarded again; reset resets
// every open connection, frozen ones too.
//
// On stdout, the first line says where it listens, once both listeners are open:
//
//	{"listen":"127.0.0.1:41234","control":"127.0.0.1:41235","upstream":"127.0.0.1:8080","mode":"up"}
//
// then, unless -log names a file, one JSON line per accepted and per ended connection
// (internal/test/faultproxy's Record). The proxy waits for its log: keep reading stdout, or give -log.
// Lines typed on stdin switch the mode (a mode's name a line). Human-readable notes go to
// stderr.
//
// The control panel:
//
//	GET  /mode                          the mode in force, as its name and a newline
//	POST /mode?mode=NAME                switch (or the name as the body); answers the name
//	POST /mode?mode=latency&latency=250ms&jitter=100ms   … setting the latency too
//	POST /mode?mode=throttle&latency=30ms&down=9000000&up=1500000   … a 4G link
//	GET  /latency                       {"latency":"250ms","jitter":"100ms"}
//	GET  /records                       every accepted connection so far, a JSON array
//
// A bad mode, duration or bandwidth answers 400 and changes nothing.
//
// It ends on SIGINT or SIGTERM, with -exit-on-eof when its stdin ends, and on Linux when the
// process that started it dies (a death signal it asks the kernel for): so a SIGTERM to
// `go run`, which does not pass it on, still ends the proxy. From a Node test:
//
//	const proxy = spawn('go', ['run', './internal/test/faultproxy/cmd/faultproxy', '-listen', '127.0.0.1:0',
//	  '-control', '127.0.0.1:0', '-upstream', hostAddr, '-exit-on-eof'], { stdio: ['pipe', 'pipe', 'inherit'] });
//	const lines = readline.createInterface({ input: proxy.stdout }); // reads stdout all along
//	const ready = await new Promise((ok) => lines.once('line', (l) => ok(JSON.parse(l))));
//	await fetch(`http://${ready.control}/mode?mode=stall`, { method: 'POST' });
//	// … the page's link is half-open now; later: ?mode=up
//	proxy.stdin.end();            // or proxy.kill(); either ends the proxy
//
// It builds natively only (it runs processes and sockets the browser build has not).
package main
