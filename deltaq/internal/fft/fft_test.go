// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package fft

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/dsp/fourier"
)

func direct(a, b []float64) []float64 {
	c := make([]float64, len(a)+len(b)-1)
	for i, x := range a {
		for j, y := range b {
			c[i+j] += x * y
		}
	}
	return c
}

// gonumConvolve is the textbook FFT convolution with gonum's real transform,
// an independent implementation to cross-check against.
func gonumConvolve(a, b []float64) []float64 {
	l := len(a) + len(b) - 1
	n := Size(l)
	f := fourier.NewFFT(n)
	pa := make([]float64, n)
	pb := make([]float64, n)
	copy(pa, a)
	copy(pb, b)
	ca := f.Coefficients(nil, pa)
	cb := f.Coefficients(nil, pb)
	for i := range ca {
		ca[i] *= cb[i]
	}
	out := f.Sequence(nil, ca)
	for i := range out {
		out[i] /= float64(n)
	}
	return out[:l]
}

func randSeq(r *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = r.Float64()
	}
	return s
}

// kernels runs f once per available implementation of the passes: the
// pure-Go one and, where the processor has it, the AVX2/FMA assembly.
func kernels(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	saved := useAVX2
	defer func() { useAVX2 = saved }()
	useAVX2 = false
	t.Run("go", f)
	if saved {
		useAVX2 = true
		t.Run("avx2", f)
	} else {
		t.Log("no AVX2/FMA: assembly kernels not tested")
	}
}

func TestConvolveMatchesDirectAndGonum(t *testing.T) { kernels(t, testConvolveMatches) }

func testConvolveMatches(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	sizes := [][2]int{{1, 1}, {1, 7}, {2, 3}, {3, 3}, {4, 5}, {5, 4}, {8, 9}, {16, 17}, {31, 2}, {33, 33},
		{100, 1}, {100, 100}, {257, 511}, {1000, 1000}, {1024, 1025}, {1500, 1500}, {4000, 4000}, {3, 5000}}
	for _, sz := range sizes {
		a, b := randSeq(r, sz[0]), randSeq(r, sz[1])
		want := direct(a, b)
		dst := make([]float64, len(a)+len(b)-1)
		got := Convolve(dst, a, b)
		g := gonumConvolve(a, b)
		if len(got) != len(want) {
			t.Fatalf("%v: length %d, want %d", sz, len(got), len(want))
		}
		// Scale of the rounding error: Σ|a|·Σ|b|·ε·log n.
		sa, sb := 0.0, 0.0
		for _, v := range a {
			sa += v
		}
		for _, v := range b {
			sb += v
		}
		tol := sa * sb * 1e-14
		for i := range want {
			if d := math.Abs(got[i] - want[i]); d > tol {
				t.Fatalf("%v: c[%d] = %v, direct %v (|Δ| %g > %g)", sz, i, got[i], want[i], d, tol)
			}
			if d := math.Abs(got[i] - g[i]); d > tol {
				t.Fatalf("%v: c[%d] = %v, gonum %v (|Δ| %g > %g)", sz, i, got[i], g[i], d, tol)
			}
		}
	}
}

func TestConvolveKnownAnswer(t *testing.T) {
	// (1 + 2x + 3x²)(4 + 5x) = 4 + 13x + 22x² + 15x³.
	got := Convolve(make([]float64, 4), []float64{1, 2, 3}, []float64{4, 5})
	want := []float64{4, 13, 22, 15}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("c = %v, want %v", got, want)
		}
	}
}

func TestConvolveEmpty(t *testing.T) {
	if got := Convolve(make([]float64, 3), nil, []float64{1, 2}); len(got) != 0 {
		t.Fatalf("empty operand gave %v", got)
	}
}

func TestConvolveDoesNotAllocate(t *testing.T) { kernels(t, testConvolveDoesNotAllocate) }

func testConvolveDoesNotAllocate(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a, b := randSeq(r, 1000), randSeq(r, 1000)
	dst := make([]float64, 1999)
	Convolve(dst, a, b) // build the plan
	if n := testing.AllocsPerRun(20, func() { Convolve(dst, a, b) }); n != 0 {
		t.Fatalf("Convolve allocates %v times per run", n)
	}
}

func BenchmarkConvolve1000(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	x, y := randSeq(r, 1000), randSeq(r, 1000)
	dst := make([]float64, 1999)
	b.ReportAllocs()
	for b.Loop() {
		Convolve(dst, x, y)
	}
}

func BenchmarkGonum1000(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	x, y := randSeq(r, 1000), randSeq(r, 1000)
	n := 2048
	f := fourier.NewFFT(n)
	pa := make([]float64, n)
	pb := make([]float64, n)
	ca := make([]complex128, n/2+1)
	cb := make([]complex128, n/2+1)
	out := make([]float64, n)
	b.ReportAllocs()
	for b.Loop() {
		copy(pa, x)
		copy(pb, y)
		f.Coefficients(ca, pa)
		f.Coefficients(cb, pb)
		for i := range ca {
			ca[i] *= cb[i]
		}
		f.Sequence(out, ca)
	}
}

