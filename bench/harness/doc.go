// Command harness runs Lifeline's benchmarks against the reconnect clients users would pick
// instead, and writes bench/RESULTS.md. `make bench` runs it through scripts/bench.sh.
//
//	go run ./bench/harness                    # everything, about 15 minutes
//	BENCH_SCALE=0.25 go run ./bench/harness   # quick: durations and client counts × 0.25
//	go run ./bench/harness -only 1,4          # some scenarios
//	go run ./bench/harness -only 6 -web DIR   # the page load, served from other page assets
//
// The harness is Go because the fault proxy is Go and runs in-process, switched on one clock
// for every client kind at once; the peers run in Node as their users run them, and every
// client process prints the same JSON event lines, read by one analyser here.
//
// Only a full run (scale 1, every scenario) writes bench/RESULTS.md; any other run writes
// its results beside its raw logs in bench/raw/<run>/, unless -out says otherwise.
//
// It builds natively only (it runs processes and sockets the browser build has not).
package main
