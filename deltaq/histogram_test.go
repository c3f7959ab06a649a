// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestHistogram(t *testing.T) {
	h, err := NewHistogram(1e-3, 10)
	if err != nil {
		t.Fatal(err)
	}
	// 0.010 is exactly dMax: a success in the last bin (the processor's
	// rule: duration ≤ dMax); 0.0100001 is beyond it.
	for _, d := range []float64{0, 0.0005, 0.001, 0.0095, 0.010, 0.0100001, math.Inf(1), -1, math.NaN()} {
		h.Add(d)
	}
	h.AddTimeout()
	h.AddFailure()
	if h.Successes() != 5 || h.Timeouts() != 3 || h.Failures() != 1 || h.Rejected() != 2 || h.Total() != 9 {
		t.Fatalf("counts: succ %d to %d fail %d rej %d total %d", h.Successes(), h.Timeouts(), h.Failures(), h.Rejected(), h.Total())
	}
	// Upper-inclusive bins: 0, 0.5 ms and 1 ms are in bin 0 = [0, 1] ms
	// (1 ms used to go to bin 1), 9.5 ms and 10 ms in bin 9 = (9, 10] ms.
	if c := h.Counts(); c[0] != 3 || c[1] != 0 || c[9] != 2 {
		t.Fatalf("bin counts %v", c)
	}
	d, err := h.DeltaQ()
	if err != nil {
		t.Fatal(err)
	}
	if d.Count() != 9 || !near(d.Intangible(), 4.0/9, 1e-15) {
		t.Fatalf("DeltaQ %v", d)
	}
	if allocs := testing.AllocsPerRun(100, func() { h.Add(0.003) }); allocs != 0 {
		t.Errorf("Add allocates %v", allocs)
	}
	o, _ := NewHistogram(1e-3, 10)
	o.Add(0.0045)
	before := h.Total()
	if err := h.Merge(o); err != nil || h.Total() != before+1 || h.Counts()[4] != 1 {
		t.Fatalf("Merge: %v total %d", err, h.Total())
	}
	bad, _ := NewHistogram(2e-3, 10)
	if err := h.Merge(bad); err == nil {
		t.Error("Merge of a different width accepted")
	}
	h.Reset()
	if h.Total() != 0 || h.Counts()[0] != 0 {
		t.Fatal("Reset left counts")
	}
	if _, err := h.DeltaQ(); !errors.Is(err, ErrEmpty) {
		t.Fatalf("empty histogram: %v, want ErrEmpty", err)
	}
}

// TestHistogramAddCounts: raw counts of another observer's histogram add up
// as Merge would add the histogram itself; a wrong shape or a negative
// count changes nothing.
func TestHistogramAddCounts(t *testing.T) {
	a, _ := NewHistogram(0.001, 4)
	b, _ := NewHistogram(0.001, 4)
	for _, d := range []float64{0.0005, 0.0015, 0.0015, 0.0039} {
		b.Add(d)
	}
	b.AddTimeout()
	b.AddFailure()
	b.AddFailure()
	if n, err := a.AddCounts([]uint64{1, 2, 0, 1}, 1, 2); err != nil || n != 4 {
		t.Fatalf("AddCounts: %d successes, %v", n, err)
	}
	want, _ := NewHistogram(0.001, 4)
	if err := want.Merge(b); err != nil {
		t.Fatal(err)
	}
	if a.Successes() != want.Successes() || a.Timeouts() != want.Timeouts() || a.Failures() != want.Failures() {
		t.Fatalf("counts %d/%d/%d, want %d/%d/%d", a.Successes(), a.Timeouts(), a.Failures(), want.Successes(), want.Timeouts(), want.Failures())
	}
	for i := range 4 {
		if a.counts[i] != want.counts[i] {
			t.Fatalf("bin %d: %d, want %d", i, a.counts[i], want.counts[i])
		}
	}
	if _, err := a.AddCounts([]uint64{1, 2, 3}, 0, 0); err == nil {
		t.Error("three counts for four bins accepted")
	}
	if _, err := a.AddCounts([]uint64{0, 0, 0, 0}, -1, 0); err == nil {
		t.Error("negative timeouts accepted")
	}
	if _, err := a.AddCounts([]uint64{math.MaxUint64, 1, 0, 0}, 0, 0); err == nil {
		t.Error("an overflowing count accepted")
	}
	if a.Total() != 7 || a.counts[0] != 1 {
		t.Errorf("a refused call changed the histogram: total %d, want 7", a.Total())
	}
}

