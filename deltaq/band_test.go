// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestBand(t *testing.T) {
	// Ten ΔQs of one bin with F = 0.1·j (j = 0 … 9) at the edge: μ = 0.45,
	// s = √(Σ(x−μ)²/9) = 0.30277, t(0.975, 9) = 2.262157 (Student t tables,
	// e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2), half-width t·s/√10.
	var win []DeltaQ
	for j := 0; j < 10; j++ {
		win = append(win, mk(t)(New(1, []float64{0.1 * float64(j)})))
	}
	b, err := Band(win)
	if err != nil {
		t.Fatal(err)
	}
	s := math.Sqrt(0.825 / 9)
	h := 2.262157 * s / math.Sqrt(10)
	if b.K != 10 || !near(b.Mean[0], 0.45, 1e-15) || !near(b.Lower[0], 0.45-h, 1e-6) || !near(b.Upper[0], 0.45+h, 1e-6) {
		t.Fatalf("band %+v, want 0.45 ± %v", b, h)
	}
	// K = 1: no spread can be estimated; the band is [0, 1].
	b, _ = Band(win[4:5])
	if b.Lower[0] != 0 || b.Upper[0] != 1 {
		t.Fatalf("K = 1 band %+v, want [0, 1]", b)
	}
	// K = 2: t(0.975, 1) = 12.7062 (same tables); F = 0.49 and 0.51 give
	// s = √0.0002 and the band 0.5 ± 12.7062·s/√2.
	b2, _ := Band([]DeltaQ{mk(t)(New(1, []float64{0.49})), mk(t)(New(1, []float64{0.51}))})
	h2 := 12.7062047 * math.Sqrt(0.0002) / math.Sqrt(2)
	if !near(b2.Lower[0], 0.5-h2, 1e-7) || !near(b2.Upper[0], 0.5+h2, 1e-7) {
		t.Fatalf("K = 2 band %v %v, want 0.5 ± %v", b2.Lower, b2.Upper, h2)
	}
	// Different bin counts: the shorter CDF stays flat beyond its dMax.
	b3, _ := Band([]DeltaQ{mk(t)(New(1, []float64{0.5})), mk(t)(New(1, []float64{0.2, 0.2}))})
	if len(b3.Mean) != 2 || !near(b3.Mean[0], 0.35, 1e-15) || !near(b3.Mean[1], 0.45, 1e-15) {
		t.Fatalf("mixed-length band mean %v, want [0.35 0.45]", b3.Mean)
	}
	// Identical ΔQs: zero width.
	b, _ = Band([]DeltaQ{win[3], win[3], win[3]})
	if b.Lower[0] != b.Mean[0] || b.Upper[0] != b.Mean[0] {
		t.Fatalf("identical window band %+v", b)
	}
	// Reuse allocates nothing.
	var dst ConfidenceBand
	_ = BandInto(&dst, win)
	if n := testing.AllocsPerRun(10, func() { _ = BandInto(&dst, win) }); n != 0 {
		t.Errorf("BandInto allocates %v", n)
	}
	if _, err := Band(nil); err == nil {
		t.Error("empty window accepted")
	}
	m, err := b.MeanDeltaQ()
	if err != nil || !near(m.CDF(1), 0.3, 1e-15) {
		t.Fatalf("MeanDeltaQ %v %v", m, err)
	}
}

