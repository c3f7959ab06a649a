// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"math"
	"math/rand/v2"
	"testing"
)

// triangularCDF is the CDF of the sum of two independent U(lo, hi) delays,
// the triangular distribution on [2lo, 2hi] (Feller, vol. II, §I.9): with
// s = t − 2lo and L = hi − lo, F = s²/(2L²) for 0 ≤ s ≤ L and
// 1 − (2L − s)²/(2L²) for L ≤ s ≤ 2L.
func triangularCDF(t, lo, hi float64) float64 {
	s, l := t-2*lo, hi-lo
	switch {
	case s <= 0:
		return 0
	case s <= l:
		return s * s / (2 * l * l)
	case s <= 2*l:
		return 1 - (2*l-s)*(2*l-s)/(2*l*l)
	}
	return 1
}

// edgesCDF returns the ΔQ of n bins of width w whose CDF at every bin edge
// is f there: the exact distribution as an observation of dMax n·w would
// hold it, the mass beyond dMax being timeouts.
func edgesCDF(t *testing.T, f func(float64) float64, w float64, n int) DeltaQ {
	t.Helper()
	cdf := make([]float64, n)
	for k := range cdf {
		cdf[k] = f(float64(k+1) * w)
	}
	return mk(t)(FromCDF(w, cdf))
}

func TestDistanceIndependentUniformStages(t *testing.T) {
	// Two independent stages U(10 ms, 40 ms), every dMax 50 ms on 1 ms bins.
	// The system a -> b is their sum, triangular on [20, 80] ms; observed
	// with dMax 50 ms it holds F(t) = (t − 20 ms)²/1800 ms² up to 50 ms
	// (F(50 ms) = 0.5) and the rest is timeouts. U(10, 40) on 1 ms bins is
	// exactly uniform in each bin, and the half split of the convolution is
	// exact for such masses (docs/design.md, "The ΔQ value"), so the calculated ΔQ
	// equals the triangle at every edge: the divergence is rounding only.
	// Compared up to the calculated ΔQ's 100 ms, the system's flat 0.5
	// beyond 50 ms against the calculated CDF reaching 1 at 80 ms gave 0.5.
	const w = 1e-3
	u := mk(t)(Uniform(0.010, 0.040, w, 50))
	calc := mk(t)(Convolve(u, u))
	obs := edgesCDF(t, func(x float64) float64 { return triangularCDF(x, 0.010, 0.040) }, w, 50)
	if calc.Bins() != 100 || obs.DMax() != 0.05 {
		t.Fatalf("setup: calculated %v, observed %v", calc, obs)
	}
	if gap := calc.CDF(0.080) - obs.CDF(0.080); !near(gap, 0.5, 1e-12) {
		t.Fatalf("beyond the system's dMax the CDFs differ by %v, want 0.5 (the case under test)", gap)
	}
	for _, order := range [][2]DeltaQ{{obs, calc}, {calc, obs}} {
		if d := mustDist(t)(Distance(order[0], order[1])); d > 1e-12 {
			t.Errorf("Distance = %v, want 0 up to rounding", d)
		}
	}
}

func TestDistanceSampledUniformStages(t *testing.T) {
	// The same system observed from 10⁵ instances, each stage and the whole
	// binned by Histogram as the exporter does: the divergence is sampling
	// noise. By the Dvoretzky–Kiefer–Wolfowitz inequality each empirical
	// CDF is within ε = √(ln(2/δ)/(2n)) = 0.0085 of the truth with
	// probability 1 − δ, δ = 10⁻⁶; convolving two stages within ε adds at
	// most 2ε, so 3ε < 0.03 bounds the divergence (the seed is fixed, the
	// bound is what the value is checked against; measured 0.002). Up to
	// 100 ms it was 0.50.
	const w, n = 1e-3, 100000
	r := rand.New(rand.NewPCG(3, 5))
	ha := mustHist(t, w, 50)
	hb := mustHist(t, w, 50)
	hs := mustHist(t, w, 50)
	for range n {
		a, b := 0.010+0.030*r.Float64(), 0.010+0.030*r.Float64()
		ha.Add(a)
		hb.Add(b)
		hs.Add(a + b)
	}
	da, db, ds := mustHDQ(t, ha), mustHDQ(t, hb), mustHDQ(t, hs)
	calc := mk(t)(Convolve(da, db))
	if d := mustDist(t)(Distance(ds, calc)); d > 0.03 {
		t.Errorf("divergence of an independent system = %v, want sampling noise < 0.03", d)
	}
	if !near(ds.Intangible(), 0.5, 0.01) {
		t.Errorf("system timeouts %v, want about half", ds.Intangible())
	}
}

