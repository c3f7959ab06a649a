// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

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

func TestConvolveMaxBins(t *testing.T) {
	a := mk(t)(Never(1, MaxBins/2+1))
	if _, err := Convolve(a, a); err == nil {
		t.Error("convolution beyond MaxBins accepted")
	}
}
