#!/usr/bin/env bash
# Runs the tests of every package that builds for the browser under GOOS=js GOARCH=wasm in
# Node. Node 20 has no global WebSocket without --experimental-websocket; a wasm test cannot
# listen on a port, so tests that need a server get one started natively (see gateway tests).
set -euo pipefail
cd "$(dirname "$0")/.."
exec_wasm="$(go env GOROOT)/lib/wasm/go_js_wasm_exec"
pkgs=(./controller/... ./gateway/...)
echo "== go test (js/wasm, Node) ${pkgs[*]}"
NODE_OPTIONS=--experimental-websocket GOOS=js GOARCH=wasm go test -exec "$exec_wasm" "${pkgs[@]}"
