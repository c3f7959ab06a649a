// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"fmt"
	"math"
	"sort"
)

// QTA is a quantitative timeliness agreement (thesis §2.1.6): at least P of
// the outcomes must complete within Delay for every point, and at most
// MaxFailure of them may fail or time out. The required ΔQ is the step CDF
// through the points with a last step to 1 − MaxFailure at dMax
// (RequiredSteps); the thesis's simplified form (§4.1.3) is the 25/50/75 %
// case, ThesisQTA.
type QTA struct {
	// Points sorted by increasing delay with non-decreasing probabilities.
	Points []Step
	// MaxFailure is the largest intangible mass allowed, in [0, 1].
	MaxFailure float64
}

// NewQTA validates and returns a QTA. Points may come in any order; sorted
// by delay, their delays must be finite, > 0 and distinct, their
// probabilities within (0, 1] and non-decreasing, and no point may ask for
// more than 1 − maxFailure (the failures allowed would make it unreachable
// otherwise). maxFailure must lie in [0, 1]. A QTA with no points only
// bounds failures.
func NewQTA(points []Step, maxFailure float64) (QTA, error) {
	q := QTA{Points: make([]Step, len(points)), MaxFailure: maxFailure}
	copy(q.Points, points)
	sort.SliceStable(q.Points, func(i, j int) bool { return q.Points[i].Delay < q.Points[j].Delay })
	if err := q.Validate(); err != nil {
		return QTA{}, err
	}
	return q, nil
}

// ThesisQTA returns the QTA of the thesis's form (§2.1.6, §4.1.3): 25 % of
// outcomes within d25, 50 % within d50, 75 % within d75, and at most
// maxFailure failing. The example of §2.1.6 is
// ThesisQTA(0.015, 0.025, 0.035, 0.05).
func ThesisQTA(d25, d50, d75, maxFailure float64) (QTA, error) {
	return NewQTA([]Step{{d25, 0.25}, {d50, 0.5}, {d75, 0.75}}, maxFailure)
}

// Validate checks the QTA as NewQTA does, for a QTA built as a literal.
func (q QTA) Validate() error {
	if math.IsNaN(q.MaxFailure) || q.MaxFailure < 0 || q.MaxFailure > 1 {
		return fmt.Errorf("deltaq: QTA: maximum failure ratio %v outside [0, 1]", q.MaxFailure)
	}
	prevD, prevP := 0.0, 0.0
	for i, s := range q.Points {
		if math.IsNaN(s.Delay) || math.IsInf(s.Delay, 0) || s.Delay <= 0 {
			return fmt.Errorf("deltaq: QTA: delay %v of point %d must be finite and > 0", s.Delay, i)
		}
		if i > 0 && s.Delay <= prevD {
			return fmt.Errorf("deltaq: QTA: point %d at %vs does not follow %vs (delays must increase)", i, s.Delay, prevD)
		}
		if math.IsNaN(s.P) || s.P <= 0 || s.P > 1 {
			return fmt.Errorf("deltaq: QTA: probability %v of point %d outside (0, 1]", s.P, i)
		}
		if s.P < prevP {
			return fmt.Errorf("deltaq: QTA: probability falls from %v to %v at %vs", prevP, s.P, s.Delay)
		}
		if s.P > 1-q.MaxFailure+massTol {
			return fmt.Errorf("deltaq: QTA: point %d asks for %v within %vs, but %v may fail", i, s.P, s.Delay, q.MaxFailure)
		}
		prevD, prevP = s.Delay, s.P
	}
	return nil
}

