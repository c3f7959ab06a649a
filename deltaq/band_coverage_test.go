// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBandCoverage: the band of the last K = 30 observed ΔQs (the
// connector's default history) holds the true CDF at each of its edges in
// at least about 95 % of windows, whether a window holds 10 or 1000
// instances and where the CDF is near 0 or 1, and is not needlessly wide.
// Each case draws, with a fixed seed, 2000 windows of n instances from a
// known distribution over dMax = 50 ms and reads the band after each
// push, at every edge of 10 bins and at the 32 edges (CurveEdges) of 500
// bins, as the connector's deltaq.cdf curves do. The bands of successive
// windows share 29 of their 30 ΔQs, so 2000 of them are worth about 70
// independent ones: a point's miss fraction has a standard error of about
// 2.6 points at the nominal 5 %. Stated tolerances: every point of every
// case misses in at most 10 % of windows (it was up to 92 % where every
// ΔQ of 10 instances read the CDF as 1 and the band collapsed to a
// point); averaged over the points of a case, at most 7 %; and with 1000
// instances a window the points with 0.05 ≤ F ≤ 0.95 miss in at least
// 2 % of windows on average (the band is the wider of the t and Wilson
// intervals, which agree there: about 4 % is expected, 5 % for the t
// interval alone).
func TestBandCoverage(t *testing.T) {
	const k, windows, dmax = 30, 2000, 0.05
	exp993 := dmax / math.Log(1/0.007) // F(dMax) = 0.993
	dists := []struct {
		name string
		fail float64
		draw func(*rand.Rand) float64
		cdf  func(x float64) float64 // of the delays of the successes
	}{
		{"exponential, F(dMax) = 0.993", 0,
			func(r *rand.Rand) float64 { return r.ExpFloat64() * exp993 },
			func(x float64) float64 { return -math.Expm1(-x / exp993) }},
		{"10 ms + exponential of mean 5 ms", 0,
			func(r *rand.Rand) float64 { return 0.010 + r.ExpFloat64()*0.005 },
			func(x float64) float64 { return max(0, -math.Expm1(-(x-0.010)/0.005)) }},
		{"log-normal (median 8 ms, σ 0.8), 1 % failures", 0.01,
			func(r *rand.Rand) float64 { return 0.008 * math.Exp(0.8*r.NormFloat64()) },
			func(x float64) float64 { return 0.5 * math.Erfc(-math.Log(x/0.008)/0.8/math.Sqrt2) }},
	}
	seed := uint64(0)
	for _, n := range []int{10, 30, 100, 1000} {
		for _, bins := range []int{10, 500} {
			for _, ds := range dists {
				seed++
				rng := rand.New(rand.NewPCG(seed, 0x62616e64))
				w := dmax / float64(bins)
				r, _ := NewRunningBandAt(k, 32)
				idx := CurveEdges(bins, 32)
				truth := make([]float64, len(idx))
				for c, i := range idx {
					truth[c] = (1 - ds.fail) * ds.cdf(float64(i+1)*w)
				}
				miss := make([]int, len(idx))
				delays := make([]float64, 0, n)
				for j := range k - 1 + windows {
					delays = delays[:0]
					var failures int64
					for range n {
						if rng.Float64() < ds.fail {
							failures++
						} else {
							delays = append(delays, ds.draw(rng))
						}
					}
					if err := r.Push(mk(t)(FromInstances(w, bins, delays, 0, failures))); err != nil {
						t.Fatal(err)
					}
					if j < k-1 {
						continue
					}
					b, _ := r.Band()
					for c, f := range truth {
						if f < b.Lower[c] || f > b.Upper[c] {
							miss[c]++
						}
					}
				}
				var sum, mid float64
				var nmid int
				for c, m := range miss {
					frac := float64(m) / windows
					sum += frac
					if frac > 0.10 {
						t.Errorf("n = %d, %d bins, %s: the band misses F(%.4g s) = %.5f in %.1f %% of windows", n, bins, ds.name, float64(idx[c]+1)*w, truth[c], 100*frac)
					}
					if truth[c] >= 0.05 && truth[c] <= 0.95 {
						mid += frac
						nmid++
					}
				}
				if mean := sum / float64(len(miss)); mean > 0.07 {
					t.Errorf("n = %d, %d bins, %s: the band misses the CDF in %.1f %% of windows on average", n, bins, ds.name, 100*mean)
				}
				if n == 1000 && nmid > 0 && mid/float64(nmid) < 0.02 {
					t.Errorf("n = %d, %d bins, %s: the band misses F in [0.05, 0.95] in %.1f %% of windows on average, too wide", n, bins, ds.name, 100*mid/float64(nmid))
				}
				worst := slices.Max(miss)
				t.Logf("n = %4d, %3d bins, %s: misses %.1f %% on average, %.1f %% at worst, %.1f %% where 0.05 ≤ F ≤ 0.95", n, bins, ds.name, 100*sum/float64(len(miss)), 100*float64(worst)/windows, 100*mid/float64(max(nmid, 1)))
			}
		}
	}
}
