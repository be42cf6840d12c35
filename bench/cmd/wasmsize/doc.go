// Command wasmsize says where the bytes of a Go-built .wasm go: the whole file raw, gzip -9
// and brotli -q11 (Node's zlib, as scripts/build.sh compresses it), the size of each section,
// and the function bodies summed per Go package and per module, largest first.
//
//	scripts/wasm.sh /tmp/lifeline.wasm && go run ./bench/cmd/wasmsize /tmp/lifeline.wasm
//	scripts/wasm.sh /tmp/names.wasm --names && go run ./bench/cmd/wasmsize -names /tmp/names.wasm -top 40 /tmp/lifeline.wasm
//
// The package of a function is read from the name section, which `-ldflags=-s` drops: build
// without -s (same other flags: the code is byte for byte the same) and pass that build, or
// pass it with -names beside the stripped one that is served. -pkgs names the Go packages the
// wasm was built from (`go list -deps` for js/wasm, default ./wasm) so that paths are spelled
// as Go spells them; without it they are read from the mangled names alone.
//
// It builds natively only (it runs go list and node).
package main
