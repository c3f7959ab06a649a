// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"gonum.org/v1/gonum/stat/distuv"
)

// ConfidenceBand is the per-bin mean of the CDFs of a window of K ΔQs with
// a 95 % confidence band (thesis §4.1.5, §5.1.3). All slices hold values at
// the bin edges (i+1)·Width, like DeltaQ.CDFEdges.
type ConfidenceBand struct {
	Width float64
	// K is the number of ΔQs in the window.
	K int
	// Mean is μᵢ = (1/K)·Σⱼ Fⱼ((i+1)·w), itself a CDF (thesis (5.7)).
	Mean []float64
	// Lower and Upper are μᵢ ∓ t(0.975, K−1)·sᵢ/√K, with sᵢ the sample
	// standard deviation (K − 1 in the denominator): the Student t
	// interval the thesis's (5.9) misprints as μᵢ·σᵢ/√n. Where the ΔQs'
	// instance counts are known, the band is widened to hold at least the
	// Wilson score interval of μᵢ as a binomial proportion of the window's
	// effective instances n = K²/Σⱼ(1/nⱼ) (nⱼ those of ΔQ j), so that it
	// never shrinks below what its instances can tell: a CDF near 0 or 1
	// read from few instances per ΔQ has every ΔQ read the same, sᵢ = 0
	// and a t interval of a point, which misses the true CDF far more
	// often than 5 %. With many instances per ΔQ the two are about as
	// wide, the t interval the wider where the ΔQs truly differ (then the
	// band is the t interval). Both are clamped to [0, 1]. For
	// K = 1 nothing bounds the spread between ΔQs and the band is [0, 1].
	Lower, Upper []float64
	// At is nil for a band at every bin edge. A band kept at a few edges
	// only (NewRunningBandAt) holds in Mean, Lower and Upper one value
	// for each bin of At (CurveEdges, increasing, ending at the last
	// bin), at its right edge. At is shared: not to be modified.
	At []int
}

// Bins returns the number of bins of the band's ΔQs.
func (b ConfidenceBand) Bins() int {
	if len(b.At) > 0 {
		return b.At[len(b.At)-1] + 1
	}
	return len(b.Mean)
}

// CurveEdges returns the bins, of bins bins, at whose right edges a curve
// of at most about points points is read: every stride-th bin, stride =
// ⌈bins/points⌉, and the last; every bin when points ≤ 0 or bins ≤ points.
func CurveEdges(bins, points int) []int {
	stride := 1
	if points > 0 && bins > points {
		stride = (bins + points - 1) / points
	}
	idx := make([]int, 0, bins/stride+1)
	for i := stride - 1; i < bins; i += stride {
		idx = append(idx, i)
	}
	if bins > 0 && idx[len(idx)-1] != bins-1 {
		idx = append(idx, bins-1)
	}
	return idx
}

// Band computes the confidence band of a window of ΔQs, typically the last
// K observed ΔQs of a probe. The window is aligned first (Align); K ≥ 1.
// RunningBand keeps the same band up to date as ΔQs come and go.
func Band(window []DeltaQ) (ConfidenceBand, error) {
	var b ConfidenceBand
	err := BandInto(&b, window)
	return b, err
}

// BandInto is Band writing into dst, reusing its slices when they are large
// enough: with a window of equal shapes it allocates nothing.
func BandInto(dst *ConfidenceBand, window []DeltaQ) error {
	if len(window) == 0 {
		return fmt.Errorf("deltaq: Band: empty window")
	}
	ds := window
	for i, d := range window {
		if err := d.valid("Band", i); err != nil {
			return err
		}
		if !sameWidth(d.width, window[0].width) {
			al, err := alignWidths("Band", window)
			if err != nil {
				return err
			}
			ds = al
			break
		}
	}
	n := 0
	for _, d := range ds {
		n = max(n, len(d.pdf))
	}
	dst.Width, dst.K = ds[0].width, len(ds)
	dst.Mean = resize(dst.Mean, n)
	dst.Lower = resize(dst.Lower, n)
	dst.Upper = resize(dst.Upper, n)
	// The sums of squared deviations live in Upper until the bounds are
	// formed.
	moments(dst.Mean, dst.Upper, len(ds), func(j int) []float64 {
		if ds[j].at == LowerEdges {
			return ds[j].CDFEdges(nil)
		}
		return ds[j].cum
	})
	var inv float64
	known := true
	for _, d := range ds {
		if d.count <= 0 {
			known = false
			break
		}
		inv += 1 / float64(d.count)
	}
	fillBand(dst.Mean, dst.Upper, dst.Lower, dst.Upper, len(ds), effectiveInstances(len(ds), inv, known))
	return nil
}

