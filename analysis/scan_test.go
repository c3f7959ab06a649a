// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// randomCounts returns counts for bins bins (sparse: about one bin in
// ten, with their indices) whose magnitude class is chosen at random:
// small, large enough that their sum approaches the bound of the integer
// Σ c·i (MaxUint64/(bins−1)) from either side, or huge (near 2⁶⁴, so that
// their sum overflows).
func randomCounts(r *rand.Rand, bins int, sparse bool) ([]int, []uint64) {
	var idx []int
	var c []uint64
	bound := uint64(math.MaxUint64)
	if bins > 1 {
		bound /= uint64(bins - 1)
	}
	class := r.IntN(4)
	for i := range bins {
		if sparse && r.IntN(10) != 0 {
			continue
		}
		var x uint64
		switch class {
		case 0:
			x = r.Uint64N(100)
		case 1, 2:
			// Each of the up to bins counts near bound/bins: the sum
			// within a few per cent of the bound, on either side.
			x = bound / uint64(bins)
			x = x - x/32 + r.Uint64N(x/16+1)
		default:
			x = math.MaxUint64 - r.Uint64N(1<<40)
			if r.IntN(2) == 0 {
				x >>= r.IntN(20)
			}
		}
		if sparse {
			idx = append(idx, i)
		}
		c = append(c, x)
	}
	if sparse && idx == nil {
		idx = []int{}
	}
	return idx, c
}

// exactMoments returns Σ cⱼ and Σ cⱼ·iⱼ exactly (idx nil: iⱼ = j).
func exactMoments(idx []int, c []uint64) (*big.Int, *big.Int) {
	n, ci := new(big.Int), new(big.Int)
	var x, i big.Int
	for j, v := range c {
		k := j
		if idx != nil {
			k = idx[j]
		}
		x.SetUint64(v)
		n.Add(n, &x)
		i.SetInt64(int64(k))
		ci.Add(ci, i.Mul(&i, &x))
	}
	return n, ci
}

// TestBinMomentsMatchExact: the integer sums of a window's scan —
// Σ cⱼ with its overflow, and Σ cⱼ·iⱼ from the running sums (dense) or
// by multiplication (sparse) — equal the exact sums on random windows of
// every magnitude, dense and sparse, up to MaxBins bins: Σ cⱼ·iⱼ is the
// exact value correctly rounded whenever (bins − 1)·Σ cⱼ fits uint64, and
// agrees with the floating-point sum (binMomentFloat, which is also the
// fallback beyond that bound) within its rounding.
func TestBinMomentsMatchExact(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	limit := new(big.Int).SetUint64(math.MaxUint64)
	for trial := range 3000 {
		bins := []int{1, 2, 3, 4, 5, 7, 8, 1000, 1 << 16}[trial%9]
		if bins == 1<<16 && trial%5 != 0 {
			bins = 1 + r.IntN(3000)
		}
		idx, c := randomCounts(r, bins, trial%3 == 0)
		n, sat, ci := binMoments(idx, c, bins)
		wantN, wantCI := exactMoments(idx, c)
		if wantSat := wantN.Cmp(limit) > 0; sat != wantSat {
			t.Fatalf("trial %d (%d bins): sat %v, want %v (Σ c = %v)", trial, bins, sat, wantSat, wantN)
		}
		if sat {
			continue
		}
		if n != wantN.Uint64() {
			t.Fatalf("trial %d: Σ c = %d, want %v", trial, n, wantN)
		}
		want, _ := new(big.Float).SetInt(wantCI).Float64()
		bound := new(big.Int).Mul(wantN, big.NewInt(int64(max(bins-1, 0))))
		if bound.Cmp(limit) <= 0 && ci != want {
			t.Fatalf("trial %d (%d bins, Σ c = %d): integer Σ c·i = %v, exact %v", trial, bins, n, ci, want)
		}
		// The floating-point sum of up to 2¹⁶ terms, each rounded once
		// and added with a rounding: a relative 2⁻³⁵ covers it.
		f := binMomentFloat(idx, c)
		if tol := want * 0x1p-35; math.Abs(ci-want) > tol || math.Abs(f-want) > tol {
			t.Fatalf("trial %d (%d bins): Σ c·i integer %v, float %v, exact %v", trial, bins, ci, f, want)
		}
	}
}

