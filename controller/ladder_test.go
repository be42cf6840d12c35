package controller_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/controller"
)

func mustResolve(t testing.TB, r controller.Recovery) controller.Config {
	t.Helper()
	c, err := controller.Resolve(r)
	if err != nil {
		t.Fatalf("Resolve(%+v): %v", r, err)
	}
	return c
}

func constant(u float64) func() float64 { return func() float64 { return u } }

// almostOne is the largest float64 below 1, the top of U[0,1).
var almostOne = math.Nextafter(1, 0)

func TestDelayLadder(t *testing.T) {
	ms := time.Millisecond
	def := controller.DefaultConfig()
	fixed := mustResolve(t, controller.Recovery{Factor: new(1.0)})
	noJitter := mustResolve(t, controller.Recovery{Jitter: new(0.0)})
	fullJitter := mustResolve(t, controller.Recovery{Jitter: new(1.0)})
	tests := []struct {
		name     string
		cfg      controller.Config
		failures int
		min, max time.Duration
	}{
		{"the first failure waits 250..500 ms", def, 1, 250 * ms, 500 * ms},
		{"the second failure waits 0.5..1 s", def, 2, 500 * ms, 1000 * ms},
		{"the third failure waits 1..2 s", def, 3, 1000 * ms, 2000 * ms},
		{"the fourth failure waits 2..4 s", def, 4, 2000 * ms, 4000 * ms},
		{"the fifth failure waits 4..8 s", def, 5, 4000 * ms, 8000 * ms},
		{"the sixth failure reaches the 10 s top cap", def, 6, 5000 * ms, 10000 * ms},
		{"the seventh failure stays at the top cap", def, 7, 5000 * ms, 10000 * ms},
		{"a thousandth failure stays at the top cap", def, 1000, 5000 * ms, 10000 * ms},
		{"a millionth failure stays at the top cap", def, 1_000_000, 5000 * ms, 10000 * ms},
		{"the largest failure count stays at the top cap", def, math.MaxInt, 5000 * ms, 10000 * ms},
		{"zero failures count as the first", def, 0, 250 * ms, 500 * ms},
		{"factor 1 keeps the first cap", fixed, 1, 250 * ms, 500 * ms},
		{"factor 1 keeps the first cap at failure 50", fixed, 50, 250 * ms, 500 * ms},
		{"jitter 0 waits exactly the cap", noJitter, 3, 2000 * ms, 2000 * ms},
		{"jitter 0 waits exactly the top cap", noJitter, 60, 10000 * ms, 10000 * ms},
		{"jitter 1 waits up to the cap and never 0", fullJitter, 1, 1 * ms, 500 * ms},
		{"jitter 1 at the top cap", fullJitter, 100, 1 * ms, 10000 * ms},
	}
	for _, tt := range tests {
		lo := controller.Delay(tt.cfg, tt.failures, constant(almostOne))
		hi := controller.Delay(tt.cfg, tt.failures, constant(0))
		if lo < tt.min || lo > tt.max || hi < tt.min || hi > tt.max {
			t.Errorf("%s: Delay(failures=%d) spans [%v, %v], want within [%v, %v]",
				tt.name, tt.failures, lo, hi, tt.min, tt.max)
		}
		if hi != tt.max {
			t.Errorf("%s: Delay(failures=%d, u=0) = %v, want the cap %v", tt.name, tt.failures, hi, tt.max)
		}
	}
}

func TestDelayDistributionAtTopCap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 10_000
	var sum time.Duration
	for i := range n {
		d := controller.Delay(controller.DefaultConfig(), 50+i, r.Float64)
		if d < 5*time.Second || d > 10*time.Second {
			t.Fatalf("draw %d: Delay = %v, want within [5s, 10s]", i, d)
		}
		sum += d
	}
	mean := sum / n
	if lo, hi := 7350*time.Millisecond, 7650*time.Millisecond; mean < lo || mean > hi {
		t.Errorf("mean of %d draws = %v, want within 2%% of 7.5s [%v, %v]", n, mean, lo, hi)
	}
}

func TestDelayNeverZeroNegativeOrOverflowing(t *testing.T) {
	cfgs := map[string]controller.Config{
		"defaults":                   controller.DefaultConfig(),
		"full jitter":                mustResolve(t, controller.Recovery{Jitter: new(1.0)}),
		"huge factor":                mustResolve(t, controller.Recovery{Factor: new(math.MaxFloat64)}),
		"largest timers":             mustResolve(t, controller.Recovery{InitialDelayMs: new(float64(math.MaxInt32)), MaxDelayMs: new(float64(math.MaxInt32))}),
		"1 ms caps with full jitter": mustResolve(t, controller.Recovery{InitialDelayMs: new(1.0), MaxDelayMs: new(1.0), Jitter: new(1.0)}),
	}
	r := rand.New(rand.NewPCG(3, 4))
	for name, c := range cfgs {
		for _, f := range []int{-5, 0, 1, 2, 30, 63, 64, 1000, 1_000_000, math.MaxInt} {
			for _, u := range []func() float64{constant(0), constant(almostOne), r.Float64, constant(math.NaN()), constant(-1), constant(2)} {
				d := controller.Delay(c, f, u)
				if d < time.Millisecond || d > c.MaxDelay() {
					t.Errorf("%s: Delay(failures=%d) = %v, want within [1ms, %v]", name, f, d, c.MaxDelay())
				}
			}
		}
	}
}
