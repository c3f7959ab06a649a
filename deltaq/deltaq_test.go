// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// mk returns a function that unwraps a constructor's result, failing the
// test on error: mk(t)(Point(…)).
func mk(t testing.TB) func(DeltaQ, error) DeltaQ {
	return func(d DeltaQ, err error) DeltaQ {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestThesisWidth(t *testing.T) {
	// (5.3): dMax = Δbase·2ⁿ·N; n = 0, N = 50 gives 50 ms of 1 ms bins.
	w, err := ThesisWidth(0, 50)
	if err != nil || w != 1e-3 {
		t.Fatalf("ThesisWidth(0, 50) = %v, %v; want 1 ms", w, err)
	}
	if w, _ := ThesisWidth(-10, 1); w != 1e-3/1024 {
		t.Fatalf("ThesisWidth(-10) = %v", w)
	}
	if w, _ := ThesisWidth(10, 1000); w != 1.024 {
		t.Fatalf("ThesisWidth(10) = %v", w)
	}
	for _, c := range [][2]int{{-11, 10}, {11, 10}, {0, 0}, {0, 1001}} {
		if _, err := ThesisWidth(c[0], c[1]); err == nil {
			t.Errorf("ThesisWidth(%d, %d) accepted", c[0], c[1])
		}
	}
	if w, err := WidthFor(0.05, 50); err != nil || !near(w, 1e-3, 1e-18) {
		t.Fatalf("WidthFor(50ms, 50) = %v, %v", w, err)
	}
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := WidthFor(bad, 10); err == nil {
			t.Errorf("WidthFor(%v) accepted", bad)
		}
	}
}

func TestConstructorsRejectBadInput(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := map[string]error{}
	_, cases["New zero width"] = New(0, []float64{1})
	_, cases["New negative width"] = New(-1, []float64{1})
	_, cases["New NaN width"] = New(nan, []float64{1})
	_, cases["New no bins"] = New(1, nil)
	_, cases["New too many bins"] = New(1, make([]float64, MaxBins+1))
	_, cases["New negative mass"] = New(1, []float64{0.5, -0.1})
	_, cases["New NaN mass"] = New(1, []float64{nan})
	_, cases["New mass > 1"] = New(1, []float64{0.6, 0.6})
	_, cases["Never zero bins"] = Never(1, 0)
	_, cases["Point negative"] = Point(-1, 1, 10)
	_, cases["Point NaN"] = Point(nan, 1, 10)
	_, cases["Point Inf"] = Point(inf, 1, 10)
	_, cases["Uniform reversed"] = Uniform(2, 1, 1, 10)
	_, cases["Uniform NaN"] = Uniform(nan, 1, 1, 10)
	_, cases["Exponential zero mean"] = Exponential(0, 1, 10)
	_, cases["Exponential Inf mean"] = Exponential(inf, 1, 10)
	_, cases["Steps decreasing"] = Steps([]Step{{1, 0.5}, {2, 0.4}}, 1, 10)
	_, cases["Steps P > 1"] = Steps([]Step{{1, 1.5}}, 1, 10)
	_, cases["Steps negative delay"] = Steps([]Step{{-1, 0.5}}, 1, 10)
	_, cases["FromInstances negative delay"] = FromInstances(1, 10, []float64{-1}, 0, 0)
	_, cases["FromInstances NaN delay"] = FromInstances(1, 10, []float64{nan}, 0, 0)
	_, cases["FromInstances negative count"] = FromInstances(1, 10, nil, -1, 0)
	_, cases["FromCDF decreasing"] = FromCDF(1, []float64{0.5, 0.4})
	_, cases["FromCDF above 1"] = FromCDF(1, []float64{0.5, 1.4})
	for name, err := range cases {
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else if !strings.HasPrefix(err.Error(), "deltaq: ") {
			t.Errorf("%s: error %q lacks the package prefix", name, err)
		}
	}
	if _, err := FromInstances(1, 10, nil, 0, 0); !errors.Is(err, ErrEmpty) {
		t.Errorf("FromInstances with no instances: %v, want ErrEmpty", err)
	}
}

func TestPointAndTimeout(t *testing.T) {
	d := mk(t)(Point(0.0035, 1e-3, 10))
	if p := d.PDF(); p[3] != 1 {
		t.Fatalf("Point(3.5 ms) pdf = %v, want mass in bin 3", p)
	}
	// A delay that is an exact multiple of the width lands in the bin that
	// edge closes, bin 2 = (2, 3] ms (bins are upper-inclusive; it used to be
	// bin 3 = [3, 4) ms, which put F(3 ms) at 0 for a delay of 3 ms), despite
	// 0.003/0.001 rounding to 2.9999999999999996.
	d = mk(t)(Point(0.003, 1e-3, 10))
	if p := d.PDF(); p[2] != 1 || d.CDF(0.003) != 1 {
		t.Fatalf("Point(3 ms) pdf = %v, F(3 ms) = %v; want mass in bin 2, F = 1", p, d.CDF(0.003))
	}
	// Beyond dMax (by more than the rounding tolerance) is a timeout.
	d = mk(t)(Point(0.0100001, 1e-3, 10))
	if d.Intangible() != 1 {
		t.Fatalf("Point beyond dMax: intangible %v, want 1", d.Intangible())
	}
}

func TestReadingMethods(t *testing.T) {
	// Two bins of 1 s: masses 0.2 and 0.6, intangible 0.2.
	d := mk(t)(New(1, []float64{0.2, 0.6}))
	if d.Bins() != 2 || d.Width() != 1 || d.DMax() != 2 || d.Count() != 0 {
		t.Fatalf("shape: %v", d)
	}
	if !near(d.Intangible(), 0.2, 1e-15) || !near(d.Tangible(), 0.8, 1e-15) {
		t.Fatalf("intangible %v tangible %v", d.Intangible(), d.Tangible())
	}
	// Piecewise-linear CDF.
	for _, c := range []struct{ t, f float64 }{{-1, 0}, {0, 0}, {0.5, 0.1}, {1, 0.2}, {1.5, 0.5}, {2, 0.8}, {99, 0.8}, {math.Inf(1), 0.8}} {
		if got := d.CDF(c.t); !near(got, c.f, 1e-15) {
			t.Errorf("CDF(%v) = %v, want %v", c.t, got, c.f)
		}
	}
	if got := d.CDF(math.NaN()); got != 0 {
		t.Errorf("CDF(NaN) = %v", got)
	}
	edges := d.CDFEdges(nil)
	if len(edges) != 2 || !near(edges[0], 0.2, 1e-15) || !near(edges[1], 0.8, 1e-15) {
		t.Errorf("CDFEdges = %v", edges)
	}
	for _, c := range []struct{ q, t float64 }{{0, 0}, {0.1, 0.5}, {0.2, 1}, {0.5, 1.5}, {0.8, 2}} {
		got, ok := d.Quantile(c.q)
		if !ok || !near(got, c.t, 1e-12) {
			t.Errorf("Quantile(%v) = %v, %v; want %v", c.q, got, ok, c.t)
		}
	}
	// Beyond the tangible mass the quantile is unreachable, not dMax.
	for _, q := range []float64{0.81, 0.99, 1, 1.5, -0.1, math.NaN()} {
		if got, ok := d.Quantile(q); ok {
			t.Errorf("Quantile(%v) = %v, want unreachable", q, got)
		}
	}
	// Mean of the successful part: (0.2·0.5 + 0.6·1.5)/0.8 = 1.25.
	if m, ok := d.Mean(); !ok || !near(m, 1.25, 1e-15) {
		t.Errorf("Mean = %v, %v; want 1.25", m, ok)
	}
	n := mk(t)(Never(1, 3))
	if _, ok := n.Mean(); ok {
		t.Error("Mean of Never reported ok")
	}
	if _, ok := n.Quantile(0.1); ok {
		t.Error("Quantile of Never reported ok")
	}
	var zero DeltaQ
	if zero.CDF(1) != 0 || zero.Bins() != 0 || zero.Intangible() != 1 {
		t.Error("zero value reads wrong")
	}
	if _, ok := zero.Quantile(0.5); ok {
		t.Error("zero value quantile ok")
	}
}

func TestUniformExponentialSteps(t *testing.T) {
	// Uniform on [0.5, 2.5) over 1 s bins: ¼, ½, ¼.
	u := mk(t)(Uniform(0.5, 2.5, 1, 4))
	want := []float64{0.25, 0.5, 0.25, 0}
	for i, p := range u.PDF() {
		if !near(p, want[i], 1e-15) {
			t.Fatalf("Uniform pdf = %v, want %v", u.PDF(), want)
		}
	}
	// Part beyond dMax is intangible: uniform on [0, 4) over 2 bins of 1 s.
	u = mk(t)(Uniform(0, 4, 1, 2))
	if !near(u.Intangible(), 0.5, 1e-15) {
		t.Fatalf("Uniform tail intangible %v, want 0.5", u.Intangible())
	}
	// Exponential: F(t) = 1 − e^{−t/mean} at bin edges, tail intangible.
	e := mk(t)(Exponential(2, 0.5, 10))
	for i := 1; i <= 10; i++ {
		x := float64(i) * 0.5
		if got, want := e.CDF(x), 1-math.Exp(-x/2); !near(got, want, 1e-14) {
			t.Errorf("Exponential CDF(%v) = %v, want %v", x, got, want)
		}
	}
	if !near(e.Intangible(), math.Exp(-2.5), 1e-14) {
		t.Errorf("Exponential intangible %v, want e^-2.5", e.Intangible())
	}
	// Steps: the thesis QTA example (§2.1.6): 25 % by 15 ms, 50 % by 25 ms,
	// 75 % by 35 ms, 95 % by 50 ms.
	s := mk(t)(Steps([]Step{{0.035, 0.75}, {0.015, 0.25}, {0.025, 0.5}, {0.05, 0.95}}, 1e-3, 60))
	for _, c := range []struct{ t, f float64 }{{0.015, 0.25}, {0.025, 0.5}, {0.035, 0.75}, {0.05, 0.95}, {0.0139, 0}, {0.045, 0.75}} {
		if got := s.CDF(c.t); !near(got, c.f, 1e-12) {
			t.Errorf("Steps CDF(%v) = %v, want %v", c.t, got, c.f)
		}
	}
	if !near(s.Intangible(), 0.05, 1e-12) {
		t.Errorf("Steps intangible %v, want 0.05", s.Intangible())
	}
}

func TestOperatorsRejectZeroValue(t *testing.T) {
	var z DeltaQ
	a := mk(t)(Point(0, 1, 2))
	if _, err := Convolve(a, z); err == nil {
		t.Error("Convolve with the zero ΔQ accepted")
	}
	if _, err := FirstToFinish(z, a); err == nil {
		t.Error("FirstToFinish with the zero ΔQ accepted")
	}
	if _, err := Rebin(z, 2); err == nil {
		t.Error("Rebin of the zero ΔQ accepted")
	}
	if _, err := Distance(a, z); err == nil {
		t.Error("Distance to the zero ΔQ accepted")
	}
}

// TestBinIndexAsRounded: binIndex, which floors, gives the bin of the
// definition it documents (round x to an integer within a relative 1e-9,
// then ⌈x⌉ − 1, at least 0) for integers, values just above and below
// them, random values at several scales, negatives and the special values.
func TestBinIndexAsRounded(t *testing.T) {
	byDefinition := func(x float64) float64 {
		if r := math.Round(x); math.Abs(x-r) <= 1e-9*math.Max(1, r) {
			x = r
		}
		return math.Max(math.Ceil(x)-1, 0)
	}
	xs := []float64{0, math.Copysign(0, -1), 1e-12, 1e-9, 2e-9, 0.5, 1, 2.9999999999999996, 5.000000000000001,
		-0.5, -1, -2, -1e-12, 1e300, math.Inf(1), math.Inf(-1), math.NaN(), math.MaxFloat64}
	for _, c := range []float64{1, 2, 3, 999, 1000, 1001, 1 << 20, 1e9, 1e12} {
		for _, rel := range []float64{0, 1e-15, 5e-10, 1e-9, 1.5e-9, 1e-8, 1e-6} {
			xs = append(xs, c*(1+rel), c*(1-rel), c+rel, c-rel)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		scale := math.Pow(10, float64(rng.IntN(16)-4))
		xs = append(xs, rng.Float64()*scale, math.Round(rng.Float64()*scale)+(rng.Float64()-0.5)*2e-9*scale)
	}
	for _, x := range xs {
		got, want := binIndex(x), byDefinition(x)
		if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("binIndex(%v) = %v, by the definition %v", x, got, want)
		}
	}
}

// TestCDFEdgesAt: the CDF at some right edges alone is CDFEdges there, for
// every placement, appended to what dst holds.
func TestCDFEdgesAt(t *testing.T) {
	d := mk(t)(New(0.5, []float64{0.1, 0, 0.3, 0.2, 0.1}))
	idx := []int{0, 2, 3, 4}
	for _, v := range []DeltaQ{d, d.Pessimistic(), d.Optimistic()} {
		all := v.CDFEdges(nil)
		got := v.CDFEdgesAt([]float64{-1}, idx)
		if len(got) != len(idx)+1 || got[0] != -1 {
			t.Fatalf("%v: CDFEdgesAt = %v, want %d values after -1", v.Placement(), got, len(idx))
		}
		for j, i := range idx {
			if got[j+1] != all[i] {
				t.Errorf("%v: F at edge %d = %v, CDFEdges %v", v.Placement(), i+1, got[j+1], all[i])
			}
		}
	}
}

// TestSnapInt: a quotient within a relative 1e-9 of a whole number (1e-9
// absolute below 1) is that number, on either side and for either sign;
// anything farther, half-way included, is left as it is. 0.3/0.1 is the
// case the tolerance exists for: 2.9999999999999996 in binary floating
// point.
func TestSnapInt(t *testing.T) {
	for _, c := range []struct{ x, want float64 }{
		{0.3 / 0.1, 3},
		{3, 3},
		{0, 0},
		{1e-10, 0},
		{-1e-10, 0},
		{5e-9, 5e-9},
		{1000 * (1 + 5e-10), 1000},
		{1000 * (1 - 5e-10), 1000},
		{1000 * (1 + 2e-9), 1000 * (1 + 2e-9)},
		{-1000 * (1 + 5e-10), -1000},
		{2.5, 2.5},
		{-2.5, -2.5},
		{0.49999999999999994, 0.49999999999999994},
		{1e15 + 0.25, 1e15},
	} {
		if got := snapInt(c.x); got != c.want {
			t.Errorf("snapInt(%v) = %v, want %v", c.x, got, c.want)
		}
	}
}
