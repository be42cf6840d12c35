#!/usr/bin/env bash
# Vet and staticcheck, natively and for the browser (GOOS=js GOARCH=wasm), over every module of
# go.work (./... would stop at the nested modules: cmd, e2e, bench, hostplugin/jetstream).
set -euo pipefail
cd "$(dirname "$0")/.."
all=github.com/lifeline-go/lifeline/...

echo "== go vet (native)"
go vet "$all"
echo "== go vet (js/wasm)"
GOOS=js GOARCH=wasm go vet "$all"

echo "== staticcheck (native)"
go tool staticcheck "$all"
echo "== staticcheck (js/wasm)"
# 'go tool' would build the tool itself for wasm; resolve the native binary first.
sc=$(go tool -n staticcheck)
GOOS=js GOARCH=wasm "$sc" "$all"
