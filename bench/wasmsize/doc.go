// Package wasmsize says where the bytes of a Go-built WebAssembly module go: the size of each
// section, and the function bodies of the code section summed per Go package, read from the
// module's name section (or from an unstripped twin of the same build). `go run
// ./bench/cmd/wasmsize` prints it; the benchmark harness adds it to scenario 6.
//
// The parser is hand-written: it needs the section framing, the import, code and data
// sections' counts and the name section, a few hundred lines; wazero's decoder is internal to
// wazero and wagon is archived.
package wasmsize
