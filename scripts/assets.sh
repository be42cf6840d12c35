#!/usr/bin/env bash
# Builds the client the Host plugin serves and embeds (hostplugin/internal/client/dist): the
# wasm (pre-compressed: .br and .gz; the plugin derives identity from the .gz), the tab script
# (web/settings.js + web/boot.js + web/lifeline.js), the boot the plugin inlines in every page
# (web/boot.js without its comments), the runner (Go's wasm_exec.js + web/runner.js) and the
# shared hub's worker script (web/worker.js).
# The assets are committed, so that an embedder who only ran `go get` has them; CI checks that
# they match a fresh build (scripts/check-assets.sh). Run this after changing anything that
# the wasm links (controller, gateway, hub, wasm, internal/strictjson) or web/*.js.
#   scripts/assets.sh [dir]   (default hostplugin/internal/client/dist)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-hostplugin/internal/client/dist}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

./scripts/wasm.sh "$tmp/lifeline.wasm"
cat web/settings.js web/boot.js web/lifeline.js >"$out/lifeline.js"
# The boot, as the plugin inlines it in every page: without its comment lines and indentation.
grep -v '^[[:space:]]*//' web/boot.js | sed 's/^[[:space:]]*//' >"$out/boot.js"
cat "$(go env GOROOT)/lib/wasm/wasm_exec.js" web/runner.js >"$out/run.js"
cp web/worker.js "$out/worker.js"
# Node's zlib has brotli; gzip -9 likewise, with no file name or time in the header.
node -e '
const fs = require("fs"), zlib = require("zlib");
const [src, out] = process.argv.slice(1);
const raw = fs.readFileSync(src);
fs.writeFileSync(out + "/lifeline.wasm.br", zlib.brotliCompressSync(raw, { params: {
  [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: raw.length } }));
fs.writeFileSync(out + "/lifeline.wasm.gz", zlib.gzipSync(raw, { level: 9 }));
const br = fs.statSync(out + "/lifeline.wasm.br").size, gz = fs.statSync(out + "/lifeline.wasm.gz").size;
console.log(`client assets in ${out}: wasm ${raw.length} bytes raw, ${gz} gzip -9, ${br} brotli -q11`);
' "$tmp/lifeline.wasm" "$out"
