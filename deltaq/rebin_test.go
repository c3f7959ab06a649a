// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"math"
	"testing"
)

func TestRebin(t *testing.T) {
	// Whole multiple: sums of pairs (thesis (5.10)).
	d := mk(t)(New(1, []float64{0.1, 0.2, 0.3, 0.1, 0.2}))
	r := mk(t)(Rebin(d, 2))
	want := []float64{0.3, 0.4, 0.2}
	if r.Bins() != 3 {
		t.Fatalf("Rebin bins %d, want 3", r.Bins())
	}
	for i, p := range r.PDF() {
		if !near(p, want[i], 1e-15) {
			t.Fatalf("Rebin pdf %v, want %v", r.PDF(), want)
		}
	}
	// Non-integer ratio 1.5: new bin j covers [1.5j, 1.5j+1.5) and takes
	// the overlapping share of each old bin, e.g. bin 0 = 0.1 + ½·0.2.
	r = mk(t)(Rebin(d, 1.5))
	want = []float64{0.2, 0.4, 0.2, 0.1}
	for i := range want {
		if !near(r.PDF()[i], want[i], 1e-15) {
			t.Fatalf("Rebin 1.5 pdf %v, want %v", r.PDF(), want)
		}
	}
	if !near(r.Tangible(), d.Tangible(), 1e-15) {
		t.Fatalf("Rebin lost mass")
	}
	if _, err := Rebin(d, 0.5); err == nil {
		t.Error("refinement accepted")
	}
	if _, err := Rebin(d, math.NaN()); err == nil {
		t.Error("NaN width accepted")
	}
	if same := mk(t)(Rebin(d, 1)); same.Bins() != 5 {
		t.Error("Rebin to the same width changed the shape")
	}
}

func TestAlignAndDistance(t *testing.T) {
	a := mk(t)(Uniform(0, 1, 0.1, 20))
	b := mk(t)(Uniform(0, 1, 0.2, 5))
	al, err := Align(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if al[0].Width() != 0.2 || al[1].Width() != 0.2 || al[0].Bins() != 10 || al[1].Bins() != 10 {
		t.Fatalf("Align: %v %v", al[0], al[1])
	}
	if dist := mk(t)(Point(0.05, 0.1, 10)); dist.Bins() != 10 {
		t.Fatal("setup")
	}
	if dd, err := Distance(a, b); err != nil || dd > 1e-12 {
		t.Fatalf("Distance of the same uniform on two grids = %v, %v", dd, err)
	}
	// Two point masses in different bins: distance 1.
	p := mk(t)(Point(0.05, 0.1, 10))
	q := mk(t)(Point(0.55, 0.1, 10))
	if dd, _ := Distance(p, q); !near(dd, 1, 1e-15) {
		t.Fatalf("Distance of separated points = %v", dd)
	}
}
