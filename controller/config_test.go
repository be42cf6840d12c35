package controller_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/internal/test/fieldtest"
)

func TestResolveDefaults(t *testing.T) {
	c, err := controller.Resolve(controller.Recovery{})
	if err != nil {
		t.Fatalf("Resolve(empty) = %v, want the defaults", err)
	}
	want := []struct {
		name      string
		got, want any
	}{
		{"slowAfter", c.SlowAfter(), 3 * time.Second},
		{"deadline", c.Deadline(), 15 * time.Second},
		{"initialDelay", c.InitialDelay(), 500 * time.Millisecond},
		{"maxDelay", c.MaxDelay(), 10 * time.Second},
		{"factor", c.Factor(), 2.0},
		{"jitter", c.Jitter(), 0.5},
		{"stableAfter", c.StableAfter(), 10 * time.Second},
	}
	for _, w := range want {
		if w.got != w.want {
			t.Errorf("default %s = %v, want %v", w.name, w.got, w.want)
		}
	}
	if c != controller.DefaultConfig() {
		t.Errorf("Resolve(empty) = %+v, want DefaultConfig() %+v", c, controller.DefaultConfig())
	}
}

func TestResolveRules(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	const timerRule = "must be an integer in 1..2147483647"
	tests := []struct {
		name    string
		in      controller.Recovery
		wantErr string // "" means valid
	}{
		{"deadline 1 ms is the lowest legal timer", controller.Recovery{DeadlineMs: new(1.0)}, ""},
		{"deadline 0 is below the range", controller.Recovery{DeadlineMs: new(0.0)}, "recovery.deadlineMs: " + timerRule + ", got 0"},
		{"deadline -1 is below the range", controller.Recovery{DeadlineMs: new(-1.0)}, "recovery.deadlineMs: " + timerRule + ", got -1"},
		{"deadline 2147483647 is the highest legal timer", controller.Recovery{DeadlineMs: new(2147483647.0), SlowAfterMs: new(2147483647.0)}, ""},
		{"deadline 2147483648 is above the range", controller.Recovery{DeadlineMs: new(2147483648.0)}, "recovery.deadlineMs: " + timerRule + ", got 2147483648"},
		{"a fractional deadline is refused", controller.Recovery{DeadlineMs: new(1.5)}, "recovery.deadlineMs: " + timerRule + ", got 1.5"},
		{"a NaN deadline is refused", controller.Recovery{DeadlineMs: new(nan)}, "recovery.deadlineMs: " + timerRule + ", got NaN"},
		{"an infinite deadline is refused", controller.Recovery{DeadlineMs: new(inf)}, "recovery.deadlineMs: " + timerRule + ", got +Inf"},
		{"slowAfter 0 is refused", controller.Recovery{SlowAfterMs: new(0.0)}, "recovery.slowAfterMs: " + timerRule + ", got 0"},
		{"slowAfter 1 is legal", controller.Recovery{SlowAfterMs: new(1.0)}, ""},
		{"slowAfter above the deadline is legal", controller.Recovery{SlowAfterMs: new(20000.0), DeadlineMs: new(15000.0)}, ""},
		{"slowAfter NaN is refused", controller.Recovery{SlowAfterMs: new(nan)}, "recovery.slowAfterMs: " + timerRule + ", got NaN"},
		{"initialDelay 0 is refused", controller.Recovery{InitialDelayMs: new(0.0)}, "recovery.initialDelayMs: " + timerRule + ", got 0"},
		{"initialDelay -Inf is refused", controller.Recovery{InitialDelayMs: new(math.Inf(-1))}, "recovery.initialDelayMs: " + timerRule + ", got -Inf"},
		{"maxDelay 0 is refused", controller.Recovery{MaxDelayMs: new(0.0)}, "recovery.maxDelayMs: " + timerRule + ", got 0"},
		{"maxDelay 2147483648 is refused", controller.Recovery{MaxDelayMs: new(2147483648.0)}, "recovery.maxDelayMs: " + timerRule + ", got 2147483648"},
		{"initialDelay equal to maxDelay is legal", controller.Recovery{InitialDelayMs: new(700.0), MaxDelayMs: new(700.0)}, ""},
		{"initialDelay above maxDelay is refused", controller.Recovery{InitialDelayMs: new(701.0), MaxDelayMs: new(700.0)}, "recovery.initialDelayMs: must be <= maxDelayMs (700), got 701"},
		{"initialDelay above the default maxDelay is refused", controller.Recovery{InitialDelayMs: new(10001.0)}, "recovery.initialDelayMs: must be <= maxDelayMs (10000), got 10001"},
		{"factor 1 is legal", controller.Recovery{Factor: new(1.0)}, ""},
		{"factor 1.5 is legal", controller.Recovery{Factor: new(1.5)}, ""},
		{"factor just below 1 is refused", controller.Recovery{Factor: new(math.Nextafter(1, 0))}, "recovery.factor: must be a finite number >= 1, got 0.9999999999999999"},
		{"factor 0 is refused", controller.Recovery{Factor: new(0.0)}, "recovery.factor: must be a finite number >= 1, got 0"},
		{"factor NaN is refused", controller.Recovery{Factor: new(nan)}, "recovery.factor: must be a finite number >= 1, got NaN"},
		{"factor +Inf is refused", controller.Recovery{Factor: new(inf)}, "recovery.factor: must be a finite number >= 1, got +Inf"},
		{"factor MaxFloat64 is legal", controller.Recovery{Factor: new(math.MaxFloat64)}, ""},
		{"jitter 0 is legal", controller.Recovery{Jitter: new(0.0)}, ""},
		{"jitter 1 is legal", controller.Recovery{Jitter: new(1.0)}, ""},
		{"jitter below 0 is refused", controller.Recovery{Jitter: new(-0.01)}, "recovery.jitter: must be a number in [0,1], got -0.01"},
		{"jitter above 1 is refused", controller.Recovery{Jitter: new(1.01)}, "recovery.jitter: must be a number in [0,1], got 1.01"},
		{"jitter NaN is refused", controller.Recovery{Jitter: new(nan)}, "recovery.jitter: must be a number in [0,1], got NaN"},
		{"jitter +Inf is refused", controller.Recovery{Jitter: new(inf)}, "recovery.jitter: must be a number in [0,1], got +Inf"},
		{"stableAfter 0 is legal", controller.Recovery{StableAfterMs: new(0.0)}, ""},
		{"stableAfter 2147483647 is legal", controller.Recovery{StableAfterMs: new(2147483647.0)}, ""},
		{"stableAfter -1 is refused", controller.Recovery{StableAfterMs: new(-1.0)}, "recovery.stableAfterMs: must be an integer in 0..2147483647, got -1"},
		{"stableAfter 2147483648 is refused", controller.Recovery{StableAfterMs: new(2147483648.0)}, "recovery.stableAfterMs: must be an integer in 0..2147483647, got 2147483648"},
		{"stableAfter NaN is refused", controller.Recovery{StableAfterMs: new(nan)}, "recovery.stableAfterMs: must be an integer in 0..2147483647, got NaN"},
		{"stableAfter 0.5 is refused", controller.Recovery{StableAfterMs: new(0.5)}, "recovery.stableAfterMs: must be an integer in 0..2147483647, got 0.5"},
	}
	for _, tt := range tests {
		c, err := controller.Resolve(tt.in)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: Resolve = %v, want valid", tt.name, err)
		case tt.wantErr == "" && !c.Valid():
			t.Errorf("%s: Resolve returned an invalid config without an error", tt.name)
		case tt.wantErr != "" && err == nil:
			t.Errorf("%s: Resolve = nil error, want %q", tt.name, tt.wantErr)
		case tt.wantErr != "" && err.Error() != "controller: "+tt.wantErr:
			t.Errorf("%s: Resolve error = %q, want %q", tt.name, err, "controller: "+tt.wantErr)
		case tt.wantErr != "" && c.Valid():
			t.Errorf("%s: Resolve returned a valid config beside its error", tt.name)
		}
	}
}

