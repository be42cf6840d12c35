// Package test holds Lifeline's test tooling: tests, bench and e2e only. Nothing that ships
// (the root module's packages, the wasm, hostplugin/jetstream, hostplugin/metrics, cmd/host,
// cmd/swarm) imports anything under it: imports_test.go here checks that, with ARCHITECTURE.md's
// other import rules.
//
//   - testbed: processes, free ports and bounded waits for the bench, the soak and the fleet;
//   - testserver: a scriptable Host for the gateway's and the wasm's tests (native and js);
//   - testlog: a log/slog recorder for tests that assert what was logged;
//   - wstest: HTTP and WebSocket upgrades served in memory, for tests in a synctest bubble;
//   - pagetest: HTML pages served and their bootstrap read, for the tests of injection;
//   - hosttest: a Host over loopback and a page's socket driven against it, for the tests of
//     hostplugin, hostplugin/jetstream and hostplugin/metrics;
//   - faultproxy: the TCP proxy with fault modes that the bench, the soak and the e2e suite's
//     half-open links put clients behind (bin/faultproxy is its command);
//   - modproxy: a module proxy of the checkout, for scripts/installable.sh's go get;
//   - restarttest: a Host process and its successors, a port hammered for answers and pages
//     that follow a GOAWAY, for the restart tests of hostplugin/restart and bin/host.
package test
