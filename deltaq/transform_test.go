// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"errors"
	"math"
	"testing"
)

func TestTimeTransform(t *testing.T) {
	u := mk(t)(Uniform(0, 1, 0.1, 10))
	// 2·U(0,1) = U(0,2): F(t) = t/2, 20 bins.
	d := mk(t)(TimeTransform(u, 2, 0))
	if d.Bins() != 20 {
		t.Fatalf("bins %d, want 20", d.Bins())
	}
	for i := 1; i <= 20; i++ {
		x := float64(i) / 10
		if !near(d.CDF(x), x/2, 1e-12) {
			t.Fatalf("2·U: F(%v) = %v", x, d.CDF(x))
		}
	}
	// U + 0.3 = U(0.3, 1.3).
	d = mk(t)(TimeTransform(u, 1, 0.3))
	want := mk(t)(Uniform(0.3, 1.3, 0.1, 13))
	if dd, _ := Distance(d, want); dd > 1e-12 {
		t.Fatalf("U + 0.3 off by %v", dd)
	}
	// Half as slow and 0.2 s earlier: 0.5·U − 0.2 = U(−0.2, 0.3) clamped:
	// 40 % at zero (in bin 0), then uniform to 0.3.
	d = mk(t)(TimeTransform(u, 0.5, -0.2))
	if !near(d.CDF(0.1), 0.6, 1e-12) || !near(d.CDF(0.3), 1, 1e-12) {
		t.Fatalf("0.5·U − 0.2: F(0.1) = %v, F(0.3) = %v", d.CDF(0.1), d.CDF(0.3))
	}
	// Intangible mass is kept.
	e := mk(t)(Exponential(1, 0.05, 40))
	d = mk(t)(TimeTransform(e, 3, 0.1))
	if !near(d.Intangible(), e.Intangible(), 1e-12) {
		t.Fatalf("intangible changed from %v to %v", e.Intangible(), d.Intangible())
	}
	// a = 0: everything at b. 0.25 s is the edge between bins 4 and 5 of
	// 0.05 s: the mass goes to the bin that edge closes, (0.2, 0.25] s, as
	// Point(0.25) would put it, so F(0.25) is the whole tangible mass.
	d = mk(t)(TimeTransform(e, 0, 0.25))
	if q, ok := d.Quantile(0.5); !ok || q < 0.2 || q > 0.25 {
		t.Fatalf("0·X + 0.25: median %v", q)
	}
	if got := d.CDF(0.25); !near(got, e.Tangible(), 1e-15) {
		t.Fatalf("0·X + 0.25: F(0.25) = %v, want %v", got, e.Tangible())
	}
	for _, ab := range [][2]float64{{-1, 0}, {math.NaN(), 0}, {1, math.Inf(1)}, {math.Inf(1), 0}} {
		if _, err := TimeTransform(e, ab[0], ab[1]); err == nil {
			t.Errorf("TimeTransform(%v, %v) accepted", ab[0], ab[1])
		}
	}
	if _, err := TimeTransform(e, 1e6, 0); err == nil {
		t.Error("TimeTransform beyond MaxBins accepted")
	}
}

func TestDeconvolveKnownAnswer(t *testing.T) {
	// Known part: a point in bin 2 (midpoint 2.5 w). Target: everything by
	// 10 w. The latest rest is a point in bin 6: 2.5 w + 6.5 w = 9 w, half
	// in bin 8 and half in bin 9, complete by 10 w; a point in bin 7 would
	// leave half of the mass beyond 10 w.
	const w = 1.0
	known := mk(t)(Point(2.5, w, 12))
	target := mk(t)(Steps([]Step{{10, 1}}, w, 12))
	x := mk(t)(Deconvolve(target, known))
	p := x.PDF()
	if !near(p[6], 1, 1e-12) {
		t.Fatalf("budget pdf %v, want all in bin 6", p)
	}
	whole := mk(t)(Convolve(known, x))
	if c := mustCmp(t)(Compare(whole, target)); !c.LessEq() {
		t.Fatalf("known ⊗ budget misses the target: %+v", c)
	}
}

func TestDeconvolveMeetsTarget(t *testing.T) {
	// A 10-bin exponential path segment against the thesis QTA (§2.1.6) on
	// 60 bins of 1 ms: the target holds the failure bound too (95 % by
	// 60 ms), so known ⊗ budget passes the whole QTA.
	const w = 1e-3
	known := mk(t)(Exponential(0.004, w, 20))
	q, err := ThesisQTA(0.015, 0.025, 0.035, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	target := mk(t)(q.RequiredDeltaQ(w, 60))
	x := mk(t)(Deconvolve(target, known))
	whole := mk(t)(ConvolveDirect(known, x))
	c := mustCmp(t)(Compare(whole, target))
	if c.Hazard > 1e-9 {
		t.Fatalf("known ⊗ budget has a hazard %v at %v", c.Hazard, c.HazardAt)
	}
	chk, err := q.Check(whole)
	if err != nil || !chk.OK {
		t.Fatalf("QTA fails: %+v %v", chk, err)
	}
	// The budget is not trivially "instant": its mass is later than bin 0.
	if m, ok := x.Mean(); !ok || m < 0.005 {
		t.Fatalf("budget mean %v, %v: suspiciously early", m, ok)
	}
}

func TestDeconvolveInfeasible(t *testing.T) {
	// The known part fails 20 % of the time; the target allows 10 %.
	known := mk(t)(New(1, []float64{0.8}))
	target := mk(t)(Steps([]Step{{5, 0.9}}, 1, 10))
	if _, err := Deconvolve(target, known); !errors.Is(err, ErrInfeasible) {
		t.Fatalf("Deconvolve = %v, want ErrInfeasible", err)
	}
	// The known part alone is too slow.
	slow := mk(t)(Point(7.5, 1, 10))
	target = mk(t)(Steps([]Step{{5, 0.5}}, 1, 10))
	if _, err := Deconvolve(target, slow); !errors.Is(err, ErrInfeasible) {
		t.Fatalf("Deconvolve = %v, want ErrInfeasible", err)
	}
}
