#!/usr/bin/env bash
# make test: everything a change must pass, on a fresh machine too (it installs the Debian
# packages and the e2e npm packages it needs when missing). Kept well under 20 minutes on 2 cores.
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

step "lint: gofmt, go mod tidy, vet and staticcheck (native and js/wasm, without and with -tags lifeline_faults), the import rules"
./scripts/lint.sh

step "the committed client assets match a fresh build"
./scripts/check-assets.sh

step "installable: the README's go get, from a module outside the repository, against the checkout"
./scripts/installable.sh

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

step "build: the client assets, bin/host, bin/swarm"
./scripts/build.sh

# Chromium, firefox-esr and WebKitGTK, each in both page modes, in four lanes side by side
# (scripts/e2e.sh says why and how).
step "end to end: Chromium (Playwright), Firefox (puppeteer-core, BiDi) and WebKitGTK (WebKitWebDriver), shared and in-page mode"
./scripts/e2e.sh

step "chaos soak (60 s smoke): 50 clients making 100 calls each + 1 page under randomized faults"
SOAK_BUILD=0 SOAK_FLEET=0 SOAK_DURATION=60s SOAK_CLIENTS=50 SOAK_CALLS=100 SOAK_PAGES=1 ./scripts/soak.sh

step "fleet (short): 3 Hosts on NATS JetStream behind nginx, 200 clients + 2 pages, rolling restart and kills"
go run ./e2e/fleet

step "fleet presence: pages on 3 Hosts see each other; a Host SIGKILL, a NATS leader kill, a rolling restart"
go run ./e2e/fleet -presence

echo
echo "== make test passed in $((SECONDS - start)) s"
