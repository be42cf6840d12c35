//go:build !js

package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// pct is the nearest-rank percentile p (0..100) of xs; NaN for none.
func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank-1, 0), len(s)-1)]
}

func maxOf(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return slices.Max(xs)
}

func ints(xs []int) []float64 {
	f := make([]float64, len(xs))
	for i, x := range xs {
		f[i] = float64(x)
	}
	return f
}

func secs(ds []time.Duration) []float64 {
	f := make([]float64, len(ds))
	for i, d := range ds {
		f[i] = d.Seconds()
	}
	return f
}

// peakIn is the largest number of times that fall within any window of length w (sliding,
// half-open [t, t+w)).
func peakIn(ts []time.Time, w time.Duration) int {
	s := slices.Clone(ts)
	slices.SortFunc(s, func(a, b time.Time) int { return a.Compare(b) })
	best, j := 0, 0
	for i := range s {
		for s[i].Sub(s[j]) >= w {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

// fmtS formats seconds: "1.23 s"; "–" for NaN.
func fmtS(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%.2f s", x)
}

// fmtN formats a count or rate with up to one decimal.
func fmtN(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	if x == math.Trunc(x) {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.1f", x)
}

func fmtMs(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%.0f ms", x)
}
