// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// divergenceRates runs windows windows of n instances of a two-stage
// sequence e2e = a -> b through an engine (1 s windows; dMax 200 ms on 400
// bins of 0.5 ms), each instance's stage delays drawn by stages, and
// returns the fraction of windows whose divergence test has p < α for each
// α of alphas, the number of times the divergence trigger
// (divergence::alpha = alphas[0], divergence::windows = run) fired, and
// the window it first fired in (−1: never).
func divergenceRates(t *testing.T, seed uint64, paired bool, n, windows, pool, run int, alphas []float64, stages func(*rand.Rand) (a, b float64)) (rates []float64, fires, first int) {
	t.Helper()
	const dmax, bins = 200 * time.Millisecond, 400
	cfg := Config{Interval: time.Second, Lag: time.Second, Diagram: "e2e = a -> b;", Probes: map[string]ProbeConfig{}}
	for _, p := range []string{"a", "b", "e2e"} {
		cfg.Probes[p] = ProbeConfig{DMax: dmax, Bins: bins}
	}
	cfg.Probes["e2e"] = ProbeConfig{DMax: dmax, Bins: bins, Triggers: Triggers{Divergence: DivergenceTrigger{Alpha: alphas[0], Windows: run, Pool: pool, Paired: paired}}}
	e := newEngine(t, cfg, at(time.Second))
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	mk := func(probe string, end int64, d float64) Instance {
		return Instance{Probe: probe, Outcome: Success, Start: end - int64(d*1e9), End: end}
	}
	rejected := make([]int, len(alphas))
	fires, first = 0, -1
	tested := 0
	ins := make([]Instance, 0, 3*n)
	for w := range windows {
		ins = ins[:0]
		for i := range n {
			end := at(time.Duration(w)*time.Second + time.Duration(i)*time.Second/time.Duration(n+1)).UnixNano()
			a, b := stages(rng)
			// The end-to-end delay is the sum of the same instance's
			// stages, as a trace measures it; a timeout beyond dMax is
			// classified by the engine.
			ins = append(ins, mk("a", end, a), mk("b", end, b), mk("e2e", end, a+b))
		}
		addAll(e, ins...)
		res := e.Advance(at(time.Duration(w+2) * time.Second))
		if len(res) != 1 {
			t.Fatalf("window %d: %d results", w, len(res))
		}
		p := probeOf(t, res[0], "e2e")
		if !p.HasDivergence {
			continue
		}
		tested++
		for k, al := range alphas {
			if p.DivergenceTest.P < al {
				rejected[k]++
			}
		}
		for _, ev := range res[0].Triggers {
			if ev.Kind == TriggerDivergence {
				if fires == 0 {
					first = w
				}
				fires++
			}
		}
	}
	if tested < windows*9/10 {
		t.Fatalf("n = %d: only %d of %d windows tested", n, tested, windows)
	}
	rates = make([]float64, len(alphas))
	for k := range alphas {
		rates[k] = float64(rejected[k]) / float64(tested)
	}
	return rates, fires, first
}

// independentStages draws the stages of a two-stage sequence
// independently: a = 2 ms + Exp(8 ms), b = 1 ms + Exp(5 ms).
func independentStages(rng *rand.Rand) (float64, float64) {
	return 0.002 + 0.008*rng.ExpFloat64(), 0.001 + 0.005*rng.ExpFloat64()
}

// sharedStages gives both stages a shared delay z ~ Exp(4 ms), as a queue
// both stages wait in would: a = 2 ms + z + Exp(4 ms), b = 1 ms + z +
// Exp(1 ms). The correlation of a and b is Var z/√(Var a·Var b) =
// 16/√(32·17) = 0.69, and e2e = 3 ms + 2z + … is wider than a ⊗ b.
func sharedStages(rng *rand.Rand) (float64, float64) {
	z := 0.004 * rng.ExpFloat64()
	return 0.002 + z + 0.004*rng.ExpFloat64(), 0.001 + z + 0.001*rng.ExpFloat64()
}

