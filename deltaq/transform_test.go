// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// TestTimeTransformPoints: the masses of a point ΔQ are points, and a·X + b
// moves them as points. Y = a·X + b for X the constant e is the constant
// a·e + b, so F_Y(t) is 0 below a·e + b and 1 from it on (the package
// documentation's F_Y(t) = F_X((t − b)/a), with Point's F_X): read as
// spread over the bin below its edge, 2·Point(2 ms) had F(3 ms) = 0.5 and a
// mean of 3 ms, and Point(0) + 2 ms had F(2 ms) = 0.
func TestTimeTransformPoints(t *testing.T) {
	const w = 1e-3
	for _, c := range []struct {
		name    string
		x       DeltaQ
		a, b, y float64 // Y = a·x + b is the constant y
		at      Placement
	}{
		{"2·Point(2ms)", mk(t)(Point(2e-3, w, 10)), 2, 0, 4e-3, UpperEdges},
		{"Point(2ms)+3ms", mk(t)(Point(2e-3, w, 10)), 1, 3e-3, 5e-3, UpperEdges},
		{"Point(0)+2ms", mk(t)(Point(0, w, 10)), 1, 2e-3, 2e-3, UpperEdges},
		{"0·Point(3ms)", mk(t)(Point(3e-3, w, 10)), 0, 0, 0, LowerEdges},
		{"Point(3ms)−5ms", mk(t)(Point(3e-3, w, 10)), 1, -5e-3, 0, LowerEdges},
		{"3·Point(10ms)", mk(t)(Point(10e-3, w, 10)), 3, 0, 30e-3, UpperEdges},
		{"Point(2ms)+0.5ms", mk(t)(Point(2e-3, w, 10)), 1, 0.5e-3, 2.5e-3, Spread},
	} {
		d := mk(t)(TimeTransform(c.x, c.a, c.b))
		if d.Placement() != c.at || d.Tangible() != 1 {
			t.Errorf("%s: %v, want the point %v at %s", c.name, d, c.y, c.at)
		}
		// Exact at every edge, and everywhere when the point is on one.
		for k := 0; k <= d.Bins(); k++ {
			e := float64(k) * w
			want := 0.0
			if e >= c.y-1e-12 {
				want = 1
			}
			if got := d.CDF(e); got != want {
				t.Errorf("%s: F(%g) = %v, want %v", c.name, e, got, want)
			}
			if mid := e + w/2; c.at != Spread && d.CDF(mid) != d.CDF(e) {
				t.Errorf("%s: F(%g) = %v, F(%g) = %v: not a step", c.name, mid, d.CDF(mid), e, d.CDF(e))
			}
		}
	}
	// Several points, failure kept: ½·Point(1ms) + ¼·Point(3ms), doubled.
	two := mk(t)(New(w, []float64{0.5, 0, 0.25, 0}))
	two.at = UpperEdges
	d := mk(t)(TimeTransform(two, 2, 0))
	if got := d.CDFEdges(nil); d.Placement() != UpperEdges || !slices.Equal(got, []float64{0, 0.5, 0.5, 0.5, 0.5, 0.75}) {
		t.Errorf("2·X of points at 1 and 3 ms: %v, CDF at edges %v", d, got)
	}
	// Moved 1 ms earlier, the point at 1 ms is at 0 and the one at 3 ms at
	// 2 ms: no placement holds both, and the result is exact at the edges
	// above 0.
	d = mk(t)(TimeTransform(two, 1, -1e-3))
	if got := d.CDFEdges(nil); d.Placement() != Spread || !slices.Equal(got, []float64{0.5, 0.75, 0.75, 0.75}) {
		t.Errorf("X − 1ms of points at 1 and 3 ms: %v, CDF at edges %v", d, got)
	}
	if _, err := TimeTransform(mk(t)(Point(2e-3, w, 10)), 1e6, 0); err == nil {
		t.Error("TimeTransform of a point beyond MaxBins accepted")
	}
}

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

// TestTimeTransformZeroScale: 0·X + b is the single delay max(b, 0), as
// Point places it: a point at 0 or on an edge, of mean b exactly, not spread
// over the bin (mean half a bin off: 0·X + 2 ms read 1.5 ms on 1 ms
// bins, 0·X 0.5 ms); inside a bin, spread over it as Point spreads it.
func TestTimeTransformZeroScale(t *testing.T) {
	x := mk(t)(New(1e-3, []float64{0.2, 0.3, 0.4}))
	for _, b := range []float64{0, 2e-3, 2.5e-3, -1e-3} {
		y := mk(t)(TimeTransform(x, 0, b))
		pt := mk(t)(Point(math.Max(b, 0), 1e-3, 3))
		mean, ok := y.Mean()
		want, _ := pt.Mean()
		if !ok || !near(mean, want, 1e-12) || y.Placement() != pt.Placement() || !near(y.Tangible(), 0.9, 1e-12) {
			t.Errorf("0·X + %v: mean %v, %v, tangible %v; want Point's mean %v, %v, and 0.9", b, mean, y.Placement(), y.Tangible(), want, pt.Placement())
		}
	}
	if m, _ := mk(t)(TimeTransform(x, 0, 2e-3)).Mean(); !near(m, 2e-3, 1e-12) {
		t.Errorf("0·X + 2 ms: mean %v, want 2 ms", m)
	}
}
