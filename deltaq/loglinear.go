// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"time"
)

// LogLinear is a log/linear quantization of delays, DTrace's llquantize
// (Bryan Cantrill, "Log/linear quantizations in DTrace"): logarithmic by
// magnitude, linear within a magnitude, for outcomes whose delays span
// orders of magnitude that no single uniform bin width resolves.
//
// Delays are integer nanoseconds, as spans measure them (Add, Edges, Low,
// High), and only there: the ΔQs a layout's counts become (DeltaQ) are in
// seconds, like every ΔQ of the package. The buckets are
//
//   - [0, Low): the delays below the lowest magnitude (llquantize's "< 1");
//   - for each magnitude [Low·Factorᵐ, Low·Factorᵐ⁺¹) up to High, linear
//     buckets of width Low·Factorᵐ⁺¹/Steps, or 1ns where that is less
//     than a nanosecond (as llquantize, whose values are integers, steps by
//     1 where the factor's power is below the number of steps): with Steps
//     a multiple of Factor, Steps − Steps/Factor buckets a magnitude.
//
// A bucket [a, b) is lower-inclusive, as llquantize's: an integer delay d
// truncated from a real one lies in [d, d+1ns), so [a, b) holds exactly
// the real delays in [a, b). A delay at or above High is beyond the layout
// (a timeout, when High is the dMax), but a delay of exactly High is in the
// last bucket, as a delay of exactly dMax is a success.
type LogLinear struct {
	// Factor is the ratio between magnitudes, at least 2.
	Factor int64
	// Low and High bound the magnitudes, in nanoseconds: High =
	// Low·Factorᴹ for M ≥ 1 magnitudes.
	Low, High int64
	// Steps is the number of linear steps a magnitude is cut into, counted
	// over [0, Low·Factorᵐ⁺¹); a multiple of Factor.
	Steps int64
}

// maxLogLinearBuckets bounds the buckets of a layout (and its edges'
// memory); the widest sensible layout, 1ns to 24h by tens in 100 steps,
// has 1,215.
const maxLogLinearBuckets = 1 << 16

// Edges returns the bucket edges e₀ = 0 < e₁ = Low < … < e_B = High:
// bucket j is [eⱼ, eⱼ₊₁). It checks the layout: Factor ≥ 2, Steps a
// positive multiple of Factor, 0 < Low < High = Low·Factorᴹ, every bucket
// width a whole number of nanoseconds, and at most 65,536 buckets.
func (l LogLinear) Edges() ([]int64, error) {
	switch {
	case l.Factor < 2:
		return nil, fmt.Errorf("deltaq: LogLinear: factor %d is below 2", l.Factor)
	case l.Steps < l.Factor || l.Steps%l.Factor != 0:
		return nil, fmt.Errorf("deltaq: LogLinear: steps %d is not a multiple of the factor %d", l.Steps, l.Factor)
	case l.Low <= 0 || l.High <= l.Low:
		return nil, fmt.Errorf("deltaq: LogLinear: low %d ns and high %d ns must satisfy 0 < low < high", l.Low, l.High)
	}
	edges := []int64{0}
	for lo := l.Low; lo < l.High; {
		if lo > math.MaxInt64/l.Factor {
			return nil, errors.New("deltaq: LogLinear: high is not low times a power of the factor")
		}
		hi := lo * l.Factor
		if hi > l.High {
			return nil, l.powerError(lo)
		}
		w := hi / l.Steps
		if w == 0 {
			w = 1
		} else if hi%l.Steps != 0 {
			return nil, fmt.Errorf("deltaq: LogLinear: the buckets of [%d, %d) ns would be %d/%d ns wide, not whole nanoseconds", lo, hi, hi, l.Steps)
		}
		if (hi-lo)/w > maxLogLinearBuckets-int64(len(edges)) {
			return nil, fmt.Errorf("deltaq: LogLinear: more than %d buckets", maxLogLinearBuckets)
		}
		for e := lo; e < hi; e += w {
			edges = append(edges, e)
		}
		lo = hi
	}
	return append(edges, l.High), nil
}

// LogLinearHistogram accumulates outcome instances into the buckets of a
// LogLinear layout in fixed memory; Add does not allocate. It is the
// accumulator for a probe whose delays span orders of magnitude. Its ΔQ on
// a uniform grid, which the operators need, is DeltaQ. Not safe for
// concurrent use.
type LogLinearHistogram struct {
	layout LogLinear
	edges  []int64
	// index, when set, finds a bucket by arithmetic (Fine.NewHistogram).
	index *LogLinearIndex
	tally
}

// NewLogLinearHistogram returns an empty histogram of layout l.
func NewLogLinearHistogram(l LogLinear) (*LogLinearHistogram, error) {
	edges, err := l.Edges()
	if err != nil {
		return nil, err
	}
	return &LogLinearHistogram{layout: l, edges: edges, tally: tally{counts: make([]uint64, len(edges)-1)}}, nil
}

