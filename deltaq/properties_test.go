// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"math"
	"math/rand/v2"
	"testing"
)

// checkInvariants fails the test unless d is a well-formed ΔQ: finite
// positive width, bin count within [1, MaxBins], finite non-negative masses,
// a non-decreasing CDF within [0, 1], and finite readings.
func checkInvariants(t testing.TB, what string, d DeltaQ) {
	t.Helper()
	if !(d.Width() > 0) || math.IsInf(d.Width(), 0) {
		t.Fatalf("%s: width %v", what, d.Width())
	}
	if d.Bins() < 1 || d.Bins() > MaxBins {
		t.Fatalf("%s: %d bins", what, d.Bins())
	}
	sum := 0.0
	for i, p := range d.PDF() {
		if math.IsNaN(p) || math.IsInf(p, 0) || p < 0 {
			t.Fatalf("%s: mass %v in bin %d", what, p, i)
		}
		sum += p
	}
	prev := 0.0
	for i, f := range d.CDFEdges(nil) {
		if math.IsNaN(f) || f < prev || f > 1 {
			t.Fatalf("%s: CDF %v after %v at edge %d", what, f, prev, i)
		}
		prev = f
	}
	if math.Abs(sum-d.Tangible()) > 1e-12 || d.Tangible() > 1 {
		t.Fatalf("%s: masses sum to %v, tangible %v", what, sum, d.Tangible())
	}
	if in := d.Intangible(); math.IsNaN(in) || in < 0 || in > 1 {
		t.Fatalf("%s: intangible %v", what, in)
	}
	for _, x := range []float64{-1, 0, d.Width() / 3, d.DMax() / 2, d.DMax(), 2 * d.DMax(), math.Inf(1), math.NaN()} {
		if f := d.CDF(x); math.IsNaN(f) || f < 0 || f > 1 {
			t.Fatalf("%s: CDF(%v) = %v", what, x, f)
		}
	}
	for _, q := range []float64{0, 0.25, 0.5, 0.99, 1} {
		if v, ok := d.Quantile(q); math.IsNaN(v) || math.IsInf(v, 0) || (ok && (v < 0 || v > d.DMax()*(1+1e-12))) {
			t.Fatalf("%s: Quantile(%v) = %v, %v", what, q, v, ok)
		}
	}
	if m, ok := d.Mean(); math.IsNaN(m) || (ok && (m < 0 || m > d.DMax())) {
		t.Fatalf("%s: mean %v", what, m)
	}
}

// randomDQ draws a ΔQ with 1 … maxBins bins of width 2^k ms, a random
// support (dense, sparse or a single run) and a random intangible mass.
func randomDQ(r *rand.Rand, maxBins int, width float64) DeltaQ {
	n := 1 + r.IntN(maxBins)
	p := make([]float64, n)
	switch r.IntN(3) {
	case 0: // dense
		for i := range p {
			p[i] = r.Float64()
		}
	case 1: // sparse
		for i := range p {
			if r.IntN(5) == 0 {
				p[i] = r.Float64()
			}
		}
	default: // one run
		lo := r.IntN(n)
		hi := lo + 1 + r.IntN(n-lo)
		for i := lo; i < hi; i++ {
			p[i] = r.Float64()
		}
	}
	s := 0.0
	for _, v := range p {
		s += v
	}
	if s == 0 {
		p[r.IntN(n)] = 1
		s = 1
	}
	tangible := 1 - r.Float64()*0.3
	if r.IntN(4) == 0 {
		tangible = 1
	}
	for i := range p {
		p[i] *= tangible / s
	}
	d, err := New(width, p)
	if err != nil {
		panic(err)
	}
	return d
}

