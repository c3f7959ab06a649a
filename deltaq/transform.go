// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"errors"
	"fmt"
	"math"
)

// TimeTransform returns the ΔQ of Y = a·X + b for X distributed as d: the
// what-if question "what if this part were a times as slow and b seconds
// later" (b < 0: earlier). The map is linear, so the CDF at the result's bin
// edges is exact:
//
//	F_Y(t) = F_X((t − b)/a)   for a > 0,
//
// and linear inside a bin as always. Delays pushed below zero by a negative
// b are clamped to zero (the mass lands in bin 0); a = 0 moves all tangible
// mass to the single delay max(b, 0), as Point places it (a point at 0 or
// on an edge, else spread over its bin). Intangible mass (failure, timeout) is
// unchanged: a timed-out instance stays timed out. The result keeps d's
// width and has max(N, ⌈(a·dMax + b)/w⌉) bins, so no tangible mass is lost;
// more than MaxBins is an error. a must be finite and ≥ 0, b finite.
//
// Masses at edges (Placement) are points, and move as points: a point at e
// goes to a·e + b, which Point would place, so 2·Point(2 ms) is
// Point(4 ms). When every image lies on an edge above 0 (or all at 0) the
// result is exact at every delay; otherwise it is Spread, each point in
// the bin that holds it (upper-inclusive), exact at every edge above 0.
func TimeTransform(d DeltaQ, a, b float64) (DeltaQ, error) {
	if err := d.valid("TimeTransform", 0); err != nil {
		return DeltaQ{}, err
	}
	if math.IsNaN(a) || math.IsInf(a, 0) || a < 0 {
		return DeltaQ{}, fmt.Errorf("deltaq: TimeTransform: scale a = %v must be finite and ≥ 0", a)
	}
	if math.IsNaN(b) || math.IsInf(b, 0) {
		return DeltaQ{}, fmt.Errorf("deltaq: TimeTransform: shift b = %v must be finite", b)
	}
	if d.at != Spread {
		// Read as spread over the bin below, a point's image would be
		// spread over a·w: F_Y would be wrong at the edges it crosses.
		return transformPoints(d, a, b)
	}
	w := d.width
	tot := d.Tangible()
	// Bins needed: the image of the support [0, hi·w) is [b, a·hi·w + b),
	// half open; for a = 0 it is the single delay max(b, 0), which belongs
	// to the bin Point would give it, binIndex(b/w) (the bin its edge closes
	// when b is a bin edge).
	_, hi := support(d.pdf)
	var need float64
	if a == 0 {
		need = binIndex(math.Max(b, 0)/w) + 1
	} else {
		need = math.Ceil(snapInt((a*float64(hi)*w + b) / w))
	}
	bins := len(d.pdf)
	if need > float64(bins) {
		if need > MaxBins {
			return DeltaQ{}, fmt.Errorf("deltaq: TimeTransform: %v·X + %v needs %v bins, more than MaxBins = %d", a, b, need, MaxBins)
		}
		bins = int(need)
	}
	if a == 0 {
		// Point's ΔQ, placement included (at 0 or on an edge, a point
		// there: spread over the bin, 0·X was half a bin late).
		pt, err := Point(math.Max(b, 0), w, bins)
		if err != nil {
			return DeltaQ{}, err
		}
		return Scale(pt, math.Min(tot, 1))
	}
	cdf := make([]float64, bins)
	prev := 0.0
	for i := range cdf {
		v := d.CDF((float64(i+1)*w - b) / a)
		v = math.Min(math.Max(v, prev), tot)
		cdf[i] = v
		prev = v
	}
	// All tangible mass sits below the last edge by construction of bins;
	// put any rounding remainder in the last bin so the total is exact.
	cdf[bins-1] = tot
	p := newPDF(bins)
	prev = 0
	for i, v := range cdf {
		p[i] = math.Max(v-prev, 0)
		prev = v
	}
	return build(w, p, 0), nil
}

// transformPoints is TimeTransform of a ΔQ whose masses sit at edges: the
// mass at edge e moves to y = max(a·e + b, 0), in the bin ⌈y/w⌉ − 1 that
// holds it (bin 0 for y = 0), y/w within the package's relative 1e-9 of a
// whole number taken as one. The result is a point mass at each y, as
// Point places one, when every y is an edge above 0 (UpperEdges) or every
// y is 0 (LowerEdges); otherwise it is Spread, exact at every edge above 0.
// (Points
// at lower edges beyond 0 would be exact here, but coarsening moves them
// down as it does an optimistic bound's, which would count them early.)
func transformPoints(d DeltaQ, a, b float64) (DeltaQ, error) {
	w := d.width
	p := newPDF(len(d.pdf))
	onEdges, zeros, points := true, 0, 0
	for i, m := range d.pdf {
		if m == 0 {
			continue
		}
		e := float64(i) * w
		if d.at == UpperEdges {
			e += w
		}
		x := snapInt(math.Max(a*e+b, 0) * (1 / w))
		onEdges = onEdges && x == math.Floor(x)
		if x == 0 {
			zeros++
		}
		points++
		k := binIndex(x)
		if k >= float64(len(p)) {
			if k+1 > MaxBins {
				return DeltaQ{}, fmt.Errorf("deltaq: TimeTransform: %v·X + %v needs %v bins, more than MaxBins = %d", a, b, k+1, MaxBins)
			}
			p = append(p, make([]float64, int(k)+1-len(p))...)
		}
		p[int(k)] += m
	}
	out := build(w, p, 0)
	switch {
	case points > 0 && zeros == points:
		out.at = LowerEdges
	case onEdges && zeros == 0:
		out.at = UpperEdges
	}
	return out, nil
}