// Layout returns the histogram's layout.
func (h *LogLinearHistogram) Layout() LogLinear { return h.layout }

// Edges returns the bucket edges (see LogLinear.Edges); the histogram's own
// storage, not to be modified.
func (h *LogLinearHistogram) Edges() []int64 { return h.edges }

// Counts returns the bucket counts; the histogram's own storage.
func (h *LogLinearHistogram) Counts() []uint64 { return h.counts }

// Add records a successful instance of d ns in its bucket; a d beyond High
// is recorded as a timeout, a negative d is rejected (Rejected).
func (h *LogLinearHistogram) Add(d int64) {
	switch {
	case d < 0:
		h.rejected++
		return
	case d > h.layout.High:
		h.timeouts++
		return
	}
	h.counts[LogLinearBucket(h.edges, d)]++
	h.success++
}

// powerError says that High is not Low times a power of Factor, in
// durations, with the valid neighbours: below, the last power under High,
// and the next one (low 1ms, factor 10, high 5s: use 1s or 10s), when it is
// within MaxDMax, the most a configuration may give.
func (l LogLinear) powerError(below int64) error {
	msg := fmt.Sprintf("deltaq: LogLinear: high %v is not low %v times a power of the factor %d; use %v",
		time.Duration(l.High), time.Duration(l.Low), l.Factor, time.Duration(below))
	if below <= int64(MaxDMax)/l.Factor {
		msg += fmt.Sprintf(" or %v", time.Duration(below*l.Factor))
	}
	return errors.New(msg)
}

// LogLinearBucket returns the bucket j of a delay of d ns, 0 ≤ d ≤ High,
// in the edges of a layout (LogLinear.Edges): the last edge eⱼ ≤ d, d = High
// in the last bucket (a d below 0 is in bucket 0, one above High in the
// last). LogLinearIndex finds the same bucket without the edges.
func LogLinearBucket(edges []int64, d int64) int {
	j := sort.Search(len(edges), func(i int) bool { return edges[i] > d }) - 1
	return min(max(j, 0), len(edges)-2)
}

// LogLinearIndex finds the bucket of a delay in a layout by arithmetic, in
// time logarithmic in the number of magnitudes rather than of buckets, and
// in memory of one entry a magnitude: for holders of many sparse
// histograms of one layout (the sketches of learned models, package
// model), which keep the counts of the buckets in use only.
type LogLinearIndex struct {
	low, high int64
	buckets   int
	mags      []logLinearMag // ascending
	// pow2 is set when Factor is 2 and Low a power of two: the magnitude
	// of d is then the bit length of d less that of Low.
	pow2 bool
}

// logLinearMag is one magnitude [lo, lo·Factor): its bucket width and the
// index of its first bucket; shift is log₂ w when w is a power of two (as
// every width of the analysis resolution is), else −1.
type logLinearMag struct {
	lo, w int64
	first int
	shift int8
}

// offset returns ⌊(d − lo)/w⌋ for a delay d of the magnitude: by a shift
// when w is a power of two, where the 64-bit division would be the
// dearest instruction of a span's count at the analysis resolution.
func (mg *logLinearMag) offset(d int64) int {
	if mg.shift >= 0 {
		return int((d - mg.lo) >> mg.shift)
	}
	return int((d - mg.lo) / mg.w)
}

// Index returns the index of a valid layout (Edges without error).
func (l LogLinear) Index() (*LogLinearIndex, error) {
	edges, err := l.Edges()
	if err != nil {
		return nil, err
	}
	x := &LogLinearIndex{low: l.Low, high: l.High, buckets: len(edges) - 1, pow2: l.Factor == 2 && l.Low&(l.Low-1) == 0}
	first := 1 // bucket 0 is [0, Low)
	for lo := l.Low; lo < l.High; lo *= l.Factor {
		hi := lo * l.Factor
		w := max(hi/l.Steps, 1)
		shift := int8(-1)
		if w&(w-1) == 0 {
			shift = int8(bits.TrailingZeros64(uint64(w)))
		}
		x.mags = append(x.mags, logLinearMag{lo: lo, w: w, first: first, shift: shift})
		first += int((hi - lo + w - 1) / w)
	}
	return x, nil
}