// effectiveInstances returns n = K²/Σⱼ(1/nⱼ), the number of instances of
// a single binomial proportion whose variance p(1 − p)/n is that of the
// mean of K proportions of nⱼ instances each, from inv = Σⱼ(1/nⱼ); 0 when
// some nⱼ is unknown (known false).
func effectiveInstances(k int, inv float64, known bool) float64 {
	if !known || !(inv > 0) {
		return 0
	}
	return float64(k) * float64(k) / inv
}

// moments sets mean[i] to the mean of the k rows' values at i and m2[i] to
// the sum of their squared deviations from it, in two passes (mean, then
// deviations) for accuracy, the first row subtracted from the others while
// summing so that equal values give their value and no spread exactly. A
// row shorter than mean keeps its last value beyond its end: a CDF is flat
// beyond its dMax.
func moments(mean, m2 []float64, k int, row func(j int) []float64) {
	at := func(c []float64, i int) float64 { return c[min(i, len(c)-1)] }
	ref := row(0)
	clear(mean)
	for j := 1; j < k; j++ {
		c := row(j)
		for i := range mean {
			mean[i] += at(c, i) - at(ref, i)
		}
	}
	inv := 1 / float64(k)
	for i := range mean {
		mean[i] = at(ref, i) + mean[i]*inv
	}
	clear(m2)
	for j := range k {
		c := row(j)
		for i := range m2 {
			e := at(c, i) - mean[i]
			m2[i] += e * e
		}
	}
}

// fillBand forms the band of k values per bin from their means and sums of
// squared deviations m2: the half-width is t(0.975, k−1)·sᵢ/√k with
// sᵢ² = m2ᵢ/(k − 1), widened to the Wilson score interval of μᵢ over n
// instances when n > 0, and mean, lower and upper are clamped to [0, 1].
// With k = 1 the band is [0, 1]. m2 may be upper (it is read before
// written).
func fillBand(mean, m2, lower, upper []float64, k int, n float64) {
	if k == 1 {
		for i, mu := range mean {
			mean[i], lower[i], upper[i] = min(mu, 1), 0, 1
		}
		return
	}
	f := studentT975(k-1) / math.Sqrt(float64(k)*float64(k-1))
	for i, mu := range mean {
		h := 0.0
		if v := m2[i]; v > 0 { // rounding of a running update can leave v < 0
			h = f * math.Sqrt(v)
		}
		mu = min(mu, 1)
		lo, hi := mu-h, mu+h
		if n > 0 {
			wl, wh := wilson(max(mu, 0), n)
			lo, hi = min(lo, wl), max(hi, wh)
		}
		mean[i] = mu
		lower[i] = max(lo, 0)
		upper[i] = min(hi, 1)
	}
}

// z975 is the 97.5 % quantile of the standard normal distribution.
const z975 = 1.959963984540054

// wilson returns the 95 % Wilson score interval of a binomial proportion p
// observed over n instances (E. B. Wilson, "Probable inference, the law of
// succession, and statistical inference", JASA 22, 1927): the p₀ with
// |p − p₀| ≤ z·√(p₀(1 − p₀)/n), which unlike p ± z·√(p(1 − p)/n) keeps a
// width at p = 0 or 1, where every instance read the same. n need not be
// whole.
func wilson(p, n float64) (lo, hi float64) {
	z2n := z975 * z975 / n
	c := (p + z2n/2) / (1 + z2n)
	h := z975 / (1 + z2n) * math.Sqrt(p*(1-p)/n+z2n/(4*n))
	return c - h, c + h
}

// MeanDeltaQ returns the window's mean CDF as a ΔQ, of a band at every
// bin edge.
func (b ConfidenceBand) MeanDeltaQ() (DeltaQ, error) {
	if b.At != nil {
		return DeltaQ{}, fmt.Errorf("deltaq: MeanDeltaQ: a band at %d of %d edges is no CDF", len(b.At), b.Bins())
	}
	return FromCDF(b.Width, b.Mean)
}

