#!/usr/bin/env bash
# Runs the tests of every package that builds for the browser under GOOS=js GOARCH=wasm:
#  - in Node (go_js_wasm_exec) for the packages that need no browser API. Node 20 has no global
#    WebSocket without --experimental-websocket;
#  - in real Chromium (wasmbrowsertest) for the page (the DOM) and the gateway (the browser's own
#    WebSocket, whose close and abort rules differ from Node's).
# A wasm test cannot listen: the gateway's socket tests use a scriptable Host started natively
# here, whose URL they read from LIFELINE_TEST_SERVER (they skip without it).
#
# The two runs go side by side, each with a Host of its own (the Host counts a keyed call's
# runs by its key, and both runs are the same tests with the same keys): they wait on sockets
# and timers far more than they compute (28 s and 41 s one after the other, the machine 25% busy).
# Each run's output is printed whole when it ends.
set -uo pipefail
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
GOOS= GOARCH= go build -o "$tmp/testserver" ./internal/test/testserver/cmd/testserver || exit 1

# A Host per run (started here, not in a subshell, so that the trap knows its pid and stops it).
for run in node chromium; do
  "$tmp/testserver" -addr 127.0.0.1:0 >"$tmp/$run.url" &
  pids+=($!)
done
for _ in $(seq 100); do [ -s "$tmp/node.url" ] && [ -s "$tmp/chromium.url" ] && break; sleep 0.1; done
node_url=$(head -n1 "$tmp/node.url")
chromium_url=$(head -n1 "$tmp/chromium.url")
if [ -z "$node_url" ] || [ -z "$chromium_url" ]; then
  echo "wasmtest: the gateway's testserver did not start" >&2
  exit 1
fi

exec_node="$(go env GOROOT)/lib/wasm/go_js_wasm_exec"
node_pkgs=(./controller/... ./gateway/... ./wasm/... ./internal/...)
(
  echo "== go test (js/wasm, Node) ${node_pkgs[*]}"
  LIFELINE_TEST_SERVER=$node_url NODE_OPTIONS=--experimental-websocket GOOS=js GOARCH=wasm \
    go test -count=1 -exec "$exec_node" "${node_pkgs[@]}"
) >"$tmp/node.log" 2>&1 &
node=$!
(
  echo "== go test (js/wasm, Chromium) ./wasm/ ./gateway/..."
  LIFELINE_TEST_SERVER=$chromium_url GOOS=js GOARCH=wasm \
    go test -count=1 -exec "$(go tool -n wasmbrowsertest)" ./wasm/ ./gateway/... 2>&1 |
    grep -v 'could not unmarshal event'
  exit "${PIPESTATUS[0]}"
) >"$tmp/chromium.log" 2>&1 &
chromium=$!
rc=0
wait "$node" || rc=1
cat "$tmp/node.log"
wait "$chromium" || rc=1
cat "$tmp/chromium.log"
exit "$rc"
