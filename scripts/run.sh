#!/usr/bin/env bash
# make run: build everything (scripts/build.sh: bin/host with -tags lifeline_faults) and serve
# the demo page with the fault panel on.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
addr=${ADDR:-127.0.0.1:8080}
echo
echo "Lifeline demo: open http://$addr/ (append ?lang=zh for Chinese)."
echo "Fault panel:  curl -d stall-open http://$addr/_lifeline/faults   (modes: up, refuse, outage,"
echo "              stall-open, stall-ready, flap=<ms>, drain=<uri>, overload=<ms>)"
echo
exec ./bin/host -addr "$addr" -web web -faults
