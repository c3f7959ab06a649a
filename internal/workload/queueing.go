// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package workload

import "math"

// MM1K holds the stationary figures of one M/M/1/K worker fed by Poisson
// arrivals (Kleinrock, Queueing Systems vol. 1, §3.6). With ρ = λ/μ the
// probability of n jobs in the worker is
//
//	pₙ = (1 − ρ)ρⁿ / (1 − ρ^{K+1})   (ρ ≠ 1),   pₙ = 1/(K+1)   (ρ = 1),
//
// for 0 ≤ n ≤ K. By PASTA an arrival finds the buffer full with probability
// p_K, so p_K is the failure ratio; by Little's law the mean time an accepted
// job spends in the worker is W = L / (λ(1 − p_K)), L = Σ n·pₙ.
type MM1K struct {
	Rho      float64 // offered load λ/μ
	Blocking float64 // p_K, the share of arrivals dropped
	MeanJobs float64 // L, the mean number of jobs in the worker
	Sojourn  float64 // W, seconds an accepted job spends in the worker
}

// NewMM1K returns the stationary figures of an M/M/1/K worker with arrival
// rate lambda and service rate mu (per second) and capacity k ≥ 1.
func NewMM1K(lambda, mu float64, k int) MM1K {
	rho := lambda / mu
	p := make([]float64, k+1)
	// Weights ρⁿ, scaled by ρ^−K when ρ > 1 so that none overflows.
	var sum float64
	for n := range p {
		if rho > 1 {
			p[n] = math.Pow(1/rho, float64(k-n))
		} else {
			p[n] = math.Pow(rho, float64(n))
		}
		sum += p[n]
	}
	var l float64
	for n := range p {
		p[n] /= sum
		l += float64(n) * p[n]
	}
	m := MM1K{Rho: rho, Blocking: p[k], MeanJobs: l}
	m.Sojourn = l / (lambda * (1 - p[k]))
	return m
}
