// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestLogLinearLlquantizeExample reproduces the example of "Log/linear
// quantizations in DTrace": llquantize(i++, 10, 0, 6, 20) over the values
// 0 … 1499 (one a millisecond until i = 1500), a factor of 10 from
// magnitude 0 to 6 with 20 steps a magnitude. Its output lists the buckets
// < 1, 1 … 9 (steps of 1: 10/20 is less than one), 10, 15, … 95 (steps of
// 5), 100, 150, … 950 (steps of 50), 1000, 1500, … (steps of 500), with
// counts 1, 1 each, 5 each, 50 each and 500 in the bucket 1000. In
// nanoseconds: Low = 10⁰ = 1, High = 10⁷ (the end of magnitude 6).
func TestLogLinearLlquantizeExample(t *testing.T) {
	l := LogLinear{Factor: 10, Low: 1, High: 10_000_000, Steps: 20}
	h, err := NewLogLinearHistogram(l)
	if err != nil {
		t.Fatal(err)
	}
	e := h.Edges()
	// The first edges, as the post prints them (the "< 1" bucket is
	// [0, 1)).
	var want []int64
	want = append(want, 0)
	for v := int64(1); v < 10; v++ {
		want = append(want, v)
	}
	for v := int64(10); v < 100; v += 5 {
		want = append(want, v)
	}
	for v := int64(100); v < 1000; v += 50 {
		want = append(want, v)
	}
	want = append(want, 1000, 1500)
	if !slices.Equal(e[:len(want)], want) {
		t.Fatalf("edges %v, want %v", e[:len(want)], want)
	}
	// 1 + 9 + 18 magnitudes 1–6 of 18 buckets each: 1 + 9 + 6·18 = 118
	// buckets, 119 edges, the last 10⁷.
	if len(e) != 119 || e[len(e)-1] != 10_000_000 || e[len(e)-2] != 9_500_000 {
		t.Fatalf("%d edges ending %v, want 119 ending 9500000, 10000000", len(e), e[len(e)-2:])
	}
	for i := range int64(1500) {
		h.Add(i)
	}
	c := h.Counts()
	wantCount := func(edge int64) uint64 {
		switch {
		case edge < 10:
			return 1
		case edge < 100:
			return 5
		case edge < 1000:
			return 50
		case edge == 1000:
			return 500
		}
		return 0
	}
	for j := range c {
		if c[j] != wantCount(e[j]) {
			t.Errorf("bucket [%d, %d): count %d, want %d", e[j], e[j+1], c[j], wantCount(e[j]))
		}
	}
	if h.Total() != 1500 || h.Timeouts() != 0 {
		t.Errorf("total %d, timeouts %d, want 1500 and 0", h.Total(), h.Timeouts())
	}
}

// TestLogLinearEdgesRefused: a layout that llquantize would refuse, or
// whose buckets are not whole nanoseconds, is an error naming the problem.
func TestLogLinearEdgesRefused(t *testing.T) {
	for _, c := range []struct {
		l    LogLinear
		want string
	}{
		{LogLinear{Factor: 1, Low: 1, High: 10, Steps: 10}, "factor 1 is below 2"},
		{LogLinear{Factor: 10, Low: 1, High: 100, Steps: 15}, "not a multiple of the factor"},
		{LogLinear{Factor: 10, Low: 1e6, High: 5e9, Steps: 10}, "high 5s is not low 1ms times a power of the factor 10; use 1s or 10s"},
		{LogLinear{Factor: 10, Low: 3, High: 300, Steps: 20}, "not whole nanoseconds"},
		{LogLinear{Factor: 10, Low: 0, High: 300, Steps: 20}, "0 < low < high"},
		{LogLinear{Factor: 2, Low: 1, High: 1 << 40, Steps: 1 << 14}, "more than 65536 buckets"},
	} {
		if _, err := c.l.Edges(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error containing %q", c.l, err, c.want)
		}
	}
}

