// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestPointOnEdgesComposesExactly(t *testing.T) {
	// point(2 ms) -> point(3 ms) on 10 bins of 1 ms: the exact sum is 5 ms,
	// P(d ≤ 5 ms) = 1. Each point on an edge lies in the bin that edge
	// closes, (1, 2] and (2, 3] ms; the half split puts the sum in
	// (3, 4] and (4, 5] ms, so F(5 ms) = 1 (it was 0: the points sat in
	// [2, 3) and [3, 4) ms and the sum in [5, 7) ms, median 6 ms). The
	// median cannot be exactly 5 ms as well: the CDF is continuous and
	// piecewise linear, so F(5 ms) = 1 forces F ≥ 0.5 somewhere below
	// 5 ms; it is 4 ms, within the one bin of resolution, and the delay by
	// which every instance completes, the 1-quantile, is exactly 5 ms.
	a := mk(t)(Point(0.002, 1e-3, 10))
	b := mk(t)(Point(0.003, 1e-3, 10))
	for _, c := range convolvers {
		d := mk(t)(c.f(a, b))
		if got := d.CDF(0.005); !near(got, 1, 1e-9) {
			t.Errorf("%s: F(5 ms) = %v, want 1", c.name, got)
		}
		if got := d.CDF(0.003); !near(got, 0, 1e-9) {
			t.Errorf("%s: F(3 ms) = %v, want 0", c.name, got)
		}
		if m, ok := d.Quantile(0.5); !ok || m < 0.004-1e-12 || m > 0.005+1e-12 {
			t.Errorf("%s: median %v, want within the bin (4, 5] ms", c.name, m)
		}
		if q, ok := d.Quantile(1); !ok || !near(q, 0.005, 1e-12) {
			t.Errorf("%s: 1-quantile %v, want 5 ms", c.name, q)
		}
	}
}

func TestPointAtDMaxIsSuccess(t *testing.T) {
	// A delay of exactly dMax is a success everywhere else (Histogram.Add,
	// the processor's duration ≤ dMax); Point agrees: mass in the last bin,
	// F(dMax) = 1 (up to the rounding of reading the CDF at t = 0.3 on
	// 0.1 s bins: 0.3/0.1 is 2.9999999999999996, a hair inside the last
	// bin). 0.010/0.001 is 10.000000000000002 in floating point.
	for _, c := range []struct {
		d, w float64
		n    int
	}{{0.010, 1e-3, 10}, {0.05, 1e-3, 50}, {1, 0.1, 10}, {0.3, 0.1, 3}} {
		p := mk(t)(Point(c.d, c.w, c.n))
		if p.Intangible() != 0 || p.PDF()[c.n-1] != 1 || !near(p.CDF(c.d), 1, 1e-12) {
			t.Errorf("Point(%v) on %d bins of %v: pdf %v, intangible %v; want a success in the last bin",
				c.d, c.n, c.w, p.PDF(), p.Intangible())
		}
	}
	// Beyond dMax it is still a timeout.
	if p := mk(t)(Point(0.0101, 1e-3, 10)); p.Intangible() != 1 {
		t.Errorf("Point beyond dMax: intangible %v, want 1", p.Intangible())
	}
}

func TestPointInsideBinUnchanged(t *testing.T) {
	// A delay strictly inside a bin keeps its bin, ⌊d/w⌋ = ⌈d/w⌉ − 1.
	for _, c := range []struct {
		d   float64
		bin int
	}{{0.0005, 0}, {0.0015, 1}, {0.0035, 3}, {0.0099, 9}, {0.0030001, 3}, {0.0029999, 2}} {
		if p := mk(t)(Point(c.d, 1e-3, 10)).PDF(); p[c.bin] != 1 {
			t.Errorf("Point(%v) pdf %v, want mass in bin %d", c.d, p, c.bin)
		}
	}
}

func TestPointStepsInstancesAgree(t *testing.T) {
	// One binning rule: a point, a step to 1 and a single observed instance
	// at the same delay give the same ΔQ (Point used to put an edge delay a
	// bin above Steps, and a delay of dMax in no bin at all).
	const w, n = 1e-3, 10
	for _, d := range []float64{0, 1e-13, 0.0005, 0.001, 0.002, 0.0025, 0.003, 0.005, 0.0099, 0.010, 0.0100001, 0.02} {
		p := mk(t)(Point(d, w, n)).PDF()
		s := mk(t)(Steps([]Step{{d, 1}}, w, n)).PDF()
		o := mk(t)(FromInstances(w, n, []float64{d}, 0, 0)).PDF()
		for i := range p {
			if p[i] != s[i] || p[i] != o[i] {
				t.Fatalf("delay %v: Point %v, Steps %v, FromInstances %v", d, p, s, o)
			}
		}
	}
}

