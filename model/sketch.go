// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package model

import (
	"fmt"
	"math"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// Sketch counts durations of unknown order of magnitude in the log/linear
// buckets of package deltaq (llquantize: deltaq.LogLinear, the layout
// sketchLayout): below 256 ns one bucket per nanosecond, above it 128 equal
// buckets per power of two, so a bucket is at most 1/128 (0.8 %) of its
// lower edge wide, up to 2⁴⁵ ns (9.8 hours; longer durations count in the
// last bucket). Durations are integer nanoseconds, as in deltaq.LogLinear.
// Unlike deltaq.LogLinearHistogram, which holds every bucket of its layout,
// a sketch holds the range of buckets in use only (about 1300 counts for
// three decades), never the number of durations, so that a model of
// thousands of nodes stays small. Build turns the counts into a ΔQ on any
// linear bins, each bucket's count spread uniformly over the bucket.
type Sketch struct {
	lo     int      // bucket index of counts[0]
	counts []uint64 // counts of buckets lo … lo+len−1
	n      uint64   // durations added
	max    int64    // largest duration added, ns
	sum    float64  // of the durations added, ns
}

// sketchLayout is the log-linear layout of every Sketch: factor 2, 256
// steps a magnitude from 1 ns (128 buckets a power of two; widths below a
// nanosecond become 1 ns, as in llquantize), to 2⁴⁵ ns.
var sketchLayout = deltaq.LogLinear{Factor: 2, Low: 1, High: 1 << 45, Steps: 256}

// sketchEdges are sketchLayout's bucket edges, in ns, and sketchIndex
// finds a duration's bucket among them.
var (
	sketchEdges, _ = sketchLayout.Edges()
	sketchIndex    = func() *deltaq.LogLinearIndex {
		x, err := sketchLayout.Index()
		if err != nil {
			panic(err) // a constant layout, valid: TestSketch
		}
		return x
	}()
)

// sketchSub is the number of buckets of each power of two above the
// one-nanosecond buckets of the magnitudes below 256 ns.
const sketchSub = 128

// bucketOf returns the bucket of a duration of v ≥ 0 ns.
func bucketOf(v uint64) int {
	return sketchIndex.Bucket(int64(min(v, uint64(sketchLayout.High))))
}

// bucketBounds returns the half-open range [lo, hi) of bucket i, in ns.
func bucketBounds(i int) (lo, hi float64) {
	return float64(sketchEdges[i]), float64(sketchEdges[i+1])
}

// Add counts a duration in nanoseconds; a negative one counts as 0.
func (s *Sketch) Add(ns int64) {
	if ns < 0 {
		ns = 0
	}
	i := bucketOf(uint64(ns))
	switch {
	case len(s.counts) == 0:
		s.lo = i
		s.counts = append(s.counts[:0], 0)
	case i < s.lo:
		grown := make([]uint64, s.lo+len(s.counts)-i, s.lo+len(s.counts)-i+sketchSub)
		copy(grown[s.lo-i:], s.counts)
		s.counts, s.lo = grown, i
	case i >= s.lo+len(s.counts):
		for i >= s.lo+len(s.counts) {
			s.counts = append(s.counts, 0)
		}
	}
	s.counts[i-s.lo]++
	s.n++
	s.max = max(s.max, ns)
	s.sum += float64(ns)
}

// Count returns the number of durations added.
func (s *Sketch) Count() uint64 { return s.n }

// Mean returns the mean of the durations added, in seconds (0 for none).
func (s *Sketch) Mean() float64 {
	if s.n == 0 {
		return 0
	}
	return s.sum / float64(s.n) * 1e-9
}

// Max returns the largest duration added, in seconds.
func (s *Sketch) Max() float64 { return float64(s.max) * 1e-9 }

// Quantile returns, in seconds, the upper edge of the bucket that holds the
// q-quantile of the durations added (0 for an empty sketch): an upper
// bound within 0.8 %.
func (s *Sketch) Quantile(q float64) float64 {
	return s.quantile(q, len(s.counts))
}

// quantile is Quantile of the durations of the buckets counts[:end].
func (s *Sketch) quantile(q float64, end int) float64 {
	n := uint64(0)
	for _, c := range s.counts[:end] {
		n += c
	}
	if n == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(n)))
	var cum uint64
	for k, c := range s.counts[:end] {
		cum += c
		if cum >= want && c > 0 {
			_, hi := bucketBounds(s.lo + k)
			return math.Min(hi, float64(s.max)) * 1e-9
		}
	}
	return float64(s.max) * 1e-9
}

