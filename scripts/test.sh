#!/usr/bin/env bash
# make test: everything a change must pass, on a fresh machine too (it installs Chromium and
# the e2e npm packages when missing). Kept well under 20 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
step() { echo; echo "######## $* (at $((SECONDS - start)) s)"; }

step "set-up: Chromium and e2e npm packages"
./scripts/setup-e2e.sh

step "types: web/lifeline.d.ts against web/lifeline.usage.ts (tsc, pinned in e2e/package.json)"
(cd e2e && ./node_modules/.bin/tsc -p ../web/tsconfig.json)

step "lint: vet and staticcheck, native and js/wasm"
./scripts/lint.sh

step "the committed client assets match a fresh build"
./scripts/check-assets.sh

step "go test -race (native), every module of go.work"
go test -race -count=1 github.com/lifeline-go/lifeline/...

step "go test under js/wasm (Node and Chromium)"
./scripts/wasmtest.sh

step "build: the client assets, bin/host, bin/client"
./scripts/build.sh

# Every scenario in both of the page's modes: shared (one hub per origin in a SharedWorker,
# the default) and in-page (one socket per tab, where SharedWorker is missing).
step "end to end: Playwright in Chromium against bin/host, shared mode"
(cd e2e && LIFELINE_MODE=shared npx playwright test)
step "end to end: Playwright in Chromium against bin/host, in-page mode"
(cd e2e && LIFELINE_MODE=in-page npx playwright test)

step "chaos soak (60 s smoke): 50 clients + 1 page under randomized faults"
SOAK_BUILD=0 SOAK_FLEET=0 SOAK_DURATION=60s SOAK_CLIENTS=50 SOAK_PAGES=1 ./scripts/soak.sh

step "fleet (short): 3 Hosts on NATS JetStream behind nginx, 200 clients + 2 pages, rolling restart and kills"
go run ./e2e/fleet

echo
echo "== make test passed in $((SECONDS - start)) s"
