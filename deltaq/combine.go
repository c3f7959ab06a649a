// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"fmt"
	"math"
)

// cdfOp combines aligned operands edge by edge: f receives the CDF values of
// the operands at one bin edge and returns the result's CDF there. The result
// is made a CDF again by clamping to [0, 1] and to non-decreasing values,
// which only removes rounding.
func cdfOp(op string, ds []DeltaQ, f func(vals []float64) float64) (DeltaQ, error) {
	al, err := align(op, ds)
	if err != nil {
		return DeltaQ{}, err
	}
	n := len(al[0].pdf)
	vals := make([]float64, len(al))
	p := newPDF(n)
	prev := 0.0
	for i := 0; i < n; i++ {
		for k, d := range al {
			vals[k] = d.cum[i]
		}
		v := f(vals)
		v = min(max(v, prev), 1)
		p[i] = v - prev
		prev = v
	}
	// Operands at the same edges have step CDFs that change only there:
	// combined edge by edge, the result is exact and at those edges too.
	out := build(al[0].width, p, 0)
	out.at = al[0].at
	return out, nil
}

// FirstToFinish returns the ΔQ of n ≥ 2 independent outcomes started
// together of which the first to complete counts (thesis (2.3)):
//
//	F(t) = 1 − Πᵢ (1 − Fᵢ(t)).
//
// The intangible mass is Πᵢ fᵢ: it fails only when every branch fails. The
// operands are aligned first (Align).
func FirstToFinish(ds ...DeltaQ) (DeltaQ, error) {
	if len(ds) < 2 {
		return DeltaQ{}, fmt.Errorf("deltaq: FirstToFinish: need at least 2 operands, got %d", len(ds))
	}
	return cdfOp("FirstToFinish", ds, func(v []float64) float64 {
		s := 1.0
		for _, x := range v {
			s *= 1 - x
		}
		return 1 - s
	})
}

// AllToFinish returns the ΔQ of n ≥ 2 independent outcomes started together
// that completes when all of them have (thesis (2.4)):
//
//	F(t) = Πᵢ Fᵢ(t).
//
// The intangible mass is 1 − Πᵢ(1 − fᵢ): it fails when any branch fails. The
// operands are aligned first (Align).
func AllToFinish(ds ...DeltaQ) (DeltaQ, error) {
	if len(ds) < 2 {
		return DeltaQ{}, fmt.Errorf("deltaq: AllToFinish: need at least 2 operands, got %d", len(ds))
	}
	return cdfOp("AllToFinish", ds, func(v []float64) float64 {
		s := 1.0
		for _, x := range v {
			s *= x
		}
		return s
	})
}

// Choice returns the ΔQ of a probabilistic choice (thesis (2.5)): exactly one
// of the outcomes happens, outcome i with probability weights[i]:
//
//	F(t) = Σᵢ wᵢ·Fᵢ(t).
//
// Weights must be finite, within [0, 1] and sum to 1 within 1e-9; there must
// be one per ΔQ and at least one ΔQ. The operands are aligned first (Align).
func Choice(weights []float64, ds []DeltaQ) (DeltaQ, error) {
	if len(weights) != len(ds) {
		return DeltaQ{}, fmt.Errorf("deltaq: Choice: %d weights for %d operands", len(weights), len(ds))
	}
	if len(ds) == 0 {
		return DeltaQ{}, fmt.Errorf("deltaq: Choice: no operands")
	}
	sum := 0.0
	for i, w := range weights {
		if math.IsNaN(w) || w < 0 || w > 1 {
			return DeltaQ{}, fmt.Errorf("deltaq: Choice: weight %v of operand %d outside [0, 1]", w, i)
		}
		sum += w
	}
	if math.Abs(sum-1) > massTol {
		return DeltaQ{}, fmt.Errorf("deltaq: Choice: weights sum to %v, not 1", sum)
	}
	al, err := align("Choice", ds)
	if err != nil {
		return DeltaQ{}, err
	}
	// Mixing is linear, so it is exact on the bin masses.
	p := newPDF(len(al[0].pdf))
	for k, d := range al {
		w := weights[k] / sum
		for i, v := range d.pdf {
			p[i] += w * v
		}
	}
	out := build(al[0].width, p, 0)
	out.at = al[0].at
	return out, nil
}