// RunningBand is the confidence band of the last K ΔQs pushed, kept up to
// date as they come and go (thesis §4.1.5: "the bounds can be updated
// dynamically by inserting or removing a ΔQ"): a ring of their CDFs at the
// bin edges with the running mean and sum of squared deviations of each
// edge, so that a push costs O(N) for N bins rather than the O(K·N) of Band
// over the window. It holds K + 1 rows of N values (of the edges kept,
// NewRunningBandAt) and the K ΔQs' instances. The running sums are recomputed from the ring every K
// pushes (as Band computes them), so that rounding from adding and removing
// does not accumulate over a long run. All ΔQs of a window have one layout:
// a ΔQ of another bin width or bin count starts the window afresh, since
// CDFs of different bins cannot be averaged bin by bin. Each edge's sums
// are its own, so that a band kept at a few edges only (NewRunningBandAt)
// has there the values of a band at every edge, to the bit. The zero value
// is not usable; see NewRunningBand.
type RunningBand struct {
	k     int
	width float64
	bins  int
	// points bounds the edges kept (CurveEdges), at those of the window's
	// ΔQs; at is nil when every edge is kept.
	points int
	at     []int
	ring   [][]float64 // CDFs at the edges kept; the oldest at head once full
	spare  []float64   // the row the next push fills
	head   int
	n      int
	mean   []float64
	m2     []float64
	// insts holds the instances behind each row of ring (0: unknown),
	// inv the sum of their reciprocals and unknown the number of rows of
	// unknown instances in the window, for the band's binomial floor.
	insts   []float64
	inv     float64
	unknown int
}

// NewRunningBand returns an empty RunningBand over the last k ΔQs, k ≥ 1.
func NewRunningBand(k int) (*RunningBand, error) {
	return NewRunningBandAt(k, 0)
}

// NewRunningBandAt returns an empty RunningBand over the last k ΔQs,
// k ≥ 1, that keeps the band only at the right edges of CurveEdges(N,
// points) of its ΔQs' N bins, where a curve of points points reads it: a
// push then costs O(points) rather than O(N), and the window holds
// (K + 3)·points values. With points ≤ 0 it keeps every edge, as
// NewRunningBand.
func NewRunningBandAt(k, points int) (*RunningBand, error) {
	if k < 1 {
		return nil, fmt.Errorf("deltaq: RunningBand: window size %d must be ≥ 1", k)
	}
	return &RunningBand{k: k, points: max(points, 0)}, nil
}

// Points returns the bound on the edges the band keeps, 0 for every edge.
func (r *RunningBand) Points() int { return r.points }

// Len returns the number of ΔQs in the window, at most K.
func (r *RunningBand) Len() int { return r.n }

// K returns the number of ΔQs the band keeps.
func (r *RunningBand) K() int { return r.k }

// Push adds d as the newest ΔQ of the window; once the window holds K, the
// oldest leaves it. The band's binomial floor takes d's Count as its
// instances: PushInstances for instances that were sampled.
func (r *RunningBand) Push(d DeltaQ) error {
	return r.push("RunningBand.Push", d, float64(d.count))
}

// PushInstances is Push of a ΔQ read from n independent instances, Kish's
// effective count (Σw)²/Σw² of the instances when they were sampled with
// weights w, since its Count then overstates what its CDF can tell; n ≤ 0
// (or NaN) when unknown, which leaves the band without its binomial floor
// while d is in the window.
func (r *RunningBand) PushInstances(d DeltaQ, n float64) error {
	return r.push("RunningBand.PushInstances", d, n)
}

func (r *RunningBand) push(op string, d DeltaQ, n float64) error {
	if err := d.valid(op, 0); err != nil {
		return err
	}
	if !(n > 0) || math.IsInf(n, 1) {
		n = 0
	}
	d = d.edgeSpread()
	if r.n > 0 && (len(d.cum) != r.bins || !sameWidth(d.width, r.width)) {
		r.n, r.head = 0, 0
	}
	if r.n == 0 {
		r.width, r.bins, r.at = d.width, len(d.cum), nil
		cols := r.bins
		if r.points > 0 && r.bins > r.points {
			r.at = CurveEdges(r.bins, r.points)
			cols = len(r.at)
		}
		r.mean = resize(r.mean, cols)
		r.m2 = resize(r.m2, cols)
		clear(r.mean)
		clear(r.m2)
		if r.ring == nil {
			r.ring = make([][]float64, r.k)
			r.insts = make([]float64, r.k)
		}
		r.inv, r.unknown = 0, 0
	}
	x := r.row(d)
	old := r.ring[r.head]
	if r.n == r.k {
		r.forget(r.insts[r.head])
		// Replace old by x: μ' = μ + (x − o)/K and, from
		// M2 = Σv² − K·μ², M2' = M2 + (x − o)·(x + o − μ' − μ).
		inv := 1 / float64(r.k)
		for i, v := range x {
			o, mu := old[i], r.mean[i]
			nu := mu + (v-o)*inv
			r.m2[i] += (v - o) * (v + o - nu - mu)
			r.mean[i] = nu
		}
	} else {
		// Welford's update: μ' = μ + (x − μ)/n', M2' = M2 + (x − μ)·(x − μ').
		r.n++
		inv := 1 / float64(r.n)
		for i, v := range x {
			e := v - r.mean[i]
			r.mean[i] += e * inv
			r.m2[i] += e * (v - r.mean[i])
		}
	}
	r.remember(n)
	r.ring[r.head], r.insts[r.head], r.spare = x, n, old
	r.head = (r.head + 1) % r.k
	if r.head == 0 {
		// The ring holds the window oldest first: re-sum it as Band does.
		moments(r.mean, r.m2, r.n, func(j int) []float64 { return r.ring[j] })
		r.inv, r.unknown = 0, 0
		for _, v := range r.insts[:r.n] {
			r.remember(v)
		}
	}
	return nil
}

