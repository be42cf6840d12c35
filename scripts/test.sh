#!/usr/bin/env bash
# make test: everything a change must pass, on a fresh machine too (it installs the Debian
# packages and the e2e npm packages it needs when missing). 9 minutes on a 2-core AMD EPYC
# machine with warm caches (543 s), 12 with cold ones (699 s): lint and the builds (80 s),
# then the e2e suite (460 s) with everything else beside it.
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

# Lint, the asset check and installable compile hard (staticcheck four times, the wasm: both
# cores 85-98% busy for 70 s), so they run before the e2e suite starts: beside it they took half
# the machine, and a Firefox shared hub's next attempt came 2 s after Reconnect now.
step "lint: gofmt, go mod tidy, vet and staticcheck (native and js/wasm, without and with -tags lifeline_faults), the import rules"
./scripts/lint.sh

step "the committed client assets match a fresh build"
./scripts/check-assets.sh

step "installable: the README's go get, from a module outside the repository, against the checkout"
./scripts/installable.sh

# From here on everything waits far more than it computes (measured on a fresh clone, every
# 5 s: the race tests kept the 2 cores 10-40% busy after their first 30 s, the wasm tests 2-30%,
# the fleets 0-40%, four e2e runs 32% on average), so the end-to-end suite runs in the
# background, in a session of its own, and the rest runs beside it, the soak last (it computes
# hard for its 60 s, when most e2e lanes have ended). The e2e output goes to a log printed
# whole when it ends, so that its lines do not interleave with the rest.
# Chromium, firefox-esr and WebKitGTK, each in both page modes (scripts/e2e.sh says why and how).
step "end to end, in the background: Chromium (Playwright), Firefox (puppeteer-core, BiDi) and WebKitGTK (WebKitWebDriver), shared and in-page mode"
e2e_log=$(mktemp)
setsid ./scripts/e2e.sh >"$e2e_log" 2>&1 &
e2e_pid=$!
# A step that fails ends make test at once: the e2e runs (their own process group) go with it.
trap 'kill -- -"$e2e_pid" 2>/dev/null || true; rm -f "$e2e_log"' EXIT

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

step "fleet (short): 3 Hosts on NATS JetStream behind nginx, 200 clients + 2 pages, rolling restart and kills"
go run ./e2e/fleet

step "fleet presence: pages on 3 Hosts see each other; a Host SIGKILL, a NATS leader kill, a rolling restart"
go run ./e2e/fleet -presence

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