// TestLogLinearDeltaQExactAtEdges: the layout, 1 ms to 10 s by
// tens in 10 steps, with delays spread over five orders of magnitude and
// some timeouts. On FinestWidth (1 ms, 10,000 bins) the CDF of the ΔQ
// equals the recorded delays' at every bucket edge; between edges it is
// off by at most the bucket's mass, and every quantile by less than the
// bucket's width. On a coarser grid (50 ms), at each grid edge the error is
// at most the mass of the bucket that straddles it.
func TestLogLinearDeltaQExactAtEdges(t *testing.T) {
	l := LogLinear{Factor: 10, Low: 1e6, High: 1e10, Steps: 10}
	h, err := NewLogLinearHistogram(l)
	if err != nil {
		t.Fatal(err)
	}
	if w := l.FinestWidth(); w != 1e-3 {
		t.Fatalf("FinestWidth = %g, want 1ms (Low·Factor/Steps)", w)
	}
	r := rand.New(rand.NewPCG(7, 11))
	var delays []int64
	for range 20000 {
		// Log-uniform over [10µs, 20s]: some below Low, some beyond High.
		d := int64(math.Exp(math.Log(1e4) + r.Float64()*(math.Log(2e10)-math.Log(1e4))))
		h.Add(d)
		if d <= l.High {
			delays = append(delays, d)
		}
	}
	for range 500 {
		h.AddFailure()
	}
	slices.Sort(delays)
	n := float64(h.Total())
	trueCDF := func(x float64) float64 { // x in seconds, d ≤ x
		ns := int64(math.Floor(x*1e9 + 1e-6))
		return float64(sort.Search(len(delays), func(i int) bool { return delays[i] > ns })) / n
	}
	e := h.Edges()
	dq, err := h.DeltaQ(l.FinestWidth())
	if err != nil {
		t.Fatal(err)
	}
	if dq.Bins() != 10000 || dq.Count() != h.Total() {
		t.Fatalf("%d bins, count %d; want 10000 and %d", dq.Bins(), dq.Count(), h.Total())
	}
	// The buckets are [a, b) on integer ns, so F just below b is the mass
	// up to b − 1 ns: compare at b − 1ns, which the spread over [a, b)
	// reaches within 1ns/(b−a) of the bucket's mass.
	for j := 1; j < len(e); j++ {
		x := float64(e[j]) / 1e9
		want := trueCDF(float64(e[j]-1) / 1e9)
		if got := dq.CDF(x); math.Abs(got-want) > 1e-9 {
			t.Errorf("F(%gs) = %v, want %v exactly", x, got, want)
		}
	}
	// Between edges, and quantiles.
	for j := 0; j+1 < len(e); j++ {
		a, b := float64(e[j])/1e9, float64(e[j+1])/1e9
		mass := float64(h.Counts()[j]) / n
		mid := (a + b) / 2
		if got, want := dq.CDF(mid), trueCDF(mid); math.Abs(got-want) > mass+1e-9 {
			t.Errorf("F(%gs) = %v, want within the bucket's mass %v of %v", mid, got, mass, want)
		}
	}
	// About 5 % are timeouts or failures: no quantile beyond 0.9.
	for _, q := range []float64{0.1, 0.25, 0.5, 0.75, 0.9} {
		got, ok := dq.Quantile(q)
		rank := int(math.Ceil(q*n)) - 1
		if !ok || rank >= len(delays) {
			t.Fatalf("q%g: %v %v (rank %d of %d)", q, got, ok, rank, len(delays))
		}
		truth := delays[rank]
		j := sort.Search(len(e), func(i int) bool { return e[i] > truth }) - 1
		width := float64(e[j+1]-e[j]) / 1e9
		if math.Abs(got-float64(truth)/1e9) > width {
			t.Errorf("q%g = %gs, exact %gs: more than the bucket width %gs apart", q, got, float64(truth)/1e9, width)
		}
	}
	// A coarser grid: 50 ms bins, 200 of them.
	coarse, err := h.DeltaQ(0.05)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= coarse.Bins(); i++ {
		x := float64(i) * 0.05
		ns := int64(math.Round(x * 1e9))
		j := sort.Search(len(e), func(k int) bool { return e[k] > ns }) - 1
		straddle := 0.0
		if j+1 < len(e) && e[j] != ns {
			straddle = float64(h.Counts()[j]) / n
		}
		if got, want := coarse.CDF(x), trueCDF(x); math.Abs(got-want) > straddle+1e-9+1/n {
			t.Errorf("50ms grid: F(%gs) = %v, want within %v of %v", x, got, straddle, want)
		}
	}
	// Timeouts and failures are the intangible mass.
	if got, want := dq.Intangible(), float64(h.Timeouts()+h.Failures())/n; math.Abs(got-want) > 1e-9 {
		t.Errorf("intangible mass %v, want %v", got, want)
	}
}

