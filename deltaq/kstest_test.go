// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestKolmogorovQKnownValues checks P(K > λ) at the usual critical values of
// the Kolmogorov distribution, λ(α) with P(K > λ) = α: 1.2238478702 (0.10),
// 1.3580986393 (0.05), 1.6276236115 (0.01) (the quantiles tabulated by
// Smirnov, "Table for estimating the goodness of fit of empirical
// distributions", Ann. Math. Stat. 19, 1948, to more digits). By hand at
// 1.3580986393: λ² = 1.8444318, 2·e^{−2λ²} = 2·e^{−3.6888795} = 0.0500000,
// the next term 2·e^{−8λ²} = 7.6e-7 is cancelled to 1e-16 by the rest of
// the alternating series. At λ = 0.5 the small-λ series: P(K ≤ 0.5) =
// (√(2π)/0.5)·(e^{−π²/2} + e^{−9π²/2} + …) = 5.0132565·0.0071918833 =
// 0.0360547563, so P(K > 0.5) = 0.9639452437.
func TestKolmogorovQKnownValues(t *testing.T) {
	cases := []struct{ lambda, want float64 }{
		{1.2238478702170825, 0.10},
		{1.3580986393225505, 0.05},
		{1.6276236115189502, 0.01},
		{0.5, 0.9639452436648751},
		{1.0, 0.26999967167735456},
		{0, 1},
		{-1, 1},
		{math.NaN(), 1},
		{10, 0}, // 2·e^{−200} = 2.8e-87
	}
	for _, c := range cases {
		if got := KolmogorovQ(c.lambda); !near(got, c.want, 1e-12) {
			t.Errorf("KolmogorovQ(%v) = %.15g, want %.15g", c.lambda, got, c.want)
		}
	}
	// The two series meet at 1.18: the value is continuous there.
	lo, hi := KolmogorovQ(math.Nextafter(1.18, 0)), KolmogorovQ(1.18)
	if !near(lo, hi, 1e-14) {
		t.Errorf("KolmogorovQ jumps at 1.18: %.17g, %.17g", lo, hi)
	}
	// Decreasing in λ.
	prev := 1.0
	for l := 0.05; l < 4; l += 0.01 {
		q := KolmogorovQ(l)
		if q > prev+1e-15 || q < 0 || q > 1 {
			t.Fatalf("KolmogorovQ(%v) = %v after %v: not a decreasing probability", l, q, prev)
		}
		prev = q
	}
}

// TestNewKSTest: the effective size n·m/(n+m), the statistic and its
// p-value. n = m = 100, D = 0.2: Nₑ = 50, λ = √50·0.2 = 1.4142136,
// P(K > λ) = 2·(e^{−4} − e^{−16} + …) = 2·(0.0183156 − 0.0000001) =
// 0.0366311. The exact two-sample tail P(D ≥ 0.2) for n = m = 100,
// counting the lattice paths from (0, 0) to (100, 100) that leave the band
// |i − j| < 20 (Hodges 1958), is 0.0363843: the asymptotic p-value is a
// little conservative, as it is at D = 0.18 (0.07832 against 0.07822) and
// D = 0.19 (0.05410 against 0.05390).
func TestNewKSTest(t *testing.T) {
	ks, err := NewKSTest(0.2, 100, 100)
	if err != nil {
		t.Fatal(err)
	}
	if ks.Effective != 50 || !near(ks.Statistic, math.Sqrt2, 1e-12) || !near(ks.P, 0.03663105270711935, 1e-12) {
		t.Errorf("KS(0.2, 100, 100) = %+v, want Nₑ 50, λ 1.4142136, p 0.0366311", ks)
	}
	// An exact second CDF (m = +Inf) is the one-sample test: Nₑ = n.
	if ks, err := NewKSTest(0.2, 100, math.Inf(1)); err != nil || ks.Effective != 100 {
		t.Errorf("one-sample: %+v, %v; want Nₑ 100", ks, err)
	}
	for _, bad := range [][3]float64{{-0.1, 10, 10}, {1.5, 10, 10}, {math.NaN(), 10, 10}, {0.1, 0, 10}, {0.1, 10, 0}, {0.1, math.Inf(1), 10}} {
		if _, err := NewKSTest(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("NewKSTest(%v) accepted", bad)
		}
	}
}

func TestEffectiveCount(t *testing.T) {
	cases := []struct {
		counts []float64
		want   float64
	}{
		{[]float64{100, 100}, 50},
		{[]float64{60, 120, 40}, 20}, // 1/60 + 1/120 + 1/40 = 6/120
		{[]float64{80}, 80},
		{[]float64{80, math.Inf(1)}, 80},
		{[]float64{80, 0}, 0},
		{nil, 0},
	}
	for _, c := range cases {
		if got := EffectiveCount(c.counts...); !near(got, c.want, 1e-12) {
			t.Errorf("EffectiveCount(%v) = %v, want %v", c.counts, got, c.want)
		}
	}
}

// TestKSTwoSampleImproper: failures are a point at +∞. a completes 0.5 in
// the first bin and 0.3 in the second (0.2 fail); b completes all its mass.
// The CDFs agree on bin 0 and differ by 0.2 at dMax: D = 0.2, the
// difference of the failure masses.
func TestKSTwoSampleImproper(t *testing.T) {
	a := mk(t)(New(0.001, []float64{0.5, 0.3}))
	b := mk(t)(New(0.001, []float64{0.5, 0.5}))
	ks, err := KSTwoSample(a, b, 100, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !near(ks.Distance, 0.2, 1e-12) || !near(ks.P, 0.03663105270711935, 1e-12) {
		t.Errorf("KS = %+v, want D 0.2, p 0.0366311", ks)
	}
}

// TestKSTwoSampleCalibration measures the rejection rate of the test when
// both samples come from one continuous distribution, U(0, 1 s), on 1000
// bins of 1 ms: 4000 pairs of n = m = 100 samples. The rate at α = 0.05
// must be at most α plus three binomial standard deviations
// (√(0.05·0.95/4000) = 0.0034), and not far below it: p < 0.05 when
// D ≥ 0.20 (p(0.19) = 0.0541), whose exact probability is 0.0364
// (TestNewKSTest): the discreteness of a two-sample D on 100 samples
// (multiples of 0.01) makes the test conservative, by less than a factor
// of two.
func TestKSTwoSampleCalibration(t *testing.T) {
	const reps, n, alpha = 4000, 100, 0.05
	rng := rand.New(rand.NewPCG(11, 12))
	ha, _ := NewHistogram(0.001, 1000)
	hb, _ := NewHistogram(0.001, 1000)
	rejected := 0
	for range reps {
		ha.Reset()
		hb.Reset()
		for range n {
			ha.Add(rng.Float64())
			hb.Add(rng.Float64())
		}
		a, b := mk(t)(ha.DeltaQ()), mk(t)(hb.DeltaQ())
		ks, err := KSTwoSample(a, b, n, n)
		if err != nil {
			t.Fatal(err)
		}
		if ks.P < alpha {
			rejected++
		}
	}
	rate := float64(rejected) / reps
	bound := alpha + 3*math.Sqrt(alpha*(1-alpha)/reps)
	t.Logf("rejection rate at α = %v: %.4f (bound %.4f)", alpha, rate, bound)
	if rate > bound || rate < alpha/2 {
		t.Errorf("rejection rate %.4f, want in [%v, %.4f]", rate, alpha/2, bound)
	}
}