// remember and forget add to and remove from the window's instance sums a
// row of n instances, 0 for unknown.
func (r *RunningBand) remember(n float64) {
	if n > 0 {
		r.inv += 1 / n
	} else {
		r.unknown++
	}
}

func (r *RunningBand) forget(n float64) {
	if n > 0 {
		r.inv -= 1 / n
	} else {
		r.unknown--
	}
}

// Resized returns a RunningBand over the last k ΔQs, k ≥ 1, that holds
// the last min(k, Len()) ΔQs of r, at its edges, and keeps r's points: the
// band of a window whose length a reload changed goes on with the ΔQs it
// has. Its band is that of Band over those ΔQs. r is left as it was.
func (r *RunningBand) Resized(k int) (*RunningBand, error) {
	nb, err := NewRunningBandAt(k, r.points)
	if err != nil || r.n == 0 {
		return nb, err
	}
	m := min(r.n, k)
	nb.width, nb.bins, nb.at = r.width, r.bins, r.at
	nb.ring, nb.insts = make([][]float64, k), make([]float64, k)
	// The oldest of r's ΔQs is at 0 until its ring is full, at head after.
	first := 0
	if r.n == r.k {
		first = r.head
	}
	for j := range m {
		src := (first + r.n - m + j) % r.k
		nb.ring[j], nb.insts[j] = slices.Clone(r.ring[src]), r.insts[src]
		nb.remember(nb.insts[j])
	}
	nb.n, nb.head = m, m%k
	nb.mean = make([]float64, len(r.mean))
	nb.m2 = make([]float64, len(r.m2))
	moments(nb.mean, nb.m2, m, func(j int) []float64 { return nb.ring[j] })
	return nb, nil
}

// row returns the CDF at the kept edges of d, a Spread ΔQ of the window's
// layout, in the spare row.
func (r *RunningBand) row(d DeltaQ) []float64 {
	if r.at == nil {
		return d.CDFEdges(r.spare)
	}
	x := resize(r.spare, len(r.at))
	for j, i := range r.at {
		x[j] = d.cum[i]
	}
	return x
}

// Band returns the mean and 95 % band of the ΔQs in the window, those of
// Band over the same ΔQs up to rounding (identical right after each
// re-summation), at the edges kept (ConfidenceBand.At), or false when the
// window is empty. The band's slices are its own, but for At.
func (r *RunningBand) Band() (ConfidenceBand, bool) {
	if r.n == 0 {
		return ConfidenceBand{}, false
	}
	n := len(r.mean)
	// One allocation for the band's three curves.
	s := make([]float64, 3*n)
	b := ConfidenceBand{Width: r.width, K: r.n,
		Mean: s[:n:n], Lower: s[n : 2*n : 2*n], Upper: s[2*n:], At: r.at}
	copy(b.Mean, r.mean)
	fillBand(b.Mean, r.m2, b.Lower, b.Upper, r.n, effectiveInstances(r.n, r.inv, r.unknown == 0))
	return b, true
}

func resize(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

var (
	tMu    sync.Mutex
	tCache = map[int]float64{}
)

// studentT975 returns t(0.975, ν), the 97.5 % quantile of Student's t
// distribution with ν degrees of freedom (the two-sided 95 % interval).
// Values are memoised, for at most 4096 ν: the inverse incomplete beta
// function is too slow to run per probe per window.
func studentT975(nu int) float64 {
	tMu.Lock()
	defer tMu.Unlock()
	if t, ok := tCache[nu]; ok {
		return t
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(nu)}.Quantile(0.975)
	if len(tCache) < 4096 {
		tCache[nu] = t
	}
	return t
}
