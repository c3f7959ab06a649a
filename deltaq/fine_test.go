// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestFineLayout: 2,369 buckets; above FineLow every bucket [a, b) is at
// most a/64 wide, so a delay's distance to its bucket's midpoint is at most
// FineRelativeError = 1/128 of it; the index finds the same bucket as a
// search of the edges.
func TestFineLayout(t *testing.T) {
	f := NewFine()
	if f.Buckets() != 1+FineMagnitudes*64 {
		t.Fatalf("%d buckets, want %d", f.Buckets(), 1+FineMagnitudes*64)
	}
	e := f.Edges()
	for j := 1; j < len(e)-1; j++ {
		if w := e[j+1] - e[j]; 64*w > e[j] {
			t.Fatalf("bucket [%d, %d) is wider than 1/64 of its lower edge", e[j], e[j+1])
		}
	}
	h := f.NewHistogram()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		d := int64(math.Exp(rng.Float64() * math.Log(float64(FineHigh))))
		j := h.AddN(d, 1)
		if want := LogLinearBucket(e, d); j != want {
			t.Fatalf("delay %d ns: bucket %d, want %d", d, j, want)
		}
		if d >= FineLow {
			mid := float64(e[j]+e[j+1]) / 2
			if r := math.Abs(float64(d)-mid) / float64(d); r > FineRelativeError {
				t.Fatalf("delay %d ns: %g from its bucket's midpoint, above 1/128", d, r)
			}
		}
	}
	if h.Successes() != 100_000 {
		t.Errorf("%d successes, want 100000", h.Successes())
	}
}

// TestAnalysisWidth: FineLow/64 ns times a power of two, the narrowest
// whose AnalysisBins bins cover the range.
func TestAnalysisWidth(t *testing.T) {
	for _, r := range []int64{1, 1000, 65_536, 65_537, 1e6, 2e8, 86_400e9} {
		w := AnalysisWidth(r)
		ns := int64(math.Round(w * 1e9))
		if ns < FineLow/64 || ns&(ns-1) != 0 || float64(ns)*1e-9 != w {
			t.Errorf("range %d ns: width %v is not FineLow/64 times a power of two", r, w)
		}
		if ns*AnalysisBins < r || (ns > FineLow/64 && ns/2*AnalysisBins >= r) {
			t.Errorf("range %d ns: width %d ns is not the narrowest to cover it in %d bins", r, ns, AnalysisBins)
		}
	}
}

// fineSample records n delays drawn by draw, with f failures and t
// timeouts, and returns the histogram and the sorted delays.
func fineSample(seed uint64, n, failures, timeouts int, draw func(*rand.Rand) int64) (*LogLinearHistogram, []int64) {
	h := NewFine().NewHistogram()
	rng := rand.New(rand.NewPCG(seed, 7))
	ds := make([]int64, n)
	for i := range ds {
		ds[i] = draw(rng)
		h.AddN(ds[i], 1)
	}
	h.AddFailures(int64(failures))
	h.AddTimeouts(int64(timeouts))
	slices.Sort(ds)
	return h, ds
}

// countUpTo returns how many sorted delays are at most d.
func countUpTo(ds []int64, d int64) int {
	i, _ := slices.BinarySearch(ds, d+1)
	return i
}

