// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"testing"
)

// TestPointsComposeExactly: a point mass on a bin edge is exact, so
// point(2 ms) ⊗ point(3 ms) is the point mass at 5 ms (closed form: the sum
// of two constants), F(5 ms) = 1, F(t) = 0 below, median 5 ms, on 1, 0.5
// and 0.25 ms bins, by direct summation and by FFT; and a point at 0 is the
// identity of the sequence.
func TestPointsComposeExactly(t *testing.T) {
	for _, w := range []float64{1e-3, 0.5e-3, 0.25e-3} {
		a, _ := Point(2e-3, w, 40)
		b, _ := Point(3e-3, w, 40)
		zero, _ := Point(0, w, 40)
		for name, conv := range map[string]func(a, b DeltaQ) (DeltaQ, error){"direct": ConvolveDirect, "fft": ConvolveFFT} {
			c, err := conv(a, b)
			if err != nil {
				t.Fatal(err)
			}
			if f := c.CDF(5e-3); f != 1 {
				t.Errorf("w = %v %s: F(5 ms) = %v, want 1", w, name, f)
			}
			if f := c.CDF(5e-3 - w/2); f != 0 {
				t.Errorf("w = %v %s: F(5 ms − w/2) = %v, want 0", w, name, f)
			}
			if m, ok := c.Quantile(0.5); !ok || math.Abs(m-5e-3) > 1e-15 {
				t.Errorf("w = %v %s: median %v, want 5 ms", w, name, m)
			}
			if m, ok := c.Mean(); !ok || math.Abs(m-5e-3) > 1e-15 {
				t.Errorf("w = %v %s: mean %v, want 5 ms", w, name, m)
			}
			z, _ := conv(a, zero)
			if f0, f1 := z.CDF(2e-3-w/2), z.CDF(2e-3); f0 != 0 || f1 != 1 {
				t.Errorf("w = %v %s: point(2 ms) ⊗ point(0): F = %v, %v around 2 ms, want 0, 1", w, name, f0, f1)
			}
		}
		// A point plus an observed (spread) ΔQ shifts it by whole bins.
		obs, _ := FromInstances(w, 40, []float64{1.5 * w, 7.5 * w}, 0, 0)
		s, _ := Convolve(obs, a)
		for _, x := range []float64{1.5, 3, 7.5} {
			if got, want := s.CDF(2e-3+x*w), obs.CDF(x*w); math.Abs(got-want) > 1e-15 {
				t.Errorf("w = %v: (obs ⊗ point 2 ms)(2 ms + %v·w) = %v, want obs(%v·w) = %v", w, x, got, x, want)
			}
		}
	}
}

