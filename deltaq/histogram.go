// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// Histogram accumulates outcome instances into the bins of a ΔQ in fixed
// memory: one counter per bin plus counters of timeouts, failures and
// rejected delays. Add does not allocate. Two histograms of the same width
// and bin count merge exactly by adding counts, so observations made in
// different places combine without loss. A Histogram is not safe for
// concurrent use.
type Histogram struct {
	width float64
	inv   float64 // 1/width
	tally
}

// tally is what a Histogram and a LogLinearHistogram count: the successes
// in each bin, and the timeouts, failures and rejected delays.
type tally struct {
	counts   []uint64
	success  int64
	timeouts int64
	failures int64
	rejected int64
}

// NewHistogram returns an empty histogram of bins bins of width width.
func NewHistogram(width float64, bins int) (*Histogram, error) {
	if err := checkShape(width, bins); err != nil {
		return nil, err
	}
	return &Histogram{width: width, inv: 1 / width, tally: tally{counts: make([]uint64, bins)}}, nil
}

// Width returns the bin width in seconds.
func (h *Histogram) Width() float64 { return h.width }

// Bins returns the number of bins.
func (h *Histogram) Bins() int { return len(h.counts) }

// DMax returns the delay beyond which an instance is a timeout.
func (h *Histogram) DMax() float64 { return h.width * float64(len(h.counts)) }

// Add records a successful instance of the given delay. Bins are
// upper-inclusive, like OTLP and Prometheus buckets (b₋, b]: a delay d > 0
// goes to bin ⌈d/w⌉ − 1, the bin (i·w, (i+1)·w] that holds it, and d = 0 to
// bin 0, so that the CDF at the edge (i+1)·w counts exactly the instances
// with d ≤ (i+1)·w. A delay within a relative 1e-9 of a bin edge counts as
// on the edge: with a millisecond clock and 1 ms bins, 5 ms is in bin 4,
// (4, 5] ms, whether it arrives as 0.005 or as 0.005000000000000001. A delay
// of exactly dMax (within the same tolerance) is a success in the last bin,
// as the deltaq processor calls an instance whose duration is ≤ dMax a
// success; a delay beyond it (including +Inf) is recorded as a timeout. A
// negative or NaN delay cannot be an observation: it is not recorded, and
// Rejected counts it.
func (h *Histogram) Add(delay float64) {
	if !(delay >= 0) {
		h.rejected++
		return
	}
	i := binIndex(delay * h.inv)
	if i >= float64(len(h.counts)) {
		h.timeouts++
		return
	}
	h.counts[int(i)]++
	h.success++
}

// AddN records n ≥ 1 successful instances of the same delay, as n calls of
// Add would, and returns the bin they went to, or −1 when the delay was
// recorded as n timeouts (beyond dMax) or rejected (counted once in
// Rejected). n is an instance's adjusted count under probability sampling:
// the number of instances of the population it stands for.
func (h *Histogram) AddN(delay float64, n int64) int {
	if !(delay >= 0) {
		h.rejected++
		return -1
	}
	i := binIndex(delay * h.inv)
	if i >= float64(len(h.counts)) {
		h.timeouts += n
		return -1
	}
	h.counts[int(i)] += uint64(n)
	h.success += n
	return int(i)
}

// AddTimeout records an instance that did not complete within dMax.
func (h *Histogram) AddTimeout() { h.timeouts++ }

// AddFailure records an instance that completed with a failure.
func (h *Histogram) AddFailure() { h.failures++ }

// AddTimeouts records n timeouts, AddFailures n failures: an instance of
// adjusted count n (AddN).
func (h *Histogram) AddTimeouts(n int64) { h.timeouts += n }

// AddFailures records n failures (AddTimeouts).
func (h *Histogram) AddFailures(n int64) { h.failures += n }

