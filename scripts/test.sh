#!/usr/bin/env bash
# make test: everything a change must pass. Kept well under 20 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS

./scripts/lint.sh

echo "== go test -race (native)"
go test -race -count=1 ./...

./scripts/wasmtest.sh

echo "== make test finished in $((SECONDS - start))s"
