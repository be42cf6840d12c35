#!/usr/bin/env bash
# make bench: figures, not assertions. Two steps:
#  1. the Go micro-benchmarks of controller/ and hostplugin/ (kept in bench/raw/gobench.txt);
#  2. bench/harness: Lifeline side by side with socket.io-client and reconnecting-websocket
#     behind one fault proxy, the page in Chromium, the Host's costs; writes bench/RESULTS.md.
# About 33 minutes in all (scenarios 8 and 9 drive Chromium for ~15 of them, scenario 10 takes ~3). BENCH_SCALE=0.25 is a quick run (durations and client counts × 0.25,
# results in bench/raw/<run>/RESULTS.md). Arguments go to the harness (e.g. -only 1,4).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
mkdir -p bench/raw

benchtime=1s
if [ -n "${BENCH_SCALE:-}" ] && [ "${BENCH_SCALE}" != "1" ]; then
  benchtime=200ms
fi
echo "== Go micro-benchmarks (controller, hostplugin), -benchtime=$benchtime"
go test -run='^$' -bench=. -benchmem -benchtime="$benchtime" ./controller/ ./hostplugin/ | tee bench/raw/gobench.txt

# The page-load scenario needs Debian's Chromium; setup-e2e.sh installs it when it is missing.
if [ ! -x /usr/bin/chromium ]; then
  ./scripts/setup-e2e.sh
fi

echo "== Lifeline against its peers (go run ./bench/harness $*)"
go run ./bench/harness "$@"
echo "== make bench finished in $((SECONDS - start))s"