// Merge adds the counts of o to h. Both must have the same width and bin
// count; otherwise h is unchanged and an error is returned.
func (h *Histogram) Merge(o *Histogram) error {
	if o == nil {
		return fmt.Errorf("deltaq: Histogram.Merge: nil histogram")
	}
	if !sameWidth(h.width, o.width) || len(h.counts) != len(o.counts) {
		return fmt.Errorf("deltaq: Histogram.Merge: shapes differ (w=%g N=%d vs w=%g N=%d)",
			h.width, len(h.counts), o.width, len(o.counts))
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.timeouts += o.timeouts
	h.failures += o.failures
	h.rejected += o.rejected
	h.success += o.success
	return nil
}

// AddCounts adds the counts of a histogram of the same shape given as raw
// counts — the successes in each of its bins, its timeouts and its
// failures — as another observer reports them, and returns the successes
// added. bins must have one count per bin and timeouts and failures must
// not be negative; otherwise h is unchanged and an error is returned.
func (h *Histogram) AddCounts(bins []uint64, timeouts, failures int64) (successes uint64, err error) {
	n, err := h.add(nil, bins, timeouts, failures)
	if err != nil {
		return 0, fmt.Errorf("deltaq: Histogram.AddCounts: %w", err)
	}
	return n, nil
}

// addCounts adds src to dst, of the same length, and returns Σ src and
// whether that sum overflows uint64. Four bins a round, without a branch:
// the additions into dst are independent, and the sum's carries are
// added up as they come (an add with carry) rather than tested one by
// one.
func addCounts(dst, src []uint64) (n uint64, overflow bool) {
	dst = dst[:len(src)]
	var carries uint64
	i := 0
	for ; i+4 <= len(src); i += 4 {
		s, d := src[i:i+4:i+4], dst[i:i+4:i+4]
		s0, s1, s2, s3 := s[0], s[1], s[2], s[3]
		d[0] += s0
		d[1] += s1
		d[2] += s2
		d[3] += s3
		var cy uint64
		n, cy = bits.Add64(n, s0, 0)
		carries, _ = bits.Add64(carries, 0, cy)
		n, cy = bits.Add64(n, s1, 0)
		carries, _ = bits.Add64(carries, 0, cy)
		n, cy = bits.Add64(n, s2, 0)
		carries, _ = bits.Add64(carries, 0, cy)
		n, cy = bits.Add64(n, s3, 0)
		carries, _ = bits.Add64(carries, 0, cy)
	}
	for ; i < len(src); i++ {
		dst[i] += src[i]
		var cy uint64
		n, cy = bits.Add64(n, src[i], 0)
		carries, _ = bits.Add64(carries, 0, cy)
	}
	return n, carries != 0
}

// AddSparse adds the counts of a histogram of the same shape given in
// sparse form — counts[j] successes in bin idx[j], idx strictly increasing
// within [0, Bins) — with its timeouts and failures, and returns the
// successes added. Only the given bins are touched, so that a window with
// a few occupied bins of many costs what its occupied bins cost. idx nil
// means dense: counts has one entry per bin (AddCounts). Negative timeouts
// or failures, indices out of order or range, and totals that would
// overflow int64 leave h unchanged and return an error.
func (h *Histogram) AddSparse(idx []int, counts []uint64, timeouts, failures int64) (uint64, error) {
	n, err := h.add(idx, counts, timeouts, failures)
	if err != nil {
		return 0, fmt.Errorf("deltaq: Histogram.AddSparse: %w", err)
	}
	return n, nil
}

// AddChecked adds counts as AddSparse does — counts[j] successes in bin
// idx[j], or with idx nil one count per bin — with timeouts and failures,
// for a caller that checked them already: indices strictly increasing
// within the bins (or as many counts as bins), successes = Σ counts, and
// totals that stay within int64. The one pass a gateway's merge of a
// checked window needs, without summing the counts again.
func (h *Histogram) AddChecked(idx []int, counts []uint64, successes uint64, timeouts, failures int64) {
	h.addChecked(idx, 0, counts, successes, timeouts, failures)
}

// addChecked adds counts[j] successes to bin idx[j] for every j — with idx
// nil, to bin first + j — and the totals, as checked by the caller
// (Histogram.AddChecked, LogLinearHistogram.AddChecked): a pass of plain
// additions, the successes given rather than summed again.
func (t *tally) addChecked(idx []int, first int, counts []uint64, successes uint64, timeouts, failures int64) {
	dst := t.counts // a local: a store to t.counts[i] would load t.counts again
	if idx == nil {
		// Eight bins a round.
		dst = dst[first : first+len(counts)]
		i := 0
		for ; i+8 <= len(counts); i += 8 {
			// The eight counts loaded first, each then added where it
			// goes in one instruction.
			s, d := counts[i:i+8:i+8], dst[i:i+8:i+8]
			s0, s1, s2, s3 := s[0], s[1], s[2], s[3]
			s4, s5, s6, s7 := s[4], s[5], s[6], s[7]
			d[0] += s0
			d[1] += s1
			d[2] += s2
			d[3] += s3
			d[4] += s4
			d[5] += s5
			d[6] += s6
			d[7] += s7
		}
		for ; i < len(counts); i++ {
			dst[i] += counts[i]
		}
	} else {
		counts = counts[:len(idx)]
		for j, i := range idx {
			dst[i] += counts[j]
		}
	}
	t.success += int64(successes)
	t.timeouts += timeouts
	t.failures += failures
}

// add adds the counts of a tally of the same shape — counts[j] successes
// in bin idx[j], or, with idx nil, counts[i] in every bin i — and its
// timeouts and failures, and returns the successes added: the one sparse
// and dense addition of Histogram.AddSparse, Histogram.AddCounts and
// LogLinearHistogram.AddSparse. On an error t is unchanged.
func (t *tally) add(idx []int, counts []uint64, timeouts, failures int64) (uint64, error) {
	if timeouts < 0 || failures < 0 {
		return 0, fmt.Errorf("negative counts (timeouts %d, failures %d)", timeouts, failures)
	}
	if timeouts > math.MaxInt64-t.timeouts || failures > math.MaxInt64-t.failures {
		return 0, errors.New("the counts overflow the totals")
	}
	var n uint64
	if idx == nil {
		if len(counts) != len(t.counts) {
			return 0, fmt.Errorf("%d counts for %d bins", len(counts), len(t.counts))
		}
		// One pass: add and sum; undo in the (practically impossible) case
		// of an overflow.
		var overflow bool
		n, overflow = addCounts(t.counts, counts)
		if overflow || n > math.MaxInt64-uint64(t.success) {
			for i, c := range counts {
				t.counts[i] -= c
			}
			return 0, errors.New("the successes overflow the count")
		}
	} else {
		var err error
		if n, err = checkSparse(idx, counts, len(t.counts), t.success); err != nil {
			return 0, err
		}
		for j, i := range idx {
			t.counts[i] += counts[j]
		}
	}
	t.success += int64(n)
	t.timeouts += timeouts
	t.failures += failures
	return n, nil
}

// checkSparse checks sparse counts for bins bins (tally.add) and returns
// their sum, which must fit in the successes' total with success.
func checkSparse(idx []int, counts []uint64, bins int, success int64) (uint64, error) {
	if len(idx) != len(counts) {
		return 0, fmt.Errorf("%d indices for %d counts", len(idx), len(counts))
	}
	var n uint64
	prev := -1
	for j, i := range idx {
		if i <= prev || i >= bins {
			return 0, fmt.Errorf("bin %d out of order or beyond %d bins", i, bins)
		}
		prev = i
		s := n + counts[j]
		if s < n {
			return 0, errors.New("the successes overflow the count")
		}
		n = s
	}
	if n > math.MaxInt64-uint64(success) {
		return 0, errors.New("the counts overflow the totals")
	}
	return n, nil
}

// Reset empties the histogram, keeping its shape and memory.
func (h *Histogram) Reset() {
	clear(h.counts)
	h.timeouts, h.failures, h.rejected, h.success = 0, 0, 0, 0
}

// Total returns the number of instances recorded: successes, timeouts and
// failures (rejected delays are not instances).
func (h *Histogram) Total() int64 { return h.success + h.timeouts + h.failures }

// Successes returns the number of instances recorded in a bin.
func (h *Histogram) Successes() int64 { return h.success }

// Timeouts returns the number of instances that did not complete within dMax.
func (h *Histogram) Timeouts() int64 { return h.timeouts }

// Failures returns the number of instances that failed.
func (h *Histogram) Failures() int64 { return h.failures }

// Rejected returns the number of negative or NaN delays given to Add.
func (h *Histogram) Rejected() int64 { return h.rejected }

// Counts returns the bin counts. The slice is the histogram's own storage:
// read it, do not modify it, and do not keep it across Add or Reset.
func (h *Histogram) Counts() []uint64 { return h.counts }

// DeltaQ returns the observed ΔQ of the recorded instances,
// pᵢ = countᵢ/Total(), with intangible mass (timeouts + failures)/Total() and
// Count() = Total(). Its CDF at the right edge of bin i is computed from the
// counts, (Σ_{j≤i} countⱼ)/Total() correctly rounded, not summed from the
// masses: a window split 6/6 has F = 0.5 exactly at the lower cluster's
// edge, and its median is there (DeltaQ.Quantile). With no instances it
// returns ErrEmpty.
func (h *Histogram) DeltaQ() (DeltaQ, error) {
	n := h.Total()
	if n == 0 {
		return DeltaQ{}, ErrEmpty
	}
	return fromCounts(h.width, h.counts, n), nil
}

// fromCounts returns the Spread ΔQ of bin counts out of n ≥ Σ counts
// instances, its CDF computed from the running count, as counted builds
// it. An empty bin's mass (0/n) and CDF (the last bin's) are known without
// a division: most bins of a sparse window or of a bound are empty. One
// pass over the bins, in locals: every window builds the ΔQ of every
// probe's counts.
func fromCounts(width float64, counts []uint64, n int64) DeltaQ {
	bins := len(counts)
	p := newPDF(bins) // zeroed: the empty bins' masses
	pdf, cum := p[:bins:bins], p[bins:2*bins:2*bins]
	nf := float64(n)
	var run uint64
	f, s := 0.0, 0.0 // run/nf, and the masses' sum
	// The masses of the small counts, most of a window's, are divided
	// once: small[c] is c/nf once a bin of c has been met, 0 before.
	var small [16]float64
	for i, c := range counts {
		if c != 0 {
			var m float64
			if c < uint64(len(small)) {
				if m = small[c]; m == 0 {
					m = float64(c) / nf
					small[c] = m
				}
			} else {
				m = float64(c) / nf
			}
			pdf[i] = m
			s += m
			run += c
			f = float64(run) / nf
		}
		cum[i] = f
	}
	renormalise(pdf, s)
	return DeltaQ{width: width, pdf: pdf, cum: cum, count: n}
}

// renormalise scales the masses pdf, whose sum is s, to a sum of one when
// s is above it, as build does: only rounding brings the masses of whole
// counts above one. The CDF, formed from the counts, is exact already.
func renormalise(pdf []float64, s float64) {
	if s > 1 {
		inv := 1 / s
		for i := range pdf {
			pdf[i] *= inv
		}
	}
}

// counted builds the Spread ΔQ of whole counts out of n instances, added
// bin by bin in increasing order, so that counts mapped onto bins need no
// array of their own (GridBounds). A bin's mass is its count over n, and
// its CDF the running count over n, correctly rounded rather than summed
// from the masses; the masses and the CDF are formed in one pass. Only the
// renormalisation build makes of masses whose rounding sums above one is
// kept.
type counted struct {
	n        int64
	nf       float64
	pdf, cum []float64
	// bin is the bin being counted (−1 before the first), c its count so
	// far; run counts the instances of the bins before it, f is run/nf, s
	// the sum of their masses, and the CDF is set below next.
	bin  int
	c    uint64
	run  uint64
	f, s float64
	next int
}

func newCounted(bins int, n int64) counted {
	p := newPDF(bins) // zeroed
	return counted{n: n, nf: float64(n), pdf: p[:bins:bins], cum: p[bins : 2*bins : 2*bins], bin: -1}
}

// add counts c > 0 more instances in bin i, no bin before the last one
// added.
func (b *counted) add(i int, c uint64) {
	if i != b.bin {
		b.close()
		b.bin = i
	}
	b.c += c
}

// close sets the mass and the CDF of the bin being counted, and the CDF of
// the empty bins before it.
func (b *counted) close() {
	if b.c == 0 {
		return
	}
	i := b.bin
	fill(b.cum[b.next:i], b.f)
	m := float64(b.c) / b.nf
	b.pdf[i] = m
	b.s += m
	b.run += b.c
	b.f = float64(b.run) / b.nf
	b.cum[i], b.next, b.c = b.f, i+1, 0
}

// fill sets every element of xs to x: a loop whose x stays in a register,
// where stores through a counted's slices would reload its fields.
func fill(xs []float64, x float64) {
	for i := range xs {
		xs[i] = x
	}
}

// deltaQ returns the ΔQ of bin width width of the counts added.
func (b *counted) deltaQ(width float64) DeltaQ {
	b.close()
	fill(b.cum[b.next:], b.f)
	b.next = len(b.cum)
	renormalise(b.pdf, b.s)
	return DeltaQ{width: width, pdf: b.pdf, cum: b.cum, count: b.n}
}

// sameWidth reports whether two bin widths are equal within a relative 1e-9.
func sameWidth(a, b float64) bool {
	return math.Abs(a-b) <= widthTol*math.Max(a, b)
}