// TestSparseMoments: the pass over a sparse window's counts takes their
// sums and moments with its last index when the indices strictly increase
// from 0, and says not when one does not: repeated, decreasing, negative.
func TestSparseMoments(t *testing.T) {
	n, carries, m, last, ok := sparseMoments([]int{0, 3, 9}, []uint64{2, 5, 1})
	if !ok || n != 8 || carries != 0 || m != 24 || last != 9 {
		t.Fatalf("sparseMoments = %d, %d, %d, %d, %v; want 8, 0, 24, 9, true", n, carries, m, last, ok)
	}
	if _, _, _, last, ok := sparseMoments([]int{}, []uint64{}); !ok || last != -1 {
		t.Fatalf("no index: last %d, ok %v; want -1, true", last, ok)
	}
	if _, carries, _, _, ok := sparseMoments([]int{1, 2}, []uint64{math.MaxUint64, 1}); !ok || carries == 0 {
		t.Fatalf("an overflowing sum: carries %d, ok %v", carries, ok)
	}
	for _, idx := range [][]int{{0, 0}, {3, 2}, {-1}, {1, 5, 5}, {0, 4, 2}} {
		if _, _, _, _, ok := sparseMoments(idx, make([]uint64, len(idx))); ok {
			t.Errorf("indices %v taken", idx)
		}
	}
}

// TestCountSum: the sum of counts alone (a window whose bins or layout
// are refused, for the drop counters) and its overflow.
func TestCountSum(t *testing.T) {
	for _, tc := range []struct {
		c    []uint64
		n    uint64
		over bool
	}{
		{nil, 0, false},
		{[]uint64{1, 2, 3}, 6, false},
		{[]uint64{math.MaxUint64, 0}, math.MaxUint64, false},
		{[]uint64{math.MaxUint64, 1}, 0, true},
		{[]uint64{math.MaxUint64, math.MaxUint64, 2}, 0, true},
		// Four partial sums: within each, beyond in all.
		{[]uint64{1 << 62, 1 << 62, 1 << 62, 1<<62 - 1, 0}, math.MaxUint64, false},
		{[]uint64{1 << 62, 1 << 62, 1 << 62, 1 << 62}, 0, true},
		{[]uint64{1 << 63, 0, 0, 0, 1 << 63}, 0, true},
	} {
		n, over := countSum(tc.c)
		if over != tc.over || (!over && n != tc.n) {
			t.Errorf("countSum(%v) = %d, %v; want %d, %v", tc.c, n, over, tc.n, tc.over)
		}
	}
	// Against the exact sum, of every length and at the edge of overflow.
	rng := rand.New(rand.NewPCG(3, 3))
	for trial := range 20000 {
		c := make([]uint64, rng.IntN(13))
		exact := new(big.Int)
		var wrapped uint64 // the sum modulo 2⁶⁴
		for i := range c {
			c[i] = rng.Uint64() >> uint(rng.IntN(4)+trial%4*16)
			exact.Add(exact, new(big.Int).SetUint64(c[i]))
			wrapped += c[i]
		}
		n, over := countSum(c)
		if want := exact.BitLen() > 64; over != want || n != wrapped {
			t.Fatalf("countSum(%v) = %d, %v; exact %v", c, n, over, exact)
		}
	}
}