// TestGridBoundsContainTheSample: for samples of several shapes, grids
// and cuts, the empirical CDF of the delays up to the cut lies between the
// bounds at every grid edge, and Grid's CDF is exact at every bucket edge
// on the grid (the grid divides those buckets).
func TestGridBoundsContainTheSample(t *testing.T) {
	shapes := map[string]func(*rand.Rand) int64{
		"exp 2ms + 10ms": func(r *rand.Rand) int64 { return int64(1e7 + 2e6*r.ExpFloat64()) },
		"log-uniform":    func(r *rand.Rand) int64 { return int64(math.Exp(math.Log(1e3) + r.Float64()*math.Log(1e6))) },
		"points":         func(r *rand.Rand) int64 { return []int64{145_000, 435_000, 2_000_000}[r.IntN(3)] },
	}
	for name, draw := range shapes {
		h, ds := fineSample(3, 2000, 50, 30, draw)
		n := float64(h.Total())
		for _, cut := range []int64{ds[len(ds)/2], ds[len(ds)-1] + 1, 1 << 40} {
			for _, w := range []float64{AnalysisWidth(cut), AnalysisWidth(cut) / 8, AnalysisWidth(cut) * 4} {
				bins := GridBins(min(cut, 1<<32), w)
				b, err := h.GridBounds(w, bins, cut)
				g, err2 := h.Grid(w, bins, cut)
				if err != nil || err2 != nil {
					t.Fatalf("%s: %v %v", name, err, err2)
				}
				for k := 1; k <= bins; k++ {
					edge := float64(k) * w
					d := int64(math.Floor(edge*1e9 + 1e-6))
					f := float64(countUpTo(ds, min(d, cut))) / n
					if lo, hi := b.Pessimistic.CDF(edge), b.upper(edge+w/2); f < lo-1e-12 || f > hi+1e-12 {
						t.Fatalf("%s, cut %d, width %g: F(%g) = %v outside the bounds [%v, %v]", name, cut, w, edge, f, lo, hi)
					}
					if gf := g.CDF(edge); gf < b.Pessimistic.CDF(edge)-1e-9 || gf > b.upper(edge+w/2)+1e-9 {
						t.Fatalf("%s, cut %d, width %g: Grid's F(%g) = %v outside the bounds", name, cut, w, edge, gf)
					}
				}
				if may := float64(h.Within(cut)) / n; g.Tangible() > may+1e-9 {
					t.Errorf("%s, cut %d: tangible %v, more than the %v that may lie within the cut", name, cut, g.Tangible(), may)
				}
			}
		}
	}
}

// TestFineQuantileAndWithin: a quantile from the counts lies within the
// bucket of the sample quantile (the smallest delay with at least q·n
// instances at or below it), and QuantileRange is that bucket; Within(d)
// counts at least the delays at most d and no more than those below the
// end of d's bucket, SurelyWithin(d) exactly those below its start.
func TestFineQuantileAndWithin(t *testing.T) {
	h, ds := fineSample(5, 5000, 100, 0, func(r *rand.Rand) int64 { return int64(2e6 + 5e6*r.ExpFloat64()) })
	e := h.Edges()
	n := float64(h.Total())
	for _, q := range []float64{0.01, 0.1, 0.5, 0.9, 0.97} {
		got, ok := h.Quantile(q, FineHigh)
		truth := ds[int(math.Ceil(q*n))-1]
		j := LogLinearBucket(e, truth)
		if !ok || got*1e9 < float64(e[j])-1 || got*1e9 > float64(e[j+1])+1 {
			t.Errorf("q %v: %v s (%v), want within the bucket [%d, %d) ns of the sample's %d ns", q, got, ok, e[j], e[j+1], truth)
		}
		lo, hi, rok := h.QuantileRange(q, FineHigh)
		if !rok || lo != float64(e[j])/1e9 || hi != float64(e[j+1])/1e9 {
			t.Errorf("q %v: QuantileRange [%v, %v] (%v), want the bucket [%d, %d) ns", q, lo, hi, rok, e[j], e[j+1])
		}
	}
	if _, _, ok := h.QuantileRange(0.99, FineHigh); ok {
		t.Error("QuantileRange: q 0.99 is above the completed share 0.98, yet reachable")
	}
	if _, ok := h.Quantile(0.99, FineHigh); ok {
		t.Error("q 0.99 is above the completed share 0.98, yet reachable")
	}
	for _, d := range []int64{ds[0], ds[100], ds[2500], ds[4999], 3_000_000} {
		j := LogLinearBucket(e, d)
		w := int(h.Within(d))
		if w < countUpTo(ds, d) || w > countUpTo(ds, e[j+1]-1) {
			t.Errorf("Within(%d) = %d, want in [%d, %d]", d, w, countUpTo(ds, d), countUpTo(ds, e[j+1]-1))
		}
		if s := int(h.SurelyWithin(d)); s != countUpTo(ds, e[j]-1) {
			t.Errorf("SurelyWithin(%d) = %d, want %d, the delays below its bucket", d, s, countUpTo(ds, e[j]-1))
		}
	}
}

