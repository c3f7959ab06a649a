// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// The analysis resolution: one log-linear layout (LogLinear) that every
// observer uses for every probe, whatever bins its user chose to see, so
// that the analysis of a probe does not depend on its display and the
// windows of any observers merge by adding counts, with nothing to agree.
//
// Delays below FineLow (1.024 µs) share bucket [0, FineLow); above, each
// power of two [2ᵐ·FineLow, 2ᵐ⁺¹·FineLow) is cut into 64 buckets of
// width 2ᵐ·FineLow/64, up to FineHigh (2³⁷·FineLow ≈ 39 h, beyond MaxDMax).
// A bucket [a, b) is then at most 1/64 of a wide, and a delay read as its
// bucket's midpoint is off by at most FineRelativeError = 1/128 < 1 % of
// itself. The layout has 1 + 37·64 = 2,369 buckets: 18.5 KiB of counts.
// The bucket of a delay is found by its bit length in constant time
// (LogLinearIndex with factor 2).
const (
	// FineLow is the analysis resolution's lowest magnitude, in ns.
	FineLow = 1 << 10
	// FineMagnitudes is its number of powers of two.
	FineMagnitudes = 37
	// FineHigh is its largest delay, in ns: FineLow·2^FineMagnitudes.
	FineHigh = FineLow << FineMagnitudes
	// FineSteps is its llquantize steps a magnitude: 64 buckets each.
	FineSteps = 128
	// FineRelativeError bounds |d − m|/d for a delay d ≥ FineLow and the
	// midpoint m of its bucket.
	FineRelativeError = 1.0 / FineSteps
)

// FineLayout returns the analysis resolution's layout.
func FineLayout() LogLinear {
	return LogLinear{Factor: 2, Low: FineLow, High: FineHigh, Steps: FineSteps}
}

// Fine holds the edges and the index of the analysis resolution, computed
// once and shared, read-only, by every histogram NewHistogram makes.
type Fine struct {
	edges []int64
	index *LogLinearIndex
}

// NewFine returns the analysis resolution's edges and index.
func NewFine() *Fine {
	l := FineLayout()
	edges, err := l.Edges()
	if err != nil {
		panic(fmt.Sprintf("deltaq: the analysis layout is invalid: %v", err)) // a constant layout
	}
	x, _ := l.Index()
	return &Fine{edges: edges, index: x}
}

// Buckets returns the number of buckets of the analysis resolution.
func (f *Fine) Buckets() int { return len(f.edges) - 1 }

// Edges returns the bucket edges, in ns (LogLinear.Edges); not to be
// modified.
func (f *Fine) Edges() []int64 { return f.edges }

// NewHistogram returns an empty histogram of the analysis resolution. Its
// AddN finds a bucket in constant time.
func (f *Fine) NewHistogram() *LogLinearHistogram {
	return &LogLinearHistogram{layout: FineLayout(), edges: f.edges, index: f.index, tally: tally{counts: make([]uint64, len(f.edges)-1)}}
}

