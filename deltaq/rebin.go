// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"fmt"
	"math"
)

// Rebin returns d on bins of the coarser width width (thesis §5.1.4,
// (5.10)). New bin j covers (j·W, (j+1)·W] and receives, from every old bin
// i, the share of pᵢ that falls inside it under the uniform-in-bin
// convention:
//
//	p'ⱼ = Σᵢ pᵢ·|(i·w, (i+1)·w] ∩ (j·W, (j+1)·W]| / w.
//
// When W is a whole multiple k of w this is the thesis's sum of k
// consecutive bins. The result has ⌈N·w/W⌉ bins, so it covers the old dMax;
// total mass and Count are preserved. A width equal to d's (within a
// relative 1e-9) returns d itself; a finer width is an error, since it would
// invent detail the observation does not have.
func Rebin(d DeltaQ, width float64) (DeltaQ, error) {
	if err := d.valid("Rebin", 0); err != nil {
		return DeltaQ{}, err
	}
	if err := checkWidth(width); err != nil {
		return DeltaQ{}, err
	}
	if sameWidth(d.width, width) {
		return d, nil
	}
	if width < d.width {
		return DeltaQ{}, fmt.Errorf("deltaq: Rebin: width %g is finer than the ΔQ's %g (refinement is not supported)", width, d.width)
	}
	ratio := width / d.width // > 1
	bins := int(math.Ceil(snapInt(float64(len(d.pdf)) / ratio)))
	if bins < 1 {
		bins = 1
	}
	p := newPDF(bins)
	if k := math.Round(ratio); math.Abs(ratio-k) <= 1e-9*k {
		// Whole multiple: plain sums of k old bins, exact.
		ki := int(k)
		// A point at the upper edge (i+1)·w of old bin i is in new bin
		// ⌈(i+1)/k⌉ − 1 = ⌊i/k⌋, at or below its upper edge; one at the
		// lower edge i·w too, at or above its lower edge: the sum keeps a
		// bound a bound.
		for i, v := range d.pdf {
			p[i/ki] += v
		}
		out := build(width, p, d.count)
		out.at = d.at
		return out, nil
	}
	if d.at != Spread {
		return rebinPoints(d, width, ratio, p), nil
	}
	// General ratio: in units of old bins, new bin j covers
	// [j·ratio, (j+1)·ratio).
	for i, v := range d.pdf {
		if v == 0 {
			continue
		}
		lo, hi := float64(i), float64(i+1)
		j := int(lo / ratio)
		for j < bins {
			a := math.Max(lo, float64(j)*ratio)
			b := math.Min(hi, float64(j+1)*ratio)
			if b > a {
				p[j] += v * (b - a)
			}
			if float64(j+1)*ratio >= hi {
				break
			}
			j++
		}
	}
	return build(width, p, d.count), nil
}

// rebinPoints is Rebin of a ΔQ whose masses sit at edges onto p, the
// new bins of width width = ratio·w: a point between new edges moves to the
// next edge up for UpperEdges and down for LowerEdges, so the result stays
// on the side of the exact ΔQ it bounds.
func rebinPoints(d DeltaQ, width, ratio float64, p []float64) DeltaQ {
	for i, v := range d.pdf {
		if v == 0 {
			continue
		}
		var j float64
		if d.at == UpperEdges {
			j = binIndex(float64(i+1) / ratio)
		} else {
			j = math.Floor(snapInt(float64(i) / ratio))
		}
		p[min(int(j), len(p)-1)] += v
	}
	out := build(width, p, d.count)
	out.at = d.at
	return out
}

// alignWidths rebins every operand to the coarsest width among them.
func alignWidths(op string, ds []DeltaQ) ([]DeltaQ, error) {
	w := 0.0
	for i, d := range ds {
		if err := d.valid(op, i); err != nil {
			return nil, err
		}
		w = math.Max(w, d.width)
	}
	out := make([]DeltaQ, len(ds))
	for i, d := range ds {
		r, err := Rebin(d, w)
		if err != nil {
			return nil, fmt.Errorf("deltaq: %s: operand %d: %w", op, i, err)
		}
		out[i] = r
	}
	return out, nil
}