// TestLogLinearGridWidth: the grid is FinestWidth while it has at most
// maxBins bins, else the smallest multiple of it that has. Known answers by
// hand: FinestWidth = Low·Factor/Steps, and High/FinestWidth =
// Steps·Factorᴹ⁻¹ bins on it.
func TestLogLinearGridWidth(t *testing.T) {
	for _, c := range []struct {
		l       LogLinear
		maxBins int
		width   float64
		bins    int
	}{
		// 1ms·10/10 = 1ms: 10s/1ms = 10,000 bins, within MaxGridBins.
		{LogLinear{Factor: 10, Low: 1e6, High: 1e10, Steps: 10}, MaxGridBins, 1e-3, 10000},
		// The same on at most 1000 bins: m = 10, 10ms.
		{LogLinear{Factor: 10, Low: 1e6, High: 1e10, Steps: 10}, 1000, 1e-2, 1000},
		// 1µs·10/10 = 1µs: 10⁷ bins, m = 10⁷/10⁴ = 1000, 1ms.
		{LogLinear{Factor: 10, Low: 1e3, High: 1e10, Steps: 10}, MaxGridBins, 1e-3, 10000},
		// 100µs·10/20 = 50µs: 200,000 bins, m = 20, 1ms.
		{LogLinear{Factor: 10, Low: 1e5, High: 1e10, Steps: 20}, MaxGridBins, 1e-3, 10000},
		// 1ms·2/4 = 0.5ms to 2¹⁰ms: 2048 bins.
		{LogLinear{Factor: 2, Low: 1e6, High: 1024e6, Steps: 4}, MaxGridBins, 5e-4, 2048},
	} {
		if _, err := c.l.Edges(); err != nil {
			t.Fatalf("%+v: %v", c.l, err)
		}
		w, n := c.l.GridWidth(c.maxBins)
		if math.Abs(w-c.width) > 1e-15 || n != c.bins {
			t.Errorf("%+v.GridWidth(%d) = %g, %d; want %g, %d", c.l, c.maxBins, w, n, c.width, c.bins)
		}
	}
}

// TestLogLinearCoarseGridKnownAnswer: 1µs to 10s by tens in 10 steps is
// read on a 1ms grid (GridWidth, 10,000 bins rather than 10⁷ at 1µs), and
// the conversion's error is within the bound GridWidth documents. By hand,
// for delays 50µs, 50µs (bucket [50µs, 60µs)), 1.5ms ([1ms, 2ms)) and 2.5s
// ([2s, 3s)), a quarter of the mass each:
//
//   - F(1ms) = 0.5 and F(2ms) = 0.75 exactly: 1ms and 2ms are bucket edges;
//   - F(2.5s) = 0.75 + 0.25·½ = 0.875 where the delays' CDF is 1: off by
//     0.125, at most the straddling bucket's mass 0.25;
//   - the median is read as 1ms (the 0.5 of the first bin reached at its
//     right edge) where the truth is 50µs: off by 0.95ms, less than the
//     grid width plus the bucket's, 1ms + 10µs;
//   - the 0.875 quantile is 2.5s, exactly.
func TestLogLinearCoarseGridKnownAnswer(t *testing.T) {
	l := LogLinear{Factor: 10, Low: 1e3, High: 1e10, Steps: 10}
	h, err := NewLogLinearHistogram(l)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []int64{50_000, 50_000, 1_500_000, 2_500_000_000} {
		h.Add(d)
	}
	w, n := l.GridWidth(MaxGridBins)
	dq, err := h.DeltaQ(w)
	if err != nil {
		t.Fatal(err)
	}
	if dq.Bins() != n || n != 10000 {
		t.Fatalf("%d bins, GridWidth says %d; want 10000", dq.Bins(), n)
	}
	for _, c := range []struct{ x, want float64 }{{1e-3, 0.5}, {2e-3, 0.75}, {2.5, 0.875}, {3, 1}} {
		if got := dq.CDF(c.x); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("F(%gs) = %v, want %v", c.x, got, c.want)
		}
	}
	for _, c := range []struct{ q, want float64 }{{0.5, 1e-3}, {0.875, 2.5}} {
		if got, ok := dq.Quantile(c.q); !ok || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("q%g = %v %v, want %gs", c.q, got, ok, c.want)
		}
	}
}