// TestRunningBandKnownAnswer: with K = 3, pushing ΔQs of one bin whose CDF
// at the edge is 0.9, 0.2, 0.4 and 0.6 leaves 0.2, 0.4 and 0.6 in the
// window (the 0.9 removed by the sliding update, not by a re-summation):
// μ = 0.4, s = √((0.04 + 0 + 0.04)/2) = 0.2, t(0.975, 2) = 4.302653
// (Student t tables, e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2), half-width
// 4.302653·0.2/√3 = 0.496828, so the band is [0 (clamped), 0.896828].
func TestRunningBandKnownAnswer(t *testing.T) {
	r, err := NewRunningBand(3)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Band(); ok {
		t.Fatal("empty RunningBand has a band")
	}
	for _, f := range []float64{0.9, 0.2, 0.4, 0.6} {
		if err := r.Push(mk(t)(New(1, []float64{f}))); err != nil {
			t.Fatal(err)
		}
	}
	b, ok := r.Band()
	half := 4.302653 * 0.2 / math.Sqrt(3)
	if !ok || b.K != 3 || r.Len() != 3 || b.Width != 1 || len(b.Mean) != 1 {
		t.Fatalf("band %+v over %d, want K = 3 and one bin of width 1", b, r.Len())
	}
	if !near(b.Mean[0], 0.4, 1e-15) || b.Lower[0] != 0 || !near(b.Upper[0], 0.4+half, 1e-6) {
		t.Fatalf("band [%v, %v, %v], want [0, 0.4, %v]", b.Lower[0], b.Mean[0], b.Upper[0], 0.4+half)
	}
}

// TestRunningBandMatchesBand: after every push the running band equals
// Band over the last K ΔQs pushed, through the ring filling, wrapping
// around and being re-summed (bit for bit right after a re-summation, every
// K pushes, and within rounding between them).
func TestRunningBandMatchesBand(t *testing.T) {
	const k = 4
	rng := rand.New(rand.NewPCG(5, 6))
	r, err := NewRunningBand(k)
	if err != nil {
		t.Fatal(err)
	}
	var pushed []DeltaQ
	for j := range 23 {
		mean := 0.005 + 0.01*rng.Float64()
		delays := make([]float64, 200)
		for i := range delays {
			delays[i] = rng.ExpFloat64() * mean
		}
		d := mk(t)(FromInstances(1e-3, 40, delays, int64(rng.IntN(20)), 0))
		if err := r.Push(d); err != nil {
			t.Fatal(err)
		}
		pushed = append(pushed, d)
		want := mk3(t)(Band(pushed[max(0, len(pushed)-k):]))
		got, ok := r.Band()
		if !ok || got.K != want.K || got.Width != want.Width || len(got.Mean) != len(want.Mean) {
			t.Fatalf("push %d: band K=%d w=%v N=%d, Band K=%d w=%v N=%d", j, got.K, got.Width, len(got.Mean), want.K, want.Width, len(want.Mean))
		}
		tol := 1e-12
		if (j+1)%k == 0 {
			tol = 0
		}
		for i := range want.Mean {
			for _, c := range []struct {
				name      string
				got, want float64
			}{{"mean", got.Mean[i], want.Mean[i]}, {"lower", got.Lower[i], want.Lower[i]}, {"upper", got.Upper[i], want.Upper[i]}} {
				if math.Abs(c.got-c.want) > tol {
					t.Fatalf("push %d bin %d: %s %v, Band %v (tolerance %v)", j, i, c.name, c.got, c.want, tol)
				}
			}
		}
	}
	// Once the ring is full, a push reuses the row of the ΔQ it removes.
	d := pushed[len(pushed)-1]
	if n := testing.AllocsPerRun(20, func() { _ = r.Push(d) }); n != 0 {
		t.Errorf("Push allocates %v", n)
	}
}

