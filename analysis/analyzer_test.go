// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/diagram"
)

// single runs the instances through one offline window (Interval 0).
func single(t *testing.T, cfg Config, ins []Instance) *Result {
	t.Helper()
	e := newEngine(t, cfg, time.Time{})
	addAll(e, ins...)
	res := e.Flush(time.Time{})
	if len(res) != 1 {
		t.Fatalf("Flush: %d windows", len(res))
	}
	return res[0]
}

// draw returns n successes of probe with delays from gen, dMax 100 ms and
// 1000 bins (0.1 ms).
func draw(probe string, n int, gen func() time.Duration) []Instance {
	out := make([]Instance, n)
	for i := range out {
		d := gen()
		out[i] = Instance{Probe: probe, Outcome: Success, Start: 0, End: int64(d), DMaxNs: int64(100 * time.Millisecond), Bins: 1000}
		if d >= 100*time.Millisecond {
			out[i].Outcome = Timeout
		}
	}
	return out
}

func seconds(x float64) time.Duration { return time.Duration(x * 1e9) }

// TestQuantilesOfKnownDistributions checks the quantile gauges against the
// closed-form quantiles of the distributions the delays are drawn from.
//
// Tolerance: with n = 200 000 samples the standard error of the q-quantile
// is √(q(1−q)/n)/f(x_q) (the asymptotic variance of a sample quantile); for
// the densities below it is at most 0.25 ms (exponential, q = 0.99:
// √(0.0099/2e5)/(100·0.01) s = 0.22 ms). Binning adds at most one bin
// (0.1 ms). The tolerance is 1 ms, about 4 standard errors plus a bin.
func TestQuantilesOfKnownDistributions(t *testing.T) {
	const n = 200_000
	const tol = 1e-3
	rng := rand.New(rand.NewPCG(1, 2))
	qs := []float64{0.25, 0.5, 0.75, 0.9, 0.99}
	cases := []struct {
		name string
		gen  func() time.Duration
		// quantile is the closed form F⁻¹(q).
		quantile func(q float64) float64
	}{
		{
			// Exponential, mean 10 ms: F⁻¹(q) = −10 ms · ln(1 − q). The tail
			// beyond dMax = 100 ms (e^−10) is negligible.
			"exponential", func() time.Duration { return seconds(rng.ExpFloat64() * 0.010) },
			func(q float64) float64 { return -0.010 * math.Log(1-q) },
		},
		{
			// Uniform on [20 ms, 60 ms): F⁻¹(q) = 20 ms + q · 40 ms.
			"uniform", func() time.Duration { return seconds(0.020 + rng.Float64()*0.040) },
			func(q float64) float64 { return 0.020 + q*0.040 },
		},
		{
			// Normal, mean 50 ms, sd 5 ms: F⁻¹(q) = 50 ms + 5 ms·√2·erf⁻¹(2q − 1).
			"normal", func() time.Duration { return seconds(0.050 + 0.005*rng.NormFloat64()) },
			func(q float64) float64 { return 0.050 + 0.005*math.Sqrt2*math.Erfinv(2*q-1) },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := single(t, Config{Quantiles: qs}, draw("p", n, c.gen))
			p := probeOf(t, r, "p")
			if len(p.Quantiles) != len(qs) {
				t.Fatalf("%d quantiles, want %d", len(p.Quantiles), len(qs))
			}
			for _, qv := range p.Quantiles {
				want := c.quantile(qv.Q)
				if !qv.ObservedOK || math.Abs(qv.Observed-want) > tol {
					t.Errorf("q = %v: observed %.6f s (ok %v), closed form %.6f s, tolerance %v s", qv.Q, qv.Observed, qv.ObservedOK, want, tol)
				}
				if qv.CalculatedOK {
					t.Errorf("q = %v: a calculated quantile without a diagram", qv.Q)
				}
			}
		})
	}
}

// TestUnreachableQuantileIsNotDMax: with 30 % timeouts the 0.75 quantile is
// not reached within dMax and must be reported as unreachable, not as dMax.
func TestUnreachableQuantileIsNotDMax(t *testing.T) {
	ins := draw("p", 70, func() time.Duration { return 5 * time.Millisecond })
	for range 30 {
		ins = append(ins, Instance{Probe: "p", Outcome: Timeout, Start: 0, DMaxNs: int64(100 * time.Millisecond), Bins: 1000})
	}
	p := probeOf(t, single(t, Config{Quantiles: []float64{0.5, 0.75}}, ins), "p")
	if !p.Quantiles[0].ObservedOK || math.Abs(p.Quantiles[0].Observed-0.005) > 1e-4 {
		t.Errorf("median = %v (ok %v), want 5 ms", p.Quantiles[0].Observed, p.Quantiles[0].ObservedOK)
	}
	if p.Quantiles[1].ObservedOK {
		t.Errorf("0.75 quantile reported as %v although only 70 %% complete", p.Quantiles[1].Observed)
	}
	if fr, ok := p.FailureRatio(); !ok || math.Abs(fr-0.3) > 1e-12 {
		t.Errorf("failure ratio = %v, want 0.3", fr)
	}
}