// TestLogLinearIndex: the index finds, by arithmetic, the bucket the edges
// give (LogLinearBucket) at every edge, one below and one above it, below
// Low, at High and beyond, for layouts of several factors and steps, the
// analysis resolution's among them, with magnitudes whose bucket width is
// a power of two (a shift) and others (a division).
func TestLogLinearIndex(t *testing.T) {
	var shifts, divisions int
	for _, l := range []LogLinear{
		FineLayout(),
		{Factor: 10, Low: 1_000_000, High: 10_000_000_000, Steps: 10},
		{Factor: 10, Low: 1, High: 1_000_000_000, Steps: 100},
		{Factor: 2, Low: 1, High: 1 << 45, Steps: 256},
		{Factor: 4, Low: 16, High: 16 << 20, Steps: 64},
		// Factor 2 with Low a power of two: the magnitude from the bit length.
		{Factor: 2, Low: 1, High: 1 << 62, Steps: 16},
		{Factor: 2, Low: 1 << 10, High: 1 << 40, Steps: 8},
		// Factor 2 with any other Low: the search.
		{Factor: 2, Low: 48, High: 48 << 30, Steps: 16},
	} {
		edges, err := l.Edges()
		if err != nil {
			t.Fatal(err)
		}
		x, err := l.Index()
		if err != nil {
			t.Fatal(err)
		}
		if x.Buckets() != len(edges)-1 {
			t.Fatalf("%+v: %d buckets, edges say %d", l, x.Buckets(), len(edges)-1)
		}
		for _, mg := range x.mags {
			if mg.shift >= 0 {
				shifts++
				if mg.w != 1<<mg.shift {
					t.Fatalf("%+v: width %d with shift %d", l, mg.w, mg.shift)
				}
			} else {
				divisions++
				if l == FineLayout() {
					t.Fatalf("the analysis resolution's width %d is no power of two", mg.w)
				}
			}
		}
		for _, e := range append(edges, -1, l.High+1, l.High*2) {
			for _, d := range []int64{e - 1, e, e + 1} {
				if got, want := x.Bucket(d), LogLinearBucket(edges, d); got != want {
					t.Fatalf("%+v: Bucket(%d) = %d, edges say %d", l, d, got, want)
				}
			}
		}
	}
	if shifts == 0 || divisions == 0 {
		t.Fatalf("%d magnitudes by a shift, %d by a division: both ways want testing", shifts, divisions)
	}
}

// TestLogLinearSpreadNarrowBucket: a bucket within the rounding of a bin
// edge — [0, 1 ns) on bins of 2 s, 5·10⁻¹⁰ of a bin, which snaps to the
// edge 0 at both ends — had no bin to spread over, and its mass was lost
// (a learned model's exclusive time of 0 on a root of half an hour, all of
// it failure). It lies whole in the bin of its middle; a bucket as narrow
// by a bin edge further on, [2·10⁹, 2·10⁹ + 1) ns, in the bin after the
// edge (the edge's bin holds (2, 4] s).
func TestLogLinearSpreadNarrowBucket(t *testing.T) {
	edges := []int64{0, 1, 2_000_000_000, 2_000_000_001, 3_000_000_000}
	p := make([]float64, 3)
	beyond := LogLinearSpread(p, 2, edges, 0, []uint64{3, 0, 1}, 0.25, edges[len(edges)-1])
	if want := []float64{0.75, 0.25, 0}; !slices.Equal(p, want) || beyond != 0 {
		t.Errorf("masses %v beyond %v, want %v and 0", p, beyond, want)
	}
}