func mustHist(t *testing.T, w float64, n int) *Histogram {
	t.Helper()
	h, err := NewHistogram(w, n)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func mustHDQ(t *testing.T, h *Histogram) DeltaQ {
	t.Helper()
	d, err := h.DeltaQ()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDistanceIndependentExponentialStages(t *testing.T) {
	// Two independent Exp(20 ms) stages, dMax 50 ms each on 1 ms bins. Their
	// sum is Gamma(2, 20 ms), F(t) = 1 − e^{−t/μ}(1 + t/μ); up to 50 ms the
	// observed system depends only on stage delays below 50 ms, which the
	// stages' ΔQs hold, so the calculated ΔQ matches it there but for the
	// discretisation: each stage's density is taken constant in a bin
	// (relative change w/μ = 1/20 across it) and the error of such a
	// midpoint rule is second order, of scale (w/μ)² = 1/400 (measured:
	// 1.5e-4, a quarter of that at w = 0.5 ms). Beyond 50 ms the calculated
	// CDF rises to (1 − e^{−2.5})² = 0.843 while the observed one stays at
	// F(50 ms) = 1 − 3.5e^{−2.5} = 0.713: the old comparison gave 0.130.
	const mu, w = 0.020, 1e-3
	e := mk(t)(Exponential(mu, w, 50))
	calc := mk(t)(Convolve(e, e))
	obs := edgesCDF(t, func(x float64) float64 { return 1 - math.Exp(-x/mu)*(1+x/mu) }, w, 50)
	old := calc.Tangible() - obs.Tangible()
	if want := math.Pow(1-math.Exp(-2.5), 2) - (1 - 3.5*math.Exp(-2.5)); !near(old, want, 1e-12) || old < 0.12 {
		t.Fatalf("tangible gap %v, want %v (the case under test)", old, want)
	}
	if d := mustDist(t)(Distance(obs, calc)); d > (w/mu)*(w/mu) {
		t.Errorf("Distance = %v, want discretisation only, < (w/μ)² = %v", d, (w/mu)*(w/mu))
	}
}

func TestDistanceRealDifferenceBelowDMax(t *testing.T) {
	// A system that really is not the sum of its stages: observed
	// U(30 ms, 35 ms) (F(35 ms) = 1) against the calculated triangle of
	// TestDistanceIndependentUniformStages (F(35 ms) = 15²/1800 = 0.125).
	// The largest gap, 0.875 at 35 ms, lies below both dMax values and is
	// unchanged by the restriction: beyond 50 ms the gap only shrinks
	// (observed 1, calculated from 0.5 up to 1).
	const w = 1e-3
	u := mk(t)(Uniform(0.010, 0.040, w, 50))
	calc := mk(t)(Convolve(u, u))
	obs := mk(t)(Uniform(0.030, 0.035, w, 50))
	if d := mustDist(t)(Distance(obs, calc)); !near(d, 0.875, 1e-12) {
		t.Errorf("Distance = %v, want 0.875", d)
	}
	// The difference may also lie at the shorter dMax itself.
	late := mk(t)(Uniform(0.045, 0.050, w, 50))
	if d := mustDist(t)(Distance(late, calc)); !near(d, 0.5, 1e-12) {
		t.Errorf("Distance to U(45, 50) ms = %v, want 1 − 0.5 at 50 ms", d)
	}
}

func TestDistanceShorterDMaxOffTheCoarseGrid(t *testing.T) {
	// a: U(0, 45 ms) on 45 bins of 1 ms, complete by its dMax 45 ms;
	// b: never completes, 50 bins of 2 ms. On the common 2 ms grid 45 ms is
	// not an edge: the last edge below it, 44 ms, gives 44/45, and a itself
	// reaches 1 at 45 ms, which is the distance (the coarse bin (44, 46]
	// would read a at 45 ms as the mean of 44/45 and 1).
	a := mk(t)(Uniform(0, 0.045, 1e-3, 45))
	b := mk(t)(Never(2e-3, 50))
	if d := mustDist(t)(Distance(a, b)); !near(d, 1, 1e-12) {
		t.Errorf("Distance = %v, want 1", d)
	}
	// And nothing beyond 45 ms counts: a b that completes at 47 ms is as
	// far from a as one that never completes.
	c := mk(t)(Point(0.047, 2e-3, 50))
	if d := mustDist(t)(Distance(a, c)); !near(d, 1, 1e-12) {
		t.Errorf("Distance = %v, want 1", d)
	}
}

// mustDist unwraps Distance's result, failing the test on error.
func mustDist(t testing.TB) func(float64, error) float64 {
	return func(d float64, err error) float64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
}