// TestDivergenceFalseTriggerRate is the known answer of the divergence
// test: with independent stages, e2e is exactly a ⊗ b, and over 1000
// windows of n = 50, 200 and 1000 instances, unpaired and paired, the
// fraction of windows with p < α must be at most α plus three binomial
// standard deviations,
// α + 3·√(α(1−α)/1000): 0.0194 at α = 0.01, 0.0707 at α = 0.05. The test
// is conservative (the package documentation says why: the calculated ΔQ's
// bound on its uncertainty, the binning, the supremum over [0, dMax] only,
// and above all the shared instances, which make the observed and
// calculated CDFs' errors positively correlated), so the measured rates are
// far below α.
func TestDivergenceFalseTriggerRate(t *testing.T) {
	statistical(t)
	const windows = 1000
	alphas := []float64{0.01, 0.05}
	for _, paired := range []bool{false, true} {
		for _, n := range []int{50, 200, 1000} {
			rates, fires, _ := divergenceRates(t, 21, paired, n, windows, 1, 1, alphas, independentStages)
			for k, al := range alphas {
				bound := al + 3*math.Sqrt(al*(1-al)/windows)
				if rates[k] > bound {
					t.Errorf("paired %v, n = %d: false rejection rate %.4f at α = %v, above %.4f", paired, n, rates[k], al, bound)
				}
			}
			t.Logf("independent, paired %-5v n = %4d: p < 0.01 in %.4f of windows, p < 0.05 in %.4f; trigger (α 0.01, 1 window) fired %d times", paired, n, rates[0], rates[1], fires)
		}
	}
}

// TestDivergencePower measures the power of the test against positively
// correlated stages (sharedStages, correlation 0.69; bottleneckStages,
// 0.96), per window at α = 0.01 and 0.05, unpaired and paired, and the
// window in which the trigger (α = 0.01, 3 consecutive windows) first
// fires. The floors, at α = 0.01, are below the measured power (see the
// log; 1000 windows, 300 with -short) by more than three binomial standard
// deviations of 300 windows. The test measures only the distance beyond
// the calculated ΔQ's discretisation bounds: on these 0.5 ms bins, against
// stages of a few milliseconds, the bounds hide the weaker dependence
// (sharedStages) below n = 1000;
// TestDivergenceBeyondBinning shows the power at several bin widths.
func TestDivergencePower(t *testing.T) {
	statistical(t)
	windows := 1000
	if testing.Short() {
		windows = 300
	}
	alphas := []float64{0.01, 0.05}
	for _, c := range []struct {
		name   string
		stages func(*rand.Rand) (float64, float64)
		paired bool
		n      int
		pool   int
		floor  float64
	}{
		{"shared", sharedStages, false, 50, 1, 0},
		{"shared", sharedStages, false, 200, 1, 0},
		{"shared", sharedStages, false, 1000, 1, 0},
		{"shared", sharedStages, true, 50, 1, 0},
		{"shared", sharedStages, true, 50, 5, 0},
		{"shared", sharedStages, true, 200, 1, 0},
		{"shared", sharedStages, true, 1000, 1, 0.9},
		{"bottleneck", bottleneckStages, false, 50, 1, 0},
		{"bottleneck", bottleneckStages, false, 200, 1, 0},
		{"bottleneck", bottleneckStages, false, 1000, 1, 0.9},
		{"bottleneck", bottleneckStages, true, 50, 1, 0},
		{"bottleneck", bottleneckStages, true, 50, 5, 0.9},
		{"bottleneck", bottleneckStages, true, 200, 1, 0.8},
		{"bottleneck", bottleneckStages, true, 1000, 1, 0.9},
	} {
		rates, _, first := divergenceRates(t, 22, c.paired, c.n, windows, c.pool, 3, alphas, c.stages)
		t.Logf("%-10s paired %-5v n = %4d pool %d: p < 0.01 in %.3f of windows, p < 0.05 in %.3f; trigger (α 0.01, 3 windows) first fired in window %d",
			c.name, c.paired, c.n, c.pool, rates[0], rates[1], first)
		if rates[0] < c.floor {
			t.Errorf("%s, paired %v, n = %d, pool %d: power %.3f at α = 0.01, want ≥ %v", c.name, c.paired, c.n, c.pool, rates[0], c.floor)
		}
	}
}

// bottleneckStages is sharedStages with the shared delay dominant, as at
// overload: z ~ Exp(8 ms), a = 2 ms + z + Exp(2 ms), b = 1 ms + z +
// Exp(1 ms); the correlation is 64/√(68·65) = 0.96.
func bottleneckStages(rng *rand.Rand) (float64, float64) {
	z := 0.008 * rng.ExpFloat64()
	return 0.002 + z + 0.002*rng.ExpFloat64(), 0.001 + z + 0.001*rng.ExpFloat64()
}
