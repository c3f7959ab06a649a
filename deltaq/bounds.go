// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import "math"

// Bounds bracket the exact ΔQ that a binned ΔQ stands for: Pessimistic is
// slower and Optimistic faster than the exact ΔQ of any inputs whose
// instances lie anywhere within their bins, F_pess(t) ≤ F(t) ≤ F_opt(t) for
// every t. The bounds of an observed ΔQ are its masses at the upper and at
// the lower edges of their bins (DeltaQ.Pessimistic, DeltaQ.Optimistic);
// the bounds of a calculated ΔQ are the inputs' bounds composed by the same
// operators, which are exact on masses at edges and monotone in the
// stochastic order. Their gap is the discretisation error of the
// calculated ΔQ; it does not shrink with the number of instances, only with
// the bin width.
type Bounds struct {
	Pessimistic, Optimistic DeltaQ
	// Strict says that the masses of Optimistic stand for delays strictly
	// above the edges they sit on, as the delays of a Spread bin
	// (i·w, (i+1)·w] are above i·w: then F(t) ≤ F_opt(t⁻), the limit from
	// the left, which at an edge leaves out the mass on it. Every operator
	// keeps it: sums, minima, maxima and mixtures of delays strictly above
	// lattice points are strictly above the resulting point. It holds for
	// bounds composed from Spread ΔQs only (BoundsOf of a Spread ΔQ, and
	// the bounds of a calculated ΔQ of observed inputs), not when an input
	// is an exact point at a lower edge (Point(0)).
	Strict bool
}

// BoundsOf returns the bounds of a ΔQ from its own bins, Strict when d is
// Spread.
func BoundsOf(d DeltaQ) Bounds {
	return Bounds{Pessimistic: d.Pessimistic(), Optimistic: d.Optimistic(), Strict: d.at == Spread}
}

// upper returns the optimistic bound's CDF at t as the bounds read it: its
// limit from the left when Strict.
func (b Bounds) upper(t float64) float64 {
	o := b.Optimistic
	if !b.Strict || o.at == Spread || len(o.pdf) == 0 {
		return o.CDF(t)
	}
	// Edges k·w < t: k = ⌈t/w⌉ − 1, an edge within the tolerance on t.
	return o.edgeCDF(math.Ceil(snapInt(t/o.width)) - 1)
}

// Width returns the largest gap between the bounds' CDFs over [0, tmax],
// sup_{t ≤ tmax} (F_opt(t) − F_pess(t)) (F_opt(t⁻) when Strict), in
// probability: how much of the
// CDF the bins leave undecided. Both bounds are step functions that change
// only at their bin edges, so the supremum is taken at those edges. A
// divergence below Width cannot be told from the binning. NaN or
// non-positive tmax gives 0.
func (b Bounds) Width(tmax float64) float64 {
	if len(b.Pessimistic.pdf) == 0 || len(b.Optimistic.pdf) == 0 || !(tmax > 0) {
		return 0
	}
	p, o := b.Pessimistic, b.Optimistic
	if p.width == o.width && p.at != Spread && o.at != Spread {
		// One grid of masses at edges, where CDF and upper are read at
		// each edge once, as edgeCDF reads them, by the index their
		// placement and shift put edge k at (edgeIndex, as beyondOnGrid).
		n := int(max(min(float64(len(p.pdf)), math.Floor(tmax/p.width+1e-9)), min(float64(len(o.pdf)), math.Floor(tmax/o.width+1e-9))))
		ip, io := p.edgeIndex(0), o.edgeIndex(int(b.upperShift()))
		w := 0.0
		// The edges lo to hi, where both indices lie within their CDFs,
		// are read without cumAt's clamps (beyondOnGrid).
		lo, hi := max(0, -io, -ip), min(n, len(o.cum)-1-io, len(p.cum)-1-ip)
		k := 0
		for ; k <= n && k < lo; k++ {
			w = runningMax(w, cumAt(o.cum, k+io)-cumAt(p.cum, k+ip))
		}
		if k == lo && lo <= hi {
			oc, pc := o.cum[lo+io:][:hi-lo+1], p.cum[lo+ip:][:hi-lo+1]
			for j := range oc {
				w = runningMax(w, oc[j]-pc[j])
			}
			k = hi + 1
		}
		for ; k <= n; k++ {
			w = runningMax(w, cumAt(o.cum, k+io)-cumAt(p.cum, k+ip))
		}
		return w
	}
	w := 0.0
	for _, g := range []DeltaQ{p, o} {
		n := math.Min(float64(len(g.pdf)), math.Floor(tmax/g.width+1e-9))
		for k := 0.0; k <= n; k++ {
			t := k * g.width
			w = math.Max(w, b.upper(t)-p.CDF(t))
		}
	}
	return w
}