// Grid returns the ΔQ of h's instances on the grid of bins bins of width
// width seconds, cut at cut ns: each bucket's mass spread uniformly over
// its span and shared among the bins it overlaps (LogLinearSpread); the
// mass of delays beyond cut (of a bucket that straddles it, the share of
// its span beyond it) or beyond bins·width, with timeouts and failures, is
// intangible. Count is Total. It is how a probe's analysis-resolution
// counts become the ΔQ that the operators compose and the tests read, up
// to any dMax (cut), on a grid that need not end at it.
func (h *LogLinearHistogram) Grid(width float64, bins int, cut int64) (DeltaQ, error) {
	n := h.Total()
	if n == 0 {
		return DeltaQ{}, ErrEmpty
	}
	if err := checkShape(width, bins); err != nil {
		return DeltaQ{}, err
	}
	// The CDF at each grid edge from the counts of the buckets below it,
	// a whole number until the bucket it falls in, so that it is exact
	// (one division) wherever a bucket ends: summing the bins' masses
	// would leave it a few units in the last place off, and a quantile at
	// such an edge in the next bucket.
	k := h.below(cut)
	pdf := newPDF(bins)
	cum := pdf[bins : 2*bins : 2*bins]
	pdf = pdf[:bins:bins]
	first, last := 0, k-1 // the occupied buckets below cut lie in [first, last]
	for first < k && h.counts[first] == 0 {
		first++
	}
	for last >= first && h.counts[last] == 0 {
		last--
	}
	if first > last {
		return build(width, pdf, n), nil // nothing completed within cut
	}
	var below float64 // instances of the buckets wholly below the edge
	j := first
	i := min(int(float64(h.edges[first])/1e9/width), bins) // bins before hold nothing
	prevC, prevF := 0.0, 0.0                               // the last c, and c/n
	// Bucket j's edges a and b (within cut) and its share, read once for
	// the bins it spans: above the resolution's finest buckets a bucket
	// spans many bins.
	a, b, share := float64(h.edges[j]), float64(min(h.edges[j+1], cut)), h.share(j, cut)
	for ; i < bins && j <= last; i++ {
		x := float64(i+1) * width * 1e9 // ns
		for j <= last && b <= x*(1+1e-12) {
			below += share
			j++
			if j <= last {
				a, b, share = float64(h.edges[j]), float64(min(h.edges[j+1], cut)), h.share(j, cut)
			}
		}
		c := below
		// An empty bucket adds nothing (0·(x − a)/(b − a) is +0).
		if j <= last && x > a && share != 0 {
			c += share * (x - a) / (b - a)
		}
		if c != prevC {
			// An edge in an empty bucket has the last edge's c: its
			// division is the last one.
			prevC, prevF = c, c/float64(n)
		}
		cum[i] = prevF
	}
	// Beyond the last occupied bucket, from bin i on, the CDF is flat.
	gridSteps(pdf, cum, i, below/float64(n))
	return DeltaQ{width: width, pdf: pdf, cum: cum, count: n}, nil
}

// gridSteps makes the CDF cum of a reading non-decreasing, its running
// maximum, and the masses pdf, zeroed (newPDF), its steps; cum holds its
// values below tail, and from tail on it is flat at rest. The flat tail
// takes the running maximum at once and its one step, its later steps
// being +0, the zeros pdf holds.
func gridSteps(pdf, cum []float64, tail int, rest float64) {
	prev := 0.0
	pdf = pdf[:len(cum)] // no bounds check in the loop
	for i, c := range cum[:tail] {
		// max(c, prev) without its NaN and signed-zero cases: every c is
		// a finite quotient of counts ≥ +0.
		if c < prev {
			c = prev
		}
		cum[i] = c
		pdf[i] = c - prev
		prev = c
	}
	if tail < len(cum) {
		if rest < prev {
			rest = prev
		}
		fill(cum[tail:], rest)
		pdf[tail] = rest - prev
	}
}

// Head returns the first bins bins of d, 1 ≤ bins ≤ d.Bins(), the mass
// beyond them intangible, sharing d's memory (a ΔQ is never changed once
// built).
// Unlike Truncate, which sums the bins again, each bin keeps d's own CDF:
// Grid and GridBounds read each bin from the buckets below its edges
// alone, so Head(n) of a reading on more bins is the reading on n bins of
// the same width and cut, to the bit, without reading the counts again.
func (d DeltaQ) Head(bins int) DeltaQ {
	if bins < len(d.pdf) {
		d.pdf, d.cum = d.pdf[:bins:bins], d.cum[:bins:bins]
	}
	return d
}

// share returns the instances of bucket j that Grid reads within cut: all
// of them, or of a bucket that straddles cut the share of its span below.
func (h *LogLinearHistogram) share(j int, cut int64) float64 {
	c := float64(h.counts[j])
	if b := h.edges[j+1]; b > cut {
		a := h.edges[j]
		c *= float64(cut-a) / float64(b-a)
	}
	return c
}

// below returns the number of buckets whose lower edge is below cut ns.
func (h *LogLinearHistogram) below(cut int64) int {
	if cut <= 0 {
		return 0
	}
	if h.index != nil {
		return min(h.index.Bucket(cut-1)+1, len(h.counts))
	}
	return min(LogLinearBucket(h.edges, cut-1)+1, len(h.counts))
}

// Reach returns the upper edge, in ns, of the last bucket that holds a
// success below cut ns, at most cut; 0 when there is none: the grid a
// reading up to cut needs covers [0, Reach(cut)], and nothing lies beyond.
func (h *LogLinearHistogram) Reach(cut int64) int64 {
	for j := h.below(cut) - 1; j >= 0; j-- {
		if h.counts[j] != 0 {
			return min(h.edges[j+1], cut)
		}
	}
	return 0
}

