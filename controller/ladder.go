package controller

import (
	"math"
	"time"
)

// minDelay is the shortest delay the ladder returns. Full jitter could otherwise draw a
// delay of a few nanoseconds, which is a retry storm in all but name.
const minDelay = time.Millisecond

// Delay returns how long to wait before the next attempt after failures consecutive failures
// (failures >= 1; smaller values are treated as 1). It is a pure function of the config, the
// failure count and the random source: u returns values in [0,1), as (*rand.Rand).Float64 does.
//
// The cap is InitialDelay × Factor^(failures−1), clamped to MaxDelay, and the delay is
// cap × (1 − Jitter × u). The result is never below 1 ms, never NaN and never overflows, at any
// failure count: the cap is computed in float64 and clamped before it becomes a Duration.
func Delay(c Config, failures int, u func() float64) time.Duration {
	return jittered(ladderCap(c, failures), c.jitter, u())
}

// ladderCap is the cap for the given failure count, before jitter.
func ladderCap(c Config, failures int) time.Duration {
	if failures < 1 {
		failures = 1
	}
	capF := float64(c.initialDelay) * math.Pow(c.factor, float64(failures-1))
	// Pow overflows to +Inf long before failures could; NaN cannot arise from a resolved
	// config, but a clamp that also catches it costs nothing.
	if !(capF < float64(c.maxDelay)) {
		return c.maxDelay
	}
	return time.Duration(capF)
}

func jittered(cap time.Duration, jitter, u float64) time.Duration {
	if u < 0 || u >= 1 || math.IsNaN(u) {
		u = 0 // a broken random source must not produce a broken delay
	}
	d := time.Duration(float64(cap) * (1 - jitter*u))
	return max(d, minDelay)
}
