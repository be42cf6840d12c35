#!/usr/bin/env bash
# Go benchmarks. Figures, not assertions.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run='^$' -bench=. -benchmem ./...
