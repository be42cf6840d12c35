//go:build !js

// Command natsnode runs one node of a NATS cluster with JetStream, embedded
// (github.com/nats-io/nats-server/v2), for the fleet demo and tests: three of them make the
// 3-node cluster a Lifeline fleet keeps its stream logs in, and killing one shows that
// publishing and replay go on.
//
//	natsnode -name n1 -addr 127.0.0.1:4222 -cluster 127.0.0.1:6222 -routes nats://127.0.0.1:6223,nats://127.0.0.1:6224 -dir /tmp/n1
package main

import (
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

func main() {
	name := flag.String("name", "n1", "server and JetStream node `name`")
	addr := flag.String("addr", "127.0.0.1:4222", "client `address`")
	cluster := flag.String("cluster", "", "cluster `address` (empty: a single server)")
	routes := flag.String("routes", "", "the other nodes' cluster `urls`, comma-separated")
	dir := flag.String("dir", "", "JetStream store `directory` (required)")
	stock := flag.Bool("stock-raft", false, "keep nats-server's raft election timers (4-9 s after a leader crash; see raft.go)")
	flag.Parse()
	if !*stock {
		fastRaft()
	}
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "natsnode: -dir is required")
		os.Exit(2)
	}
	host, port := split(*addr)
	opts := &server.Options{
		ServerName: *name, Host: host, Port: port,
		JetStream: true, StoreDir: *dir, NoSigs: true,
		Logtime: true, // the fleet test lines NATS's elections up with the Hosts' logs
	}
	if *cluster != "" {
		ch, cp := split(*cluster)
		opts.Cluster = server.ClusterOpts{Name: "lifeline", Host: ch, Port: cp}
		for r := range strings.SplitSeq(*routes, ",") {
			if r = strings.TrimSpace(r); r == "" {
				continue
			}
			u, err := url.Parse(r)
			if err != nil {
				fmt.Fprintf(os.Stderr, "natsnode: -routes %q: %v\n", r, err)
				os.Exit(2)
			}
			opts.Routes = append(opts.Routes, u)
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "natsnode:", err)
		os.Exit(1)
	}
	srv.ConfigureLogger()
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		fmt.Fprintln(os.Stderr, "natsnode: not ready within 30 s")
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "natsnode: %s ready at %s\n", *name, srv.ClientURL())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	<-sigs
	srv.Shutdown()
	srv.WaitForShutdown()
}

func split(addr string) (string, int) {
	h, p, err := net.SplitHostPort(addr)
	n, err2 := strconv.Atoi(p)
	if err != nil || err2 != nil {
		fmt.Fprintf(os.Stderr, "natsnode: bad address %q\n", addr)
		os.Exit(2)
	}
	return h, n
}