// Within returns the number of recorded successes that may have completed
// within d ns: those of every bucket whose lower edge is at most d. It
// bounds from above the number whose delay is at most d, so that a test of
// too few completions within d never blames the buckets.
func (h *LogLinearHistogram) Within(d int64) uint64 {
	var n uint64
	for _, c := range h.counts[:h.below(d+1)] {
		n += c
	}
	return n
}

// SurelyWithin returns the number of recorded successes that completed
// within d ns wherever they lie in their buckets: those of every bucket
// whose upper edge is at most d. It bounds from below the number whose
// delay is at most d, as Within bounds it from above; the two differ by
// the count of the bucket that holds d.
func (h *LogLinearHistogram) SurelyWithin(d int64) uint64 {
	var n uint64
	for j, c := range h.counts[:h.below(d)] {
		if h.edges[j+1] > d {
			break
		}
		n += c
	}
	return n
}

// QuantileRange returns the range [lo, hi], in seconds, of the q-quantile
// of all the recorded instances within cut ns (Quantile) wherever the
// instances lie in their buckets: the edges of the bucket in which a
// fraction q is reached, its upper edge at most cut. ok is false when
// Quantile's is.
func (h *LogLinearHistogram) QuantileRange(q float64, cut int64) (lo, hi float64, ok bool) {
	n := float64(h.Total())
	if !(n > 0) || math.IsNaN(q) || q < 0 || q > 1 {
		return 0, 0, false
	}
	need := q * n
	if need <= 0 {
		return 0, 0, true
	}
	acc := 0.0
	for j, c := range h.counts[:h.below(cut)] {
		if c == 0 {
			continue
		}
		a, b := h.edges[j], min(h.edges[j+1], cut)
		acc += float64(c) * float64(b-a) / float64(h.edges[j+1]-a)
		if acc >= need*(1-1e-12) {
			return float64(a) / 1e9, float64(b) / 1e9, true
		}
	}
	return 0, 0, false
}

// Least returns the lower edge, in seconds, of the first bucket below cut
// ns that holds an instance: a lower bound of the least delay recorded
// within cut, short of it by less than its bucket's width (at most 1/64 of
// the delay for the analysis resolution, Fine). ok is false when no
// instance completed within cut.
func (h *LogLinearHistogram) Least(cut int64) (float64, bool) {
	for j, c := range h.counts[:h.below(cut)] {
		if c > 0 {
			return float64(h.edges[j]) / 1e9, true
		}
	}
	return 0, false
}

// GridBounds returns the bounds (Bounds) of Grid(width, bins, cut) for
// instances anywhere in their buckets: each bucket [a, b)'s mass goes whole
// to the first grid edge at or above b (pessimistic; intangible when b is
// beyond cut) and to the last grid edge strictly below a (optimistic; the
// first bucket to 0; intangible when a is at or beyond cut); a mass whose
// edge lies beyond the grid is intangible too. Grid spreads a bucket over
// the bins it overlaps, so moving each grid bin's mass to an edge would not
// bound its instances. The bounds are Strict (an instance of exactly 0
// delay is the one exception the strict reading misses).
func (h *LogLinearHistogram) GridBounds(width float64, bins int, cut int64) (Bounds, error) {
	n := h.Total()
	if n == 0 {
		return Bounds{}, ErrEmpty
	}
	if err := checkShape(width, bins); err != nil {
		return Bounds{}, err
	}
	// Whole counts, so that the bounds' CDFs are exact (counted). A
	// bucket's bins do not decrease with it: the counts go straight in.
	pess, opt := newCounted(bins, n), newCounted(bins, n)
	for j, c := range h.counts[:h.below(cut)] {
		if c == 0 {
			continue
		}
		lo, hi := float64(h.edges[j])/1e9, float64(h.edges[j+1])/1e9
		if up := int(math.Ceil(hi/width-1e-9)) - 1; up < bins && h.edges[j+1] <= cut { // bin whose upper edge is ≥ hi
			pess.add(max(up, 0), c)
		}
		if down := max(int(math.Ceil(lo/width-1e-9))-1, 0); down < bins { // last edge < lo
			opt.add(down, c)
		}
	}
	p, o := pess.deltaQ(width), opt.deltaQ(width)
	p.at, o.at = UpperEdges, LowerEdges
	return Bounds{Pessimistic: p, Optimistic: o, Strict: true}, nil
}

