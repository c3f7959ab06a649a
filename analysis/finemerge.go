// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"math"
)

// Windows that carry their instances at the analysis resolution
// (Window.Fine) merge with nothing to agree: their analysis counts add to
// the engine's whatever the layouts, and where the probe's layout for the
// window is not the window's, the display counts are read from them, each
// analysis bucket [a, b) counted at b − 1 ns, the longest delay its
// instances can have had (so a delay reads at most 1/64 longer, and one in
// the bucket that straddles the probe's dMax as a timeout). A probe the
// engine knows no layout of takes the first such window's. Windows without
// analysis counts, from engines before them, merge as they did: only into
// their own layout, agreed by Gateway.LayoutQuorum agents.

// checkFine checks what a window says of its analysis counts against its
// n instances, and returns its completed instances (Σ of its analysis
// counts), which the merge adds without summing them again (addFine):
// indices strictly increasing within deltaq.Fine, completed instances at
// most the instances that did not fail, and weights that can be: Σw = n
// (each count stands for one adjusted count), Σw ≤ Σw² ≤ (Σw)² (every
// w ≥ 1), or none at all.
func (e *Engine) checkFine(w *Window, n int64) (uint64, bool) {
	if !w.Fine {
		return 0, len(w.FineIndex) == 0 && len(w.FineCounts) == 0 && w.WeightSum == 0 && w.WeightSquares == 0
	}
	buckets := e.fine.Buckets()
	if n < w.Failures || w.FineIndex == nil && (w.FineFirst < 0 || w.FineFirst > buckets-len(w.FineCounts)) ||
		w.FineIndex != nil && len(w.FineIndex) != len(w.FineCounts) {
		return 0, false
	}
	// The completed instances: of a run without a branch a count
	// (countSum), of scattered buckets as their indices are checked.
	var done uint64
	var sat bool
	if w.FineIndex == nil {
		done, sat = countSum(w.FineCounts)
	} else {
		// The indices and counts are read from locals, not from w, which
		// would be loaded again a bucket; indices strictly increasing
		// from 0 are within the buckets when the last one is.
		idx, counts := w.FineIndex, w.FineCounts[:len(w.FineIndex)]
		prev := -1
		var carries uint64
		for j, i := range idx {
			if i <= prev {
				return 0, false
			}
			prev = i
			done, carries = addCarry(done, counts[j], carries)
		}
		if prev >= buckets {
			return 0, false
		}
		sat = carries != 0
	}
	if sat || done > uint64(n-w.Failures) {
		return 0, false
	}
	s, q := w.WeightSum, w.WeightSquares
	switch {
	case s == 0 && q == 0:
		return done, true
	case math.IsNaN(s) || math.IsNaN(q) || math.IsInf(s, 0) || math.IsInf(q, 0):
		return 0, false
	}
	nf := float64(n)
	return done, math.Abs(s-nf) <= 1e-9*nf && q >= s*(1-1e-12) && q <= s*s*(1+1e-12)
}

// addFine adds a checked window's analysis counts and weights to a, and
// with convert its display counts too, read from them, for a window of
// another layout. Its n instances are all of the window's, done of them
// completed (checkFine).
func (e *Engine) addFine(a *acc, w *Window, n int64, done uint64, convert bool) error {
	// checkFine checked the indices and summed the counts, and addWindow
	// that the window's instances fit a's totals (acc.room), which bound
	// every bucket.
	timeouts := n - w.Failures - int64(done)
	a.fine.AddChecked(w.FineIndex, w.FineFirst, w.FineCounts, done, timeouts, w.Failures)
	if w.WeightSum > 0 {
		a.w1 += w.WeightSum
		a.w2 += w.WeightSquares
	}
	if !convert {
		return nil
	}
	a.converted = true
	edges := e.fine.Edges()
	for j, c := range w.FineCounts {
		i := w.FineFirst + j
		if w.FineIndex != nil {
			i = w.FineIndex[j]
		}
		if c > 0 {
			a.addSuccess(edges[i+1]-1, int64(c))
		}
	}
	a.addTimeout(timeouts)
	a.addFailure(w.Failures)
	return nil
}
