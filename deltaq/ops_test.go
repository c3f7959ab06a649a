package deltaq

import (
	"math"
	"testing"
)

// convolvers lists the three implementations of ⊗, all tested alike.
var convolvers = []struct {
	name string
	f    func(a, b DeltaQ) (DeltaQ, error)
}{
	{"auto", Convolve},
	{"direct", ConvolveDirect},
	{"fft", ConvolveFFT},
}

func TestConvolveNotShifted(t *testing.T) {
	// The check: 1.5 ms ⊗ 1.5 ms on 1 ms bins lands at 3 ms, half
	// the mass in [2, 3) and half in [3, 4), median exactly 3 ms.
	a := mk(t)(Point(0.0015, 1e-3, 5))
	for _, c := range convolvers {
		d := mk(t)(c.f(a, a))
		p := d.PDF()
		if d.Bins() != 10 || !near(p[2], 0.5, 1e-12) || !near(p[3], 0.5, 1e-12) {
			t.Errorf("%s: pdf %v, want ½ in bins 2 and 3 of 10", c.name, p)
		}
		if m, ok := d.Quantile(0.5); !ok || !near(m, 0.003, 1e-15) {
			t.Errorf("%s: median %v, %v; want 3 ms", c.name, m, ok)
		}
		if m, ok := d.Mean(); !ok || !near(m, 0.003, 1e-15) {
			t.Errorf("%s: mean %v, want 3 ms", c.name, m)
		}
	}
}

func TestConvolveUniformClosedForm(t *testing.T) {
	// U(0,1) ⊗ U(0,1) is the triangular distribution on [0, 2]:
	// F(t) = t²/2 for t ≤ 1, 1 − (2−t)²/2 for 1 ≤ t ≤ 2, so F(0.5) = 0.125,
	// F(1) = 0.5, F(1.5) = 0.875 (e.g. Feller, vol. II, §I.9). Tolerance:
	// one bin's worth of mass (the density is at most 1).
	const w = 0.01
	u := mk(t)(Uniform(0, 1, w, 100))
	for _, c := range convolvers {
		d := mk(t)(c.f(u, u))
		for _, k := range []struct{ t, f float64 }{{0.5, 0.125}, {1, 0.5}, {1.5, 0.875}, {2, 1}} {
			if got := d.CDF(k.t); !near(got, k.f, w) {
				t.Errorf("%s: F(%v) = %v, want %v ± %v", c.name, k.t, got, k.f, w)
			}
		}
	}
}

func TestConvolveExponentialClosedForm(t *testing.T) {
	// Exp(1) ⊗ Exp(1) is Gamma(2, 1): F(t) = 1 − e^{−t}(1 + t), so
	// F(1) = 1 − 2/e. Tolerance one bin's worth (density ≤ 1/e).
	const w = 0.01
	e := mk(t)(Exponential(1, w, 1000))
	want := 1 - 2/math.E
	for _, c := range convolvers {
		d := mk(t)(c.f(e, e))
		if got := d.CDF(1); !near(got, want, w) {
			t.Errorf("%s: F(1) = %v, want 1 − 2/e = %v ± %v", c.name, got, want, w)
		}
		if got := d.CDF(3); !near(got, 1-4*math.Exp(-3), w) {
			t.Errorf("%s: F(3) = %v, want 1 − 4/e³", c.name, got)
		}
	}
}

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

func TestConvolveMaxBins(t *testing.T) {
	a := mk(t)(Never(1, MaxBins/2+1))
	if _, err := Convolve(a, a); err == nil {
		t.Error("convolution beyond MaxBins accepted")
	}
}

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
