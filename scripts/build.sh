#!/usr/bin/env bash
# Builds what the demo runs: the client the Host plugin embeds (scripts/assets.sh, committed:
# a build that changed it leaves the change in the working tree to commit), then bin/host,
# bin/client and bin/embed (the embedding example, examples/embed).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/assets.sh
mkdir -p bin
go build -o bin/host ./cmd/host
go build -o bin/client ./cmd/client
go build -o bin/faultproxy ./bench/cmd/faultproxy # the e2e suite's half-open links
go build -o bin/embed ./examples/embed