func TestResolveReportsEveryField(t *testing.T) {
	_, err := controller.Resolve(controller.Recovery{DeadlineMs: new(0.0), Jitter: new(2.0), Factor: new(math.NaN())})
	var ce *controller.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("Resolve error %v is not a *ConfigError", err)
	}
	var paths []string
	for _, f := range ce.Fields {
		paths = append(paths, f.Path)
	}
	if got, want := strings.Join(paths, ","), "recovery.deadlineMs,recovery.factor,recovery.jitter"; got != want {
		t.Errorf("fields = %s, want %s", got, want)
	}
	var fe controller.FieldError
	if !errors.As(err, &fe) || fe.Path != "recovery.deadlineMs" || fe.Value != "0" {
		t.Errorf("errors.As(FieldError) = %+v, want recovery.deadlineMs with value 0", fe)
	}
}

func TestConfigRoundTripsThroughJSON(t *testing.T) {
	in := mustResolve(t, controller.Recovery{SlowAfterMs: new(100.0), DeadlineMs: new(200.0), InitialDelayMs: new(10.0),
		MaxDelayMs: new(40.0), Factor: new(1.5), Jitter: new(0.25), StableAfterMs: new(0.0)})
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var r controller.Recovery
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if out := mustResolve(t, r); out != in {
		t.Errorf("round trip through %s = %+v, want %+v", b, out, in)
	}
	if want := `{"slowAfterMs":100,"deadlineMs":200,"initialDelayMs":10,"maxDelayMs":40,"factor":1.5,"jitter":0.25,"stableAfterMs":0}`; string(b) != want {
		t.Errorf("JSON = %s, want %s", b, want)
	}
}