// TestBeyondBoundsOnOneGrid: the one-grid path of BeyondBounds gives what
// reading every edge through CDF and upper gives, for bounds of a grid and
// of a coarser display.
func TestBeyondBoundsOnOneGrid(t *testing.T) {
	h, _ := fineSample(9, 500, 10, 5, func(r *rand.Rand) int64 { return int64(1e7 + 2e6*r.ExpFloat64()) })
	g, _ := fineSample(10, 500, 0, 0, func(r *rand.Rand) int64 { return int64(1.05e7 + 2e6*r.ExpFloat64()) })
	w := AnalysisWidth(4e7)
	bins := GridBins(4e7, w)
	calc, _ := h.GridBounds(w, bins, 4e7)
	obs, _ := g.GridBounds(w, bins, 4e7)
	got, err := calc.BeyondBounds(obs)
	if err != nil {
		t.Fatal(err)
	}
	want := 0.0
	for k := 1; k <= bins; k++ {
		x := float64(k) * w
		want = math.Max(want, math.Max(calc.Pessimistic.CDF(x)-obs.upper(x), obs.Pessimistic.CDF(x)-calc.upper(x)))
	}
	if math.Abs(got-want) > 1e-12 || !(got > 0) {
		t.Errorf("BeyondBounds = %v, reading every edge %v", got, want)
	}
	// A Spread ΔQ's own bounds are exact at its edges: BeyondBounds is
	// Beyond.
	o, _ := g.Grid(w, bins, 4e7)
	b1, _ := calc.Beyond(o)
	b2, _ := calc.BeyondBounds(BoundsOf(o))
	if math.Abs(b1-b2) > 1e-12 {
		t.Errorf("Beyond %v, BeyondBounds of BoundsOf %v", b1, b2)
	}
}

// TestFineQuantilesInOnePass: Quantiles gives what Quantile gives for
// each, in any order, unreachable ones and q outside [0, 1] included.
func TestFineQuantilesInOnePass(t *testing.T) {
	h, ds := fineSample(7, 3000, 300, 200, func(r *rand.Rand) int64 { return int64(1e6 + 1e7*r.ExpFloat64()) })
	qs := []float64{0.9, 0.01, 0.5, 0, 0.95, 1.5, 0.25, math.NaN()}
	for _, cut := range []int64{FineHigh, ds[len(ds)/2]} {
		delays, ok := make([]float64, len(qs)), make([]bool, len(qs))
		h.Quantiles(qs, cut, delays, ok)
		for k, q := range qs {
			d, o := h.Quantile(q, cut)
			if d != delays[k] || o != ok[k] {
				t.Errorf("cut %d, q %v: Quantiles %v (%v), Quantile %v (%v)", cut, q, delays[k], ok[k], d, o)
			}
		}
	}
}

