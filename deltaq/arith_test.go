// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"math"
	"testing"
)

func TestScale(t *testing.T) {
	d := mk(t)(Uniform(0, 1, 0.25, 4))
	s := mk(t)(Scale(d, 0.8))
	for i := 1; i <= 4; i++ {
		x := float64(i) * 0.25
		if !near(s.CDF(x), 0.8*d.CDF(x), 1e-15) {
			t.Fatalf("Scale: F(%v) = %v, want 0.8·%v", x, s.CDF(x), d.CDF(x))
		}
	}
	if !near(s.Intangible(), 0.2, 1e-15) {
		t.Fatalf("Scale intangible %v", s.Intangible())
	}
	for _, j := range []float64{-0.1, 1.1, math.NaN()} {
		if _, err := Scale(d, j); err == nil {
			t.Errorf("Scale by %v accepted", j)
		}
	}
}

func TestECDFArithmetic(t *testing.T) {
	a := mk(t)(New(1, []float64{0.5, 0.5}))
	b := mk(t)(New(1, []float64{0.25, 0.25, 0.25}))
	add := mk2(t)(AddECDF(a, b))
	sub := mk2(t)(SubECDF(a, b))
	mul := mk2(t)(MulECDF(a, b))
	// Edges 1, 2, 3: F_A = 0.5, 1, 1 (flat beyond its dMax); F_B = 0.25, 0.5, 0.75.
	wantAdd := []float64{0.75, 1.5, 1.75}
	wantSub := []float64{0.25, 0.5, 0.25}
	wantMul := []float64{0.125, 0.5, 0.75}
	for i := range wantAdd {
		if !near(add.Values[i], wantAdd[i], 1e-15) || !near(sub.Values[i], wantSub[i], 1e-15) || !near(mul.Values[i], wantMul[i], 1e-15) {
			t.Fatalf("add %v sub %v mul %v", add.Values, sub.Values, mul.Values)
		}
	}
	if got := add.At(1.5); !near(got, 1.125, 1e-15) {
		t.Errorf("Curve.At(1.5) = %v, want 1.125", got)
	}
	if got := add.At(10); got != 1.75 {
		t.Errorf("Curve.At beyond the end = %v", got)
	}
	atf := mk(t)(AllToFinish(a, b))
	for i, v := range atf.CDFEdges(nil) {
		if !near(v, mul.Values[i], 1e-15) {
			t.Fatalf("MulECDF and AllToFinish differ at edge %d", i)
		}
	}
}

func mk2(t testing.TB) func(Curve, error) Curve {
	return func(c Curve, err error) Curve {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

func TestMergeEqualsUnion(t *testing.T) {
	x := []float64{0.0001, 0.0012, 0.0035, 0.0099}
	y := []float64{0.0005, 0.0042}
	a := mk(t)(FromInstances(1e-3, 10, x, 1, 0))
	b := mk(t)(FromInstances(1e-3, 10, y, 0, 2))
	u := mk(t)(FromInstances(1e-3, 10, append(append([]float64{}, x...), y...), 1, 2))
	m := mk(t)(Merge(a, b))
	if m.Count() != 9 || u.Count() != 9 {
		t.Fatalf("counts %d %d", m.Count(), u.Count())
	}
	if dd, _ := Distance(m, u); dd > 1e-15 {
		t.Fatalf("Merge differs from the union by %v", dd)
	}
	analytic := mk(t)(Point(0, 1e-3, 10))
	if _, err := Merge(a, analytic); err == nil {
		t.Error("Merge with a count-less ΔQ accepted")
	}
	other := mk(t)(FromInstances(1e-3, 11, x, 0, 0))
	if _, err := Merge(a, other); err == nil {
		t.Error("Merge of different shapes accepted")
	}
}
