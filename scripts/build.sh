#!/usr/bin/env bash
# Builds what the demo runs: the client the Host plugin embeds (scripts/assets.sh, committed:
# a build that changed it leaves the change in the working tree to commit), then bin/host,
# bin/swarm and bin/embed (the embedding example, examples/embed). bin/host is built with
# -tags lifeline_faults: fault injection (-faults), -client and -ledger, which an embedder's build
# lacks.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/assets.sh
mkdir -p bin
go build -tags lifeline_faults -o bin/host ./cmd/host # the demo, e2e, soak, fleet and bench drive its -faults
go build -o bin/swarm ./cmd/swarm
go build -o bin/faultproxy ./internal/test/faultproxy/cmd/faultproxy # the e2e suite's half-open links
go build -o bin/embed ./examples/embed
go build -o bin/pathproxy ./internal/test/pathproxy/cmd/pathproxy # the e2e suite's middleboxes that break WebSockets