func TestPropertiesConvolution(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for iter := 0; iter < 200; iter++ {
		w := math.Ldexp(1e-3, r.IntN(5)-2)
		a, b, c := randomDQ(r, 300, w), randomDQ(r, 300, w), randomDQ(r, 60, w)
		ab := mk(t)(Convolve(a, b))
		checkInvariants(t, "a⊗b", ab)
		// Mass: tangible(a⊗b) = tangible(a)·tangible(b).
		if !near(ab.Tangible(), a.Tangible()*b.Tangible(), 1e-12) {
			t.Fatalf("iter %d: tangible %v, want %v", iter, ab.Tangible(), a.Tangible()*b.Tangible())
		}
		// Mean of the successful part adds.
		ma, _ := a.Mean()
		mb, _ := b.Mean()
		if mab, ok := ab.Mean(); !ok || !near(mab, ma+mb, 1e-9*(ma+mb)+1e-15) {
			t.Fatalf("iter %d: mean %v, want %v", iter, mab, ma+mb)
		}
		// Commutative.
		ba := mk(t)(Convolve(b, a))
		if dd, _ := Distance(ab, ba); dd > 1e-12 {
			t.Fatalf("iter %d: a⊗b and b⊗a differ by %v", iter, dd)
		}
		// Associative.
		l := mk(t)(Convolve(ab, c))
		rr := mk(t)(Convolve(a, mk(t)(Convolve(b, c))))
		if dd, _ := Distance(l, rr); dd > 1e-12 {
			t.Fatalf("iter %d: (a⊗b)⊗c and a⊗(b⊗c) differ by %v", iter, dd)
		}
		// FFT and direct agree to 1e-9 in every bin.
		fd := mk(t)(ConvolveDirect(a, b))
		ff := mk(t)(ConvolveFFT(a, b))
		checkInvariants(t, "fft", ff)
		pd, pf := fd.PDF(), ff.PDF()
		for i := range pd {
			if math.Abs(pd[i]-pf[i]) > 1e-9 {
				t.Fatalf("iter %d: bin %d direct %v fft %v", iter, i, pd[i], pf[i])
			}
		}
		if dd, _ := Distance(fd, ff); dd > 1e-9 {
			t.Fatalf("iter %d: direct and FFT CDFs differ by %v", iter, dd)
		}
	}
}

func TestPropertiesOperators(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 17))
	for iter := 0; iter < 300; iter++ {
		w := 1e-3
		a := randomDQ(r, 200, w)
		b := randomDQ(r, 200, math.Ldexp(w, r.IntN(3))) // maybe coarser
		c := randomDQ(r, 100, w)
		ftf := mk(t)(FirstToFinish(a, b, c))
		atf := mk(t)(AllToFinish(a, b, c))
		checkInvariants(t, "ftf", ftf)
		checkInvariants(t, "atf", atf)
		// Failure laws.
		fa, fb, fc := a.Intangible(), b.Intangible(), c.Intangible()
		if !near(ftf.Intangible(), fa*fb*fc, 1e-12) {
			t.Fatalf("iter %d: ftf intangible %v, want %v", iter, ftf.Intangible(), fa*fb*fc)
		}
		if !near(atf.Intangible(), 1-(1-fa)*(1-fb)*(1-fc), 1e-12) {
			t.Fatalf("iter %d: atf intangible %v", iter, atf.Intangible())
		}
		// FTF is at least as good as every branch, ATF at most.
		for _, d := range []DeltaQ{a, b, c} {
			if cmp := mustCmp(t)(Compare(ftf, d)); cmp.Hazard > 1e-12 {
				t.Fatalf("iter %d: ftf worse than a branch by %v", iter, cmp.Hazard)
			}
			if cmp := mustCmp(t)(Compare(d, atf)); cmp.Hazard > 1e-12 {
				t.Fatalf("iter %d: atf better than a branch by %v", iter, cmp.Hazard)
			}
		}
		wgt := r.Float64()
		ch := mk(t)(Choice([]float64{wgt, 1 - wgt}, []DeltaQ{a, b}))
		checkInvariants(t, "choice", ch)
		if !near(ch.Tangible(), wgt*a.Tangible()+(1-wgt)*b.Tangible(), 1e-12) {
			t.Fatalf("iter %d: choice mass", iter)
		}
		// Rebinning preserves total mass.
		rb := mk(t)(Rebin(a, w*(1+r.Float64()*7)))
		checkInvariants(t, "rebin", rb)
		if !near(rb.Tangible(), a.Tangible(), 1e-12) {
			t.Fatalf("iter %d: rebin mass %v, want %v", iter, rb.Tangible(), a.Tangible())
		}
		sc := mk(t)(Scale(a, r.Float64()))
		checkInvariants(t, "scale", sc)
		tt := mk(t)(TimeTransform(a, r.Float64()*3, r.Float64()*0.02-0.01))
		checkInvariants(t, "time transform", tt)
		if !near(tt.Tangible(), a.Tangible(), 1e-12) {
			t.Fatalf("iter %d: time transform mass %v, want %v", iter, tt.Tangible(), a.Tangible())
		}
		tr := mk(t)(Truncate(a, 1+r.IntN(300)))
		checkInvariants(t, "truncate", tr)
		// Distance is a metric on these: symmetric, zero on itself.
		d1, _ := Distance(a, b)
		d2, _ := Distance(b, a)
		if d1 != d2 || d1 < 0 || d1 > 1 {
			t.Fatalf("iter %d: distance %v / %v", iter, d1, d2)
		}
	}
}

