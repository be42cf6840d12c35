//go:build !js

// Command fanprobe drives one fanout-server at chosen rates, for profiling (not the bench).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lifeline-go/lifeline/bench/fanload"
)

func main() {
	bin := flag.String("bin", "/tmp/fanbin", "dir of fanout-server and fanout-pages")
	kind := flag.String("kind", "lifeline", "lifeline, lifeline-http (its pages on the HTTP carrier) or centrifuge")
	pages := flag.Int("pages", 2000, "")
	rates := flag.String("rates", "40000", "")
	step := flag.Duration("step", 10*time.Second, "")
	prof := flag.String("prof", "", "dir: write cpu/block/mutex/trace profiles at each rate")
	srvArgs := flag.String("server-args", "", "extra server args, space separated")
	reps := flag.Int("reps", 1, "times each rate")
	flag.Parse()
	server := *kind
	if server == "lifeline-http" { // Lifeline's Host; its pages on the HTTP carrier
		server = "lifeline"
	}
	args := []string{"-kind", server, "-pages", strconv.Itoa(*pages)}
	if *kind == "centrifuge" {
		args = append(args, "-history", "1024")
	}
	if *srvArgs != "" {
		args = append(args, strings.Fields(*srvArgs)...)
	}
	srv := exec.Command(filepath.Join(*bin, "fanout-server"), args...)
	srv.Stderr = os.Stderr
	addr := start(srv, "ADDR ")
	var ctls []string
	pk := *kind
	for i := 0; i*9000 < *pages; i++ {
		n := min(9000, *pages-i*9000)
		url := "ws://" + addr + "/_lifeline/events"
		switch *kind {
		case "centrifuge":
			url = "ws://" + addr + "/connection/websocket"
		case "lifeline-http":
			url = "http://" + addr + "/_lifeline/events"
		}
		p := exec.Command(filepath.Join(*bin, "fanout-pages"), "-kind", pk, "-url", url, "-first", strconv.Itoa(i*9000), "-n", strconv.Itoa(n),
			"-laddrs", "127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5,127.0.0.6,127.0.0.7,127.0.0.8")
		p.Stderr = os.Stderr
		ctls = append(ctls, start(p, "CONTROL "))
		pagePids = append(pagePids, p.Process.Pid)
	}
	for {
		st := pstats(ctls, false)
		if st.Connected >= *pages {
			break
		}
		if st.Failed > 0 {
			fmt.Println("failed", st.FirstErr)
			os.Exit(1)
		}
		time.Sleep(250 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	for _, rs := range strings.Split(*rates, ",") {
		for rep := 0; rep < *reps; rep++ {
			w0, r0 := sysc(srv.Process.Pid, "syscw"), sumsysc(pagePids, "syscr")
			pc0, busy0, all0 := pagesCPU(), 0.0, 0.0
			busy0, all0 = machine()
			p0 := pstats(ctls, true)
			var s0 fanload.ServerStats
			getJSON("http://"+addr+"/stats", &s0)
			post("http://" + addr + "/rate?r=" + rs)
			t0 := time.Now()
			if *prof != "" {
				time.Sleep(2 * time.Second)
				dir := filepath.Join(*prof, fmt.Sprintf("%s-%d-%s", *kind, *pages, rs))
				os.MkdirAll(dir, 0o755)
				fetch("http://"+addr+"/debug/pprof/profile?seconds=3", filepath.Join(dir, "cpu.pb.gz"))
				fetch("http://"+addr+"/debug/pprof/trace?seconds=1", filepath.Join(dir, "trace.out"))
				fetch("http://"+addr+"/debug/pprof/block", filepath.Join(dir, "block.pb.gz"))
				fetch("http://"+addr+"/debug/pprof/mutex", filepath.Join(dir, "mutex.pb.gz"))
				fetch("http://"+addr+"/debug/pprof/goroutine", filepath.Join(dir, "goroutine.pb.gz"))
				for i, c := range ctls { // the pages' processes: their share of the latency
					fetch("http://"+c+"/debug/pprof/trace?seconds=1", filepath.Join(dir, fmt.Sprintf("pages%d-trace.out", i)))
				}
			}
			time.Sleep(*step - time.Since(t0))
			var s1 fanload.ServerStats
			getJSON("http://"+addr+"/stats", &s1)
			post("http://" + addr + "/rate?r=0")
			var p1 fanload.PagesStats
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				p1 = pstats(ctls, false)
				var s2 fanload.ServerStats
				getJSON("http://"+addr+"/stats", &s2)
				if p1.Received-p0.Received >= s2.Expected-s0.Expected {
					break
				}
			}
			p1 = pstats(ctls, true)
			var s2 fanload.ServerStats
			getJSON("http://"+addr+"/stats", &s2)
			w1, r1 := sysc(srv.Process.Pid, "syscw"), sumsysc(pagePids, "syscr")
			pc1 := pagesCPU()
			busy1, all1 := machine()
			lat := fanload.Counts(p1.Latency)
			del := p1.Received - p0.Received
			fmt.Printf("%s %d R=%s made=%.0f/s: p50 %v p90 %v p99 %v p999 %v max %v; %d/%d delivered; cpu %.2fs/100k (%.0f%% core); lost %d dup %d failed %d; %.2f deliveries/write, %.2f/page read; pages cpu %.2fs/100k; machine busy %.0f%%\n",
				*kind, *pages, rs, float64(s1.Published-s0.Published)/step.Seconds(),
				lat.Quantile(.5).Round(100*time.Microsecond), lat.Quantile(.9).Round(100*time.Microsecond), lat.Quantile(.99).Round(100*time.Microsecond),
				lat.Quantile(.999).Round(100*time.Microsecond), lat.Quantile(1).Round(100*time.Microsecond),
				del, s2.Expected-s0.Expected, (s2.CPU-s0.CPU)/float64(max(del, 1))*1e5, (s1.CPU-s0.CPU)/step.Seconds()*100,
				p1.Lost-p0.Lost, p1.Dupes-p0.Dupes, p1.Failed, float64(del)/float64(w1-w0), float64(del)/float64(r1-r0), (pc1-pc0)/float64(max(del, 1))*1e5, (busy1-busy0)/(all1-all0)*100)
		}
	}
}

func start(c *exec.Cmd, prefix string) string {
	out, _ := c.StdoutPipe()
	// The server and the pages end when their stdin closes: a pipe this process holds open.
	pr, pw := io.Pipe()
	c.Stdin = pr
	keep = append(keep, pw)
	if err := c.Start(); err != nil {
		panic(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			go io.Copy(io.Discard, out)
			return v
		}
	}
	panic("no " + prefix)
}

var keep []*io.PipeWriter

var pagePids []int

func pagesCPU() float64 {
	var t float64
	for _, p := range pagePids {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		u, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		t += (u + st) / 100
	}
	return t
}

// machine is the busy and total jiffies of all CPUs.
func machine() (busy, all float64) {
	b, _ := os.ReadFile("/proc/stat")
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])[1:]
	for i, v := range f {
		x, _ := strconv.ParseFloat(v, 64)
		all += x
		if i != 3 && i != 4 {
			busy += x
		}
	}
	return busy, all
}