// Bucket returns LogLinearBucket(edges, d) of the layout's edges: 0 below
// Low (and for d < 0), the last bucket from High on; else, in the last
// magnitude [lo, lo·Factor) with lo ≤ d, its first bucket plus
// ⌊(d − lo)/w⌋, w its bucket width. With factor 2 and Low a power of two
// the magnitude is found from d's bit length, in constant time.
func (x *LogLinearIndex) Bucket(d int64) int {
	switch {
	case d < x.low:
		return 0
	case d >= x.high:
		return x.buckets - 1
	}
	if x.pow2 {
		mg := &x.mags[bits.Len64(uint64(d))-bits.Len64(uint64(x.low))]
		return mg.first + mg.offset(d)
	}
	a, b := 0, len(x.mags) // the magnitude is in [a, b)
	for b-a > 1 {
		m := (a + b) / 2
		if x.mags[m].lo <= d {
			a = m
		} else {
			b = m
		}
	}
	mg := &x.mags[a]
	return mg.first + mg.offset(d)
}

// Buckets returns the number of buckets of the layout.
func (x *LogLinearIndex) Buckets() int { return x.buckets }

// AddN records n ≥ 1 instances of d ns, as n calls of Add would (see
// Histogram.AddN), and returns their bucket, or −1 for timeouts and a
// rejected d.
func (h *LogLinearHistogram) AddN(d, n int64) int {
	switch {
	case d < 0:
		h.rejected++
		return -1
	case d > h.layout.High:
		h.timeouts += n
		return -1
	}
	var j int
	if h.index != nil {
		j = h.index.Bucket(d)
	} else {
		j = min(sort.Search(len(h.edges), func(i int) bool { return h.edges[i] > d })-1, len(h.counts)-1)
	}
	h.counts[j] += uint64(n)
	h.success += n
	return j
}

// AddTimeout records an instance that did not complete within High.
func (h *LogLinearHistogram) AddTimeout() { h.timeouts++ }

// AddFailure records an instance that failed.
func (h *LogLinearHistogram) AddFailure() { h.failures++ }

// AddTimeouts records n timeouts, AddFailures n failures (Histogram.AddN).
func (h *LogLinearHistogram) AddTimeouts(n int64) { h.timeouts += n }

// AddFailures records n failures.
func (h *LogLinearHistogram) AddFailures(n int64) { h.failures += n }

// Total returns the number of instances recorded.
func (h *LogLinearHistogram) Total() int64 { return h.success + h.timeouts + h.failures }

// Successes, Timeouts, Failures and Rejected return their counters.
func (h *LogLinearHistogram) Successes() int64 { return h.success }

// Timeouts returns the number of instances beyond High.
func (h *LogLinearHistogram) Timeouts() int64 { return h.timeouts }

// Failures returns the number of failed instances.
func (h *LogLinearHistogram) Failures() int64 { return h.failures }

// Rejected returns the number of negative delays given to Add.
func (h *LogLinearHistogram) Rejected() int64 { return h.rejected }

// AddSparse adds the counts of a histogram of the same layout given in
// sparse form — counts[j] successes in bucket idx[j], idx strictly
// increasing within the buckets — or, with idx nil, one count per bucket,
// with its timeouts and failures (see Histogram.AddSparse), and returns
// the successes added; on an error h is unchanged.
func (h *LogLinearHistogram) AddSparse(idx []int, counts []uint64, timeouts, failures int64) (uint64, error) {
	n, err := h.add(idx, counts, timeouts, failures)
	if err != nil {
		return 0, fmt.Errorf("deltaq: LogLinearHistogram.AddSparse: %w", err)
	}
	return n, nil
}

// Reset empties the histogram, keeping its layout.
func (h *LogLinearHistogram) Reset() {
	clear(h.counts)
	h.success, h.timeouts, h.failures, h.rejected = 0, 0, 0, 0
}

// FinestWidth returns, in seconds, the width of the uniform grid on which
// DeltaQ is exact: the narrowest bucket, which every edge is a multiple of
// (the buckets of a magnitude are Factor times as wide as the one below,
// and Low is Steps/Factor of the first magnitude's buckets).
func (l LogLinear) FinestWidth() float64 {
	w := max(l.Low*l.Factor/l.Steps, 1)
	return float64(w) / 1e9
}

// MaxGridBins bounds the bins of the uniform grid a log-linear layout's ΔQ
// is read on (GridWidth): ten times the thesis's 1000 bins, so that the
// layout 1ms to 10s by tens in 10 steps is read exactly on its finest grid
// (1ms, 10,000 bins), and a sequence of six such ΔQs still convolves within
// MaxBins (a convolution's bins are the sum of its operands').
const MaxGridBins = 10_000