func mk3(t testing.TB) func(ConfidenceBand, error) ConfidenceBand {
	return func(b ConfidenceBand, err error) ConfidenceBand {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

// TestRunningBandLayoutChangeStartsAfresh: a ΔQ of another bin count or
// width empties the window first; identical ΔQs, removed and added by the
// sliding update, keep a band of zero width exactly.
func TestRunningBandLayoutChangeStartsAfresh(t *testing.T) {
	r, _ := NewRunningBand(3)
	a := mk(t)(New(1, []float64{0.3, 0.3}))
	for range 7 {
		if err := r.Push(a); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := r.Band()
	for i := range b.Mean {
		if b.Lower[i] != b.Mean[i] || b.Upper[i] != b.Mean[i] {
			t.Fatalf("identical ΔQs: band %+v, want zero width", b)
		}
	}
	for _, d := range []DeltaQ{mk(t)(New(1, []float64{0.5, 0.1, 0.1})), mk(t)(New(2, []float64{0.5, 0.1, 0.1}))} {
		if err := r.Push(d); err != nil {
			t.Fatal(err)
		}
		b, ok := r.Band()
		if !ok || r.Len() != 1 || b.K != 1 || b.Width != d.Width() || len(b.Mean) != 3 || b.Mean[1] != 0.6 || b.Lower[1] != 0 || b.Upper[1] != 1 {
			t.Fatalf("after %v: Len %d band %+v, want the new ΔQ alone (K = 1: band [0, 1])", d, r.Len(), b)
		}
	}
	if _, err := NewRunningBand(0); err == nil {
		t.Error("NewRunningBand(0) accepted")
	}
	if err := r.Push(DeltaQ{}); err == nil {
		t.Error("Push of the zero ΔQ accepted")
	}
}

// TestRunningBandAtMatchesEveryEdge: a band kept at CurveEdges only has
// there, after every push, through wrapping, re-summing and layout
// changes, the values of the band kept at every edge, bit for bit; a
// layout of no more bins than points keeps every edge.
func TestRunningBandAtMatchesEveryEdge(t *testing.T) {
	const k, points = 4, 7
	rng := rand.New(rand.NewPCG(7, 8))
	full, _ := NewRunningBand(k)
	at, err := NewRunningBandAt(k, points)
	if err != nil || at.Points() != points {
		t.Fatalf("NewRunningBandAt: %v, points %d", err, at.Points())
	}
	for j := range 31 {
		bins := 40
		if j >= 20 {
			bins = 5 // a layout change, to one of fewer bins than points
		}
		delays := make([]float64, 100)
		for i := range delays {
			delays[i] = rng.ExpFloat64() * 0.01
		}
		d := mk(t)(FromInstances(1e-3, bins, delays, int64(rng.IntN(5)), 0))
		if full.Push(d) != nil || at.Push(d) != nil {
			t.Fatal("push refused")
		}
		want, _ := full.Band()
		got, _ := at.Band()
		idx := CurveEdges(bins, points)
		if bins <= points {
			if got.At != nil || len(got.Mean) != bins {
				t.Fatalf("push %d: %d bins ≤ %d points: At %v, %d values, want every edge", j, bins, points, got.At, len(got.Mean))
			}
			idx = nil
		} else if !slices.Equal(got.At, idx) || len(got.Mean) != len(idx) {
			t.Fatalf("push %d: At %v, %d values, want %v", j, got.At, len(got.Mean), idx)
		}
		if got.K != want.K || got.Width != want.Width || got.Bins() != want.Bins() {
			t.Fatalf("push %d: K %d width %v bins %d, want %d %v %d", j, got.K, got.Width, got.Bins(), want.K, want.Width, want.Bins())
		}
		for c := range got.Mean {
			i := c
			if idx != nil {
				i = idx[c]
			}
			if got.Mean[c] != want.Mean[i] || got.Lower[c] != want.Lower[i] || got.Upper[c] != want.Upper[i] {
				t.Fatalf("push %d edge %d: (%v %v %v), every edge's (%v %v %v)", j, i, got.Mean[c], got.Lower[c], got.Upper[c], want.Mean[i], want.Lower[i], want.Upper[i])
			}
		}
	}
	b, _ := at.Band()
	if _, err := (ConfidenceBand{Width: b.Width, Mean: []float64{0.5}, Lower: []float64{0.5}, Upper: []float64{0.5}, At: []int{3}}).MeanDeltaQ(); err == nil {
		t.Error("MeanDeltaQ of a band at a few edges accepted")
	}
}

// TestCurveEdges: every stride-th bin and the last, or every bin.
func TestCurveEdges(t *testing.T) {
	for _, c := range []struct {
		bins, points int
		want         []int
	}{
		{10, 0, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{3, 5, []int{0, 1, 2}},
		{10, 4, []int{2, 5, 8, 9}},
		{10, 5, []int{1, 3, 5, 7, 9}},
		{1, 1, []int{0}},
	} {
		if got := CurveEdges(c.bins, c.points); !slices.Equal(got, c.want) {
			t.Errorf("CurveEdges(%d, %d) = %v, want %v", c.bins, c.points, got, c.want)
		}
	}
}

// TestBandWilsonFloor: where every ΔQ of a window reads the same CDF at an
// edge the t interval is a point; the band is then the 95 % Wilson score
// interval of that proportion over the window's effective instances
// n = K²/Σⱼ(1/nⱼ), whose bound at p̂ = 1 is n/(n + z²) and at p̂ = 0 is
// z²/(n + z²), z = 1.959964 (E. B. Wilson, "Probable inference, the law
// of succession, and statistical inference", JASA 22, 1927, and
// docs/design.md). ΔQs of unknown instances (a model's) have no floor.
func TestBandWilsonFloor(t *testing.T) {
	const z2 = 1.959963984540054 * 1.959963984540054
	// Ten windows of ten instances each, all within the first of two
	// bins: F = 1 at both edges, n = 100.
	var win []DeltaQ
	for range 10 {
		win = append(win, mk(t)(FromInstances(1, 2, []float64{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, 0, 0)))
	}
	b := mk3(t)(Band(win))
	for i := range 2 {
		if b.Mean[i] != 1 || b.Upper[i] != 1 || !near(b.Lower[i], 100/(100+z2), 1e-12) {
			t.Fatalf("edge %d: band [%v, %v, %v], want [%v, 1, 1]", i, b.Lower[i], b.Mean[i], b.Upper[i], 100/(100+z2))
		}
	}
	// Windows of 10 and 40 instances none of which completed within the
	// first edge (all at 1.5, in the second bin): F = 0 there, and the
	// mean of the two proportions has the variance of one over
	// n = 2²/(1/10 + 1/40) = 32 instances.
	d10 := mk(t)(FromInstances(1, 2, slices.Repeat([]float64{1.5}, 10), 0, 0))
	d40 := mk(t)(FromInstances(1, 2, slices.Repeat([]float64{1.5}, 40), 0, 0))
	b = mk3(t)(Band([]DeltaQ{d10, d40}))
	if b.Lower[0] != 0 || !near(b.Upper[0], z2/(32+z2), 1e-12) || !near(b.Lower[1], 32/(32+z2), 1e-12) {
		t.Fatalf("band %v %v, want [0, %v] and [%v, 1]", b.Lower, b.Upper, z2/(32+z2), 32/(32+z2))
	}
	// The running band agrees, and a ΔQ of unknown instances in the
	// window leaves it without its floor until it leaves.
	r, _ := NewRunningBand(2)
	for _, d := range []DeltaQ{d10, d40} {
		if err := r.Push(d); err != nil {
			t.Fatal(err)
		}
	}
	rb, _ := r.Band()
	if !slices.Equal(rb.Lower, b.Lower) || !slices.Equal(rb.Upper, b.Upper) {
		t.Fatalf("running band %v %v, Band %v %v", rb.Lower, rb.Upper, b.Lower, b.Upper)
	}
	model := mk(t)(FromCDF(1, []float64{0, 1}))
	_ = r.Push(model)
	if rb, _ = r.Band(); rb.Upper[0] != 0 || rb.Lower[1] != 1 {
		t.Fatalf("with a model ΔQ: band %v %v, want [0, 0] and [1, 1]", rb.Lower, rb.Upper)
	}
	_ = r.Push(d10)
	_ = r.Push(d40)
	if rb, _ = r.Band(); !slices.Equal(rb.Lower, b.Lower) || !slices.Equal(rb.Upper, b.Upper) {
		t.Fatalf("model ΔQ gone: band %v %v, want %v %v", rb.Lower, rb.Upper, b.Lower, b.Upper)
	}
	// PushInstances: ten windows of 1000 counts from ten sampled spans
	// each read like ten instances a window, not a thousand.
	r, _ = NewRunningBand(10)
	heavy := mk(t)(FromInstances(1, 2, slices.Repeat([]float64{0.5}, 1000), 0, 0))
	for range 10 {
		if err := r.PushInstances(heavy, 10); err != nil {
			t.Fatal(err)
		}
	}
	if rb, _ = r.Band(); !near(rb.Lower[0], 100/(100+z2), 1e-12) {
		t.Fatalf("sampled windows: lower %v, want %v", rb.Lower[0], 100/(100+z2))
	}
}

// TestRunningBandResized: a band resized to another window length holds
// the last ΔQs of the old one that fit, oldest first, and goes on from
// there: its band is Band over the last min(k, pushed) ΔQs, bit for bit
// right after the resize, before and after its ring wraps, whether the old
// ring had wrapped or not; the old band is left as it was.
func TestRunningBandResized(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var pushed []DeltaQ
	next := func() DeltaQ {
		delays := make([]float64, 1+rng.IntN(30))
		for i := range delays {
			delays[i] = rng.ExpFloat64() * 0.01
		}
		d := mk(t)(FromInstances(1e-3, 40, delays, int64(rng.IntN(3)), 0))
		pushed = append(pushed, d)
		return d
	}
	same := func(what string, got, want ConfidenceBand) {
		t.Helper()
		if got.K != want.K || !slices.Equal(got.Mean, want.Mean) || !slices.Equal(got.Lower, want.Lower) || !slices.Equal(got.Upper, want.Upper) {
			t.Fatalf("%s: band K = %d %v %v %v, Band K = %d %v %v %v", what, got.K, got.Mean, got.Lower, got.Upper, want.K, want.Mean, want.Lower, want.Upper)
		}
	}
	for _, c := range []struct{ from, pushes, to int }{{5, 7, 3}, {5, 7, 8}, {5, 3, 2}, {5, 3, 9}, {4, 8, 4}} {
		pushed = pushed[:0]
		r, _ := NewRunningBandAt(c.from, 7)
		for range c.pushes {
			if err := r.Push(next()); err != nil {
				t.Fatal(err)
			}
		}
		before, _ := r.Band()
		nb, err := r.Resized(c.to)
		if err != nil || nb.K() != c.to || nb.Points() != 7 || nb.Len() != min(c.to, c.from, c.pushes) {
			t.Fatalf("%+v: Resized: %v, K %d, points %d, Len %d", c, err, nb.K(), nb.Points(), nb.Len())
		}
		after, _ := r.Band()
		same(fmt.Sprintf("%+v: the old band", c), after, before)
		// The full layout's band at the kept edges, over the ΔQs the
		// resized band holds, then over those it goes on with.
		ref := func(n int) ConfidenceBand {
			full, _ := NewRunningBandAt(n, 7)
			for _, d := range pushed[len(pushed)-n:] {
				_ = full.Push(d)
			}
			b, _ := full.Band()
			return b
		}
		got, _ := nb.Band()
		same(fmt.Sprintf("%+v: resized", c), got, ref(nb.Len()))
		held := nb.Len()
		for j := range c.to + 2 {
			_ = nb.Push(next())
			held = min(held+1, c.to)
			got, _ := nb.Band()
			want := ref(held)
			for i := range want.Mean {
				if math.Abs(got.Mean[i]-want.Mean[i]) > 1e-12 || math.Abs(got.Lower[i]-want.Lower[i]) > 1e-12 || math.Abs(got.Upper[i]-want.Upper[i]) > 1e-12 {
					t.Fatalf("%+v: push %d after the resize, edge %d: (%v %v %v), want (%v %v %v)", c, j, i, got.Mean[i], got.Lower[i], got.Upper[i], want.Mean[i], want.Lower[i], want.Upper[i])
				}
			}
		}
	}
	empty, _ := NewRunningBand(3)
	if nb, err := empty.Resized(5); err != nil || nb.Len() != 0 || nb.K() != 5 {
		t.Fatalf("empty band resized: %v, Len %d", err, nb.Len())
	}
	if _, err := empty.Resized(0); err == nil {
		t.Error("Resized(0) accepted")
	}
}