// Extreme outliers: durations that cannot belong with the others of their
// sketch, which a model's bins must not be stretched to cover.
const (
	// ExtremeGap: durations above a stretch with no duration that ends
	// at least this many times above where it starts (three decades
	// empty) are extreme, if they are few (ExtremeShare).
	ExtremeGap = 1000
	// ExtremeShare: at most this share of a sketch's durations are taken
	// as extreme outliers; more above a gap are a mode of their own.
	ExtremeShare = 0.1
)

// extremeFrom returns the index in counts of the first bucket of extreme
// outliers, len(counts) when there are none. The extreme outliers are
//
//   - the durations above the lowest gap of at least ExtremeGap (from the
//     upper edge of an occupied bucket to the lower edge of the next) that
//     holds at most ExtremeShare of the durations above it, and
//   - the durations in the sketch's last bucket, 9.7 hours or more, which
//     it cannot tell apart (a clock not set, a time in the far
//     future, lands there).
//
// A heavy tail has no such gap (with 100 exponential durations the
// longest is about 5 times the mean), nor do two modes each of more than
// a tenth of the durations.
func (s *Sketch) extremeFrom() int {
	end := len(s.counts)
	above, top := uint64(0), -1 // top: the lowest occupied bucket seen, from above
	for k := len(s.counts) - 1; k >= 0; k-- {
		c := s.counts[k]
		if c == 0 {
			continue
		}
		if top >= 0 {
			_, hi := bucketBounds(s.lo + k)
			lo, _ := bucketBounds(s.lo + top)
			if lo >= ExtremeGap*hi {
				end = top
			}
		}
		above += c
		if float64(above) > ExtremeShare*float64(s.n) {
			break
		}
		top = k
	}
	if last := len(sketchEdges) - 2; end > 0 && s.lo+end-1 == last {
		end-- // the last bucket, of everything beyond the sketch's range
	}
	return end
}

// Extremes returns how many durations are extreme outliers (see
// extremeFrom), the least they can be (the lower edge of their first
// bucket, in seconds) and the longest of the others, in seconds.
func (s *Sketch) Extremes() (n uint64, from, rest float64) {
	end := s.extremeFrom()
	for _, c := range s.counts[end:] {
		n += c
	}
	if n == 0 {
		return 0, 0, s.Max()
	}
	lo, _ := bucketBounds(s.lo + end)
	return n, lo * 1e-9, s.BulkMax()
}

// BulkQuantile is Quantile of the durations that are not extreme outliers.
func (s *Sketch) BulkQuantile(q float64) float64 {
	return s.quantile(q, s.extremeFrom())
}

// BulkMax returns, in seconds, the longest duration that is not an extreme
// outlier (the upper edge of its bucket, at most the longest of all).
func (s *Sketch) BulkMax() float64 {
	end := s.extremeFrom()
	if end == len(s.counts) {
		return s.Max()
	}
	for k := end - 1; k >= 0; k-- {
		if s.counts[k] > 0 {
			_, hi := bucketBounds(s.lo + k)
			return math.Min(hi, float64(s.max)) * 1e-9
		}
	}
	return 0
}

// Build returns the ΔQ of the durations added plus intangible more
// instances that never completed (failures, timeouts), on bins bins of
// width seconds: each bucket's count is spread uniformly over the bucket
// (clipped to the largest duration seen), so over the linear bins it
// overlaps in proportion (deltaq.LogLinearSpread). Durations beyond
// bins·width are timeouts, counted in the intangible mass; beyond reports
// how many there were (rounded).
func (s *Sketch) Build(width float64, bins int, intangible uint64) (dq deltaq.DeltaQ, beyond float64, err error) {
	total := float64(s.n + intangible)
	if total == 0 {
		return deltaq.DeltaQ{}, 0, fmt.Errorf("model: no durations to build a ΔQ from")
	}
	pdf := make([]float64, bins)
	beyond = deltaq.LogLinearSpread(pdf, width, sketchEdges, s.lo, s.counts, 1/total, s.max+1)
	dq, err = deltaq.New(width, pdf)
	return dq, beyond * total, err
}
