// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package distribution

import (
	"math"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// expHorizon is how many means of an exponential distribution the default
// dMax covers: the tail beyond, e^−20 ≈ 2·10⁻⁹, becomes intangible.
const expHorizon = 20

// Dist is an assumed delay distribution of an outcome.
type Dist interface {
	// Build returns the ΔQ of the distribution on bins bins of width width.
	Build(width float64, bins int) (deltaq.DeltaQ, error)
	// Horizon is the largest delay the distribution names (expHorizon
	// means for exp), from which DefaultDMax chooses dMax.
	Horizon() float64
}

// Help describes the language for a command's help text.
const Help = `DIST is one of (durations take ns, us, ms or s, e.g. 2.5ms):
  point(D)                  always exactly D
  uniform(LO,HI)            uniform on [LO, HI)
  exp(MEAN)                 exponential with the given mean
  never                     never completes (all failure)
  steps(D1:P1,D2:P2,...)    step CDF reaching probability Pi at delay Di
  choice(W1:DIST1,...)      DISTi with probability Wi (the Wi sum to 1)`

type pointDist struct{ d float64 }
type uniformDist struct{ lo, hi float64 }
type expDist struct{ mean float64 }
type neverDist struct{}
type stepsDist struct{ pts []deltaq.Step }
type choiceDist struct {
	weights []float64
	parts   []Dist
}

func (p pointDist) Build(w float64, n int) (deltaq.DeltaQ, error) { return deltaq.Point(p.d, w, n) }
func (p pointDist) Horizon() float64                              { return p.d }

func (u uniformDist) Build(w float64, n int) (deltaq.DeltaQ, error) {
	return deltaq.Uniform(u.lo, u.hi, w, n)
}
func (u uniformDist) Horizon() float64 { return u.hi }

func (e expDist) Build(w float64, n int) (deltaq.DeltaQ, error) {
	return deltaq.Exponential(e.mean, w, n)
}
func (e expDist) Horizon() float64 { return expHorizon * e.mean }

func (neverDist) Build(w float64, n int) (deltaq.DeltaQ, error) { return deltaq.Never(w, n) }
func (neverDist) Horizon() float64                              { return 0 }

func (s stepsDist) Build(w float64, n int) (deltaq.DeltaQ, error) { return deltaq.Steps(s.pts, w, n) }
func (s stepsDist) Horizon() float64 {
	h := 0.0
	for _, p := range s.pts {
		h = math.Max(h, p.Delay)
	}
	return h
}

func (c choiceDist) Build(w float64, n int) (deltaq.DeltaQ, error) {
	ds := make([]deltaq.DeltaQ, len(c.parts))
	for i, p := range c.parts {
		d, err := p.Build(w, n)
		if err != nil {
			return deltaq.DeltaQ{}, err
		}
		ds[i] = d
	}
	return deltaq.Choice(c.weights, ds)
}
func (c choiceDist) Horizon() float64 { return maxHorizon(c.parts) }

// maxHorizon is the largest Horizon of ds, 0 for none.
func maxHorizon(ds []Dist) float64 {
	h := 0.0
	for _, d := range ds {
		h = math.Max(h, d.Horizon())
	}
	return h
}

// DefaultDMax is the dMax that fits every distribution of ds: the smallest
// 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 × 10^k seconds above their largest
// horizon, so that bin widths come out round; 1 s when that horizon is 0.
func DefaultDMax(ds []Dist) float64 { return niceAbove(maxHorizon(ds)) }

// niceSteps are the mantissas a default dMax is rounded up to.
var niceSteps = []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10}

// niceAbove returns the smallest m·10ᵏ above x with m from niceSteps; 1 s
// when x ≤ 0.
func niceAbove(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 0) {
		return 1
	}
	// Start a decade low: Log10 may round across a power of ten.
	k := math.Floor(math.Log10(x)) - 1
	for ; ; k++ {
		for _, m := range niceSteps {
			// m/10^−k rather than m·10^k: correctly rounded for negative k.
			v := m * math.Pow(10, k)
			if k < 0 {
				v = m / math.Pow(10, -k)
			}
			if v > x {
				return v
			}
		}
	}
}
