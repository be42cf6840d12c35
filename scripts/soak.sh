#!/usr/bin/env bash
# make soak: the chaos soak (e2e/soak) — 200 clients making 500 calls each and 3 Chromium
# pages against bin/host under 10 minutes of randomized faults. SOAK_DURATION, SOAK_CLIENTS,
# SOAK_CALLS, SOAK_PAGES and SOAK_SEED change it; the smoke version that make test can run is
#   SOAK_DURATION=60s SOAK_CLIENTS=50 SOAK_CALLS=100 SOAK_PAGES=1 ./scripts/soak.sh
# SOAK_BUILD=0 skips the set-up and build (when make test has just done them); SOAK_FLEET=0
# skips the long fleet run that follows the chaos soak.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${SOAK_BUILD:-1}" != 0 ]; then
  if [ "${SOAK_PAGES:-3}" != 0 ]; then ./scripts/setup-e2e.sh; fi
  ./scripts/build.sh >/dev/null
fi
go build -o bin/soak ./e2e/soak
./bin/soak "$@"
if [ "${SOAK_FLEET:-1}" != 0 ]; then
  # The long fleet run: three rolling restarts through nginx on NATS JetStream, then kills.
  go run ./e2e/fleet -long
fi