// GridWidth returns the width, in seconds, and the bin count of the uniform
// grid on which the operators read the layout's ΔQ (DeltaQ), with at most
// maxBins bins (at least 1): FinestWidth when High/FinestWidth ≤ maxBins,
// where the conversion is exact at every bucket edge; otherwise the
// smallest multiple m·FinestWidth, m = ⌈High/(FinestWidth·maxBins)⌉, with
// ⌈High/width⌉ bins. On that coarser grid the CDF is still exact at every
// bucket edge that is a grid edge (with a factor-power m, every edge of
// the magnitudes whose buckets are at least m·FinestWidth wide); at any
// other grid edge x it is off by at most the mass of the bucket that
// straddles x, and a quantile by less than the grid width plus the width
// of the bucket it lies in (DeltaQ's error bound). Only the finest
// magnitudes, whose buckets are narrower than the grid, lose resolution.
// It assumes a valid layout (Edges without error).
func (l LogLinear) GridWidth(maxBins int) (width float64, bins int) {
	fine := max(l.Low*l.Factor/l.Steps, 1) // ns; High is a multiple of it
	n := l.High / fine
	m := max((n+int64(maxBins)-1)/int64(max(maxBins, 1)), 1)
	w := m * fine
	return float64(w) / 1e9, int((l.High + w - 1) / w)
}

// DeltaQ returns the observed ΔQ of the recorded instances on a uniform
// grid of bin width width (seconds), with ⌈High/width⌉ bins: each bucket's
// mass count/Total() is spread uniformly over its span [a, b) and shared
// among the bins it overlaps; timeouts and failures are the intangible
// mass, and Count() = Total().
//
// Error bound. With F the CDF of the recorded delays and F̂ that of the
// result, F̂ = F at every bucket edge that is a multiple of width (within
// rounding), because every bucket's mass stays within its span: on the
// grid of FinestWidth, which refines every bucket, the conversion is exact
// at all the edges. Between two edges a < b of a bucket of mass p, the
// delays' arrangement is unknown: |F̂(x) − F(x)| ≤ p there, and a quantile
// of F̂ lies in the same bucket as F's, so it is off by less than the
// bucket's width b − a (or, on a coarser grid, the width of the bin that
// holds it, whichever is larger). Spreading over the span rather than
// putting the mass at the upper edge b (which would make F̂ ≤ F, every
// delay read as long as it could be) keeps the error on both sides and
// matches the uniform-in-bin reading of the package's ΔQs.
func (h *LogLinearHistogram) DeltaQ(width float64) (DeltaQ, error) {
	n := h.Total()
	if n == 0 {
		return DeltaQ{}, ErrEmpty
	}
	if err := checkWidth(width); err != nil {
		return DeltaQ{}, err
	}
	high := float64(h.layout.High) / 1e9
	nb := high / width
	if r := math.Round(nb); math.Abs(nb-r) <= widthTol*math.Max(1, r) {
		nb = r
	}
	bins := int(math.Ceil(nb))
	if err := checkBins(bins); err != nil {
		return DeltaQ{}, fmt.Errorf("deltaq: LogLinearHistogram.DeltaQ: high %gs / width %gs: %w", high, width, err)
	}
	p := newPDF(bins)
	LogLinearSpread(p, width, h.edges, 0, h.counts, 1/float64(n), h.layout.High)
	return build(width, p, n), nil
}

// LogLinearSpread adds to p, the masses of bins (i·w, (i+1)·w] of width w
// seconds, the mass of log-linear bucket counts: counts[k], the count of
// bucket first+k of edges (LogLinear.Edges), times scale, spread uniformly
// over the bucket [eⱼ, min(eⱼ₊₁, top)) ns and shared among the bins it
// overlaps in proportion (an edge within rounding of a bin edge is on it).
// top cuts the buckets at a known largest delay + 1 ns (High when none is
// known); it must be above the lower edge of every bucket counted. It
// returns the mass beyond the last bin. It is the one conversion of
// log-linear counts to a uniform grid, shared by LogLinearHistogram.DeltaQ
// and the sparse sketches of learned models (package model).
func LogLinearSpread(p []float64, width float64, edges []int64, first int, counts []uint64, scale float64, top int64) (beyond float64) {
	bins := len(p)
	end := float64(bins) * width
	for k, c := range counts {
		if c == 0 {
			continue
		}
		j := first + k
		a, b := float64(edges[j])/1e9, float64(min(edges[j+1], max(top, edges[j]+1)))/1e9
		m := float64(c) * scale
		i0 := int(math.Floor(snapInt(a / width)))
		i1 := min(int(math.Ceil(snapInt(b/width))), bins)
		placed := false
		for i := i0; i < i1; i++ {
			lo, hi := math.Max(a, float64(i)*width), math.Min(b, float64(i+1)*width)
			if hi > lo {
				p[i] += m * (hi - lo) / (b - a)
				placed = true
			}
		}
		if !placed && a < end {
			// A bucket within the rounding of a bin edge (1 ns on
			// bins of seconds: [0, 1 ns) snaps to [0, 0)) lies whole
			// in the bin of its middle; the loop placed none of it,
			// and its mass was lost.
			p[min(int((a+b)/2/width), bins-1)] += m
			continue // placed whole: none of it beyond
		}
		if b > end {
			beyond += m * (b - math.Max(a, end)) / (b - a)
		}
	}
	return beyond
}
