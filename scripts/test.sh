#!/usr/bin/env bash
# make test: everything a change must pass, on a fresh machine too (it installs the Debian
# packages and the e2e npm packages it needs when missing). Kept well under 20 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
step() { echo; echo "######## $* (at $((SECONDS - start)) s)"; }

# Up front, so that a machine without root fails here rather than at the fleet.
step "set-up: Debian's Chromium, a CJK font, nginx, Prometheus and promtool, squid; e2e npm packages"
# metrics up front too: without promtool, deploy/'s rules test would skip (it checks their
# names, not their syntax) on a machine that has not run the fleet yet.
./scripts/setup.sh browser fleet metrics networks
./scripts/setup-e2e.sh

step "types: web/lifeline.d.ts against web/lifeline.usage.ts (tsc, pinned in e2e/package.json)"
(cd e2e && ./node_modules/.bin/tsc -p ../web/tsconfig.json)

step "lint: gofmt, go mod tidy, vet and staticcheck (native and js/wasm, without and with -tags lifeline_faults), the import rules"
./scripts/lint.sh

step "the committed client assets match a fresh build"
./scripts/check-assets.sh

step "go test -race (native), every module of go.work"
go test -race -count=1 github.com/lifeline-go/lifeline/...

# As an embedder builds above; the packages the fault tag adds files to, again with it.
tagged=$(./scripts/tagged.sh lifeline_faults)
if [ -n "$tagged" ]; then
  step "go test -race (native) -tags lifeline_faults:" $tagged
  go test -race -count=1 -tags lifeline_faults $tagged
fi

step "go test under js/wasm (Node and Chromium)"
./scripts/wasmtest.sh

step "build: the client assets, bin/host, bin/swarm"
./scripts/build.sh

# Every scenario in both of the page's modes: shared (one hub per origin in a SharedWorker,
# the default) and in-page (one socket per tab, where SharedWorker is missing). The two suites
# run side by side: they wait on outages, ladders and freezes far more than they compute (make
# test keeps the 2 cores ~20% busy), so this saves ~4 of 9.5 minutes. Each has its own
# results folder and its own range of ports, below the kernel's ephemeral ones (e2e/tests/host.js).
step "end to end: Playwright in Chromium against bin/host, shared and in-page mode side by side"
e2e_mode() { # mode ports: one suite, its lines prefixed with its mode
  (cd e2e && LIFELINE_MODE=$1 LIFELINE_E2E_PORTS=$2 npx playwright test --output "test-results/$1") 2>&1 |
    sed -u "s/^/[$1] /"
  return "${PIPESTATUS[0]}"
}
e2e_mode shared 20000-25999 & shared_pid=$!
e2e_mode in-page 26000-31999 & inpage_pid=$!
e2e_failed=()
wait "$shared_pid" || e2e_failed+=(shared)
wait "$inpage_pid" || e2e_failed+=(in-page)
if [ ${#e2e_failed[@]} -gt 0 ]; then
  echo "end to end: failed in ${e2e_failed[*]} mode (results in e2e/test-results/<mode>)" >&2
  exit 1
fi

step "chaos soak (60 s smoke): 50 clients making 100 calls each + 1 page under randomized faults"
SOAK_BUILD=0 SOAK_FLEET=0 SOAK_DURATION=60s SOAK_CLIENTS=50 SOAK_CALLS=100 SOAK_PAGES=1 ./scripts/soak.sh

step "fleet (short): 3 Hosts on NATS JetStream behind nginx, 200 clients + 2 pages, rolling restart and kills"
go run ./e2e/fleet

echo
echo "== make test passed in $((SECONDS - start)) s"
