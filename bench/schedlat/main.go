//go:build !js

// Command schedlat reads an execution trace (fanout-server's /debug/pprof/trace, as
// fanprobe -prof saves it) and prints, for each kind of goroutine (named by the function it
// started in), how long it waited runnable before it ran, and how long its system calls took:
// where a delivery waits between the publish and the page's read, on the Host's side.
//
//	cd bench/schedlat && GOWORK=off go run . trace.out
//
// (a module of its own: golang.org/x/exp/trace is needed by nothing else)
package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: schedlat trace.out")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "schedlat:", err)
		os.Exit(1)
	}
	r, err := trace.NewReader(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "schedlat:", err)
		os.Exit(1)
	}
	kind := map[trace.GoID]string{}
	since := map[trace.GoID]trace.Time{}
	delays := map[string][]time.Duration{}
	sysc := map[string][]time.Duration{}
	insys := map[trace.GoID]trace.Time{}
	for {
		ev, err := r.ReadEvent()
		if err != nil {
			break
		}
		if ev.Kind() != trace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			continue
		}
		g := st.Resource.Goroutine()
		from, to := st.Goroutine()
		if from == trace.GoNotExist || from == trace.GoUndetermined {
			k := "?"
			for fr := range st.Stack.Frames() {
				k = fr.Func
			}
			if k == "?" {
				for fr := range ev.Stack().Frames() {
					k = "created by " + fr.Func
					break
				}
			}
			k = strings.TrimPrefix(k, "github.com/lifeline-go/lifeline/")
			kind[g] = k
		}
		if to == trace.GoRunnable {
			since[g] = ev.Time()
		}
		if to == trace.GoRunning {
			if t, ok := since[g]; ok {
				delays[kind[g]] = append(delays[kind[g]], time.Duration(ev.Time()-t))
				delete(since, g)
			}
		}
		if to == trace.GoSyscall {
			insys[g] = ev.Time()
		}
		if from == trace.GoSyscall {
			if t, ok := insys[g]; ok {
				sysc[kind[g]] = append(sysc[kind[g]], time.Duration(ev.Time()-t))
				delete(insys, g)
			}
		}
	}
	show := func(title string, m map[string][]time.Duration) {
		fmt.Println(title)
		type row struct {
			k string
			d []time.Duration
		}
		var rows []row
		for k, d := range m {
			rows = append(rows, row{k, d})
		}
		slices.SortFunc(rows, func(a, b row) int { return len(b.d) - len(a.d) })
		for _, rw := range rows[:min(8, len(rows))] {
			d := rw.d
			slices.Sort(d)
			q := func(p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))].Round(time.Microsecond) }
			var sum time.Duration
			for _, x := range d {
				sum += x
			}
			fmt.Printf("  %-70s n=%-7d mean %-8v p50 %-8v p90 %-8v p99 %-8v p99.9 %-8v max %v\n", rw.k, len(d), (sum / time.Duration(len(d))).Round(time.Microsecond), q(.5), q(.9), q(.99), q(.999), d[len(d)-1].Round(time.Microsecond))
		}
	}
	show("runnable → running, by goroutine (its start function)", delays)
	show("in a system call, by goroutine", sysc)
}
