// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"fmt"
	"math"
)

// KSTest is a two-sample Kolmogorov–Smirnov test between two ΔQs estimated
// from N and M instances (KSTwoSample).
type KSTest struct {
	// Distance is D = sup_t |F_a(t) − F_b(t)| (Distance).
	Distance float64
	// N and M are the sample sizes of the two ΔQs, possibly effective
	// (non-integer) sizes; Effective is N·M/(N+M).
	N, M, Effective float64
	// Statistic is λ = √Nₑ·D, Nₑ = Effective: the distance on the scale of
	// the Kolmogorov distribution, comparable across sample sizes.
	Statistic float64
	// P is the p-value P(K > λ) of the Kolmogorov distribution: the
	// probability of a distance at least as large if both ΔQs were drawn
	// from one distribution.
	P float64
}

// NewKSTest returns the two-sample Kolmogorov–Smirnov test of a distance d
// between two empirical CDFs of n and m samples (n, m > 0; m = +Inf for an
// exact CDF, the one-sample test).
//
// The p-value is that of the asymptotic Kolmogorov distribution at
// λ = √Nₑ·d, Nₑ = n·m/(n+m): √Nₑ·D converges in law to the supremum K of a
// Brownian bridge when both samples come from one continuous distribution
// (N. Smirnov, "On the estimation of the discrepancy between empirical
// curves of distribution for two independent samples", 1939). The
// finite-sample correction (√Nₑ + 0.12 + 0.11/√Nₑ) of M. A. Stephens ("Use
// of the Kolmogorov–Smirnov, Cramér–von Mises and related statistics
// without extensive tables", 1970), made for the one-sample test, is not
// applied: for two samples it makes the p-value too
// small. At n = m = 100 and D = 0.19 the exact two-sample tail, by
// counting lattice paths (J. L. Hodges, "The significance probability of
// the Smirnov two-sample test", Arkiv för Matematik 3, 1958), is 0.0539;
// the plain asymptotic value 0.0541, the corrected one 0.0470. For
// discrete or binned data the null distribution of D is stochastically
// smaller than for continuous data, so the p-value is conservative (too
// large), never too small (W. J. Conover, "A Kolmogorov goodness-of-fit
// test for discontinuous distributions", JASA 67, 1972).
func NewKSTest(d, n, m float64) (KSTest, error) {
	if math.IsNaN(d) || d < 0 || d > 1+cdfTol {
		return KSTest{}, fmt.Errorf("deltaq: KS test: distance %v outside [0, 1]", d)
	}
	if !(n > 0) || math.IsInf(n, 0) {
		return KSTest{}, fmt.Errorf("deltaq: KS test: sample size n = %v must be finite and > 0", n)
	}
	if !(m > 0) {
		return KSTest{}, fmt.Errorf("deltaq: KS test: sample size m = %v must be > 0", m)
	}
	ne := n
	if !math.IsInf(m, 1) {
		ne = n * m / (n + m)
	}
	lambda := math.Sqrt(ne) * d
	return KSTest{Distance: d, N: n, M: m, Effective: ne, Statistic: lambda, P: KolmogorovQ(lambda)}, nil
}

// KSTwoSample returns the two-sample Kolmogorov–Smirnov test of a, observed
// from n instances, against b, from m: NewKSTest at D = Distance(a, b).
//
// ΔQs are improper: the mass 1 − F(dMax) failed or timed out. The test
// treats that mass as a point at +∞, so that each ΔQ is a proper
// distribution on [0, ∞] whose empirical CDF counts every instance, and n
// and m are the instances of all outcomes, not only the successes. The
// supremum is taken over [0, min(dMax_a, dMax_b)] (Distance), where both
// CDFs are observed; the difference of the failure masses is the
// difference at dMax. A supremum over a subset of [0, ∞] is at most the
// supremum over all of it, so restricting it keeps the test conservative.
func KSTwoSample(a, b DeltaQ, n, m float64) (KSTest, error) {
	d, err := Distance(a, b)
	if err != nil {
		return KSTest{}, err
	}
	return NewKSTest(math.Min(d, 1), n, m)
}

// EffectiveCount returns (Σᵢ 1/nᵢ)⁻¹, the number of instances a ΔQ
// calculated from components observed from n₁, n₂, … instances is worth
// for a Kolmogorov–Smirnov test; 0 when a count is not > 0, or there is
// none.
//
// Every operator of the algebra is, to first order in the components'
// estimation errors, a sum of one term per component that averages a
// function with values in [0, 1] over that component's instances: the
// convolution kernel F_B(t − x), a product or co-product of the other
// branches' CDFs, a choice weight. Such an average of nᵢ instances has a
// variance of at most 1/(4nᵢ), the largest variance of an empirical CDF of
// nᵢ samples, and independent components add their variances. So the
// calculated CDF is at most as uncertain, point by point, as an empirical
// CDF of (Σ 1/nᵢ)⁻¹ samples at its median; it can be less (a choice
// weights its branches by p², a kernel that is flat where the component
// has its mass adds nothing), which makes the test conservative.
func EffectiveCount(counts ...float64) float64 {
	s := 0.0
	for _, n := range counts {
		if !(n > 0) {
			return 0
		}
		s += 1 / n
	}
	if s == 0 {
		return 0
	}
	return 1 / s
}

// KolmogorovQ returns P(K > λ) for the Kolmogorov distribution, the law of
// the supremum K of a Brownian bridge on [0, 1], by the standard series
// (Kolmogorov 1933; the forms of Marsaglia, Tsang and Wang, "Evaluating
// Kolmogorov's Distribution", J. Stat. Software 8(18), 2003, section 1):
//
//	P(K ≤ λ) = (√(2π)/λ)·Σ_{k≥1} exp(−(2k−1)²π²/(8λ²))   for λ < 1.18,
//	P(K > λ) = 2·Σ_{k≥1} (−1)^{k−1}·exp(−2k²λ²)         otherwise.
//
// Each converges to double precision within a few terms on its side of
// 1.18 (the first neglected term is below 1e-16 after at most 5 terms).
// λ ≤ 0 or NaN gives 1.
func KolmogorovQ(lambda float64) float64 {
	if !(lambda > 0) {
		return 1
	}
	if lambda < 1.18 {
		// The Jacobi-transformed series, which converges fast for small λ.
		c := -math.Pi * math.Pi / (8 * lambda * lambda)
		s := 0.0
		for k := 1; k <= 20; k++ {
			o := float64(2*k - 1)
			t := math.Exp(c * o * o)
			s += t
			if t < 1e-17*s {
				break
			}
		}
		return math.Min(1, math.Max(0, 1-math.Sqrt(2*math.Pi)/lambda*s))
	}
	s, sign := 0.0, 1.0
	for k := 1; k <= 20; k++ {
		kf := float64(k)
		t := math.Exp(-2 * kf * kf * lambda * lambda)
		s += sign * t
		sign = -sign
		if t < 1e-17*s {
			break
		}
	}
	return math.Min(1, math.Max(0, 2*s))
}
