// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// z80 is the standard normal quantile Φ⁻¹(0.8), for a power of 80 %.
const z80 = 0.8416212335729143

// kolmogorovCritical returns λ_α with P(K > λ_α) = α for the Kolmogorov
// distribution (deltaq.KolmogorovQ), by bisection: 1.628 at α = 0.01,
// 1.358 at α = 0.05. α outside (0, 1) gives +Inf.
func kolmogorovCritical(alpha float64) float64 {
	if !(alpha > 0 && alpha < 1) {
		return math.Inf(1)
	}
	lo, hi := 0.0, 10.0
	for range 100 {
		mid := (lo + hi) / 2
		if deltaq.KolmogorovQ(mid) > alpha {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// detectable returns the smallest divergence a Kolmogorov–Smirnov test at
// level α detects with a power of 80 % given Nₑ effective instances:
//
//	δ = (λ_α + ½·z₀.₈)/√Nₑ.
//
// At the delay where the true divergence δ is largest, √Nₑ times the
// difference of the two estimated CDFs is about normal with mean √Nₑ·δ and
// a standard deviation of at most ½ (an empirical CDF's largest), and the
// statistic √Nₑ·D is at least that difference: it exceeds λ_α with a
// probability of at least 80 % once √Nₑ·δ ≥ λ_α + ½·z₀.₈. So δ is an upper
// bound of what the test needs. Nₑ ≤ 0 gives +Inf.
func detectable(alpha, ne float64) float64 {
	if !(ne > 0) {
		return math.Inf(1)
	}
	return (kolmogorovCritical(alpha) + 0.5*z80) / math.Sqrt(ne)
}

// breachP returns the p-value of a one-sided exact binomial test that a
// window of n instances, k of which did something, breaks a bound on its
// probability: for a failure bound (atMost) H₀ "the failure probability is
// at most p", P(X ≥ k); for a QTA point H₀ "the probability of completing
// by the point's delay is at least p", P(X ≤ k), X ~ Binomial(n, p). n ≤ 0
// gives 1 (no evidence).
func breachP(k, n int64, p float64, atMost bool) float64 {
	if n <= 0 {
		return 1
	}
	k = min(max(k, 0), n)
	b := distuv.Binomial{N: float64(n), P: math.Min(math.Max(p, 0), 1)}
	switch {
	case atMost && k == 0:
		return 1
	case atMost:
		if p <= 0 {
			return 0
		}
		return math.Min(1, math.Max(0, 1-b.CDF(float64(k-1))))
	default:
		if p >= 1 {
			if k < n {
				return 0
			}
			return 1
		}
		return math.Min(1, math.Max(0, b.CDF(float64(k))))
	}
}

// studentQuantile returns the q-quantile of Student's t distribution of nu
// degrees of freedom.
func studentQuantile(q float64, nu int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(nu)}.Quantile(q)
}

// errNoTest: the calculated ΔQ has no effective instance count.
var errNoTest = errors.New("analysis: no effective instance count for the divergence test")