func sysc(pid int, key string) uint64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+": "); ok {
			n, _ := strconv.ParseUint(v, 10, 64)
			return n
		}
	}
	return 0
}

func sumsysc(pids []int, key string) uint64 {
	var t uint64
	for _, p := range pids {
		t += sysc(p, key)
	}
	return t
}

func pstats(ctls []string, take bool) fanload.PagesStats {
	sum := fanload.PagesStats{Latency: map[int]uint64{}}
	q := ""
	if take {
		q = "?take=1"
	}
	for _, c := range ctls {
		var st fanload.PagesStats
		getJSON("http://"+c+"/stats"+q, &st)
		sum.Connected += st.Connected
		sum.Failed += st.Failed
		if sum.FirstErr == "" {
			sum.FirstErr = st.FirstErr
		}
		sum.Received += st.Received
		sum.Lost += st.Lost
		sum.Dupes += st.Dupes
		fanload.Counts(sum.Latency).Merge(st.Latency)
	}
	return sum
}

func getJSON(url string, v any) {
	resp, err := http.Get(url)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(v)
}

func post(url string) {
	resp, err := http.Post(url, "", nil)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
}

func fetch(url, file string) {
	resp, err := http.Get(url)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	f, _ := os.Create(file)
	io.Copy(f, resp.Body)
	f.Close()
}