func TestHistogramUpperInclusive(t *testing.T) {
	// Bins are (i·w, (i+1)·w], as OTLP buckets (b₋, b]: on 1 ms bins a 5 ms
	// delay is in bin 4 = (4, 5] ms, and F(5 ms) counts it, F(4 ms) does
	// not (it used to be bin 5, and F(5 ms) = 0).
	const w, n = 1e-3, 10
	cases := []struct {
		name  string
		d     float64
		bin   int // −1: timeout
		fEdge float64
	}{
		{"zero", 0, 0, 0.001},
		{"inside bin 0", 0.0004, 0, 0.001},
		{"first edge", 0.001, 0, 0.001},
		{"5 ms", 0.005, 4, 0.005},
		{"5 ms from nanoseconds", float64(5_000_000) * 1e-9, 4, 0.005},
		{"5 ms rounded up", math.Nextafter(0.005, 1), 4, 0.005},
		{"5 ms rounded down", math.Nextafter(0.005, 0), 4, 0.005},
		{"5 ms as 0.1+…", 0.001 + 0.001 + 0.001 + 0.001 + 0.001, 4, 0.005},
		{"just past 5 ms", 0.0050001, 5, 0.006},
		{"just before 5 ms", 0.0049999, 4, 0.005},
		{"dMax", 0.010, 9, 0.010},
		{"dMax rounded up", 0.010 * (1 + 1e-12), 9, 0.010},
		{"beyond dMax", 0.0100001, -1, 0},
		{"infinite", math.Inf(1), -1, 0},
	}
	for _, c := range cases {
		h := mustHist(t, w, n)
		h.Add(c.d)
		if c.bin < 0 {
			if h.Timeouts() != 1 || h.Successes() != 0 {
				t.Errorf("%s (%v): timeouts %d successes %d, want a timeout", c.name, c.d, h.Timeouts(), h.Successes())
			}
			continue
		}
		if h.Counts()[c.bin] != 1 || h.Successes() != 1 {
			t.Errorf("%s (%v): counts %v, want bin %d", c.name, c.d, h.Counts(), c.bin)
			continue
		}
		d := mustHDQ(t, h)
		// F at the edge that closes the delay's bin counts it; F at the
		// edge before does not.
		if got := d.CDF(c.fEdge); got != 1 {
			t.Errorf("%s: F(%v) = %v, want 1", c.name, c.fEdge, got)
		}
		if got := d.CDF(c.fEdge - w); got != 0 {
			t.Errorf("%s: F(%v) = %v, want 0", c.name, c.fEdge-w, got)
		}
	}
}

func TestHistogramMatchesLe(t *testing.T) {
	// With a millisecond clock every delay is a whole number of ms, many on
	// the 1 ms bin edges: the CDF at edge k ms must be the fraction of
	// instances with d ≤ k ms, the value of the Prometheus bucket le = k ms
	// (a count made here directly).
	const w, n = 1e-3, 50
	r := rand.New(rand.NewPCG(1, 2))
	h := mustHist(t, w, n)
	var ms []int
	for range 2000 {
		v := r.IntN(60) // 0 … 59 ms: some beyond dMax
		ms = append(ms, v)
		h.Add(float64(v) / 1000)
	}
	d := mustHDQ(t, h)
	edges := d.CDFEdges(nil)
	for k := 1; k <= n; k++ {
		le := 0
		for _, v := range ms {
			if v <= k {
				le++
			}
		}
		if want := float64(le) / float64(len(ms)); !near(edges[k-1], want, 1e-12) {
			t.Fatalf("F(%d ms) = %v, want the le bucket's %v", k, edges[k-1], want)
		}
	}
	timeouts := 0
	for _, v := range ms {
		if v > n {
			timeouts++
		}
	}
	if h.Timeouts() != int64(timeouts) {
		t.Errorf("timeouts %d, want %d (the delays > 50 ms)", h.Timeouts(), timeouts)
	}
}