// TestAddCountsUnrolled: the four-bins-a-round addition of AddCounts adds
// every bin and sums the successes, with the overflow of the sum found in
// any position, for lengths around the round; an overflow leaves the
// histogram as it was.
func TestAddCountsUnrolled(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 2000 {
		bins := 1 + trial%11
		if trial%100 == 0 {
			bins = 1000
		}
		h, _ := NewHistogram(0.001, bins)
		before := make([]uint64, bins)
		add := make([]uint64, bins)
		var want uint64
		over := false
		for i := range add {
			before[i] = r.Uint64N(1 << 20)
			add[i] = r.Uint64N(1 << 30)
			if r.IntN(4*bins) == 0 {
				add[i] = math.MaxUint64 - r.Uint64N(1<<10)
			}
			s := want + add[i]
			over = over || s < want
			want = s
		}
		over = over || want > math.MaxInt64
		copy(h.counts, before)
		n, err := h.AddCounts(add, 0, 0)
		if over != (err != nil) {
			t.Fatalf("trial %d: overflow %v, error %v", trial, over, err)
		}
		for i := range add {
			w := before[i]
			if !over {
				w += add[i]
			}
			if h.counts[i] != w {
				t.Fatalf("trial %d: bin %d is %d, want %d", trial, i, h.counts[i], w)
			}
		}
		if !over && (n != want || h.Successes() != int64(want)) {
			t.Fatalf("trial %d: %d successes (histogram %d), want %d", trial, n, h.Successes(), want)
		}
	}
}

// TestHistogramAddN: n instances of one delay count as n calls of Add, in
// both histogram kinds, and AddN names the bin it counted them in.
func TestHistogramAddN(t *testing.T) {
	a, _ := NewHistogram(0.001, 4)
	b, _ := NewHistogram(0.001, 4)
	for _, c := range []struct {
		d    float64
		n    int64
		want int
	}{{0.0005, 3, 0}, {0.002, 4, 1}, {0.0039, 1, 3}, {0.005, 2, -1}, {math.NaN(), 7, -1}} {
		if got := a.AddN(c.d, c.n); got != c.want {
			t.Errorf("AddN(%v, %d) = bin %d, want %d", c.d, c.n, got, c.want)
		}
		for range c.n {
			b.Add(c.d)
		}
	}
	a.AddTimeouts(2)
	a.AddFailures(5)
	for range 2 {
		b.AddTimeout()
	}
	for range 5 {
		b.AddFailure()
	}
	if !slices.Equal(a.Counts(), b.Counts()) || a.Timeouts() != b.Timeouts() || a.Failures() != b.Failures() || a.Successes() != b.Successes() {
		t.Errorf("AddN: counts %v t%d f%d s%d, Add: %v t%d f%d s%d", a.Counts(), a.Timeouts(), a.Failures(), a.Successes(),
			b.Counts(), b.Timeouts(), b.Failures(), b.Successes())
	}
	if a.Rejected() != 1 {
		t.Errorf("Rejected = %d, want 1 (a rejected delay counts once)", a.Rejected())
	}
	ll := LogLinear{Factor: 10, Low: 1000, High: 1_000_000, Steps: 10}
	la, err := NewLogLinearHistogram(ll)
	if err != nil {
		t.Fatal(err)
	}
	lb, _ := NewLogLinearHistogram(ll)
	for _, d := range []int64{0, 999, 1000, 5000, 1_000_000, 1_000_001} {
		j := la.AddN(d, 3)
		for range 3 {
			lb.Add(d)
		}
		if d <= ll.High && (j < 0 || lb.Counts()[j] == 0) {
			t.Errorf("log-linear AddN(%d) = bucket %d, which Add did not count in", d, j)
		}
	}
	la.AddTimeouts(1)
	la.AddFailures(2)
	lb.AddTimeout()
	lb.AddFailure()
	lb.AddFailure()
	if !slices.Equal(la.Counts(), lb.Counts()) || la.Total() != lb.Total() || la.Timeouts() != lb.Timeouts() {
		t.Errorf("log-linear AddN: %v total %d, Add: %v total %d", la.Counts(), la.Total(), lb.Counts(), lb.Total())
	}
}

// sparseAdder is what TestAddSparse reads of both histograms.
type sparseAdder interface {
	AddSparse(idx []int, counts []uint64, timeouts, failures int64) (uint64, error)
	Counts() []uint64
	Successes() int64
	Timeouts() int64
	Failures() int64
}

