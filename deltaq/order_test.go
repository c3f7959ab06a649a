// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import "testing"

func mustCmp(t testing.TB) func(Comparison, error) Comparison {
	return func(c Comparison, err error) Comparison {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

func TestCompare(t *testing.T) {
	early := mk(t)(Point(0.5, 1, 4))
	late := mk(t)(Point(2.5, 1, 4))
	c := mustCmp(t)(Compare(early, late))
	if c.Relation != Less || !c.LessEq() || !near(c.Slack, 1, 1e-15) || c.SlackAt != 1 || c.Hazard != 0 {
		t.Fatalf("early vs late: %+v", c)
	}
	c = mustCmp(t)(Compare(late, early))
	if c.Relation != Greater || c.LessEq() || !near(c.Hazard, 1, 1e-15) || c.HazardAt != 1 || c.FirstHazard != 1 {
		t.Fatalf("late vs early: %+v", c)
	}
	if c := mustCmp(t)(Compare(early, early)); c.Relation != Equal || !c.LessEq() {
		t.Fatalf("self: %+v", c)
	}
	// Crossing CDFs: a wide uniform against a point in the middle.
	wide := mk(t)(Uniform(0, 4, 1, 4))
	mid := mk(t)(Point(1.5, 1, 4))
	c = mustCmp(t)(Compare(wide, mid))
	if c.Relation != Incomparable || c.Slack <= 0 || c.Hazard <= 0 {
		t.Fatalf("crossing: %+v", c)
	}
	// Failure alone makes a hazard beyond dMax.
	lossy := mk(t)(Scale(early, 0.9))
	c = mustCmp(t)(Compare(lossy, early))
	if c.Relation != Greater || !near(c.Hazard, 0.1, 1e-15) {
		t.Fatalf("lossy: %+v", c)
	}
	for _, r := range []Relation{Equal, Less, Greater, Incomparable} {
		if r.String() == "?" {
			t.Errorf("relation %d has no symbol", r)
		}
	}
}
