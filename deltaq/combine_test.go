// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"math"
	"testing"
)

func TestFailureLaws(t *testing.T) {
	// Sequence and all-to-finish fail when either fails: 1 − (1−f₁)(1−f₂);
	// first-to-finish fails only when both fail: f₁·f₂ (thesis §2.1.3, (2.3),
	// (2.4)).
	const f1, f2 = 0.1, 0.3
	a := mk(t)(New(1e-3, []float64{0.5, 0.4}))      // f = 0.1
	b := mk(t)(New(1e-3, []float64{0.2, 0.3, 0.2})) // f = 0.3
	seqOrAll := 1 - (1-f1)*(1-f2)
	for _, c := range convolvers {
		d := mk(t)(c.f(a, b))
		if !near(d.Intangible(), seqOrAll, 1e-12) {
			t.Errorf("%s: sequence intangible %v, want %v", c.name, d.Intangible(), seqOrAll)
		}
	}
	if d := mk(t)(AllToFinish(a, b)); !near(d.Intangible(), seqOrAll, 1e-12) {
		t.Errorf("all-to-finish intangible %v, want %v", d.Intangible(), seqOrAll)
	}
	if d := mk(t)(FirstToFinish(a, b)); !near(d.Intangible(), f1*f2, 1e-12) {
		t.Errorf("first-to-finish intangible %v, want %v", d.Intangible(), f1*f2)
	}
}

func TestFirstToFinishThreeBranches(t *testing.T) {
	// Three branches each completing with probability 0.5 within the bin:
	// 1 − (1 − 0.5)³ = 0.875. (The thesis implementation's bug summed
	// F_A + F_B + F_C − F_A·F_B·F_C, giving 1.375.)
	b := mk(t)(New(1e-3, []float64{0.5}))
	d := mk(t)(FirstToFinish(b, b, b))
	if got := d.CDF(1e-3); !near(got, 0.875, 1e-15) {
		t.Fatalf("FTF of three halves = %v, want 0.875", got)
	}
	d = mk(t)(AllToFinish(b, b, b))
	if got := d.CDF(1e-3); !near(got, 0.125, 1e-15) {
		t.Fatalf("ATF of three halves = %v, want 0.125", got)
	}
}

func TestFirstAndAllToFinishCDF(t *testing.T) {
	// Two uniforms on [0, 1): FTF is the minimum, F(t) = 1 − (1−t)²; ATF the
	// maximum, F(t) = t². Exact at bin edges.
	u := mk(t)(Uniform(0, 1, 0.1, 10))
	ftf := mk(t)(FirstToFinish(u, u))
	atf := mk(t)(AllToFinish(u, u))
	for i := 1; i <= 10; i++ {
		x := float64(i) / 10
		if got := ftf.CDF(x); !near(got, 1-(1-x)*(1-x), 1e-12) {
			t.Errorf("FTF F(%v) = %v", x, got)
		}
		if got := atf.CDF(x); !near(got, x*x, 1e-12) {
			t.Errorf("ATF F(%v) = %v", x, got)
		}
	}
	if _, err := FirstToFinish(u); err == nil {
		t.Error("FirstToFinish of one operand accepted")
	}
	if _, err := AllToFinish(u); err == nil {
		t.Error("AllToFinish of one operand accepted")
	}
}

func TestChoice(t *testing.T) {
	a := mk(t)(Point(0.0005, 1e-3, 4))
	b := mk(t)(Never(1e-3, 2))
	d := mk(t)(Choice([]float64{0.25, 0.75}, []DeltaQ{a, b}))
	if d.Bins() != 4 || !near(d.Intangible(), 0.75, 1e-15) || !near(d.CDF(1e-3), 0.25, 1e-15) {
		t.Fatalf("Choice = %v pdf %v", d, d.PDF())
	}
	for _, w := range [][]float64{{0.5, 0.6}, {-0.1, 1.1}, {math.NaN(), 1}, {1}} {
		if _, err := Choice(w, []DeltaQ{a, b}); err == nil {
			t.Errorf("Choice weights %v accepted", w)
		}
	}
	if _, err := Choice(nil, nil); err == nil {
		t.Error("Choice of nothing accepted")
	}
}

// TestNeverKeepsPoints: an operand that never completes has no mass to
// place, so it leaves the others' point masses at their edges: a quarter of
// a point at 1 ms lost (p:[0.75, 0.25](a, lost), lost = Never) has its
// median at 1 ms, not inside the bin below as if the point were spread.
func TestNeverKeepsPoints(t *testing.T) {
	const w = 1e-5
	a := mk(t)(Point(1e-3, w, 1000))
	lost := mk(t)(Never(w, 1000))
	for _, c := range []struct {
		name string
		d    DeltaQ
	}{
		{"choice", mk(t)(Choice([]float64{0.75, 0.25}, []DeltaQ{a, lost}))},
		{"choice, never first", mk(t)(Choice([]float64{0.25, 0.75}, []DeltaQ{lost, a}))},
		{"first-to-finish", mk(t)(FirstToFinish(lost, a))},
	} {
		q, ok := c.d.Quantile(0.5)
		if !ok || !near(q, 1e-3, 1e-12) || c.d.Placement() != UpperEdges {
			t.Errorf("%s: median %v (%v), placement %v; want 1 ms at upper edges", c.name, q, ok, c.d.Placement())
		}
	}
}