// RequiredSteps returns the QTA as the step function a ΔQ of dMax dmax must
// stay at or above, the curve a ΔQ plot draws for it: the corners (Delay, P)
// of a right-continuous step CDF, 0 before the first, in increasing Delay,
// all within (0, dmax]. They are
//
//   - the QTA's points with Delay ≤ dmax, then
//   - at dmax, a last step up to 1 − MaxFailure when that is above the level
//     the points reached (a point at dmax is raised to it instead).
//
// A ΔQ of dMax dmax counts an outcome not completed by dmax as a timeout,
// so its CDF is flat from dmax on and the failure bound 1 − F(∞) ≤
// MaxFailure is F(dmax) ≥ 1 − MaxFailure: the last step. A point beyond
// dmax asks F(dmax) ≥ P, which the last step already asks (P ≤ 1 −
// MaxFailure), and is left out. So a ΔQ of dMax dmax passes Check exactly
// when its CDF is at or above every corner. dmax must be finite and > 0.
//
// The points alone, without the failure bound, are Steps(q.Points, …).
func (q QTA) RequiredSteps(dmax float64) ([]Step, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if !(dmax > 0) || math.IsInf(dmax, 0) {
		return nil, fmt.Errorf("deltaq: QTA.RequiredSteps: dMax %v must be finite and > 0", dmax)
	}
	steps := make([]Step, 0, len(q.Points)+1)
	for _, s := range q.Points {
		if s.Delay > dmax {
			break
		}
		steps = append(steps, s)
	}
	level, last := 0.0, 1-q.MaxFailure
	if n := len(steps); n > 0 {
		level = steps[n-1].P
	}
	switch n := len(steps); {
	case last <= level:
	case n > 0 && steps[n-1].Delay == dmax:
		steps[n-1].P = last
	default:
		steps = append(steps, Step{Delay: dmax, P: last})
	}
	return steps, nil
}

// RequiredDeltaQ returns RequiredSteps on the grid of bins bins of width
// width (dMax = width·bins) as a ΔQ, through Steps: a corner at delay d
// counts from the right edge of the bin holding d, so the ΔQ's CDF at each
// bin edge is the level of the step function there: at dMax at least
// 1 − MaxFailure, so its intangible mass is at most MaxFailure. It is the
// QTA curve a ΔQ plot draws at the bin edges of the ΔQs it is drawn with,
// and a target for Deconvolve.
func (q QTA) RequiredDeltaQ(width float64, bins int) (DeltaQ, error) {
	if err := checkShape(width, bins); err != nil {
		return DeltaQ{}, err
	}
	steps, err := q.RequiredSteps(width * float64(bins))
	if err != nil {
		return DeltaQ{}, err
	}
	return Steps(steps, width, bins)
}

// PointCheck is the verdict on one point of a QTA.
type PointCheck struct {
	Step
	// Observed is F(Delay) of the ΔQ checked.
	Observed float64
	// Shortfall is max(0, P − Observed): how much probability is missing at
	// Delay.
	Shortfall float64
	// ObservedDelay is the delay by which the ΔQ reaches P (its
	// P-quantile), valid when Reachable; Late = ObservedDelay − Delay is
	// positive when the point fails.
	ObservedDelay float64
	Reachable     bool
	// OK is Observed ≥ P (within 1e-12).
	OK bool
	// Holds says whether the point holds for the pessimistic bound of the
	// ΔQ checked (then for any ΔQ within its bounds), for its curve only
	// (the bins are too coarse to tell), or neither.
	Holds Holds
	// Pessimistic is F(Delay) of the pessimistic bound, and
	// PessimisticDelay its P-quantile, valid when PessimisticReachable:
	// Delay − PessimisticDelay is the margin that holds for every ΔQ
	// within the bounds.
	Pessimistic          float64
	PessimisticDelay     float64
	PessimisticReachable bool
}

// Holds says for which reading of a ΔQ a QTA point holds.
type Holds uint8

const (
	// HoldsNeither: the point fails for the ΔQ's curve.
	HoldsNeither Holds = iota
	// HoldsCurve: the point holds for the curve but not for the
	// pessimistic bound: whether it holds for the delays within the bins
	// depends on where in their bins they lie.
	HoldsCurve
	// HoldsPessimistic: the point holds for the pessimistic bound, so for
	// any ΔQ within the bounds.
	HoldsPessimistic
)

// String returns "neither", "curve" or "pessimistic".
func (h Holds) String() string {
	switch h {
	case HoldsCurve:
		return "curve"
	case HoldsPessimistic:
		return "pessimistic"
	}
	return "neither"
}

// QTACheck is the verdict of QTA.Check.
type QTACheck struct {
	// OK is true when every point and the failure bound hold.
	OK     bool
	Points []PointCheck
	// Failure is the ΔQ's intangible mass, FailureOK whether it is at most
	// MaxFailure (within 1e-12), and FailureExcess = max(0, Failure −
	// MaxFailure).
	Failure, MaxFailure float64
	FailureOK           bool
	FailureExcess       float64
	// Holds is the weakest Holds of the points, HoldsNeither when OK is
	// false.
	Holds Holds
}

// Failed returns the points that fail.
func (c QTACheck) Failed() []PointCheck {
	var out []PointCheck
	for _, p := range c.Points {
		if !p.OK {
			out = append(out, p)
		}
	}
	return out
}