// TestQuantileSplitWindow: a window of 6 instances at 5–11 ms and 6 at
// 100–106 ms has F = 1/2 exactly at 11 ms, so its median, the smallest t
// with F(t) ≥ 1/2, is at most the right edge of the bin that holds 11 ms
// (11 ms on 1 ms bins).
func TestQuantileSplitWindow(t *testing.T) {
	var delays []float64
	for i := range 6 {
		delays = append(delays, 5e-3+float64(i)*1.2e-3, 100e-3+float64(i)*1.2e-3)
	}
	for _, w := range []float64{0.5e-3, 1e-3, 2e-3} {
		d, err := FromInstances(w, int(math.Round(0.2/w)), delays, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := d.Quantile(0.5)
		edge := math.Ceil(11e-3/w-1e-9) * w
		if !ok || m > edge+1e-15 || m <= edge-w {
			t.Errorf("w = %v: median %v, want within (%v, %v]", w, m, edge-w, edge)
		}
	}
	// The masses summed as floats fall short of 1/2 by an ulp: the
	// tolerance of Quantile still reads them as reaching it.
	p := make([]float64, 20)
	for i := range 6 {
		p[i], p[10+i] = 1.0/12, 1.0/12
	}
	d, _ := New(1e-3, p)
	if m, _ := d.Quantile(0.5); math.Abs(m-6e-3) > 1e-15 {
		t.Errorf("summed masses: median %v, want 6 ms", m)
	}
}

// TestQuantileWithinTrueBin is a property test over 1000 random windows
// (1 to 300 bins, 1 to 5000 instances, many bins empty): for random q and
// for every q = k/n, the quantile lies in the bin (i·w, (i+1)·w] of the true
// quantile of the counts, the first bin i whose running count c reaches
// q·n, decided in exact rational arithmetic, with Quantile's tolerance of
// 4 ulps of q (c ≥ n·q·(1 − 4·2⁻⁵²)).
func TestQuantileWithinTrueBin(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	tol := new(big.Rat).SetFloat64(1 - quantileUlps*0x1p-52)
	for trial := range 1000 {
		bins := 1 + rng.IntN(300)
		w := []float64{1e-3, 0.1e-3, 3e-3, 1.0 / 3 * 1e-3}[trial%4]
		counts := make([]uint64, bins)
		n := 1 + rng.IntN(5000)
		occupied := 1 + rng.IntN(bins)
		for range n {
			counts[rng.IntN(occupied)*bins/occupied]++
		}
		timeouts := int64(rng.IntN(3))
		d := fromCounts(w, counts, int64(n)+timeouts)
		total := int64(n) + timeouts
		qs := []float64{rng.Float64(), 0.5, 0.99, 1}
		for k := int64(1); k <= min(total, 50); k++ {
			qs = append(qs, float64(k)/float64(total))
		}
		for _, q := range qs {
			target := new(big.Rat).Mul(new(big.Rat).SetFloat64(q), big.NewRat(total, 1))
			target.Mul(target, tol)
			var run uint64
			want := -1
			for i, c := range counts {
				run += c
				if new(big.Rat).SetInt64(int64(run)).Cmp(target) >= 0 {
					want = i
					break
				}
			}
			got, ok := d.Quantile(q)
			if want < 0 {
				if ok {
					t.Fatalf("trial %d: q = %v beyond the tangible mass gave %v", trial, q, got)
				}
				continue
			}
			lo, hi := float64(want)*w, float64(want+1)*w
			if !ok || got <= lo || got > hi {
				t.Fatalf("trial %d: q = %v: quantile %v (ok %v), want in (%v, %v]", trial, q, got, ok, lo, hi)
			}
		}
	}
}

// ecdf is the exact CDF of a finite sample.
type ecdf []float64

func (e ecdf) at(t float64) float64 {
	return float64(sort.Search(len(e), func(i int) bool { return e[i] > t })) / float64(len(e))
}

// TestBoundsContainExact: the bounds composed from the inputs' bins contain
// the exact composition of the inputs' own instances, wherever those lie in
// their bins, for a sequence, first-to-finish, all-to-finish and a choice
// (the exact results computed from the instances: all sums of pairs, and
// the closed forms 1 − (1−F_a)(1−F_b), F_a·F_b, ½(F_a + F_b)), and contain
// the calculated curve at every edge; over 200 random pairs of samples on
// 0.5, 1 and 2 ms bins. The bounds' width shrinks with the bin width and
// not with the number of instances.
func TestBoundsContainExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		w := []float64{0.5e-3, 1e-3, 2e-3}[trial%3]
		bins := int(math.Round(40e-3 / w))
		draw := func(n int, shift float64) ecdf {
			e := make(ecdf, n)
			for i := range e {
				e[i] = shift + 0.004*rng.ExpFloat64()
			}
			sort.Float64s(e)
			return e
		}
		ea, eb := draw(5+rng.IntN(40), 0.003), draw(5+rng.IntN(40), 0.001)
		a, _ := FromInstances(w, bins, ea, 0, 0)
		b, _ := FromInstances(w, bins, eb, 0, 0)
		var sum ecdf
		for _, x := range ea {
			for _, y := range eb {
				sum = append(sum, x+y)
			}
		}
		sort.Float64s(sum)
		ops := []struct {
			name  string
			op    func(a, b DeltaQ) (DeltaQ, error)
			exact func(t float64) float64
		}{
			{"sequence", Convolve, sum.at},
			{"first-to-finish", func(a, b DeltaQ) (DeltaQ, error) { return FirstToFinish(a, b) },
				func(t float64) float64 { return 1 - (1-ea.at(t))*(1-eb.at(t)) }},
			{"all-to-finish", func(a, b DeltaQ) (DeltaQ, error) { return AllToFinish(a, b) },
				func(t float64) float64 { return ea.at(t) * eb.at(t) }},
			{"choice", func(a, b DeltaQ) (DeltaQ, error) { return Choice([]float64{0.5, 0.5}, []DeltaQ{a, b}) },
				func(t float64) float64 { return 0.5 * (ea.at(t) + eb.at(t)) }},
		}
		for _, o := range ops {
			curve, _ := o.op(a, b)
			pess, _ := o.op(a.Pessimistic(), b.Pessimistic())
			opt, _ := o.op(a.Optimistic(), b.Optimistic())
			bd := Bounds{Pessimistic: pess, Optimistic: opt, Strict: true}
			for k := 0; k <= 4*bins; k++ {
				// Quarter bins, edges included: the strict optimistic
				// bound is read from the left there.
				tt := float64(k) * w / 4
				f := o.exact(tt)
				if lo, hi := pess.CDF(tt), bd.upper(tt); f < lo-1e-12 || f > hi+1e-12 {
					t.Fatalf("trial %d %s w = %v: exact F(%v) = %v outside bounds [%v, %v]", trial, o.name, w, tt, f, lo, hi)
				}
				if k%4 == 0 && k > 0 {
					te := float64(k/4) * w
					if c := curve.CDF(te); c < pess.CDF(te)-1e-12 || c > opt.CDF(te)+1e-12 {
						t.Fatalf("trial %d %s w = %v: curve F(%v) = %v outside bounds", trial, o.name, w, te, c)
					}
				}
			}
		}
	}
	// Strict bounds read at an edge leave out the optimistic mass on it:
	// a Spread ΔQ's own strict bounds meet at every edge.
	one, _ := FromInstances(1e-3, 10, []float64{1.5e-3, 2.5e-3, 2.5e-3, 7e-3}, 0, 0)
	if w := BoundsOf(one).Width(0.01); w != 0 {
		t.Errorf("strict bounds of an observed ΔQ: width %v at its edges, want 0", w)
	}
	// The width of the bounds of a sequence of two exponential stages:
	// about proportional to the bin width, whatever n.
	for _, w := range []float64{0.25e-3, 1e-3, 4e-3} {
		for _, n := range []int{100, 10000} {
			var da, db []float64
			for range n {
				da, db = append(da, 0.01+0.002*rng.ExpFloat64()), append(db, 0.01+0.002*rng.ExpFloat64())
			}
			bins := int(math.Round(0.08 / w))
			a, _ := FromInstances(w, bins, da, 0, 0)
			b, _ := FromInstances(w, bins, db, 0, 0)
			pess, _ := Convolve(a.Pessimistic(), b.Pessimistic())
			opt, _ := Convolve(a.Optimistic(), b.Optimistic())
			t.Logf("w = %v ms, n = %5d: bounds' width %.3f", w*1e3, n, Bounds{pess, opt, true}.Width(0.08))
		}
	}
}