// Quantile returns the smallest delay t, in seconds, by which a fraction q
// of all the recorded instances completed within cut ns (timeouts and
// failures never complete), reading the instances as uniform within their
// buckets, a bucket that straddles cut as its share within it: within the
// bucket of the true sample quantile, so off by less than its width (at
// most 1/64 of the delay for the analysis resolution, Fine). ok is false
// when fewer than q of the instances completed within cut, and for q
// outside [0, 1] or NaN, as DeltaQ.Quantile.
func (h *LogLinearHistogram) Quantile(q float64, cut int64) (float64, bool) {
	n := float64(h.Total())
	if !(n > 0) || math.IsNaN(q) || q < 0 || q > 1 {
		return 0, false
	}
	need := q * n
	if need <= 0 {
		return 0, true
	}
	acc := 0.0
	for j, c := range h.counts[:h.below(cut)] {
		if c == 0 {
			continue
		}
		a, b, m := h.withinCut(j, c, cut)
		if acc+m >= need*(1-1e-12) {
			f := math.Min(math.Max((need-acc)/m, 0), 1)
			return (float64(a) + f*float64(b-a)) / 1e9, true
		}
		acc += m
	}
	return 0, false
}

// AnalysisBins bounds the bins of the uniform grid on which the analysis
// resolution's counts are composed and tested (AnalysisWidth).
const AnalysisBins = 4096

// AnalysisWidth returns the grid width, in seconds, for an analysis range
// of rangeNs nanoseconds (the largest dMax of the probes a diagram
// composes): the narrowest width FineLow/64·2ᵏ (the analysis
// resolution's narrowest bucket but the first, times a power of two) whose
// AnalysisBins bins cover rangeNs. Widths of different ranges are then
// whole multiples of each other, so that ΔQs of different windows and
// probes align exactly (Rebin), and the grid is at most twice as coarse as
// rangeNs/AnalysisBins.
func AnalysisWidth(rangeNs int64) float64 {
	w := int64(FineLow / 64)
	for w*AnalysisBins < rangeNs && w < FineHigh {
		w *= 2
	}
	return float64(w) / 1e9
}

// GridBins returns the bins of width width (seconds) that cover dMax ns:
// ⌈dMax/width⌉, at least 1, within rounding of a whole number.
func GridBins(dmaxNs int64, width float64) int {
	return max(int(math.Ceil(snapInt(float64(dmaxNs)/1e9/width))), 1)
}

// WithCount returns d counted from n instances (Count), as when d was
// read on another grid from a ΔQ of n instances.
func (d DeltaQ) WithCount(n int64) DeltaQ {
	d.count = n
	return d
}

// Sparse returns the occupied buckets of h, increasing, and their counts
// (new slices; nil when none is occupied).
func (h *LogLinearHistogram) Sparse() ([]int, []uint64) {
	var idx []int
	var counts []uint64
	for j, c := range h.counts {
		if c != 0 {
			idx = append(idx, j)
			counts = append(counts, c)
		}
	}
	return idx, counts
}

// AddChecked adds counts[j] successes to bucket idx[j] for every j — with
// idx nil, to bucket first + j — with timeouts and failures, as AddSparse
// does, for a caller that checked them already (indices within the
// buckets, successes = Σ counts, sums that cannot overflow): the one pass
// a gateway's merge of a checked window needs, without summing the counts
// again.
func (h *LogLinearHistogram) AddChecked(idx []int, first int, counts []uint64, successes uint64, timeouts, failures int64) {
	h.addChecked(idx, first, counts, successes, timeouts, failures)
}

// Quantiles sets delays[k] and ok[k] to Quantile(qs[k], cut) for every k,
// in one pass over the buckets (qs in any order; delays and ok as long).
// The buckets below the next quantile are skipped as whole counts
// (skipWhole): what Quantile reads of them, summed in floating point, is
// that sum exactly.
func (h *LogLinearHistogram) Quantiles(qs []float64, cut int64, delays []float64, ok []bool) {
	h.QuantilesWithin(qs, cut, -1, delays, ok)
}

