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
}

// Count returns the number of durations added.
func (s *Sketch) Count() uint64 { return s.n }

// Max returns the largest duration added, in seconds.
func (s *Sketch) Max() float64 { return float64(s.max) * 1e-9 }

// Quantile returns, in seconds, the upper edge of the bucket that holds the
// q-quantile of the durations added (0 for an empty sketch): an upper
// bound within 0.8 %.
func (s *Sketch) Quantile(q float64) float64 {
	if s.n == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(s.n)))
	var cum uint64
	for k, c := range s.counts {
		cum += c
		if cum >= want && c > 0 {
			_, hi := bucketBounds(s.lo + k)
			return math.Min(hi, float64(s.max)) * 1e-9
		}
	}
	return float64(s.max) * 1e-9
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