func TestPropertiesDeconvolve(t *testing.T) {
	// Whenever Deconvolve returns a budget X, known ⊗ X meets the target.
	r := rand.New(rand.NewPCG(19, 23))
	found := 0
	for iter := 0; iter < 200; iter++ {
		known := randomDQ(r, 30, 1e-3)
		rest := randomDQ(r, 60, 1e-3)
		// A target achievable by construction: the actual whole, slackened.
		whole := mk(t)(Convolve(known, rest))
		target := mk(t)(TimeTransform(whole, 1+r.Float64(), 0))
		target = mk(t)(Scale(target, 1-0.1*r.Float64()))
		x, err := Deconvolve(target, known)
		if err != nil {
			t.Fatalf("iter %d: feasible target reported %v", iter, err)
		}
		checkInvariants(t, "budget", x)
		got := mk(t)(Convolve(known, x))
		if c := mustCmp(t)(Compare(got, target)); c.Hazard > 1e-9 {
			t.Fatalf("iter %d: known ⊗ budget misses the target by %v at %v", iter, c.Hazard, c.HazardAt)
		}
		found++
	}
	if found == 0 {
		t.Fatal("no case exercised")
	}
}

func TestPropertiesBand(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 31))
	for iter := 0; iter < 50; iter++ {
		k := 1 + r.IntN(12)
		win := make([]DeltaQ, k)
		for i := range win {
			win[i] = randomDQ(r, 100, 1e-3)
		}
		b, err := Band(win)
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Mean {
			if !(b.Lower[i] <= b.Mean[i]+1e-15 && b.Mean[i] <= b.Upper[i]+1e-15) || b.Lower[i] < 0 || b.Upper[i] > 1 {
				t.Fatalf("iter %d: bin %d band %v ≤ %v ≤ %v", iter, i, b.Lower[i], b.Mean[i], b.Upper[i])
			}
		}
		m, err := b.MeanDeltaQ()
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, "band mean", m)
	}
}

func TestPropertiesHistogram(t *testing.T) {
	// Merging histograms equals recording everything in one.
	r := rand.New(rand.NewPCG(37, 41))
	for iter := 0; iter < 50; iter++ {
		all, _ := NewHistogram(1e-3, 100)
		parts := [3]*Histogram{}
		for i := range parts {
			parts[i], _ = NewHistogram(1e-3, 100)
		}
		for j := 0; j < 1000; j++ {
			d := r.ExpFloat64() * 0.03
			all.Add(d)
			parts[r.IntN(3)].Add(d)
		}
		m := parts[0]
		_ = m.Merge(parts[1])
		_ = m.Merge(parts[2])
		x := mk(t)(all.DeltaQ())
		y := mk(t)(m.DeltaQ())
		checkInvariants(t, "histogram", x)
		if dd, _ := Distance(x, y); dd != 0 || x.Count() != y.Count() {
			t.Fatalf("iter %d: merged histogram differs by %v", iter, dd)
		}
	}
}