// FuzzResolve feeds arbitrary numbers (including NaN, ±Inf, fractions and huge values) and
// checks the resolver never panics and never accepts a config that breaks a rule.
func FuzzResolve(f *testing.F) {
	f.Add(3000.0, 15000.0, 500.0, 10000.0, 2.0, 0.5, 10000.0, uint8(0))
	f.Add(0.0, -1.0, 1.5, 2147483648.0, 0.5, 1.5, -1.0, uint8(0x7f))
	f.Add(math.NaN(), math.Inf(1), math.Inf(-1), 1.0, math.NaN(), math.NaN(), math.NaN(), uint8(0x55))
	f.Fuzz(func(t *testing.T, slow, deadline, initial, maxD, factor, jitter, stable float64, absent uint8) {
		vals := []*float64{&slow, &deadline, &initial, &maxD, &factor, &jitter, &stable}
		for i := range vals {
			if absent&(1<<i) != 0 {
				vals[i] = nil
			}
		}
		r := controller.Recovery{SlowAfterMs: vals[0], DeadlineMs: vals[1], InitialDelayMs: vals[2],
			MaxDelayMs: vals[3], Factor: vals[4], Jitter: vals[5], StableAfterMs: vals[6]}
		c, err := controller.Resolve(r)
		if err != nil {
			if c.Valid() {
				t.Fatalf("Resolve returned a valid config beside error %v", err)
			}
			if !strings.HasPrefix(err.Error(), "controller: recovery.") || !strings.Contains(err.Error(), ", got ") {
				t.Fatalf("error %q does not name the field and the value", err)
			}
			return
		}
		for _, d := range []time.Duration{c.SlowAfter(), c.Deadline(), c.InitialDelay(), c.MaxDelay()} {
			if d < time.Millisecond || d > math.MaxInt32*time.Millisecond || d%time.Millisecond != 0 {
				t.Fatalf("accepted timer %v outside 1..2147483647 ms", d)
			}
		}
		if s := c.StableAfter(); s < 0 || s > math.MaxInt32*time.Millisecond {
			t.Fatalf("accepted stableAfter %v", s)
		}
		if f := c.Factor(); math.IsNaN(f) || math.IsInf(f, 0) || f < 1 {
			t.Fatalf("accepted factor %v", f)
		}
		if j := c.Jitter(); math.IsNaN(j) || j < 0 || j > 1 {
			t.Fatalf("accepted jitter %v", j)
		}
		if c.InitialDelay() > c.MaxDelay() {
			t.Fatalf("accepted initialDelay %v > maxDelay %v", c.InitialDelay(), c.MaxDelay())
		}
		for _, n := range []int{1, 2, 100, 1 << 40} {
			if d := controller.Delay(c, n, constant(0.5)); d < time.Millisecond || d > c.MaxDelay() {
				t.Fatalf("Delay(%d) = %v outside [1ms, %v]", n, d, c.MaxDelay())
			}
		}
	})
}

// TestGoValuesPrintAsAPersonWritesNumbers: a Recovery built in code has no text to show, so its
// values print as a person writes numbers, never with an exponent below 1e21. (Values read
// from a document print as written: internal/configdoc.)
func TestGoValuesPrintAsAPersonWritesNumbers(t *testing.T) {
	_, err := controller.Resolve(controller.Recovery{DeadlineMs: new(2147483648.0), MaxDelayMs: new(1e300)})
	if want := "controller: recovery.deadlineMs: must be an integer in 1..2147483647, got 2147483648; " +
		"recovery.maxDelayMs: must be an integer in 1..2147483647, got 1e+300"; err == nil || err.Error() != want {
		t.Errorf("Resolve = %v, want %s", err, want)
	}
}

func TestRecoveryListsItsFieldsByTheirTags(t *testing.T) {
	fieldtest.Check(t, &controller.Recovery{})
}