// TestAddSparse: a Histogram and a LogLinearHistogram of four bins add
// sparse and dense counts alike, touching only the bins given, and refuse
// what does not fit, unchanged.
func TestAddSparse(t *testing.T) {
	uniform, err := NewHistogram(1e-3, 4)
	if err != nil {
		t.Fatal(err)
	}
	// Buckets [0, 1), [1, 2), [2, 4), [4, 8) µs.
	logLinear, err := NewLogLinearHistogram(LogLinear{Factor: 2, Low: 1000, High: 8000, Steps: 2})
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string]sparseAdder{"Histogram": uniform, "LogLinearHistogram": logLinear} {
		t.Run(name, func(t *testing.T) {
			if len(h.Counts()) != 4 {
				t.Fatalf("%d bins, want 4", len(h.Counts()))
			}
			if n, err := h.AddSparse([]int{1, 3}, []uint64{2, 5}, 1, 2); err != nil || n != 7 {
				t.Fatalf("sparse: %d, %v", n, err)
			}
			if n, err := h.AddSparse(nil, []uint64{1, 0, 0, 4}, 0, 1); err != nil || n != 5 {
				t.Fatalf("dense: %d, %v", n, err)
			}
			want := func(what string) {
				t.Helper()
				if got := h.Counts(); !slices.Equal(got, []uint64{1, 2, 0, 9}) || h.Successes() != 12 || h.Timeouts() != 1 || h.Failures() != 3 {
					t.Errorf("%s: counts %v, %d successes, %d timeouts, %d failures; want [1 2 0 9], 12, 1, 3",
						what, got, h.Successes(), h.Timeouts(), h.Failures())
				}
			}
			want("after two adds")
			for what, bad := range map[string]struct {
				idx    []int
				counts []uint64
				t, f   int64
			}{
				"out of order":      {[]int{3, 1}, []uint64{1, 1}, 0, 0},
				"repeated":          {[]int{1, 1}, []uint64{1, 1}, 0, 0},
				"beyond the bins":   {[]int{4}, []uint64{1}, 0, 0},
				"negative index":    {[]int{-1}, []uint64{1}, 0, 0},
				"fewer counts":      {[]int{0, 1}, []uint64{1}, 0, 0},
				"dense, too few":    {nil, []uint64{1, 1, 1}, 0, 0},
				"negative timeouts": {[]int{0}, []uint64{1}, -1, 0},
				"negative failures": {nil, []uint64{1, 0, 0, 0}, 0, -1},
				"sparse overflow":   {[]int{0, 2}, []uint64{1, math.MaxUint64}, 0, 0},
				"dense overflow":    {nil, []uint64{1, math.MaxUint64, 0, 0}, 0, 0},
				"total overflow":    {[]int{0}, []uint64{math.MaxInt64}, 0, 0},
				"timeouts overflow": {nil, []uint64{0, 0, 0, 0}, math.MaxInt64, 0},
			} {
				if n, err := h.AddSparse(bad.idx, bad.counts, bad.t, bad.f); err == nil {
					t.Errorf("%s: added %d", what, n)
				}
				want(what)
			}
		})
	}
}

// TestFromCountsSkipsEmptyBins: fromCounts, which divides only for the
// bins that hold a count, builds what dividing every bin builds, to the
// bit: counts dense and sparse, large and small, out of totals with
// timeouts besides, and masses that round above one (build rescales).
func TestFromCountsSkipsEmptyBins(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := range 2000 {
		counts := make([]uint64, 1+rng.IntN(3000))
		var sum uint64
		for i := range counts {
			if rng.IntN(1+trial%7) == 0 {
				counts[i] = rng.Uint64N([]uint64{3, 1000, 1 << 40}[trial%3])
				sum += counts[i]
			}
		}
		n := int64(sum) + rng.Int64N(5)
		if n == 0 {
			continue
		}
		got := fromCounts(1e-3, counts, n)
		// Every bin divided, as before.
		nf := float64(n)
		p := newPDF(len(counts))
		for i, c := range counts {
			p[i] = float64(c) / nf
		}
		want := build(1e-3, p, n)
		var run uint64
		for i, c := range counts {
			run += c
			want.cum[i] = float64(run) / nf
		}
		if !slices.Equal(got.pdf, want.pdf) || !slices.Equal(got.cum, want.cum) || got.count != want.count {
			t.Fatalf("trial %d: fromCounts differs from dividing every bin", trial)
		}
	}
}

// TestAddCheckedAddsAsAddSparse: counts added by AddChecked, which a
// caller checked already, leave the histogram as AddSparse (and, dense,
// AddCounts) leaves it: bins, successes, timeouts and failures.
func TestAddCheckedAddsAsAddSparse(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for trial := range 500 {
		bins := 1 + rng.IntN(300)
		a, _ := NewHistogram(1e-3*float64(bins), bins)
		b, _ := NewHistogram(1e-3*float64(bins), bins)
		for range 1 + rng.IntN(5) {
			var idx []int
			var counts []uint64
			if trial%2 == 0 {
				counts = make([]uint64, bins)
				for i := range counts {
					counts[i] = rng.Uint64N(4)
				}
			} else {
				for i := range bins {
					if rng.IntN(5) == 0 {
						idx, counts = append(idx, i), append(counts, 1+rng.Uint64N(1<<20))
					}
				}
				if idx == nil {
					idx = []int{}
				}
			}
			to, fa := rng.Int64N(3), rng.Int64N(3)
			n, err := a.AddSparse(idx, counts, to, fa)
			if err != nil {
				t.Fatal(err)
			}
			b.AddChecked(idx, counts, n, to, fa)
		}
		if !slices.Equal(a.Counts(), b.Counts()) || a.Successes() != b.Successes() || a.Timeouts() != b.Timeouts() || a.Failures() != b.Failures() {
			t.Fatalf("trial %d: AddChecked left %v, AddSparse %v", trial, b, a)
		}
	}
}