// dft is the textbook O(n²) transform with sign ∓ for forward/inverse.
func dft(x []complex128, sign float64) []complex128 {
	n := len(x)
	out := make([]complex128, n)
	for k := range out {
		var s complex128
		for j, v := range x {
			sn, cs := math.Sincos(sign * 2 * math.Pi * float64(j*k%n) / float64(n))
			s += v * complex(cs, sn)
		}
		out[k] = s
	}
	return out
}

func TestTransformsMatchDFT(t *testing.T) { kernels(t, testTransformsMatchDFT) }

func testTransformsMatchDFT(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	for lg := 3; lg <= 11; lg++ {
		n := 1 << lg
		p := newPlan(n)
		for _, upperZero := range []bool{false, true} {
			x := make([]complex128, n)
			for i := range x {
				if !upperZero || i < n/2 {
					x[i] = complex(r.Float64()-0.5, r.Float64()-0.5)
				}
			}
			want := dft(x, -1)
			re, im := make([]float64, n), make([]float64, n)
			for i, v := range x {
				re[i], im[i] = real(v), imag(v)
			}
			if upperZero && useAVX2 && p.m >= minAsm {
				// The kernels must not read the upper half: poison it.
				for i := n / 2; i < n; i++ {
					re[i], im[i] = math.NaN(), math.NaN()
				}
			}
			p.forward(re, im, upperZero)
			rev := bitrev(n)
			for k := range want {
				got := complex(re[rev[k]], im[rev[k]])
				if d := cmplxAbs(got - want[k]); !(d <= 1e-12*float64(n)) {
					t.Fatalf("n=%d upperZero=%v forward: X[%d] = %v, want %v", n, upperZero, k, got, want[k])
				}
			}
		}
		// Inverse on m = n/2 points: bit-reversed in, natural out.
		m := p.m
		xm := make([]complex128, m)
		for i := range xm {
			xm[i] = complex(r.Float64()-0.5, r.Float64()-0.5)
		}
		wantI := dft(xm, +1)
		re, im := make([]float64, m), make([]float64, m)
		revM := bitrev(m)
		for k, v := range xm {
			re[revM[k]], im[revM[k]] = real(v), imag(v)
		}
		p.inverse(re, im)
		for j := range wantI {
			if d := cmplxAbs(complex(re[j], im[j]) - wantI[j]); !(d <= 1e-12*float64(m)) {
				t.Fatalf("m=%d inverse: x[%d] = %v, want %v", m, j, complex(re[j], im[j]), wantI[j])
			}
		}
	}
}

func TestMirrorPositions(t *testing.T) {
	// In bit-reversed order, frequency m−k sits at 3·2ʲ − 1 − r when k sits
	// at r ∈ [2ʲ, 2ʲ⁺¹): check against the bit reversal itself.
	for lg := 1; lg <= 13; lg++ {
		m := 1 << lg
		rev := bitrev(m)
		for lo := 1; lo < m; lo *= 2 {
			for r := lo; r < 2*lo; r++ {
				k := int(rev[r])
				if got, want := 3*lo-1-r, int(rev[m-k]); got != want {
					t.Fatalf("m=%d r=%d (k=%d): mirror %d, want %d", m, r, k, got, want)
				}
			}
		}
	}
}

func TestKernelsAgree(t *testing.T) {
	// The assembly and pure-Go passes compute the same sums in different
	// orders (and with fused multiply-adds): they agree to rounding.
	if !useAVX2 {
		t.Skip("no AVX2/FMA")
	}
	defer func() { useAVX2 = true }()
	r := rand.New(rand.NewPCG(12, 13))
	for _, sz := range [][2]int{{2, 3}, {5, 4}, {9, 9}, {17, 16}, {100, 300}, {1000, 1000}, {2048, 2049}, {4000, 4000}} {
		a, b := randSeq(r, sz[0]), randSeq(r, sz[1])
		l := len(a) + len(b) - 1
		useAVX2 = false
		want := Convolve(make([]float64, l), a, b)
		useAVX2 = true
		got := Convolve(make([]float64, l), a, b)
		for i := range want {
			if d := math.Abs(got[i] - want[i]); d > 1e-14*float64(min(sz[0], sz[1])) {
				t.Fatalf("%v: c[%d] = %v (assembly), %v (Go)", sz, i, got[i], want[i])
			}
		}
	}
}

func cmplxAbs(z complex128) float64 { return math.Hypot(real(z), imag(z)) }

