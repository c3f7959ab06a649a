// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchSizes are the bin counts of BenchmarkConvolve (issue: 50 … 4000).
var benchSizes = []int{50, 100, 200, 500, 1000, 4000}

// denseOperands returns two ΔQs of n bins with mass in every bin: an
// exponential of mean dMax/4 and a uniform over [0, dMax).
func denseOperands(b testing.TB, n int) (DeltaQ, DeltaQ) {
	w := 1e-3
	e, err := Exponential(float64(n)*w/4, w, n)
	if err != nil {
		b.Fatal(err)
	}
	u, err := Uniform(0, float64(n)*w, w, n)
	if err != nil {
		b.Fatal(err)
	}
	return e, u
}

// BenchmarkConvolve compares direct summation, the FFT and the automatic
// choice on dense operands of equal bin counts. The three methods run one
// after the other for each size, so that the ratios compare measurements
// taken close together on a machine whose speed drifts.
func BenchmarkConvolve(b *testing.B) {
	for _, n := range benchSizes {
		x, y := denseOperands(b, n)
		for _, m := range convolvers {
			b.Run(fmt.Sprintf("N=%d/%s", n, m.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := m.f(x, y); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkConvolveInto is BenchmarkConvolve computing into a reused
// result buffer: the arithmetic of each method without the allocation of
// the 2·(N_A + N_B)-value result (and the garbage collection it causes),
// which BenchmarkConvolve includes for every method alike.
func BenchmarkConvolveInto(b *testing.B) {
	methods := []struct {
		name string
		m    method
	}{{"auto", methodAuto}, {"direct", methodDirect}, {"fft", methodFFT}}
	for _, m := range methods {
		for _, n := range benchSizes {
			x, y := denseOperands(b, n)
			buf := make([]float64, 4*n)
			b.Run(fmt.Sprintf("%s/N=%d", m.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := convolveInto(buf, "Convolve", x, y, m.m); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkConvolveCrossover measures direct summation and the FFT on the
// shapes of the cost model in convolve.go (useFFT), computing into a reused
// result buffer: the figures the model's constants are fitted to.
func BenchmarkConvolveCrossover(b *testing.B) {
	shapes := [][2]int{{8, 8}, {12, 12}, {16, 16}, {24, 24}, {32, 32}, {64, 64}, {128, 128}, {1000, 1000},
		{8, 1000}, {16, 1000}, {32, 1000}, {64, 1000}, {8, 4000}, {16, 4000}, {64, 4000}, {4000, 4000}}
	for _, sh := range shapes {
		x, err := Uniform(0, float64(sh[0])*1e-3, 1e-3, sh[0])
		if err != nil {
			b.Fatal(err)
		}
		y, err := Uniform(0, float64(sh[1])*1e-3, 1e-3, sh[1])
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]float64, 2*(sh[0]+sh[1]))
		for _, m := range []struct {
			name string
			m    method
		}{{"direct", methodDirect}, {"fft", methodFFT}} {
			b.Run(fmt.Sprintf("%dx%d/%s", sh[0], sh[1], m.name), func(b *testing.B) {
				for b.Loop() {
					if _, err := convolveInto(buf, "Convolve", x, y, m.m); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkConvolveSkewed measures the automatic choice on operands of very
// different supports, where direct summation wins at any size.
func BenchmarkConvolveSkewed(b *testing.B) {
	for _, n := range []int{1000, 4000} {
		x, _ := denseOperands(b, n)
		y, err := Uniform(0, 0.008, 1e-3, n) // 8 bins of support
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range convolvers {
			b.Run(fmt.Sprintf("%s/N=%d", m.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := m.f(x, y); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkFirstToFinish(b *testing.B) {
	x, y := denseOperands(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FirstToFinish(x, y); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBand(b *testing.B) {
	// One probe's window: 20 ΔQs of 1000 bins.
	var win []DeltaQ
	for i := 0; i < 20; i++ {
		d, err := Exponential(0.1+0.001*float64(i), 1e-3, 1000)
		if err != nil {
			b.Fatal(err)
		}
		win = append(win, d)
	}
	var dst ConfidenceBand
	b.ReportAllocs()
	for b.Loop() {
		if err := BandInto(&dst, win); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunningBand is BenchmarkBand's window kept up to date: one push
// (the oldest of the 20 ΔQs leaving) and the band read, per window closed.
func BenchmarkRunningBand(b *testing.B) {
	r, err := NewRunningBand(20)
	if err != nil {
		b.Fatal(err)
	}
	var win []DeltaQ
	for i := 0; i < 21; i++ {
		d, err := Exponential(0.1+0.001*float64(i), 1e-3, 1000)
		if err != nil {
			b.Fatal(err)
		}
		win = append(win, d)
		_ = r.Push(d)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := r.Push(win[i%len(win)]); err != nil {
			b.Fatal(err)
		}
		if _, ok := r.Band(); !ok {
			b.Fatal("no band")
		}
		i++
	}
}

func BenchmarkHistogramAdd(b *testing.B) {
	h, err := NewHistogram(1e-3, 1000)
	if err != nil {
		b.Fatal(err)
	}
	d := 0.0
	b.ReportAllocs()
	for b.Loop() {
		h.Add(d)
		d += 0.0007
		if d > 1.2 {
			d = 0
		}
	}
}

// BenchmarkLogLinearAdd records delays spread over six magnitudes into the
// log-linear layout 1 ms…10 s by tens in 10 steps: the cost per instance of
// a binning: log-linear probe.
func BenchmarkLogLinearAdd(b *testing.B) {
	ll := LogLinear{Factor: 10, Low: 1e6, High: 1e10, Steps: 10}
	h, err := NewLogLinearHistogram(ll)
	if err != nil {
		b.Fatal(err)
	}
	delays := make([]int64, 1024)
	for i := range delays {
		delays[i] = int64(1000) << (i % 24) // 1 µs … 8.4 s
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		h.Add(delays[i&1023])
		i++
	}
}

// BenchmarkFineAddN records delays spread over the analysis resolution's
// magnitudes (Fine), as every instance a probe counts is: the cost per
// instance of the analysis counts (a bucket found by arithmetic).
func BenchmarkFineAddN(b *testing.B) {
	h := NewFine().NewHistogram()
	rng := rand.New(rand.NewPCG(1, 2))
	delays := make([]int64, 1024)
	for i := range delays {
		delays[i] = int64(rng.ExpFloat64() * 50e6) // mean 50 ms
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		h.AddN(delays[i&1023], 1)
		i++
	}
}

// BenchmarkLogLinearDeltaQ converts a window of that layout to the uniform
// grid the operators use (GridWidth: 10,000 bins of 1 ms).
func BenchmarkLogLinearDeltaQ(b *testing.B) {
	ll := LogLinear{Factor: 10, Low: 1e6, High: 1e10, Steps: 10}
	h, err := NewLogLinearHistogram(ll)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10000 {
		h.Add(int64(1000) << (i % 24))
	}
	w, _ := ll.GridWidth(MaxGridBins)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.DeltaQ(w); err != nil {
			b.Fatal(err)
		}
	}
}
