#!/usr/bin/env bash
# The one build of the page's wasm, with the flags every caller shares (scripts/assets.sh,
# scripts/check-assets.sh, the bench's names twin):
#   scripts/wasm.sh OUT           the served build: stripped (-s -w)
#   scripts/wasm.sh OUT --names   the same code with its name section, for sizes per package
# -trimpath and -buildvcs=false: the same source gives the same bytes on any machine and at any
# commit. -gcflags=all=-l: no inlining, anywhere (−81 KB brotli, −10%: fewer code bytes, and no
# inline trees in the function tables, which compress badly; Go's start-up in the page did not
# measurably slow). GOWASM=satconv,signext: instructions every browser that has SharedWorker or
# WebAssembly.compileStreaming runs (Chrome 75+, Firefox 64+, Safari 15+), fewer bytes than
# their emulation (−2 KB brotli). tools/wasmpack then merges the linker's ~45,000 data segments
# (−71 KB brotli). bench/PAGELOAD.md has the table of levers.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1
ldflags="-s -w"
[ "${2:-}" = --names ] && ldflags=""
linked=$(mktemp)
trap 'rm -f "$linked"' EXIT
GOOS=js GOARCH=wasm GOWASM=satconv,signext \
  go build -trimpath -buildvcs=false -gcflags=all=-l -ldflags="$ldflags" -o "$linked" ./wasm
go run ./tools/wasmpack -gap 4096 "$linked" "$out"