// TestFineQuantilesSkipWhole: Quantiles, which skips buckets below the
// next quantile as whole counts, gives what Quantile gives for each of
// many quantiles, at cuts on, just past and between bucket edges, and
// with counts so large that a bucket's share is no longer its count
// (c·w ≥ 2⁵³), where it reads every bucket as Quantile does.
func TestFineQuantilesSkipWhole(t *testing.T) {
	qs := make([]float64, 0, 202)
	for i := range 200 {
		qs = append(qs, float64(i+1)/201)
	}
	qs = append(qs, 1, 0.999999)
	for _, weight := range []int64{1, 1 << 20, 1 << 40} {
		h := NewFine().NewHistogram()
		rng := rand.New(rand.NewPCG(uint64(weight), 11))
		for range 500 {
			h.AddN(int64(2e5+5e7*rng.ExpFloat64()), weight*(1+rng.Int64N(3)))
		}
		h.AddTimeouts(weight)
		e := h.Edges()
		for _, cut := range []int64{FineHigh, e[1500], e[1500] + 1, e[1400] - 1, (e[1450] + e[1451]) / 2, e[1], 1} {
			delays, ok := make([]float64, len(qs)), make([]bool, len(qs))
			h.Quantiles(qs, cut, delays, ok)
			for k, q := range qs {
				d, o := h.Quantile(q, cut)
				if d != delays[k] || o != ok[k] {
					t.Errorf("weight %d, cut %d, q %v: Quantiles %v (%v), Quantile %v (%v)", weight, cut, q, delays[k], ok[k], d, o)
				}
			}
		}
	}
}

// TestFineShareWithinCut: the share of a bucket's instances Quantile reads
// within the cut (withinCut) is c·(b − a)/w computed in floating point,
// to the bit, whether the division is made or left out: for counts up to
// and around 2⁵³/w and far beyond, in buckets of every magnitude, cut or
// not, of the analysis resolution (widths powers of two) and of a layout
// by tens (c·w/w is not always c there beyond 2⁵³).
func TestFineShareWithinCut(t *testing.T) {
	tens, err := NewLogLinearHistogram(LogLinear{Factor: 10, Low: 1000, High: 1e12, Steps: 20})
	if err != nil {
		t.Fatal(err)
	}
	fine := NewFine().NewHistogram()
	rng := rand.New(rand.NewPCG(9, 9))
	for k := range 400_000 {
		h := tens
		if k%2 == 0 {
			h = fine
		}
		j := rng.IntN(len(h.counts))
		w := h.edges[j+1] - h.edges[j]
		var c uint64
		switch rng.IntN(4) {
		case 0:
			c = 1 + rng.Uint64N(1<<20)
		case 1:
			c = uint64(1<<53/w) + rng.Uint64N(5) - 2 // c·w about 2⁵³
		case 2:
			c = rng.Uint64N(1 << 56) // c·w/w ≠ c for some, beyond 2⁵³
		default:
			c = rng.Uint64()
		}
		cut := []int64{FineHigh, h.edges[j+1], h.edges[j] + 1 + rng.Int64N(w)}[rng.IntN(3)]
		a, b, m := h.withinCut(j, c, cut)
		want := float64(c) * float64(b-a) / float64(h.edges[j+1]-a)
		if a != h.edges[j] || b != min(h.edges[j+1], cut) || m != want {
			t.Fatalf("bucket %d, %d instances, cut %d: [%d, %d) %v, want %v", j, c, cut, a, b, m, want)
		}
	}
}

// TestGridHead: the head of a reading on more bins is the reading on
// fewer, to the bit, for Grid and for GridBounds: every width, cut and
// number of bins, the buckets' span within, across and beyond the grid,
// and an empty reading (nothing within the cut).
func TestGridHead(t *testing.T) {
	for seed, mean := range []float64{2e4, 3e6, 5e8} {
		h, ds := fineSample(uint64(seed), 2000, 40, 10, func(r *rand.Rand) int64 { return int64(mean * r.ExpFloat64()) })
		for _, cut := range []int64{FineLow / 2, ds[100], ds[len(ds)/2], ds[len(ds)-1] + 1, FineHigh} {
			for _, rng := range []int64{ds[len(ds)/2], 4 * ds[len(ds)-1], FineHigh / 1024} {
				w := AnalysisWidth(rng)
				long := GridBins(rng, w)
				g, err1 := h.Grid(w, long, cut)
				b, err2 := h.GridBounds(w, long, cut)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				for _, n := range []int{1, 2, long / 3, long - 1, long} {
					n = max(n, 1)
					short, _ := h.Grid(w, n, cut)
					sb, _ := h.GridBounds(w, n, cut)
					if hd := g.Head(n); !reflect.DeepEqual(hd, short) {
						t.Fatalf("mean %v cut %d: Grid(%v, %d).Head(%d) is not Grid(%v, %d)", mean, cut, w, long, n, w, n)
					}
					if p, o := b.Pessimistic.Head(n), b.Optimistic.Head(n); !reflect.DeepEqual(p, sb.Pessimistic) || !reflect.DeepEqual(o, sb.Optimistic) {
						t.Fatalf("mean %v cut %d: the bounds on %d bins, head %d, are not those on %d", mean, cut, long, n, n)
					}
				}
			}
		}
	}
}

