#!/usr/bin/env bash
# Checks that the committed client assets (hostplugin/internal/client/dist) are what this
# source builds: the scripts byte for byte, the wasm by what its .br and .gz decompress to
# (compressors may differ between machines; what the browser runs may not).
set -euo pipefail
cd "$(dirname "$0")/.."
dist=hostplugin/internal/client/dist
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
./scripts/assets.sh "$tmp" >/dev/null
node -e 'const fs = require("fs"), zlib = require("zlib"); fs.writeFileSync(process.argv[2], zlib.brotliDecompressSync(fs.readFileSync(process.argv[1])))' "$tmp/lifeline.wasm.br" "$tmp/fresh.wasm"
stale=()
for f in lifeline.js boot.js run.js worker.js; do
  cmp -s "$dist/$f" "$tmp/$f" || stale+=("$f")
done
node -e '
const fs = require("fs"), zlib = require("zlib");
const [dist, fresh] = process.argv.slice(1);
const want = fs.readFileSync(fresh);
const bad = [];
if (!zlib.brotliDecompressSync(fs.readFileSync(dist + "/lifeline.wasm.br")).equals(want)) bad.push("lifeline.wasm.br");
if (!zlib.gunzipSync(fs.readFileSync(dist + "/lifeline.wasm.gz")).equals(want)) bad.push("lifeline.wasm.gz");
if (bad.length) { console.log(bad.join(" ")); process.exit(1); }
' "$dist" "$tmp/fresh.wasm" >"$tmp/wasm-stale" || stale+=($(cat "$tmp/wasm-stale"))
if [ ${#stale[@]} -gt 0 ]; then
  echo "check-assets: the committed client assets are stale: ${stale[*]}" >&2
  echo "  rebuild them with ./scripts/assets.sh and commit $dist" >&2
  exit 1
fi
echo "check-assets: $dist matches a fresh build"