// TestBoundsOfPointsOnCoarserGrid: the bounds of an exact point are the
// point itself, and they must stay bounds when an operand of another width
// makes the operators coarsen them (Align). Point(3 ms) on 1 ms bins,
// composed with anything on 2 ms bins, is at 3 ms, between the edges 2 and
// 4 ms of the coarse grid: its pessimistic bound may move up to 4 ms, its
// optimistic one must move down to 2 ms. Kept at its upper edge, the
// optimistic bound moved up too, and a first-to-finish with an outcome that
// never completes read F_opt(3.5 ms) = 0 where the exact CDF (the constant
// 3 ms) is 1.
func TestBoundsOfPointsOnCoarserGrid(t *testing.T) {
	p := mk(t)(Point(3e-3, 1e-3, 10))
	never := mk(t)(Never(2e-3, 5))
	slow := mk(t)(Point(8e-3, 2e-3, 5))
	b := BoundsOf(p)
	exact := func(x float64) float64 { // F of the constant 3 ms
		if x >= 3e-3 {
			return 1
		}
		return 0
	}
	for _, c := range []struct {
		name string
		op   func(a, b DeltaQ) (DeltaQ, error)
	}{
		{"first-to-finish", func(a, b DeltaQ) (DeltaQ, error) { return FirstToFinish(a, b) }},
		{"all-to-finish", func(a, b DeltaQ) (DeltaQ, error) { return AllToFinish(a, b) }},
		{"choice", func(a, b DeltaQ) (DeltaQ, error) { return Choice([]float64{0.5, 0.5}, []DeltaQ{a, b}) }},
		{"sequence", Convolve},
	} {
		for _, other := range []DeltaQ{never, slow} {
			pess := mk(t)(c.op(b.Pessimistic, BoundsOf(other).Pessimistic))
			opt := mk(t)(c.op(b.Optimistic, BoundsOf(other).Optimistic))
			// The exact result, as p and other are constants: F_p combined
			// with F_other by the operator.
			for k := 0; k <= 80; k++ {
				x := float64(k) * 0.25e-3
				fo := other.CDF(x)
				var f float64
				switch c.name {
				case "first-to-finish":
					f = 1 - (1-exact(x))*(1-fo)
				case "all-to-finish":
					f = exact(x) * fo
				case "choice":
					f = 0.5 * (exact(x) + fo)
				default:
					f = other.CDF(x - 3e-3)
				}
				if lo, hi := pess.CDF(x), opt.CDF(x); f < lo-1e-12 || f > hi+1e-12 {
					t.Fatalf("%s with %v: exact F(%v) = %v outside the bounds [%v, %v]", c.name, other, x, f, lo, hi)
				}
			}
		}
	}
	// On its own grid the point is its own bound, exactly, at dMax too.
	for _, d := range []float64{3e-3, 10e-3} {
		q := mk(t)(Point(d, 1e-3, 10))
		o := q.Optimistic()
		for k := 0; k <= 48; k++ {
			x := float64(k) * 0.25e-3
			if o.CDF(x) != q.CDF(x) {
				t.Errorf("Point(%v).Optimistic(): F(%v) = %v, the point's %v", d, x, o.CDF(x), q.CDF(x))
			}
		}
		if w := BoundsOf(q).Width(0.012); w != 0 {
			t.Errorf("bounds of Point(%v): width %v, want 0", d, w)
		}
	}
}