// Align returns the operands on a common grid: every ΔQ rebinned to the
// coarsest width among them (Rebin), then extended with empty bins to the
// largest bin count (its CDF stays flat beyond its own dMax; the mass there
// is intangible). An operand without mass (Never) takes the placement of
// the others. Operands that need no change are returned as they are.
func Align(ds ...DeltaQ) ([]DeltaQ, error) {
	return align("Align", ds)
}

func align(op string, ds []DeltaQ) ([]DeltaQ, error) {
	if len(ds) == 0 {
		return nil, fmt.Errorf("deltaq: %s: no operands", op)
	}
	out, err := alignWidths(op, ds)
	if err != nil {
		return nil, err
	}
	// An operand without mass (Never) has nothing to place: it takes the
	// placement of the others, so that it does not make them mixed (when
	// all are without mass, the first one's).
	n := 0
	at, placed, mixed := out[0].at, false, false
	for _, d := range out {
		n = max(n, len(d.pdf))
		switch {
		case d.Tangible() == 0:
		case !placed:
			at, placed = d.at, true
		default:
			mixed = mixed || d.at != at
		}
	}
	for i, d := range out {
		if d.Tangible() == 0 {
			d.at = at
		}
		if mixed {
			// Operands placed differently are read at the edges, where
			// every placement's CDF is exact.
			d = d.edgeSpread()
		}
		if len(d.pdf) < n {
			p := newPDF(n)
			copy(p, d.pdf)
			at := d.at
			d = build(d.width, p, d.count)
			d.at = at
		}
		out[i] = d
	}
	return out, nil
}

// Distance returns the Kolmogorov distance between two ΔQs over the delays
// where both are defined, read on the grid of the coarser width W (the
// resolution of Align):
//
//	D(a, b) = max_{t ∈ T} |F_a(t) − F_b(t)|,   T = {k·W ≤ m} ∪ {m},
//	m = min(dMax_a, dMax_b).
//
// Beyond its own dMax a ΔQ's CDF is flat by construction, the mass there
// being timeouts, not a statement that nothing completes later: comparing
// the observed ΔQ of a system (dMax 50 ms) with the ΔQ calculated from its
// stages a -> b (dMax_a + dMax_b = 100 ms) beyond 50 ms would count the
// calculated mass between 50 and 100 ms as a difference the observation
// cannot see, and two independent U(10 ms, 40 ms) stages would diverge by
// 0.5 from a system that is exactly their sum. So only t ≤ m counts. On a
// common width both CDFs are linear between edges and T holds every edge up
// to m, so D is the supremum over [0, m]. Rebinning keeps a CDF's values at
// the coarse edges, so every value compared is one of the operands' own CDF;
// m itself, not an edge when a dMax is not a multiple of W, is read on the
// operands as they are, since the coarse bin straddling m would smear the
// finer operand's last bin over delays it does not cover. D is symmetric
// and 0 for equal ΔQs; for ΔQs of different dMax it says nothing about the
// delays beyond the shorter one.
func Distance(a, b DeltaQ) (float64, error) {
	if err := a.valid("Distance", 0); err != nil {
		return 0, err
	}
	if err := b.valid("Distance", 1); err != nil {
		return 0, err
	}
	m := math.Min(a.DMax(), b.DMax())
	a, b = a.edgeSpread(), b.edgeSpread()
	ab, err := alignWidths("Distance", []DeltaQ{a, b})
	if err != nil {
		return 0, err
	}
	ra, rb := ab[0], ab[1]
	// Edges (i+1)·W ≤ m, within the package's relative 1e-9 for rounding;
	// both aligned ΔQs have at least that many bins, as Rebin keeps a ΔQ's
	// dMax covered.
	x := snapInt(m / ra.width)
	exact := x == math.Floor(x)
	n := max(min(int(math.Floor(x)), len(ra.pdf), len(rb.pdf)), 0)
	dist := 0.0
	ac, bc := ra.cum[:n], rb.cum[:n]
	for i := range ac {
		dist = runningMax(dist, math.Abs(ac[i]-bc[i]))
	}
	if !exact {
		dist = math.Max(dist, math.Abs(a.CDF(m)-b.CDF(m)))
	}
	return dist, nil
}
