#!/usr/bin/env bash
# make test: everything a change must pass, on a fresh machine too (it installs the Debian
# packages and the e2e npm packages it needs when missing). 16 to 24 minutes on a 2-core AMD
# EPYC machine with warm caches, depending on the machine: everything but the soak before the
# e2e suite (7 to 10 minutes), then the suite (9 to 14).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
step() { echo; echo "######## $* (at $((SECONDS - start)) s)"; }

# Up front, so that a machine without root fails here rather than at the fleet.
step "set-up: Debian's Chromium, a CJK font, firefox-esr, WebKitGTK's driver, Xvfb, squid, nginx, Prometheus and promtool; e2e npm packages"
# metrics up front too: without promtool, deploy/'s rules test would skip (it checks their
# names, not their syntax) on a machine that has not run the fleet yet.
./scripts/setup.sh browser engines fleet metrics networks
./scripts/setup-e2e.sh

step "types: web/lifeline.d.ts against web/lifeline.usage.ts (tsc, pinned in e2e/package.json)"
(cd e2e && ./node_modules/.bin/tsc -p ../web/tsconfig.json)

step "build: the client assets, bin/host, bin/swarm"
./scripts/build.sh

# Lint, the asset check and installable compile hard (staticcheck four times, the wasm): beside
# the e2e suite they took half the machine for 230 s, and two of its runs missed bounds then (a
# Firefox shared hub's next attempt 2 s after Reconnect now; a WebKit form's message in 10 s).
step "lint: gofmt, go mod tidy, vet and staticcheck (native and js/wasm, without and with -tags lifeline_faults), the import rules"
./scripts/lint.sh

step "the committed client assets match a fresh build"
./scripts/check-assets.sh

step "installable: the README's go get, from a module outside the repository, against the checkout"
./scripts/installable.sh

# The Go tests, with the machine to themselves: they hold real-time bounds (a NATS request
# of 1 s under the race detector, loopback sockets), and beside the e2e runs they get half of
# the 2 cores at best (the kernel shares CPU between sessions, and the e2e runs are a session of
# their own), which made such a bound miss (hostplugin/jetstream's epoch test, in a run that
# started them beside the e2e suite).
step "go test -race (native)"
go test -race -count=1 ./...

# As an embedder builds above; the packages the fault tag adds files to, again with it.
tagged=$(./scripts/tagged.sh lifeline_faults)
if [ -n "$tagged" ]; then
  step "go test -race (native) -tags lifeline_faults:" $tagged
  go test -race -count=1 -tags lifeline_faults $tagged
fi

step "go test under js/wasm (Node and Chromium)"
./scripts/wasmtest.sh

# The fleets too: each is three NATS nodes, three Hosts, nginx, 200 clients and Chromium pages,
# enough to slow the e2e runs' browsers past their bounds when beside them (in a run that had
# them there, a Firefox page took 3.9 s to follow a restart's goaway; the test allows 2 s).
step "fleet (short): 3 Hosts on NATS JetStream behind nginx, 200 clients + 2 pages, rolling restart and kills"
go run ./e2e/fleet

step "fleet presence: pages on 3 Hosts see each other; a Host SIGKILL, a NATS leader kill, a rolling restart"
go run ./e2e/fleet -presence

# The end-to-end suite waits on outages, ladders and freezes far more than it computes (six of
# its runs side by side keep the 2 cores about 40% busy), so it runs in the background from
# here, in a session of its own, and the soak runs beside it (60 s of 50 clients and one page,
# which held its bounds there). Its output goes to a log printed whole when it ends, so that its
# lines do not interleave with the soak's.
# Chromium, firefox-esr and WebKitGTK, each in both page modes (scripts/e2e.sh says why and how).
step "end to end, in the background: Chromium (Playwright), Firefox (puppeteer-core, BiDi) and WebKitGTK (WebKitWebDriver), shared and in-page mode"
e2e_log=$(mktemp)
setsid ./scripts/e2e.sh >"$e2e_log" 2>&1 &
e2e_pid=$!
# A step that fails ends make test at once: the e2e runs (their own process group) go with it.
trap 'kill -- -"$e2e_pid" 2>/dev/null || true; rm -f "$e2e_log"' EXIT

step "chaos soak (60 s smoke): 50 clients making 100 calls each + 1 page under randomized faults"
SOAK_BUILD=0 SOAK_FLEET=0 SOAK_DURATION=60s SOAK_CLIENTS=50 SOAK_CALLS=100 SOAK_PAGES=1 ./scripts/soak.sh

step "end to end: waiting for the background runs"
e2e_rc=0
wait "$e2e_pid" || e2e_rc=$?
trap - EXIT
cat "$e2e_log"
rm -f "$e2e_log"
if [ "$e2e_rc" -ne 0 ]; then
  echo "make test: the end-to-end suite failed (its output above)" >&2
  exit "$e2e_rc"
fi

echo
echo "== make test passed in $((SECONDS - start)) s"