// ErrInfeasible is wrapped by Deconvolve when no delay of the rest of a path
// can make the whole meet its target.
var ErrInfeasible = errors.New("deltaq: target infeasible")

// Deconvolve answers "how slow may the rest of this path be?": given the ΔQ
// of the part already known and the target ΔQ required of the whole, it
// returns a ΔQ X for the rest such that known ⊗ X meets the target,
// known ⊗ X ≤ target in the partial order (Compare), at every bin edge up
// to the target's dMax.
//
// With h the masses of known ⊗ (all mass in bin 0) (hₖ = ½(aₖ + a_{k−1}),
// the package's convolution convention), the CDF of the composition at the
// edge of bin m is R_m = Σ_{j≤m} X_j·h_{m−j}, where X_j is the CDF of X at
// the edge of bin j. The budget is built greedily from the earliest delay
// on: each X_j is left as low as the target allows (mass as late as
// possible); when a target point can no longer be met by the current bin
// alone, earlier bins are raised, latest first. The result is therefore the
// "latest" way to spend the budget, and its intangible mass is the failure
// (or timeout) rate the rest may still have. Exact deconvolution is
// ill-posed; this budget is conservative and always meets the target.
//
// If even an instantaneous rest (all of X in bin 0) cannot meet the target,
// for instance because the known part is already too slow or fails too
// often, the error wraps ErrInfeasible and says at which delay the target is
// out of reach. Operands of different widths are aligned to the coarser
// width first. The cost is O(M²) for a target of M bins.
func Deconvolve(target, known DeltaQ) (DeltaQ, error) {
	tk, err := alignWidths("Deconvolve", []DeltaQ{target.edgeSpread(), known.edgeSpread()})
	if err != nil {
		return DeltaQ{}, err
	}
	target, known = tk[0], tk[1]
	w := target.width
	h := kernel(known.pdf)
	T := target.cum
	if err := h.reachable(T, w); err != nil {
		return DeltaQ{}, err
	}
	s, _ := support(known.pdf)
	if len(T) <= s {
		// The target ends before the known part can complete: it must then
		// require nothing, and any rest will do.
		return build(w, newPDF(1), 0), nil
	}
	// X[k] is the rest's CDF at the edge of bin k, which first reaches the
	// target's edge m = s + k through h_s.
	X := make([]float64, len(T)-s)
	for m := s; m < len(T); m++ {
		k := m - s
		if k > 0 {
			X[k] = X[k-1]
		}
		r := 0.0
		for j := 0; j <= k; j++ {
			r += X[j] * h.at(m-j)
		}
		if def := T[m] - r; def > cdfTol && h.raise(X, k, m, def) > 1e-9 {
			// Unreachable after the feasibility check but for rounding.
			return DeltaQ{}, fmt.Errorf("%w: the target at %gs needs more than all of the rest's mass", ErrInfeasible, float64(m+1)*w)
		}
	}
	p := newPDF(len(X))
	prev := 0.0
	for k, v := range X {
		v = math.Min(math.Max(v, prev), 1)
		p[k] = v - prev
		prev = v
	}
	return build(w, p, 0), nil
}

// kernel is the pdf a of the known part of Deconvolve, read through at as
// the masses h of known ⊗ (all mass in bin 0).
type kernel []float64

// at returns hᵢ = ½(aᵢ + aᵢ₋₁), with a zero outside its bins (the
// package's convolution convention).
func (a kernel) at(i int) float64 {
	switch {
	case i < 0 || i > len(a):
		return 0
	case i == 0:
		return 0.5 * a[0]
	case i == len(a):
		return 0.5 * a[i-1]
	}
	return 0.5 * (a[i] + a[i-1])
}

// reachable checks that an instantaneous rest, all of X in bin 0, meets the
// target CDF T of bins of width w: its composition reaches
// R_m = Σ_{k≤m} h_k by edge m, the most any rest can reach at every edge at
// once. Otherwise the error wraps ErrInfeasible.
func (a kernel) reachable(T []float64, w float64) error {
	H := 0.0
	for m := range T {
		H += a.at(m)
		if H < T[m]-cdfTol {
			return fmt.Errorf("%w: even if the rest completed within the first bin, the path reaches F = %.6g by %gs where the target requires %.6g",
				ErrInfeasible, H, float64(m+1)*w, T[m])
		}
	}
	return nil
}

// raise lifts the rest's CDF X so that the composition gains def at the
// target's edge m, where X[k] is the latest bin to count: X[k] first, by
// def/h_s (s = m − k, the first bin of the known part's support), then,
// once X[k] is 1, earlier bins, latest first. It returns what it could not
// gain (0 but for rounding once reachable has passed).
func (a kernel) raise(X []float64, k, m int, def float64) float64 {
	hs := a.at(m - k)
	if inc := def / hs; X[k]+inc <= 1 {
		X[k] += inc
		return 0
	}
	def -= (1 - X[k]) * hs
	X[k] = 1
	low := k
	for j := k - 1; j >= 0 && def > cdfTol; j-- {
		hj := a.at(m - j)
		if hj <= 0 || X[j] >= 1 {
			continue
		}
		low = j
		room := 1 - X[j]
		if need := def / hj; need <= room {
			X[j] += need
			def = 0
			break
		}
		X[j] = 1
		def -= room * hj
	}
	// Bins skipped above (no effect on this edge) may now sit below an
	// earlier raised one; raise them too, which only moves mass earlier.
	for j := low + 1; j <= k; j++ {
		X[j] = math.Max(X[j], X[j-1])
	}
	return def
}
