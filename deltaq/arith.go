// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"fmt"
	"math"
)

// Scale returns the ΔQ whose CDF is j·F (thesis (4.2), (5.5)): every bin
// mass multiplied by j ∈ [0, 1], the removed mass (1 − j)·Σpᵢ becoming
// intangible. It models an outcome that, independently of its delay, is
// lost with probability 1 − j.
func Scale(d DeltaQ, j float64) (DeltaQ, error) {
	if err := d.valid("Scale", 0); err != nil {
		return DeltaQ{}, err
	}
	if math.IsNaN(j) || j < 0 || j > 1 {
		return DeltaQ{}, fmt.Errorf("deltaq: Scale: factor %v outside [0, 1]", j)
	}
	p := newPDF(len(d.pdf))
	for i, v := range d.pdf {
		p[i] = v * j
	}
	out := build(d.width, p, 0)
	out.at = d.at
	return out, nil
}

// Curve is a function of delay sampled at the bin edges of a ΔQ grid:
// Values[i] is its value at delay (i+1)·Width, and it is linear in between
// (like a ΔQ's CDF). Sums and differences of CDFs are curves rather than
// ΔQs: they may leave [0, 1] or decrease.
type Curve struct {
	Width  float64
	Values []float64
}

// At returns the curve at delay t: 0 at t ≤ 0, linear between edges, the
// last value beyond the last edge.
func (c Curve) At(t float64) float64 {
	i, f, where := locate(len(c.Values), c.Width, t)
	switch where {
	case beforeStart:
		return 0
	case pastEnd:
		return c.Values[len(c.Values)-1]
	}
	lo := 0.0
	if i > 0 {
		lo = c.Values[i-1]
	}
	return lo + (c.Values[i]-lo)*f
}

// ecdfOp applies f edge by edge to two aligned ΔQs.
func ecdfOp(op string, a, b DeltaQ, f func(x, y float64) float64) (Curve, error) {
	al, err := align(op, []DeltaQ{a, b})
	if err != nil {
		return Curve{}, err
	}
	v := make([]float64, len(al[0].cum))
	for i := range v {
		v[i] = f(al[0].cum[i], al[1].cum[i])
	}
	return Curve{Width: al[0].width, Values: v}, nil
}

// AddECDF returns F_A + F_B at every bin edge (thesis (4.3), (5.6)), after
// Align.
func AddECDF(a, b DeltaQ) (Curve, error) {
	return ecdfOp("AddECDF", a, b, func(x, y float64) float64 { return x + y })
}

// SubECDF returns F_A − F_B at every bin edge (thesis (4.3), (5.6)), after
// Align. It is positive where A is ahead of B (slack of A over B) and
// negative where A lags (hazard); see Compare for the summary.
func SubECDF(a, b DeltaQ) (Curve, error) {
	return ecdfOp("SubECDF", a, b, func(x, y float64) float64 { return x - y })
}

// MulECDF returns F_A · F_B at every bin edge (thesis (4.3), (5.6)), after
// Align. The product of two CDFs is a CDF: AllToFinish returns it as a ΔQ.
func MulECDF(a, b DeltaQ) (Curve, error) {
	return ecdfOp("MulECDF", a, b, func(x, y float64) float64 { return x * y })
}

// Merge returns the observed ΔQ of the union of the instances behind ds: the
// ΔQs must have the same width and bin count and each a positive Count, and
// the result is the count-weighted mixture
//
//	pᵢ = Σₖ nₖ·p_{k,i} / Σₖ nₖ,   Count = Σₖ nₖ,
//
// which is exactly what adding the histograms' counts gives.
func Merge(ds ...DeltaQ) (DeltaQ, error) {
	if len(ds) == 0 {
		return DeltaQ{}, fmt.Errorf("deltaq: Merge: no operands")
	}
	var total int64
	for k, d := range ds {
		if err := d.valid("Merge", k); err != nil {
			return DeltaQ{}, err
		}
		if !sameWidth(d.width, ds[0].width) || len(d.pdf) != len(ds[0].pdf) {
			return DeltaQ{}, fmt.Errorf("deltaq: Merge: operand %d has shape w=%g N=%d, operand 0 w=%g N=%d",
				k, d.width, len(d.pdf), ds[0].width, len(ds[0].pdf))
		}
		if d.count <= 0 {
			return DeltaQ{}, fmt.Errorf("deltaq: Merge: operand %d has no instance count", k)
		}
		if total+d.count < total {
			return DeltaQ{}, fmt.Errorf("deltaq: Merge: instance count overflows")
		}
		total += d.count
	}
	p := newPDF(len(ds[0].pdf))
	for _, d := range ds {
		w := float64(d.count) / float64(total)
		for i, v := range d.pdf {
			p[i] += w * v
		}
	}
	return build(ds[0].width, p, total), nil
}