// TestBandKnownAnswer: three windows whose CDF at the single bin edge is
// 0.2, 0.4 and 0.6 give μ = 0.4, s = 0.2 and the band
// μ ± t(0.975, 2)·s/√3 with t(0.975, 2) = 4.302653 (Student t tables),
// clamped to [0, 1]. With K = 2 only the last two windows count.
func TestBandKnownAnswer(t *testing.T) {
	win := func(succ int) []Instance {
		ins := n(succ, ok("p", 500*time.Millisecond, 10*time.Millisecond))
		for range 5 - succ {
			ins = append(ins, timedOut("p", 100*time.Millisecond))
		}
		for i := range ins {
			ins[i].Bins = 1
		}
		return ins
	}
	run := func(history int) *deltaq.ConfidenceBand {
		cfg := Config{History: history, Interval: time.Second, Lag: time.Second}
		e := newEngine(t, cfg, at(time.Second))
		var last *Result
		for w, succ := range []int{1, 2, 3} {
			ins := win(succ)
			for i := range ins {
				ins[i].Start += int64(w) * int64(time.Second)
				ins[i].End += int64(w) * int64(time.Second)
			}
			addAll(e, ins...)
			res := e.Advance(at(time.Duration(w+2) * time.Second))
			last = res[len(res)-1]
		}
		return probeOf(t, last, "p").Band
	}
	b := run(30)
	half := 4.302653 * 0.2 / math.Sqrt(3)
	if b.K != 3 || len(b.Mean) != 1 {
		t.Fatalf("band over %d windows with %d bins, want 3 and 1", b.K, len(b.Mean))
	}
	if math.Abs(b.Mean[0]-0.4) > 1e-12 || b.Lower[0] != 0 || math.Abs(b.Upper[0]-(0.4+half)) > 1e-6 {
		t.Errorf("band = [%v, %v, %v], want [0 (clamped from %v), 0.4, %v]", b.Lower[0], b.Mean[0], b.Upper[0], 0.4-half, 0.4+half)
	}
	b = run(2)
	if b.K != 2 || math.Abs(b.Mean[0]-0.5) > 1e-12 {
		t.Errorf("K = 2: band over %d windows, mean %v; want 2 and 0.5", b.K, b.Mean[0])
	}
}

// TestDivergenceIndependentVersusSharedBottleneck is the thesis's reading
// of divergence (2.1.8, 4.1.5): when two stages are independent the
// observed end-to-end ΔQ matches the calculated one (their convolution);
// when both stages wait on the same bottleneck, their delays are dependent
// and the two differ.
//
// Independent: a ~ Exp(mean 5 ms), b ~ U[2 ms, 12 ms), e2e = a + b with
// independent draws. The distance is sampling noise plus binning:
// Kolmogorov–Smirnov at n = 50 000 is about 1.36/√n = 0.006 at 95 %, so
// the bound 0.02 leaves room. Shared bottleneck: each instance waits the
// same queueing delay w ~ Exp(mean 10 ms) in both stages (a = w + x,
// b = w + y, x, y small), so e2e ≈ 2w while a ⊗ b ≈ w₁ + w₂; for
// exponentials sup|F_{2W} − F_{W₁+W₂}| = max_x e^{−x}(1+x) − e^{−x/2} ≈
// 0.14 (at x ≈ 0.7), so the distance must exceed 0.1.
func TestDivergenceIndependentVersusSharedBottleneck(t *testing.T) {
	const n = 50_000
	rng := rand.New(rand.NewPCG(3, 4))
	mk := func(probe string, d float64) Instance {
		return Instance{Probe: probe, Outcome: Success, Start: 0, End: int64(d * 1e9), DMaxNs: int64(200 * time.Millisecond), Bins: 1000}
	}
	run := func(stage func() (a, b float64)) float64 {
		ins := make([]Instance, 0, 3*n)
		for range n {
			a, b := stage()
			ins = append(ins, mk("a", a), mk("b", b), mk("e2e", a+b))
		}
		p := probeOf(t, single(t, Config{Diagram: "e2e = a -> b;"}, ins), "e2e")
		if !p.HasDivergence || p.Calculated == nil {
			t.Fatal("no divergence for a probe with observed and calculated ΔQs")
		}
		return p.Divergence
	}
	indep := run(func() (float64, float64) {
		return rng.ExpFloat64() * 0.005, 0.002 + rng.Float64()*0.010
	})
	if indep > 0.02 {
		t.Errorf("independent stages: divergence %v, want ≤ 0.02", indep)
	}
	shared := run(func() (float64, float64) {
		w := rng.ExpFloat64() * 0.010
		return w + rng.Float64()*0.001, w + rng.Float64()*0.001
	})
	if shared < 0.1 {
		t.Errorf("shared bottleneck: divergence %v, want > 0.1", shared)
	}
	t.Logf("divergence: independent %.4f, shared bottleneck %.4f", indep, shared)
}

