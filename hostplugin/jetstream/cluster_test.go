//go:build !js

package jetstream_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// natsNodeEnv makes this test binary run one node of a NATS cluster instead of the tests
// (see TestMain): a node killed with SIGKILL must be a process of its own, because an
// in-process server's Shutdown hands its leaderships over first, which a crash never does.
const natsNodeEnv = "LIFELINE_TEST_NATS_NODE"

func TestMain(m *testing.M) {
	if cfg := os.Getenv(natsNodeEnv); cfg != "" {
		os.Exit(runNATSNode(cfg))
	}
	os.Exit(m.Run())
}

// nodeConfig is what a node process is told; nodeAddrs what it answers on its first line.
type nodeConfig struct {
	Name   string
	Dir    string
	Routes []string // cluster URLs of nodes already up; the cluster gossips the rest
}

type nodeAddrs struct {
	Client  string // nats:// URL for clients
	Cluster string // host:port of its route listener
	Monitor string // host:port of its HTTP monitoring
}

// runNATSNode is the node process: a JetStream server on loopback ports of its own, which
// exits when its stdin (held by the test) ends.
func runNATSNode(cfg string) int {
	var c nodeConfig
	if err := json.Unmarshal([]byte(cfg), &c); err != nil {
		fmt.Fprintln(os.Stderr, "nats node: bad config:", err)
		return 2
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "nats node:", err)
		return 1
	}
	opts := &server.Options{
		ServerName: c.Name, Host: "127.0.0.1", Port: server.RANDOM_PORT,
		HTTPHost: "127.0.0.1", HTTPPort: server.RANDOM_PORT,
		JetStream: true, StoreDir: c.Dir, NoSigs: true,
		LogFile: filepath.Join(c.Dir, "node.log"), Logtime: true,
		Cluster: server.ClusterOpts{Name: "lifeline-test", Host: "127.0.0.1", Port: server.RANDOM_PORT},
	}
	routes := c.Routes
	if len(routes) == 0 {
		// A JetStream cluster node needs a configured route: the first node gets one to
		// itself (the server ignores it), on a port it takes the moment it is freed.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, "nats node:", err)
			return 1
		}
		opts.Cluster.Port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		routes = []string{fmt.Sprintf("nats://127.0.0.1:%d", opts.Cluster.Port)}
	}
	for _, r := range routes {
		u, err := url.Parse(r)
		if err != nil {
			fmt.Fprintln(os.Stderr, "nats node: bad route:", err)
			return 2
		}
		opts.Routes = append(opts.Routes, u)
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nats node:", err)
		return 1
	}
	srv.ConfigureLogger()
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		fmt.Fprintln(os.Stderr, "nats node: not ready within 30 s")
		return 1
	}
	b, _ := json.Marshal(nodeAddrs{Client: srv.ClientURL(), Cluster: srv.ClusterAddr().String(), Monitor: srv.MonitorAddr().String()})
	fmt.Println(string(b))
	_, _ = io.Copy(io.Discard, os.Stdin)
	srv.Shutdown()
	srv.WaitForShutdown()
	return 0
}

// natsNode is one node process of a natsCluster.
type natsNode struct {
	name  string
	dir   string
	addrs nodeAddrs
	cmd   *exec.Cmd
	stdin io.Closer
	done  chan struct{}
}

// natsCluster is a 3-node NATS JetStream cluster, one process per node.
type natsCluster struct {
	t     testing.TB
	nodes []*natsNode
}

func startNATSCluster(t testing.TB) *natsCluster {
	t.Helper()
	c := &natsCluster{t: t}
	first := c.startNode("n1", nil)
	for _, name := range []string{"n2", "n3"} {
		c.startNode(name, []string{"nats://" + first.addrs.Cluster})
	}
	t.Cleanup(c.report)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := c.meta(first); m.Leader != "" && m.Size == 3 {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("the 3-node NATS cluster elected no JetStream meta leader within 30 s (logs in %s)", filepath.Dir(first.dir))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *natsCluster) startNode(name string, routes []string) *natsNode {
	c.t.Helper()
	n := &natsNode{name: name, dir: filepath.Join(c.t.TempDir(), name), done: make(chan struct{})}
	cfg, _ := json.Marshal(nodeConfig{Name: name, Dir: n.dir, Routes: routes})
	n.cmd = exec.Command(os.Args[0], "-test.run=^$")
	n.cmd.Env = append(os.Environ(), natsNodeEnv+"="+string(cfg))
	n.cmd.Stderr = os.Stderr
	stdin, err := n.cmd.StdinPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	stdout, err := n.cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := n.cmd.Start(); err != nil {
		c.t.Fatalf("starting NATS node %s: %v", name, err)
	}
	n.stdin = stdin
	go func() {
		_ = n.cmd.Wait()
		close(n.done)
	}()
	c.t.Cleanup(func() {
		_ = n.stdin.Close()
		select {
		case <-n.done:
		case <-time.After(10 * time.Second):
			_ = n.cmd.Process.Kill()
			<-n.done
		}
	})
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case line, ok := <-first:
		if !ok {
			c.t.Fatalf("NATS node %s exited before it was up (its errors are above)", name)
		}
		if err := json.Unmarshal([]byte(line), &n.addrs); err != nil {
			c.t.Fatalf("NATS node %s said %q: %v", name, line, err)
		}
	case <-time.After(30 * time.Second):
		c.t.Fatalf("NATS node %s not up within 30 s", name)
	}
	c.nodes = append(c.nodes, n)
	return n
}

// report logs what the nodes said about leaders and trouble, when the test failed.
func (c *natsCluster) report() {
	if !c.t.Failed() {
		return
	}
	for _, n := range c.nodes {
		b, err := os.ReadFile(filepath.Join(n.dir, "node.log"))
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.Contains(line, "leader") || strings.Contains(line, "[WRN]") || strings.Contains(line, "[ERR]") {
				c.t.Logf("%s: %s", n.name, line)
			}
		}
	}
}

// node returns the node named name.
func (c *natsCluster) node(name string) *natsNode {
	c.t.Helper()
	for _, n := range c.nodes {
		if n.name == name {
			return n
		}
	}
	c.t.Fatalf("no NATS node %q", name)
	return nil
}

// meta reads the JetStream meta group as node n sees it (zero when n cannot say).
func (c *natsCluster) meta(n *natsNode) server.MetaClusterInfo {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.addrs.Monitor+"/jsz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return server.MetaClusterInfo{}
	}
	defer resp.Body.Close()
	var jsz struct {
		Meta *server.MetaClusterInfo `json:"meta_cluster"`
	}
	if json.NewDecoder(resp.Body).Decode(&jsz) != nil || jsz.Meta == nil {
		return server.MetaClusterInfo{}
	}
	return *jsz.Meta
}

// kill ends node n with SIGKILL, as a crash would, and waits for the process to be gone.
func (c *natsCluster) kill(n *natsNode) {
	c.t.Helper()
	if err := n.cmd.Process.Kill(); err != nil {
		c.t.Fatalf("SIGKILL %s: %v", n.name, err)
	}
	select {
	case <-n.done:
	case <-time.After(10 * time.Second):
		c.t.Fatalf("NATS node %s still running 10 s after SIGKILL", n.name)
	}
}
