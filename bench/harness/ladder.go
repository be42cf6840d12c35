//go:build !js

package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/lifeline-go/lifeline/controller"
)

// The ideal ladder: controller.Delay with the default config, on a clock where dials take no
// time and every client was cut at the same instant. Simulating it many times shows where an
// aim sits against what the ladder gives by design, so that one run's miss by a hair can be
// told from a real one.

const ladderTrials = 2000

// attempts returns the times of a client's attempts after a cut at 0, up to horizon; each
// failed attempt takes extra (0 for a refused dial, 200 ms for a flap).
func attempts(cfg controller.Config, rnd *rand.Rand, extra, horizon time.Duration) []time.Duration {
	var ts []time.Duration
	t := time.Duration(0)
	for failures := 1; ; failures++ {
		t += controller.Delay(cfg, failures, rnd.Float64)
		if t > horizon {
			return ts
		}
		ts = append(ts, t)
		t += extra
	}
}

// ladderOdds simulates the scenarios' schedules and returns a markdown table: for each aim,
// the ideal ladder's median figure and how often one run of it misses the aim.
func ladderOdds() string {
	cfg := controller.DefaultConfig()
	rnd := rand.New(rand.NewPCG(1, 2))
	type row struct {
		aim     string
		figures []float64
		miss    func(float64) bool
		unit    string
	}
	rows := []*row{
		{aim: "1: dials p99 ≤ 12 (50 clients, 60 s refused)", miss: func(x float64) bool { return x > 12 }, unit: "dials"},
		{aim: "1: recovery p50 ≤ 4 s", miss: func(x float64) bool { return x > 4 }, unit: "s"},
		{aim: "1: recovery p99 ≤ 10 s", miss: func(x float64) bool { return x > 10 }, unit: "s"},
		{aim: "3: ≤ 8 dials per minute under flap (mean of 50 clients, from 20 s to 90 s)", miss: func(x float64) bool { return x > 8 }, unit: "/min"},
		{aim: "4: 10 s outage: peak ≤ 12 per 100 ms (200 clients)", miss: func(x float64) bool { return x > 12 }, unit: ""},
		{aim: "4: 10 s outage: 99% within 9 s", miss: func(x float64) bool { return x > 9 }, unit: "s"},
		{aim: "4: 60 s outage: peak ≤ 8 per 100 ms", miss: func(x float64) bool { return x > 8 }, unit: ""},
		{aim: "4: 60 s outage: 99% within 9.5 s", miss: func(x float64) bool { return x > 9.5 }, unit: "s"},
	}
	// recoveries returns, for n clients cut at 0 and an outage ending at end, each client's
	// first attempt at or after end, as seconds after it, and its attempts before end.
	recoveries := func(n int, end time.Duration) (waits []float64, times []time.Duration, dials []float64) {
		for range n {
			ts := attempts(cfg, rnd, 0, end+time.Minute)
			i, _ := slices.BinarySearch(ts, end)
			waits = append(waits, (ts[i] - end).Seconds())
			times = append(times, ts[i])
			dials = append(dials, float64(i))
		}
		return waits, times, dials
	}
	peak := func(ts []time.Duration) float64 {
		var tt []time.Time
		for _, d := range ts {
			tt = append(tt, time.Unix(0, 0).Add(d))
		}
		return float64(peakIn(tt, 100*time.Millisecond))
	}
	for range ladderTrials {
		w, _, d := recoveries(50, time.Minute)
		rows[0].figures = append(rows[0].figures, pct(d, 99))
		rows[1].figures = append(rows[1].figures, pct(w, 50))
		rows[2].figures = append(rows[2].figures, pct(w, 99))

		var perMin []float64
		for range 50 {
			ts := attempts(cfg, rnd, 200*time.Millisecond, 90*time.Second)
			i, _ := slices.BinarySearch(ts, 20*time.Second)
			perMin = append(perMin, float64(len(ts)-i)/(70.0/60))
		}
		rows[3].figures = append(rows[3].figures, mean(perMin))

		w, ts, _ := recoveries(200, 10*time.Second)
		rows[4].figures = append(rows[4].figures, peak(ts))
		rows[5].figures = append(rows[5].figures, pct(w, 99))
		w, ts, _ = recoveries(200, time.Minute)
		rows[6].figures = append(rows[6].figures, peak(ts))
		rows[7].figures = append(rows[7].figures, pct(w, 99))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| aim | the ideal ladder's median figure | runs of it that miss the aim |\n| --- | --- | --- |\n")
	for _, r := range rows {
		misses := 0
		for _, f := range r.figures {
			if r.miss(f) {
				misses++
			}
		}
		med := pct(r.figures, 50)
		val := fmtN(med)
		if r.unit == "s" {
			val = fmtS(med)
		} else if r.unit != "" {
			val += " " + r.unit
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f%% |\n", r.aim, val, 100*float64(misses)/float64(len(r.figures)))
	}
	return b.String()
}