// TestHugeWindowSumChecked: a window of MaxWindowInstances successes in
// its last bin is accepted with the sum its bins give and refused with a
// sum just outside them; so is one whose counts, though within
// MaxWindowInstances, lie beyond the exact integer Σ c·i of its layout
// (MaxBins bins), which the scan takes in floating point.
func TestHugeWindowSumChecked(t *testing.T) {
	for _, bins := range []int{testBins, 1 << 16} {
		dmax := time.Duration(bins) * time.Millisecond
		cfg := Config{Interval: time.Second, Lag: 2 * time.Second,
			Probes: map[string]ProbeConfig{"job": {DMax: dmax, Bins: bins}}}
		e := newEngine(t, cfg, at(2*time.Second))
		// MaxWindowInstances successes in the last bin, ((N−1)·w, N·w].
		w := gwWindow("a", time.Second, dmax, bins)
		w.Timeouts = 0
		w.BinCounts[0] = 0
		w.BinCounts[bins-1] = MaxWindowInstances
		width := dmax.Seconds() / float64(bins)
		lo := float64(MaxWindowInstances) * float64(bins-1) * width
		hi := lo + float64(MaxWindowInstances)*width
		for _, tc := range []struct {
			sum  float64
			want Contribution
		}{
			{lo * (1 - 1e-5), ContributionInvalid},
			{hi * (1 + 1e-5), ContributionInvalid},
			{(lo + hi) / 2, ContributionAccepted},
		} {
			w.SuccessSum = tc.sum
			if c := e.AddWindow(&w); c != tc.want {
				t.Errorf("%d bins, sum %g in [%g, %g]: %v, want %v", bins, tc.sum, lo, hi, c, tc.want)
			}
		}
	}
}

// TestAddWindowsAsAddWindow: AddWindows gives each of more than a batch of
// windows — accepted, invalid, late, early, misaligned, of agents beyond
// the limit — the fate AddWindow gives it, and leaves the engine as
// AddWindow does.
func TestAddWindowsAsAddWindow(t *testing.T) {
	cfg := Config{Interval: time.Second, Lag: 2 * time.Second, Gateway: GatewayConfig{MaxAgents: 5},
		Probes: map[string]ProbeConfig{"job": {DMax: testDMax, Bins: testBins}}}
	one, batch := newEngine(t, cfg, at(3*time.Second)), newEngine(t, cfg, at(3*time.Second))
	r := rand.New(rand.NewPCG(3, 4))
	var ws []Window
	for i := range 3*windowBatch + 5 {
		start := time.Duration(r.IntN(6)) * time.Second // some late, some early
		w := gwWindow(fmt.Sprintf("agent-%d", r.IntN(50)), start, testDMax, testBins)
		switch i % 7 {
		case 1:
			w.SuccessSum = -1
		case 2:
			w.End = w.End.Add(time.Millisecond)
		case 3:
			w.BinIndex, w.BinCounts = []int{4, 9}, []uint64{2, 1}
			w.SuccessSum = 2*0.0045 + 0.0095
		}
		ws = append(ws, w)
	}
	fates := make([]Contribution, len(ws))
	batch.AddWindows(ws, fates)
	seen := map[Contribution]bool{}
	for i := range ws {
		if c := one.AddWindow(&ws[i]); c != fates[i] {
			t.Errorf("window %d: AddWindows %v, AddWindow %v", i, fates[i], c)
		}
		seen[fates[i]] = true
	}
	for _, c := range []Contribution{ContributionAccepted, ContributionInvalid, ContributionLate, ContributionMisaligned, ContributionAgentLimit} {
		if !seen[c] {
			t.Errorf("no window was %v", c)
		}
	}
	if a, b := one.Stats(), batch.Stats(); !reflect.DeepEqual(a, b) {
		t.Errorf("AddWindow %+v, AddWindows %+v", a, b)
	}
	a, b := probeOf(t, one.Flush(at(3 * time.Second))[1], "job"), probeOf(t, batch.Flush(at(3 * time.Second))[1], "job")
	if !reflect.DeepEqual(a.BinCounts, b.BinCounts) || a.Counts != b.Counts {
		t.Errorf("AddWindow %v %+v, AddWindows %v %+v", a.BinCounts, a.Counts, b.BinCounts, b.Counts)
	}
}
