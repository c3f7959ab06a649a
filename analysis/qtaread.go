// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"math"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// A QTA point (d, p) reads F(d), the fraction of the window's instances
// that completed successfully within d, and the p-quantile. Each of the
// window's two counts (fine.go) bounds F(d): from below by the instances
// of the bins or buckets that end at or before d, from above by those of
// the bins or buckets that begin at or before it. Where d is an edge of
// the probe's uniform bins, upper-inclusive (b₋, b] like the observed ΔQ's,
// the two bounds meet: F(d) is exact, what the display counts say.
// Elsewhere F(d) is the analysis resolution's reading (Analysis, the
// instances uniform within their buckets) clamped to the tighter of the
// bounds, off by at most their gap: the instances of the analysis bucket
// that holds d, whose width is under 1/64 of d (deltaq.Fine). The verdict,
// the slack F(d) − p and the breach test all read these: the verdict and
// the slack come from one reading, so that the slack is negative exactly
// when the point fails; the pessimistic reading is the lower bound, and
// the breach test's count the upper one, so that neither blames the
// resolution. The p-quantile is bounded the same way, by the edges of the
// bin or bucket in which the fraction p is reached.

// qtaCounts reads a probe's window at its QTA points from its counts.
type qtaCounts struct {
	pr *ProbeResult
	// n is the window's instances, of the display counts.
	n float64
}

// within returns the bounds [lo, hi] of F(delay), delay in seconds, cut at
// the probe's dMax where its analysis counts are cut.
func (c qtaCounts) within(delay float64) (lo, hi float64) {
	lo, hi = 0, 1
	if h := c.pr.fine; h != nil && h.Total() > 0 {
		d := min(int64(math.Floor(delay*1e9+1e-6)), c.pr.fineCut)
		n := float64(h.Total())
		lo, hi = float64(h.SurelyWithin(d))/n, float64(h.Within(d))/n
	}
	if c.n > 0 && len(c.pr.BinCounts) > 0 {
		a, b := c.displayWithin(delay)
		lo, hi = math.Max(lo, a/c.n), math.Min(hi, b/c.n)
	}
	return lo, math.Max(lo, hi)
}

// displayWithin returns the display counts' bounds of the instances that
// completed within delay seconds: of the bins (or buckets) that end at or
// before it, and of those that begin before it (uniform bins, which hold
// (b₋, b]) or at or before it (log-linear buckets, [b₋, b)). An edge within
// a relative 1e-9 of delay is taken as on it.
func (c qtaCounts) displayWithin(delay float64) (lo, hi float64) {
	pr := c.pr
	at := func(e float64) bool { return e <= delay*(1+1e-9) }
	before := func(e float64) bool { return e < delay*(1-1e-9) }
	lower := 0.0
	for j, k := range pr.BinCounts {
		upper, closed := float64(j+1)*pr.Width, at(lower)
		if pr.Edges != nil {
			upper = pr.Edges[j]
		} else {
			closed = j == 0 || before(lower)
		}
		if !closed {
			break
		}
		if at(upper) {
			lo += float64(k)
		}
		hi += float64(k)
		lower = upper
	}
	return lo, hi
}

// quantile returns the bounds [lo, hi] of the p-quantile, seconds: the
// edges of the bin or bucket of each count in which the fraction p is
// reached, the tighter of the two; ok is false when p is not reached
// within dMax.
func (c qtaCounts) quantile(p float64) (lo, hi float64, ok bool) {
	lo, hi = 0, math.Inf(1)
	if h := c.pr.fine; h != nil {
		a, b, fok := h.QuantileRange(p, c.pr.fineCut)
		if !fok {
			return 0, 0, false
		}
		lo, hi, ok = a, b, true
	}
	if c.n > 0 && len(c.pr.BinCounts) > 0 {
		need, acc, lower := p*c.n, 0.0, 0.0
		for j, k := range c.pr.BinCounts {
			upper := float64(j+1) * c.pr.Width
			if c.pr.Edges != nil {
				upper = c.pr.Edges[j]
			}
			if acc += float64(k); k > 0 && acc >= need*(1-1e-12) {
				lo, hi = math.Max(lo, lower), math.Min(hi, upper)
				return lo, math.Max(lo, hi), true
			}
			lower = upper
		}
		return 0, 0, false
	}
	return lo, hi, ok
}