// Beyond returns the distance by which obs leaves the bounds, read at obs's
// bin edges t ≤ min(dMax_obs, dMax_pess, dMax_opt), where an observed ΔQ's
// CDF is exact:
//
//	D⁺ = max_t max(0, F_pess(t) − F_obs(t), F_obs(t) − F_opt(t))
//
// (F_opt(t⁻) when Strict).
//
// For any ΔQ F between the bounds, |F_obs(t) − F(t)| ≥ D⁺ at the edge where
// D⁺ is reached, so D⁺ is at most the Kolmogorov distance between obs and
// the exact ΔQ the bounds bracket: a test of D⁺ (NewKSTest) keeps its level
// whatever the bin width, and measures only what lies beyond the
// discretisation. An obs that is not Spread is read at its edges too.
func (b Bounds) Beyond(obs DeltaQ) (float64, error) {
	if err := obs.valid("Bounds.Beyond", 0); err != nil {
		return 0, err
	}
	if err := b.Pessimistic.valid("Bounds.Beyond", 1); err != nil {
		return 0, err
	}
	if err := b.Optimistic.valid("Bounds.Beyond", 2); err != nil {
		return 0, err
	}
	m := math.Min(obs.DMax(), math.Min(b.Pessimistic.DMax(), b.Optimistic.DMax()))
	n := len(obs.pdf)
	d := 0.0
	for k := 1; k <= n; k++ {
		t := float64(k) * obs.width
		if t > m*(1+1e-9) {
			break
		}
		f := obs.edgeCDF(float64(k))
		d = math.Max(d, math.Max(b.Pessimistic.CDF(t)-f, f-b.upper(t)))
	}
	return d, nil
}

// BeyondBounds returns the distance by which the observed ΔQ, known only
// within its own bounds obs (a ΔQ read on a grid finer than the buckets it
// was counted in), leaves the bounds b:
//
//	D⁺ = max_t max(0, F_pess(t) − O_opt(t), O_pess(t) − F_opt(t))
//
// (optimistic CDFs read from the left when Strict), taken at every bin
// edge of the four ΔQs up to the smallest of their dMax, where the step
// functions change. For any F between b's bounds and any observed CDF O
// between obs's, |O(t) − F(t)| ≥ D⁺ at the edge where D⁺ is reached, so
// D⁺ is at most the Kolmogorov distance between the exact observed and
// calculated ΔQs: a test of D⁺ (NewKSTest) keeps its level whatever the
// resolution of either. With obs = BoundsOf(o) of a Spread o, exact at its
// own edges, it is Beyond(o) read at the edges of all four.
func (b Bounds) BeyondBounds(obs Bounds) (float64, error) {
	ds := [4]DeltaQ{b.Pessimistic, b.Optimistic, obs.Pessimistic, obs.Optimistic}
	m := math.Inf(1)
	for i, d := range ds {
		if err := d.valid("Bounds.BeyondBounds", i); err != nil {
			return 0, err
		}
		m = math.Min(m, d.DMax())
	}
	if w := ds[0].width; sameWidth(w, ds[1].width) && sameWidth(w, ds[2].width) && sameWidth(w, ds[3].width) {
		return b.beyondOnGrid(obs, int(math.Min(math.Floor(m/w+1e-9), float64(len(ds[0].pdf))))), nil
	}
	dist := 0.0
	for _, g := range ds {
		for k := 1; k <= len(g.pdf); k++ {
			t := float64(k) * g.width
			if t > m*(1+1e-9) {
				break
			}
			dist = math.Max(dist, math.Max(b.Pessimistic.CDF(t)-obs.upper(t), obs.Pessimistic.CDF(t)-b.upper(t)))
		}
	}
	return dist, nil
}