// TestGridDividesOncePerValue: Grid, which divides by the instances only
// where an edge's count changes, and reads a bucket's edges and share once
// for all the bins it spans (none for an empty one), reads what dividing
// at every edge reads (gridEveryEdge, the reading before), to the bit:
// samples dense and sparse, cut within and beyond them, grids finer and
// coarser than the buckets.
func TestGridDividesOncePerValue(t *testing.T) {
	for seed, mean := range []float64{5e3, 2e5, 8e7, 3e9} {
		for _, n := range []int{3, 300, 3000} {
			h, ds := fineSample(uint64(seed*10+n), n, 5, 5, func(r *rand.Rand) int64 { return int64(mean * r.ExpFloat64()) })
			for _, cut := range []int64{ds[len(ds)/2], ds[len(ds)-1] + 1, FineHigh} {
				for _, w := range []float64{AnalysisWidth(cut) / 8, AnalysisWidth(cut), AnalysisWidth(cut) * 4} {
					bins := GridBins(cut, w)
					got, err := h.Grid(w, bins, cut)
					if err != nil {
						t.Fatal(err)
					}
					if want := gridEveryEdge(h, w, bins, cut); !reflect.DeepEqual(got, want) {
						t.Fatalf("mean %v, %d instances, cut %d, width %v: Grid differs from dividing at every edge", mean, n, cut, w)
					}
				}
			}
		}
	}
}

// gridEveryEdge is LogLinearHistogram.Grid dividing the count of every
// edge by the instances.
func gridEveryEdge(h *LogLinearHistogram, width float64, bins int, cut int64) DeltaQ {
	n := h.Total()
	k := h.below(cut)
	pdf := newPDF(bins)
	cum := pdf[bins : 2*bins : 2*bins]
	pdf = pdf[:bins:bins]
	first, last := 0, k-1
	for first < k && h.counts[first] == 0 {
		first++
	}
	for last >= first && h.counts[last] == 0 {
		last--
	}
	if first > last {
		return build(width, pdf, n)
	}
	var below float64
	j := first
	i := min(int(float64(h.edges[first])/1e9/width), bins)
	for ; i < bins && j <= last; i++ {
		x := float64(i+1) * width * 1e9
		for j <= last && float64(min(h.edges[j+1], cut)) <= x*(1+1e-12) {
			below += h.share(j, cut)
			j++
		}
		c := below
		if j <= last && x > float64(h.edges[j]) {
			a, b := float64(h.edges[j]), float64(min(h.edges[j+1], cut))
			c += h.share(j, cut) * (x - a) / (b - a)
		}
		cum[i] = c / float64(n)
	}
	for rest := below / float64(n); i < bins; i++ {
		cum[i] = rest
	}
	prev := 0.0
	for i, c := range cum {
		cum[i] = math.Max(c, prev)
		pdf[i] = cum[i] - prev
		prev = cum[i]
	}
	return DeltaQ{width: width, pdf: pdf, cum: cum, count: n}
}

