#!/usr/bin/env bash
# Builds what the demo serves: bin/host, bin/client, web/lifeline.wasm (+ .br and .gz, served
# pre-compressed) and web/wasm_exec.js from this Go's own distribution.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bin
go build -o bin/host ./cmd/host
[ -d cmd/client ] && go build -o bin/client ./cmd/client
GOOS=js GOARCH=wasm go build -trimpath -ldflags="-s -w" -o web/lifeline.wasm ./wasm
cp "$(go env GOROOT)/lib/wasm/wasm_exec.js" web/wasm_exec.js
# Node's zlib has brotli built in, so no extra package is needed for the .br.
node -e '
const fs = require("fs"), zlib = require("zlib");
const raw = fs.readFileSync("web/lifeline.wasm");
const br = zlib.brotliCompressSync(raw, { params: {
  [zlib.constants.BROTLI_PARAM_QUALITY]: 11,
  [zlib.constants.BROTLI_PARAM_SIZE_HINT]: raw.length } });
const gz = zlib.gzipSync(raw, { level: 9 });
fs.writeFileSync("web/lifeline.wasm.br", br);
fs.writeFileSync("web/lifeline.wasm.gz", gz);
console.log(`web/lifeline.wasm: ${raw.length} bytes raw, ${gz.length} gzip -9, ${br.length} brotli -q11`);
'