// beyondOnGrid is BeyondBounds when the four ΔQs share one grid, read at
// its first n edges without locating them. Each is read at the edge k as
// edgeCDF(k) (upper as edgeCDF(k − shift)) is, by the index its placement
// and shift put edge k at (edgeIndex), worked out once for all edges.
func (b Bounds) beyondOnGrid(obs Bounds, n int) float64 {
	bp, bo := b.Pessimistic, b.Optimistic
	op, oo := obs.Pessimistic, obs.Optimistic
	ibp, ibo := bp.edgeIndex(0), bo.edgeIndex(int(b.upperShift()))
	iop, ioo := op.edgeIndex(0), oo.edgeIndex(int(obs.upperShift()))
	read := func(k int) (float64, float64) {
		return cumAt(bp.cum, k+ibp) - cumAt(oo.cum, k+ioo), cumAt(op.cum, k+iop) - cumAt(bo.cum, k+ibo)
	}
	// The edges lo to hi, where every index lies within its CDF, are read
	// without cumAt's clamps, from slices of one length.
	lo := max(1, -ibp, -ioo, -iop, -ibo)
	hi := min(n, len(bp.cum)-1-ibp, len(oo.cum)-1-ioo, len(op.cum)-1-iop, len(bo.cum)-1-ibo)
	dist := 0.0
	k := 1
	for ; k <= n && (k < lo || k > hi); k++ {
		x, y := read(k)
		dist = runningMax(runningMax(dist, x), y)
	}
	if k == lo && lo <= hi {
		m := hi - lo + 1
		p1, o1 := bp.cum[lo+ibp:][:m], oo.cum[lo+ioo:][:m]
		p2, o2 := op.cum[lo+iop:][:m], bo.cum[lo+ibo:][:m]
		for j := range p1 {
			dist = runningMax(runningMax(dist, p1[j]-o1[j]), p2[j]-o2[j])
		}
		k = hi + 1
	}
	for ; k <= n; k++ {
		x, y := read(k)
		dist = runningMax(runningMax(dist, x), y)
	}
	return dist
}

// runningMax is max(m, v) for a running maximum m started at +0: NaN once
// either is, as the builtin, which also orders −0 below +0, a case m,
// never −0, does not meet. A comparison rather than the builtin's
// sequence, in the loops over the edges of a ΔQ.
func runningMax(m, v float64) float64 {
	if v > m || v != v {
		return v
	}
	return m
}

// edgeIndex returns the offset o such that edgeCDF(k − shift), for whole
// k and shift, is cumAt(cum, k + o): the CDF at the edge j is the
// cumulative mass of bin j − 1, or of bin j for masses at lower edges.
func (d DeltaQ) edgeIndex(shift int) int {
	if d.at == LowerEdges {
		return -shift
	}
	return -1 - shift
}

// cumAt returns cum[i], 0 before the first bin and the last value beyond
// the last: edgeCDF's reading of a nonempty ΔQ's cumulative masses.
func cumAt(cum []float64, i int) float64 {
	if i < 0 {
		return 0
	}
	return cum[min(i, len(cum)-1)]
}

// upperShift returns s such that upper at the edge k·w of the optimistic
// bound's own grid is Optimistic.edgeCDF(k − s): its limit from the left,
// the edge before, when Strict.
func (b Bounds) upperShift() float64 {
	if !b.Strict || b.Optimistic.at == Spread {
		return 0
	}
	return 1
}