// Check tests d against the QTA: for every point, F(Delay) ≥ P, with F read
// from d's CDF; and 1 − F(∞) ≤ MaxFailure. It reports each point's
// shortfall and lateness and the failure excess, and whether each point
// holds for d's own pessimistic bound (DeltaQ.Pessimistic: its masses at
// the upper edges of their bins), which for an observed ΔQ equals its CDF
// at every bin edge and differs only for a point inside a bin.
func (q QTA) Check(d DeltaQ) (QTACheck, error) {
	return q.CheckBounded(d, d.Pessimistic())
}

// CheckBounded is Check with the pessimistic bound pess given, for a
// calculated ΔQ whose bound was composed from its inputs' bounds. pess
// must be a valid ΔQ; a pess that is faster than d somewhere only makes
// points hold for it where they hold for d.
func (q QTA) CheckBounded(d, pess DeltaQ) (QTACheck, error) {
	if err := pess.valid("QTA.Check", 1); err != nil {
		return QTACheck{}, err
	}
	return q.CheckReadings(d, func(s Step) PointReading {
		var r PointReading
		r.F = d.CDF(s.Delay)
		r.Pessimistic = math.Min(pess.CDF(s.Delay), r.F)
		r.Delay, r.Reachable = d.Quantile(s.P)
		r.PessimisticDelay, r.PessimisticReachable = pess.Quantile(s.P)
		return r
	})
}

// PointReading is what a QTA check reads of a ΔQ at one point (Delay, P):
// F = F(Delay) and Pessimistic, at most F, the smallest F(Delay) that the
// counts behind the ΔQ allow; Delay, the P-quantile, valid when
// Reachable, and PessimisticDelay, the largest P-quantile they allow,
// valid when PessimisticReachable.
type PointReading struct {
	F, Pessimistic                  float64
	Delay, PessimisticDelay         float64
	Reachable, PessimisticReachable bool
}

// CheckReadings is Check with each point's readings made by read, for a
// caller that knows F(Delay) better than d's curve: from counts that are
// exact at some delays, or bounded where d only interpolates. The verdicts
// follow from the readings alone — OK is F ≥ P (within 1e-12), Holds
// compares Pessimistic with P — so that a point and its slack F − P are
// judged from one reading; the failure ratio is d's intangible mass.
func (q QTA) CheckReadings(d DeltaQ, read func(Step) PointReading) (QTACheck, error) {
	if err := d.valid("QTA.Check", 0); err != nil {
		return QTACheck{}, err
	}
	return q.CheckRead(d.Intangible(), read)
}

// CheckRead is CheckReadings with the failure ratio given, for a caller
// that reads it better than a curve's intangible mass: from counts that
// know how many instances completed within dMax, where a curve read from
// coarser buckets spreads the bucket holding dMax across it. failure must
// lie in [0, 1].
func (q QTA) CheckRead(failure float64, read func(Step) PointReading) (QTACheck, error) {
	if !(failure >= 0 && failure <= 1) {
		return QTACheck{}, fmt.Errorf("deltaq: QTA.Check: failure ratio %v outside [0, 1]", failure)
	}
	if err := q.Validate(); err != nil {
		return QTACheck{}, err
	}
	c := QTACheck{OK: true, Points: make([]PointCheck, len(q.Points)), Failure: failure, MaxFailure: q.MaxFailure, Holds: HoldsPessimistic}
	for i, s := range q.Points {
		r := read(s)
		f := r.F
		pc := PointCheck{Step: s, Observed: f, Shortfall: math.Max(0, s.P-f), OK: f >= s.P-cdfTol,
			ObservedDelay: r.Delay, Reachable: r.Reachable, Pessimistic: math.Min(r.Pessimistic, f),
			PessimisticDelay: r.PessimisticDelay, PessimisticReachable: r.PessimisticReachable}
		switch {
		case !pc.OK:
			pc.Holds = HoldsNeither
		case pc.Pessimistic >= s.P-cdfTol:
			pc.Holds = HoldsPessimistic
		default:
			pc.Holds = HoldsCurve
		}
		c.Holds = min(c.Holds, pc.Holds)
		c.Points[i] = pc
		c.OK = c.OK && pc.OK
	}
	c.FailureOK = c.Failure <= q.MaxFailure+cdfTol
	c.FailureExcess = math.Max(0, c.Failure-q.MaxFailure)
	c.OK = c.OK && c.FailureOK
	if !c.OK {
		c.Holds = HoldsNeither
	}
	return c, nil
}
