#!/usr/bin/env bash
# Runs the tests of every package that builds for the browser under GOOS=js GOARCH=wasm:
#  - in Node (go_js_wasm_exec) for the packages that need no browser API. Node 20 has no global
#    WebSocket without --experimental-websocket;
#  - in real Chromium (wasmbrowsertest) for the page (the DOM) and the gateway (the browser's own
#    WebSocket, whose close and abort rules differ from Node's).
# A wasm test cannot listen: the gateway's socket tests use a scriptable Host started natively
# here, whose URL they read from LIFELINE_TEST_SERVER (they skip without it).
set -euo pipefail
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
GOOS= GOARCH= go build -o "$tmp/testserver" ./internal/test/testserver/cmd/testserver
"$tmp/testserver" -addr 127.0.0.1:0 >"$tmp/url" &
ts_pid=$!
trap 'kill "$ts_pid" 2>/dev/null || true; wait "$ts_pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do [ -s "$tmp/url" ] && break; sleep 0.1; done
LIFELINE_TEST_SERVER=$(head -n1 "$tmp/url")
[ -n "$LIFELINE_TEST_SERVER" ] || { echo "wasmtest: the gateway's testserver did not start" >&2; exit 1; }
export LIFELINE_TEST_SERVER

exec_node="$(go env GOROOT)/lib/wasm/go_js_wasm_exec"
node_pkgs=(./controller/... ./gateway/... ./wasm/... ./internal/...)
echo "== go test (js/wasm, Node) ${node_pkgs[*]}"
NODE_OPTIONS=--experimental-websocket GOOS=js GOARCH=wasm go test -count=1 -exec "$exec_node" "${node_pkgs[@]}"

echo "== go test (js/wasm, Chromium) ./wasm/ ./gateway/..."
# wasmbrowsertest prints CDP noise such as 'could not unmarshal event' from its older client;
# it is harmless and filtered here.
GOOS=js GOARCH=wasm go test -count=1 -exec "$(go tool -n wasmbrowsertest)" ./wasm/ ./gateway/... 2>&1 |
  grep -v 'could not unmarshal event'
exit "${PIPESTATUS[0]}"