// QuantilesWithin is Quantiles for counts of which exactly within
// completed within cut (a probe's successes, which its display counts
// know; < 0: unknown): the bucket that straddles cut counts as completed
// that many of its instances, less those of the buckets below it, spread
// over its part below cut, instead of its share by width. By width, a
// probe whose delays sit at or just below its dMax lost its upper
// quantiles (unreachable), and one whose spans all ended just after it
// got quantiles without a single success.
func (h *LogLinearHistogram) QuantilesWithin(qs []float64, cut int64, within float64, delays []float64, ok []bool) {
	order := make([]int, 0, len(qs))
	for k, q := range qs {
		delays[k], ok[k] = 0, false
		if math.IsNaN(q) || q < 0 || q > 1 || h.Total() == 0 {
			continue
		}
		if q == 0 {
			ok[k] = true
			continue
		}
		order = append(order, k)
	}
	slices.SortFunc(order, func(x, y int) int { return cmp.Compare(qs[x], qs[y]) })
	n := float64(h.Total())
	k := h.below(cut)
	whole, limit := h.wholeBelow(k, cut)
	acc, o := 0.0, 0
	for j := 0; j < k && o < len(order); j++ {
		if j < whole && acc < float64(limit) {
			j, acc = h.skipWhole(j, whole, limit, acc, qs[order[o]]*n*(1-1e-12))
			if j == k {
				break
			}
		}
		c := h.counts[j]
		if c == 0 {
			continue
		}
		a, b, m := h.withinCut(j, c, cut)
		if within >= 0 && b != h.edges[j+1] {
			m = math.Min(math.Max(within-acc, 0), float64(c))
		}
		for o < len(order) {
			need := qs[order[o]] * n
			if m <= 0 || acc+m < need*(1-1e-12) {
				break
			}
			f := math.Min(math.Max((need-acc)/m, 0), 1)
			delays[order[o]], ok[order[o]] = (float64(a)+f*float64(b-a))/1e9, true
			o++
		}
		acc += m
		if j >= whole || c >= limit || acc >= float64(limit) {
			limit = 0 // acc may no longer be a whole number: no more skipping
		}
	}
}

// wholeBelow returns, of the k buckets below cut, the number whole of
// those wholly within it, and a bound limit such that for counts and sums
// of counts below it, what withinCut reads of such a bucket is its count c
// (c·w < 2⁵³ for every width w ≤ e_whole) and a sum of them in floating
// point is exact (below 2⁵³). limit is 0 when there is no such bucket.
func (h *LogLinearHistogram) wholeBelow(k int, cut int64) (whole int, limit uint64) {
	whole = k
	if whole > 0 && h.edges[whole] > cut {
		whole--
	}
	if whole == 0 || h.edges[whole] <= 0 {
		return 0, 0
	}
	return whole, (1 << 53) / uint64(h.edges[whole])
}

// skipWhole adds to acc, a whole number below limit, the counts of the
// buckets from j on, up to whole (wholeBelow), while the sum stays below
// thr and limit; it returns the first bucket not added, and the sum. Below
// 2⁵³ a sum s is exact, so float64(s) ≥ thr exactly when s ≥ ⌈thr⌉: both
// bounds are one whole bound, lim, and the buckets are added four at a
// time while their sum stays below it (each below it, so that the sum of
// four cannot overflow), then one at a time up to the bucket that reaches
// it.
func (h *LogLinearHistogram) skipWhole(j, whole int, limit uint64, acc, thr float64) (int, float64) {
	run := uint64(acc)
	lim := limit
	if t := math.Ceil(thr); t < float64(lim) {
		lim = uint64(max(t, 0))
	}
	if run >= lim {
		return j, acc
	}
	counts := h.counts[:whole]
	for ; j+4 <= whole; j += 4 {
		c := counts[j : j+4 : j+4]
		room := lim - run
		if c[0]|c[1]|c[2]|c[3] >= room {
			break
		}
		s := c[0] + c[1] + c[2] + c[3]
		if s >= room {
			break
		}
		run += s
	}
	for ; j < whole; j++ {
		c := counts[j]
		if c >= lim-run {
			break
		}
		run += c
	}
	return j, float64(run)
}

// withinCut returns the span [a, b) of bucket j, cut at cut ns, and the
// share m of its c instances Quantile reads within it: c·(b − a)/w, w the
// bucket's width, in floating point. For a bucket wholly within cut that
// is c itself when c·w is below 2⁵³, a whole number the product holds
// exactly; the division is then left out, for the same m.
func (h *LogLinearHistogram) withinCut(j int, c uint64, cut int64) (a, b int64, m float64) {
	a, b = h.edges[j], min(h.edges[j+1], cut)
	m = float64(c)
	if w := h.edges[j+1] - a; b != h.edges[j+1] || m*float64(w) >= 1<<53 {
		m = m * float64(b-a) / float64(w)
	}
	return a, b, m
}
