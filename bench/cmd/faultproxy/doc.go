// Command faultproxy runs one fault proxy in front of a server, for trying a client by hand.
// The benchmark harness (bench/harness) runs the same proxy in-process.
//
//	go run ./bench/cmd/faultproxy -listen 127.0.0.1:9000 -upstream 127.0.0.1:8080 -control 127.0.0.1:9001
//
// Switch modes by typing up, refuse, blackhole or flap on stdin, or with
// curl -d refuse http://127.0.0.1:9001/mode. Every accepted connection is logged as a JSON line
// on stdout (or to -log FILE).
//
// It builds natively only (it runs processes and sockets the browser build has not).
package main
