#!/usr/bin/env bash
# Runs the tests of every package that builds for the browser under GOOS=js GOARCH=wasm:
#  - in Node (go_js_wasm_exec) for the packages that need no browser API. Node 20 has no global
#    WebSocket without --experimental-websocket;
#  - in real Chromium (wasmbrowsertest) for the page, which needs a DOM.
set -euo pipefail
cd "$(dirname "$0")/.."
exec_node="$(go env GOROOT)/lib/wasm/go_js_wasm_exec"
node_pkgs=(./controller/... ./gateway/...)
echo "== go test (js/wasm, Node) ${node_pkgs[*]}"
NODE_OPTIONS=--experimental-websocket GOOS=js GOARCH=wasm go test -count=1 -exec "$exec_node" "${node_pkgs[@]}"

echo "== go test (js/wasm, Chromium) ./wasm/ ./gateway/..."
# wasmbrowsertest prints CDP noise such as 'could not unmarshal event' from its older client;
# it is harmless and filtered here.
GOOS=js GOARCH=wasm go test -count=1 -exec "$(go tool -n wasmbrowsertest)" ./wasm/ ./gateway/... 2>&1 |
  grep -v 'could not unmarshal event'
exit "${PIPESTATUS[0]}"