// read is the reading of one point (deltaq.QTA.CheckReadings): F(Delay)
// and the quantile of the analysis resolution clamped to the bounds, the
// lower bound of F and the upper bound of the quantile as pessimistic.
func (c qtaCounts) read(s deltaq.Step) deltaq.PointReading {
	d := *c.pr.Analysis
	lo, hi := c.within(s.Delay)
	r := deltaq.PointReading{F: math.Min(math.Max(d.CDF(s.Delay), lo), hi), Pessimistic: lo}
	qlo, qhi, ok := c.quantile(s.P)
	if !ok {
		return r
	}
	r.Delay, r.Reachable = qlo, true
	if q, qok := d.Quantile(s.P); qok {
		r.Delay = math.Min(math.Max(q, qlo), qhi)
	}
	r.PessimisticDelay, r.PessimisticReachable = qhi, true
	return r
}

// newQTACounts returns the reader of the probe's window. Display counts
// read from another layout's analysis counts (ProbeResult.converted) put
// each instance at its bucket's upper edge: read as bounds they would say
// that instances of a bucket straddling a point's delay completed after
// it, so the window is read from its analysis counts alone.
func newQTACounts(pr *ProbeResult) qtaCounts {
	if pr.converted && pr.fine != nil {
		return qtaCounts{pr: pr}
	}
	return qtaCounts{pr: pr, n: float64(pr.Counts.Total())}
}

// completedWithin returns the number of the window's analysis counts that
// completed within dMax, for the quantiles' reading of the bucket that
// straddles it (deltaq.LogLinearHistogram.QuantilesWithin): the display
// counts' successes, which know it exactly; -1, the bucket's share by
// width, when they were read from another layout's analysis counts
// (newQTACounts).
func (pr *ProbeResult) completedWithin() float64 {
	if pr.converted {
		return -1
	}
	return float64(pr.Counts.Success)
}

// failed returns the window's failure ratio — the share of its instances
// that did not complete within dMax, failures and timeouts alike — as the
// QTA check and the QoO score read it, and its lower bound, the breach
// test's count. The display counts know it exactly: an instance is a
// success of the probe when its delay is at most dMax. The analysis counts
// bound it, from below by the instances of the buckets that begin at or
// before dMax (Within, whose bucket straddling dMax may hold instances
// that completed after it), from above by those of the buckets that end
// by it; the Analysis ΔQ spreads the straddling bucket over the grid and
// cuts it at dMax, the share of its width below dMax taken as completed.
// So the reading is the Analysis ΔQ's intangible mass clamped to the
// bounds: exact but for windows whose display counts were read from
// analysis counts (newQTACounts). Read from the Analysis ΔQ alone, 1000
// successes of 99.8 ms in a window of 10,000 successes and nothing else
// were 632 failures under a dMax of 100 ms, whose bucket [99.61, 100.66)
// ms lies 37 % below it (TestFailureRatioAtDMax).
func (c qtaCounts) failed() (ratio, least float64) {
	lo, hi := 0.0, 1.0 // of F(dMax)
	if h := c.pr.fine; h != nil && h.Total() > 0 {
		n := float64(h.Total())
		lo, hi = float64(h.SurelyWithin(c.pr.fineCut))/n, float64(h.Within(c.pr.fineCut))/n
	}
	if c.n > 0 && len(c.pr.BinCounts) > 0 {
		s := float64(c.pr.Counts.Success) / c.n
		lo, hi = math.Max(lo, s), math.Min(hi, s)
	}
	hi = math.Max(lo, hi)
	f := math.Min(math.Max(c.pr.Analysis.Tangible(), lo), hi)
	return 1 - f, 1 - hi
}

// mayWithin is the upper bound of F(delay), the breach test's count.
func (c qtaCounts) mayWithin(delay float64) float64 {
	_, hi := c.within(delay)
	return hi
}