// TestBoundsBeyond: an observed ΔQ between the bounds is 0 beyond them; one
// shifted past the pessimistic bound by three bins is beyond by the CDF gap
// there.
func TestBoundsBeyond(t *testing.T) {
	const w = 1e-3
	var ds []float64
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		ds = append(ds, 0.005+0.003*rng.ExpFloat64())
	}
	obs, _ := FromInstances(w, 50, ds, 0, 0)
	b := BoundsOf(obs)
	if d, err := b.Beyond(obs); err != nil || d != 0 {
		t.Errorf("obs within its own bounds: beyond %v (%v), want 0", d, err)
	}
	if w := b.Width(0.05); w != 0 {
		t.Errorf("width %v of an observed ΔQ's own strict bounds, want 0", w)
	}
	late, _ := TimeTransform(obs, 1, 3*w)
	d, _ := b.Beyond(late)
	want := 0.0
	for k := 1; k <= 50; k++ {
		want = math.Max(want, b.Pessimistic.CDF(float64(k)*w)-late.CDF(float64(k)*w))
	}
	if d <= 0 || math.Abs(d-want) > 1e-12 {
		t.Errorf("late by 3 bins: beyond %v, want %v", d, want)
	}
}

// TestBoundsOnOneGrid: on bounds of one grid, Width and BeyondBounds read
// each edge once (edgeCDF) rather than locating it in each bound (CDF and
// upper), without clamping the indices of the edges within every bound,
// and keep their running maximum by comparisons (runningMax); they are the
// same readings, so the results are the same to the bit as the general
// loops over both bounds' edges (widthAtEdges, beyondAtEdges), for
// sequences, first-to-finish and choices of observed ΔQs, strict or not,
// up to tmax within, at and beyond the bounds' range.
func TestBoundsOnOneGrid(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 300 {
		w := []float64{0.25e-3, 1e-3, 3e-3}[trial%3]
		bins := 10 + rng.IntN(60)
		draw := func(mean float64) DeltaQ {
			ds := make([]float64, 1+rng.IntN(200))
			for i := range ds {
				ds[i] = mean * rng.ExpFloat64()
			}
			d, _ := FromInstances(w, bins, ds, int64(rng.IntN(3)), 0)
			return d
		}
		a, b := draw(float64(bins)*w/6), draw(float64(bins)*w/4)
		ops := []func(x, y DeltaQ) (DeltaQ, error){
			Convolve,
			func(x, y DeltaQ) (DeltaQ, error) { return FirstToFinish(x, y) },
			func(x, y DeltaQ) (DeltaQ, error) { return Choice([]float64{0.3, 0.7}, []DeltaQ{x, y}) },
		}
		op := ops[trial%len(ops)]
		pess, _ := op(a.Pessimistic(), b.Pessimistic())
		opt, _ := op(a.Optimistic(), b.Optimistic())
		bd := Bounds{Pessimistic: pess, Optimistic: opt, Strict: trial%2 == 0}
		obs := BoundsOf(draw(float64(bins) * w / 3))
		obs.Strict = trial%4 < 2
		for _, tmax := range []float64{w / 2, float64(bins) * w / 2, pess.DMax(), 2 * pess.DMax(), math.Inf(1)} {
			if got, want := bd.Width(tmax), widthAtEdges(bd, tmax); got != want {
				t.Fatalf("trial %d: Width(%v) = %v, the general reading %v", trial, tmax, got, want)
			}
		}
		got, err := bd.BeyondBounds(obs)
		if want := beyondAtEdges(bd, obs); err != nil || got != want {
			t.Fatalf("trial %d: BeyondBounds = %v (%v), the general reading %v", trial, got, err, want)
		}
	}
}