func TestConvolveConcurrent(t *testing.T) {
	// Plans and buffers are shared: concurrent calls of mixed sizes must not
	// disturb each other (run with -race).
	r := rand.New(rand.NewPCG(10, 11))
	type job struct{ a, b, want []float64 }
	var jobs []job
	for _, n := range []int{3, 50, 300, 1000} {
		a, b := randSeq(r, n), randSeq(r, n+7)
		jobs = append(jobs, job{a, b, direct(a, b)})
	}
	done := make(chan error)
	for g := 0; g < 4; g++ {
		go func() {
			for it := 0; it < 20; it++ {
				j := jobs[(g+it)%len(jobs)]
				got := Convolve(make([]float64, len(j.want)), j.a, j.b)
				for i := range got {
					if math.Abs(got[i]-j.want[i]) > 1e-9 {
						done <- fmt.Errorf("goroutine %d: c[%d] = %v, want %v", g, i, got[i], j.want[i])
						return
					}
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func TestHalfSplit(t *testing.T) {
	// Known answer: v = (1, 3, −2, NaN, 4) clamps to (1, 3, 0, 0, 4) and
	// splits to (½, 2, 3/2, 0, 2), running sums (½, 5/2, 4, 4, 6).
	v := []float64{1, 3, -2, math.NaN(), 4}
	cum := make([]float64, len(v))
	if s := HalfSplit(v, cum); s != 6 {
		t.Errorf("total = %v, want 6", s)
	}
	wantV := []float64{0.5, 2, 1.5, 0, 2}
	wantC := []float64{0.5, 2.5, 4, 4, 6}
	for i := range v {
		if v[i] != wantV[i] || cum[i] != wantC[i] {
			t.Errorf("bin %d: v = %v, cum = %v, want %v, %v", i, v[i], cum[i], wantV[i], wantC[i])
		}
	}
}

func TestHalfSplitKernelAgrees(t *testing.T) {
	// The assembly kernel computes the same sums as the Go loop, in the same
	// order: the results are identical, bit for bit.
	if !useAVX2 {
		t.Skip("no AVX2/FMA")
	}
	defer func() { useAVX2 = true }()
	r := rand.New(rand.NewPCG(14, 15))
	for _, n := range []int{0, 1, 3, 4, 5, 8, 11, 64, 1001, 2000} {
		in := make([]float64, n)
		for i := range in {
			switch r.IntN(10) {
			case 0:
				in[i] = -r.Float64() * 1e-17
			case 1:
				in[i] = math.NaN()
			case 2:
				in[i] = math.Copysign(0, -1)
			default:
				in[i] = r.Float64()
			}
		}
		vGo, vAsm := append([]float64(nil), in...), append([]float64(nil), in...)
		cGo, cAsm := make([]float64, n), make([]float64, n)
		useAVX2 = false
		sGo := HalfSplit(vGo, cGo)
		useAVX2 = true
		sAsm := HalfSplit(vAsm, cAsm)
		if math.Float64bits(sGo) != math.Float64bits(sAsm) {
			t.Fatalf("n=%d: total %v (assembly), %v (Go)", n, sAsm, sGo)
		}
		for i := range in {
			if math.Float64bits(vGo[i]) != math.Float64bits(vAsm[i]) || math.Float64bits(cGo[i]) != math.Float64bits(cAsm[i]) {
				t.Fatalf("n=%d bin %d: v = %v, cum = %v (assembly); %v, %v (Go)", n, i, vAsm[i], cAsm[i], vGo[i], cGo[i])
			}
			if i > 0 && cAsm[i] < cAsm[i-1] {
				t.Fatalf("n=%d: cum decreases at %d", n, i)
			}
		}
	}
}

func TestConvolveSplit(t *testing.T) {
	// ConvolveSplit is Convolve followed by HalfSplit of c with a zero
	// appended, on both the assembly and the pure-Go path.
	saved := useAVX2
	defer func() { useAVX2 = saved }()
	r := rand.New(rand.NewPCG(16, 17))
	for _, asm := range []bool{false, saved} {
		useAVX2 = asm
		for _, sz := range [][2]int{{1, 1}, {2, 3}, {5, 4}, {9, 9}, {100, 300}, {1000, 1000}, {2048, 2049}} {
			a, b := randSeq(r, sz[0]), randSeq(r, sz[1])
			l := len(a) + len(b) - 1
			want := append(direct(a, b), 0)
			wantCum := make([]float64, l+1)
			wantS := HalfSplit(want, wantCum)
			got, cum := make([]float64, l+1), make([]float64, l+1)
			s := ConvolveSplit(got, cum, a, b)
			if math.Abs(s-wantS) > 1e-9 {
				t.Fatalf("asm=%v %v: total %v, want %v", asm, sz, s, wantS)
			}
			for i := range want {
				if math.Abs(got[i]-want[i]) > 1e-9 || math.Abs(cum[i]-wantCum[i]) > 1e-9 {
					t.Fatalf("asm=%v %v bin %d: %v, cum %v; want %v, %v", asm, sz, i, got[i], cum[i], want[i], wantCum[i])
				}
			}
		}
	}
	if s := ConvolveSplit(nil, nil, nil, []float64{1}); s != 0 {
		t.Errorf("empty operand: total %v, want 0", s)
	}
}