// TestSubBinStagesDoNotFireDivergence: three stages of 0.145 ms on 1 ms
// display bins, end to end 0.435 ms. On the display every delay falls into
// the first bin and is read as its midpoint 0.5 ms, and a ⊗ b ⊗ c spreads
// three half-bin offsets over bins 0, 1, 2 against an observed e2e all in
// bin 0: a divergence of 0.75 made by the bins alone, which once fired a
// divergence trigger at 0.2 and then had to be withheld. The analysis
// resolution reads every stage within its 2 µs bucket, on a grid of the
// diagram's largest delay: nothing is under-resolved, the observed e2e lies
// within the calculated ΔQ's bounds (no distance beyond them), and the
// trigger cannot fire.
func TestSubBinStagesDoNotFireDivergence(t *testing.T) {
	stage := 145 * time.Microsecond
	var w []Instance
	for _, p := range []string{"a", "b", "c"} {
		w = append(w, n(10, ok(p, 500*time.Millisecond, stage))...)
	}
	w = append(w, n(10, ok("e2e", 500*time.Millisecond, 3*stage))...)
	cfg := Config{Diagram: "e2e = a -> b -> c;", Probes: map[string]ProbeConfig{"e2e": {Triggers: Triggers{MaxDivergence: 0.2}}}}
	evs := runWindows(t, cfg, [][]Instance{w, w, w})
	if got := fired(evs, "e2e", TriggerDivergence); len(got) != 0 {
		t.Fatalf("divergence trigger fired in windows %v on sub-bin stages", got)
	}

	r := single(t, cfg, w)
	e2e := probeOf(t, r, "e2e")
	if e2e.Observed == nil || e2e.Calculated == nil {
		t.Fatal("e2e lacks an observed or calculated ΔQ")
	}
	if !e2e.HasDivergence || e2e.DivergenceWithheld || e2e.UnderResolved || e2e.DivergenceTest.Distance != 0 || e2e.DivergenceTest.P != 1 {
		t.Errorf("e2e: divergence %v (has %v, withheld %v), under-resolved %v, test %+v; want a test, no distance beyond the bounds",
			e2e.Divergence, e2e.HasDivergence, e2e.DivergenceWithheld, e2e.UnderResolved, e2e.DivergenceTest)
	}
	for _, p := range []string{"a", "b", "c"} {
		if probeOf(t, r, p).UnderResolved {
			t.Errorf("%s is marked under-resolved", p)
		}
	}
}

// Only the probe itself or its diagram inputs withhold a divergence: a
// coarse probe elsewhere in the diagram does not.
func TestUnderResolvedInputsAreTheExpressionsOwn(t *testing.T) {
	const src = "e2e = a -> b;\nother = x -> y;\n"
	d, err := diagram.Parse("t.dq", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := diagramInputs(d)["e2e"]; !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("inputs of e2e = %v, want [a b]", got)
	}
	ins := []Instance{
		ok("a", 500*time.Millisecond, 10500*time.Microsecond),
		ok("b", 500*time.Millisecond, 10500*time.Microsecond),
		ok("e2e", 500*time.Millisecond, 30500*time.Microsecond),
		// Under-resolved: the diagram's grid, of e2e's 30.5 ms, is 8.192 µs.
		ok("x", 500*time.Millisecond, time.Microsecond),
		ok("y", 500*time.Millisecond, time.Microsecond),
		ok("other", 500*time.Millisecond, 2*time.Microsecond),
	}
	r := single(t, Config{Diagram: src}, ins)
	if p := probeOf(t, r, "e2e"); !p.HasDivergence || p.DivergenceWithheld {
		t.Errorf("e2e: has divergence %v, withheld %v; want a divergence", p.HasDivergence, p.DivergenceWithheld)
	}
	if p := probeOf(t, r, "other"); p.HasDivergence || !p.DivergenceWithheld {
		t.Errorf("other: has divergence %v, withheld %v; want it withheld", p.HasDivergence, p.DivergenceWithheld)
	}
}

