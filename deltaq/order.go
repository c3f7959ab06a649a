// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import "math"

// Relation is the outcome of comparing two ΔQs in the partial order of
// thesis §2.1.4: A ≤ B when A's CDF is everywhere at or above B's (A
// completes at least as early and at least as often).
type Relation int

const (
	// Equal: the CDFs agree everywhere (within 1e-12).
	Equal Relation = iota
	// Less: A ≤ B and A ≠ B; A has slack over B and nowhere a hazard.
	Less
	// Greater: B ≤ A and A ≠ B; A shows a hazard against B and nowhere slack.
	Greater
	// Incomparable: the CDFs cross; A has slack at some delays and a hazard
	// at others.
	Incomparable
)

// String returns the relation's symbol: "=", "<", ">" or "≹".
func (r Relation) String() string {
	switch r {
	case Equal:
		return "="
	case Less:
		return "<"
	case Greater:
		return ">"
	case Incomparable:
		return "≹"
	}
	return "?"
}

// Comparison describes how a ΔQ A stands against a ΔQ B, typically an
// observed or calculated ΔQ against a required one (thesis §2.1.5, §2.1.6).
// Slack is where A's CDF is above B's (A delivers more, earlier), hazard
// where it is below. Delays are bin edges of the aligned grid; "beyond dMax"
// is reported as the last edge, where the difference is that of the
// tangible masses.
type Comparison struct {
	Relation Relation
	// Slack is max_t (F_A(t) − F_B(t)), 0 if A is nowhere above B, and
	// SlackAt the smallest delay where that maximum is reached.
	Slack, SlackAt float64
	// Hazard is max_t (F_B(t) − F_A(t)), 0 if A is nowhere below B, and
	// HazardAt the smallest delay where that maximum is reached.
	Hazard, HazardAt float64
	// FirstHazard is the smallest delay where A falls below B (NaN-free: 0
	// when there is no hazard; check Hazard > 0 first).
	FirstHazard float64
}

// LessEq reports A ≤ B: no hazard anywhere.
func (c Comparison) LessEq() bool { return c.Relation == Equal || c.Relation == Less }

// Compare places A against B in the partial order of thesis §2.1.4 after
// Align. Both CDFs are linear inside a bin and flat beyond dMax, so
// comparing them at every bin edge decides the order exactly; differences of
// at most 1e-12 count as equal.
func Compare(a, b DeltaQ) (Comparison, error) {
	al, err := align("Compare", []DeltaQ{a, b})
	if err != nil {
		return Comparison{}, err
	}
	a, b = al[0], al[1]
	var c Comparison
	first := true
	for i := range a.cum {
		t := float64(i+1) * a.width
		diff := a.cum[i] - b.cum[i]
		if diff > cdfTol && diff > c.Slack {
			c.Slack, c.SlackAt = diff, t
		}
		if -diff > cdfTol {
			if first {
				c.FirstHazard, first = t, false
			}
			if -diff > c.Hazard {
				c.Hazard, c.HazardAt = -diff, t
			}
		}
	}
	switch {
	case c.Slack == 0 && c.Hazard == 0:
		c.Relation = Equal
	case c.Hazard == 0:
		c.Relation = Less
	case c.Slack == 0:
		c.Relation = Greater
	default:
		c.Relation = Incomparable
	}
	c.Slack, c.Hazard = math.Max(c.Slack, 0), math.Max(c.Hazard, 0)
	return c, nil
}