// TestFineAddCheckedAddsAsAddSparse: analysis counts added by AddChecked,
// checked by the caller, as scattered buckets or as a run from a first
// bucket, with their sum given, leave the histogram as AddSparse leaves it.
func TestFineAddCheckedAddsAsAddSparse(t *testing.T) {
	f := NewFine()
	rng := rand.New(rand.NewPCG(15, 16))
	for trial := range 300 {
		a, b := f.NewHistogram(), f.NewHistogram()
		for range 1 + rng.IntN(4) {
			idx := []int{} // nil would be one count per bucket
			var counts []uint64
			first := rng.IntN(f.Buckets())
			run := trial%2 == 0
			if run {
				counts = make([]uint64, rng.IntN(f.Buckets()-first+1))
				for j := range counts {
					counts[j] = rng.Uint64N(4)
					idx = append(idx, first+j)
				}
			} else {
				for i := range f.Buckets() {
					if rng.IntN(50) == 0 {
						idx, counts = append(idx, i), append(counts, 1+rng.Uint64N(1<<20))
					}
				}
			}
			to, fa := rng.Int64N(3), rng.Int64N(3)
			n, err := a.AddSparse(idx, counts, to, fa)
			if err != nil {
				t.Fatal(err)
			}
			if run {
				b.AddChecked(nil, first, counts, n, to, fa)
			} else {
				b.AddChecked(idx, 0, counts, n, to, fa)
			}
		}
		if !slices.Equal(a.Counts(), b.Counts()) || a.Successes() != b.Successes() || a.Timeouts() != b.Timeouts() || a.Failures() != b.Failures() {
			t.Fatalf("trial %d: AddChecked and AddSparse differ", trial)
		}
	}
}

// TestFineQuantilesWithinCut: told how many of its instances completed
// within the cut (a probe's successes, which its display counts know), the
// bucket that straddles the cut counts that many as completed, not its
// share by width. 100 delays of exactly dMax (7 ms, in a bucket that
// straddles it) are 100 successes: every quantile is reached, within the
// bucket (by width, 90 % was out of reach); 100 spans of dMax + 1 ns are
// timeouts: no quantile is (by width, a quarter of them completed).
func TestFineQuantilesWithinCut(t *testing.T) {
	const dmax = 7_000_000
	qs := []float64{0.25, 0.5, 0.9, 0.99, 1}
	for _, tt := range []struct {
		delay   int64
		within  float64
		reached bool
	}{{dmax, 100, true}, {dmax - 10_000, 100, true}, {dmax + 1, 0, false}} {
		h := NewFine().NewHistogram()
		h.AddN(tt.delay, 100)
		e := h.Edges()
		j := LogLinearBucket(e, tt.delay)
		if !(e[j] < dmax && e[j+1] > dmax) {
			t.Fatalf("bucket [%d, %d) does not straddle dMax", e[j], e[j+1])
		}
		delays, ok := make([]float64, len(qs)), make([]bool, len(qs))
		h.QuantilesWithin(qs, dmax, tt.within, delays, ok)
		for k, q := range qs {
			if ok[k] != tt.reached {
				t.Errorf("delay %d ns, q %v: reached %v, want %v", tt.delay, q, ok[k], tt.reached)
			}
			if ok[k] && (delays[k] < float64(e[j])/1e9 || delays[k] > dmax/1e9) {
				t.Errorf("delay %d ns, q %v: %v s, not in [%d ns, dMax]", tt.delay, q, delays[k], e[j])
			}
		}
		// Not told, the bucket counts its share by width, as Quantile,
		// bucket by bucket, reads it.
		h.QuantilesWithin(qs, dmax, -1, delays, ok)
		for k, q := range qs {
			if want, wantOK := h.Quantile(q, dmax); delays[k] != want || ok[k] != wantOK {
				t.Errorf("delay %d ns, q %v, unknown within: %v %v, Quantile %v %v", tt.delay, q, delays[k], ok[k], want, wantOK)
			}
		}
	}
}