// Nested operators and references: the inputs of a definition are the
// outcomes of its operators' branches and, for s:x, x and x's inputs.
func TestDiagramInputs(t *testing.T) {
	d, err := diagram.Parse("t.dq", []byte("front = auth -> f:stock(s1, s2);\nall = s:front -> pay;\n"))
	if err != nil {
		t.Fatal(err)
	}
	in := diagramInputs(d)
	want := map[string][]string{
		"front": {"auth", "s1", "s2"},
		"stock": {"s1", "s2"},
		"all":   {"auth", "front", "pay", "s1", "s2"},
	}
	for name, w := range want {
		if !slices.Equal(in[name], w) {
			t.Errorf("inputs of %s = %v, want %v", name, in[name], w)
		}
	}
}

// The referenced probes — the diagram's outcomes and the configured
// probes — without an instance in a window are listed in the result.
func TestReferencedProbesWithoutInstances(t *testing.T) {
	cfg := Config{Interval: time.Second, Lag: time.Second, Diagram: "e2e = a -> b;",
		Probes: map[string]ProbeConfig{"x": {}}}
	e := newEngine(t, cfg, at(time.Second))
	if got := e.ReferencedProbes(); !slices.Equal(got, []string{"a", "b", "x"}) {
		t.Errorf("referenced probes %v, want [a b x] (e2e is calculated)", got)
	}
	addAll(e, ok("a", 100*time.Millisecond, time.Millisecond), ok("u", 100*time.Millisecond, time.Millisecond))
	r := e.Advance(at(2 * time.Second))[0]
	if !slices.Equal(r.NoInstances, []string{"b", "x"}) {
		t.Errorf("no instances of %v, want [b x] (e2e is calculated, u is not referenced)", r.NoInstances)
	}
}

// TestBandPoints: with Config.BandPoints the band is kept at the edges a
// curve of that many points reads (deltaq.CurveEdges), with there the
// values of the band at every edge, to the bit; an engine a reload makes
// with other BandPoints starts the band afresh rather than read the old
// one's edges.
func TestBandPoints(t *testing.T) {
	const points = 7
	cfg := Config{History: 3, Interval: time.Second, Lag: time.Second, Probes: map[string]ProbeConfig{"p": {DMax: testDMax, Bins: testBins}}}
	at7 := cfg
	at7.BandPoints = points
	every, sparse := newEngine(t, cfg, at(time.Second)), newEngine(t, at7, at(time.Second))
	var last *Result
	for w := range 5 {
		for _, e := range []*Engine{every, sparse} {
			for j := range 20 {
				addAll(e, ok("p", time.Duration(w)*time.Second+100*time.Millisecond, time.Duration(1+(j*(w+3))%90)*time.Millisecond))
			}
		}
		want := probeOf(t, every.Advance(at(time.Duration(w+2) * time.Second))[0], "p").Band
		last = sparse.Advance(at(time.Duration(w+2) * time.Second))[0]
		got := probeOf(t, last, "p").Band
		idx := deltaq.CurveEdges(testBins, points)
		if !slices.Equal(got.At, idx) || len(got.Mean) != len(idx) || got.Bins() != testBins || got.K != want.K {
			t.Fatalf("window %d: band at %v (%d values, %d bins, K %d), want at %v, %d bins, K %d", w, got.At, len(got.Mean), got.Bins(), got.K, idx, testBins, want.K)
		}
		for c, i := range idx {
			if got.Mean[c] != want.Mean[i] || got.Lower[c] != want.Lower[i] || got.Upper[c] != want.Upper[i] {
				t.Fatalf("window %d edge %d: (%v %v %v), every edge's (%v %v %v)", w, i, got.Lower[c], got.Mean[c], got.Upper[c], want.Lower[i], want.Mean[i], want.Upper[i])
			}
		}
	}
	re := newEngine(t, cfg, at(6*time.Second+500*time.Millisecond))
	re.Adopt(sparse)
	addAll(re, ok("p", 6*time.Second+100*time.Millisecond, 5*time.Millisecond))
	res := re.Advance(at(8 * time.Second))
	if b := probeOf(t, res[len(res)-1], "p").Band; b == nil || b.K != 1 || b.At != nil || len(b.Mean) != testBins {
		t.Errorf("after a reload to every edge: band %+v, want the one window at every edge", b)
	}
}