// widthAtEdges is Bounds.Width read at each bound's own edges, each
// located in both bounds (CDF, upper).
func widthAtEdges(b Bounds, tmax float64) float64 {
	w := 0.0
	for _, g := range []DeltaQ{b.Pessimistic, b.Optimistic} {
		n := math.Min(float64(len(g.pdf)), math.Floor(tmax/g.width+1e-9))
		for k := 0.0; k <= n; k++ {
			t := k * g.width
			w = math.Max(w, b.upper(t)-b.Pessimistic.CDF(t))
		}
	}
	return w
}

// beyondAtEdges is Bounds.BeyondBounds read at the edges of the four ΔQs,
// each located in each (CDF, upper).
func beyondAtEdges(b, obs Bounds) float64 {
	ds := [4]DeltaQ{b.Pessimistic, b.Optimistic, obs.Pessimistic, obs.Optimistic}
	m := math.Inf(1)
	for _, d := range ds {
		m = math.Min(m, d.DMax())
	}
	dist := 0.0
	for _, g := range ds {
		for k := 1; k <= len(g.pdf); k++ {
			t := float64(k) * g.width
			if t > m*(1+1e-9) {
				break
			}
			dist = math.Max(dist, math.Max(b.Pessimistic.CDF(t)-obs.upper(t), obs.Pessimistic.CDF(t)-b.upper(t)))
		}
	}
	return dist
}

// TestQTAHolds: ten instances in the bin (4, 5] ms of 1 ms bins. The point
// (5 ms, 1) is on an edge, where the curve and the pessimistic bound agree:
// it holds for the bound. (4.5 ms, 0.5) holds for the curve, which spreads
// the bin (F = 0.5), but not for the bound, which puts every instance at
// 5 ms (F = 0): the bins cannot tell. (4.5 ms, 0.6) fails.
func TestQTAHolds(t *testing.T) {
	d, _ := FromInstances(1e-3, 10, []float64{4.1e-3, 4.2e-3, 4.3e-3, 4.4e-3, 4.5e-3, 4.6e-3, 4.7e-3, 4.8e-3, 4.9e-3, 4.95e-3}, 0, 0)
	for _, c := range []struct {
		pt   Step
		want Holds
	}{{Step{5e-3, 1}, HoldsPessimistic}, {Step{4.5e-3, 0.5}, HoldsCurve}, {Step{4.5e-3, 0.6}, HoldsNeither}} {
		q, _ := NewQTA([]Step{c.pt}, 0)
		chk, err := q.Check(d)
		if err != nil {
			t.Fatal(err)
		}
		if chk.Holds != c.want || chk.Points[0].Holds != c.want {
			t.Errorf("%+v: holds %v (point %v), want %v", c.pt, chk.Holds, chk.Points[0].Holds, c.want)
		}
	}
}
