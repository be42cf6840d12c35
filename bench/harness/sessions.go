//go:build !js

package main

import (
	"fmt"
	"time"
)

// The sessions scenario (what an idle session costs a Host): as many idle sessions on one Host as this machine
// allows, toward 100,000, through several loopback source addresses; what each costs in
// memory, and what their heartbeats cost in CPU.

func (e *env) sSessions(r *report) error {
	if err := e.buildFanout(); err != nil {
		return err
	}
	limit := fdLimit() - 100 // the Host holds a socket per session
	top := min(e.n(100000, 200), limit)
	var levels []int
	for _, full := range []int{2000, 10000} {
		if n := e.n(full, 50); n < top && (len(levels) == 0 || n > levels[len(levels)-1]) {
			levels = append(levels, n)
		}
	}
	levels = append(levels, top)
	idle := e.d(60*time.Second, 5*time.Second)

	t := r.table(fmt.Sprintf("sessions. Idle sessions on one Host, up to %d", top), "≤ 12 KiB RSS per idle session at 100,000 sessions",
		"sessions", "RSS per session, as found", "after a GC and scavenge", "Go heap / stacks per session", "goroutines per session")
	r.note(t, "each session is a page of the fanout workload (bench/cmd/fanout-pages): subscribed to its personal stream and its group's, nothing published; the Host is bench/cmd/fanout-server (hostplugin with its defaults but for the admission limits: heartbeat 15 s, ring 1024)")
	r.note(t, "the pages dial from %s in turn (each address its own range of ports), at most %d per process", loopbacks, pagesPerProc)
	r.note(t, "RSS per session is the Host's resident memory with the sessions less without, over their number: as found 3 s after the last one subscribed, and again after runtime.GC and debug.FreeOSMemory")
	if limit < e.n(100000, 200) {
		r.note(t, "this machine lets a process open %d files, so one Host holds at most %d sessions here: the 100,000 of the aim take `ulimit -n 101000` (or a systemd LimitNOFILE) on the Host's machine, which this sandbox does not grant", limit+100, limit)
	}

	srv, err := e.startFanServer("sessions-server", fLifeline, 0)
	if err != nil {
		return err
	}
	defer srv.proc.Stop(5 * time.Second)
	time.Sleep(time.Second)
	base, err := srv.stats(true)
	if err != nil {
		return err
	}
	var all []*fanPages
	defer func() {
		for _, p := range all {
			p.stop()
		}
	}()
	have := 0
	var perSession float64
	for _, n := range levels {
		pages, err := e.startFanPages(fmt.Sprintf("sessions-pages-%d", n), srv, have, n-have, 300*time.Second)
		if err != nil {
			return fmt.Errorf("sessions %d → %d: %w", have, n, err)
		}
		all, have = append(all, pages), n
		time.Sleep(3 * time.Second)
		found, err := srv.stats(false)
		if err != nil {
			return err
		}
		gc, err := srv.stats(true)
		if err != nil {
			return err
		}
		if found.Connections != n {
			r.note(t, "at %d pages the Host held %d sessions", n, found.Connections)
		}
		per := func(a, b int64) float64 { return float64(a-b) / float64(n) }
		perSession = per(found.RSS, base.RSS)
		r.row(t, fmtN(float64(n)), fmtKiB(perSession), fmtKiB(per(gc.RSS, base.RSS)),
			fmt.Sprintf("%s / %s", fmtKiB(per(int64(gc.HeapInuse), int64(base.HeapInuse))), fmtKiB(per(int64(gc.StackInuse), int64(base.StackInuse)))),
			fmt.Sprintf("%.2f", float64(gc.Goroutines-base.Goroutines)/float64(n)))
	}

	// The heartbeat's cost: the Host's CPU while every session is idle.
	s0, err := srv.stats(false)
	if err != nil {
		return err
	}
	time.Sleep(idle)
	s1, err := srv.stats(false)
	if err != nil {
		return err
	}
	core := (s1.CPU - s0.CPU) / idle.Seconds()
	t2 := r.table("sessions. What idle sessions cost the Host's CPU", "", "sessions", "CPU, % of one core", "per 10,000 sessions", "over")
	r.row(t2, fmtN(float64(have)), fmt.Sprintf("%.2f%%", core*100), fmt.Sprintf("%.2f%%", core*100*10000/float64(have)), idle.String())
	r.note(t2, "nothing is published: the Host's work is each session's heartbeat (15 s), a timer and a write; the pages only read")

	r.judgeFull(e.scale >= 1, "sessions", "≤ 12 KiB RSS per idle session, at as many as the machine allows toward 100,000", perSession <= 12*1024,
		fmt.Sprintf("%s at %d sessions", fmtKiB(perSession), have),
		"cut what an idle session holds: its reader's stack, its buffers, coder/websocket's Conn")
	return nil
}
