#!/usr/bin/env bash
# Vet and staticcheck, natively and for the browser (GOOS=js GOARCH=wasm).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== go vet (native)"
go vet ./...
echo "== go vet (js/wasm)"
GOOS=js GOARCH=wasm go vet ./...

echo "== staticcheck (native)"
go tool staticcheck ./...
echo "== staticcheck (js/wasm)"
# 'go tool' would build the tool itself for wasm; resolve the native binary first.
sc=$(go tool -n staticcheck)
GOOS=js GOARCH=wasm "$sc" ./...
