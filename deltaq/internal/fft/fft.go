// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package fft computes linear convolutions of real sequences with a
// power-of-two fast Fourier transform tuned for that one job.
//
// Both real operands are packed into one complex sequence z = a + i·b and
// transformed once (radix-2² decimation in frequency, preceded by one
// radix-2 pass when log₂ n is odd; natural order in, bit-reversed order
// out, so no reordering pass is needed). The spectra of a and b are
// separated with the Hermitian symmetry of real sequences,
//
//	A_k = (Z_k + conj Z_{n−k})/2,   B_k = (Z_k − conj Z_{n−k})/(2i),
//
// so their product is P_k = −i/4·(Z_k² − conj(Z_{n−k})²). The real
// convolution c = IDFT_n(P) is recovered with a half-length complex inverse
// transform (radix-2² decimation in time, followed by one radix-2 pass when
// log₂ m is odd; bit-reversed order in, natural order out) of
// Y_k = E_k + i·O_k, where
//
//	E_k = (P_k + conj P_{m−k})/2,   O_k = (P_k − conj P_{m−k})/2 · e^{2πik/n}
//
// are the spectra of the even and odd samples of c, whose inverse gives
// c_{2j} + i·c_{2j+1}. The cost is one n-point and one m = n/2-point
// complex transform. In bit-reversed order the mirrored frequencies k and
// m − k sit at mirrored positions of each octave: position r ∈ [2ʲ, 2ʲ⁺¹)
// pairs with 3·2ʲ − 1 − r, so the spectra are combined in two sequential
// streams per octave. Twiddle factors are computed once per size, each
// directly with sin and cos (no recurrence, so no accumulated error), and
// work buffers are pooled: a convolution allocates nothing once its size
// has been seen.
//
// The data are kept in split form, real and imaginary parts in separate
// arrays, so that a complex multiplication is two multiplications and two
// fused multiply-adds on four values at a time with no shuffling. On amd64
// processors with AVX2 and FMA (x86-64-v3) the passes, the combination of
// the spectra, the interleaving of the result and the half split of
// ConvolveSplit run as assembly kernels (kernels_amd64.s); the last two
// forward passes and the first two inverse passes (blocks of 16) are fused
// into one kernel that transposes 4 × 4 blocks in registers, and once the
// forward transform is down to blocks of 1024 points each block goes
// through all its remaining passes while it is in the first-level cache.
// A 1000 × 1000 convolution takes about 10 µs this way on a 2-core AMD
// EPYC, against about 35 µs with the pure-Go passes. The pure-Go
// passes are the fallback elsewhere, or everywhere when built with the
// purego tag, and below m = 16; the tests check both against each other,
// against a textbook DFT, against direct summation and against gonum's
// dsp/fourier.
package fft

import (
	"math"
	"math/bits"
	"sync"
	"unsafe"
)

// MinSize is the smallest transform size used; shorter convolutions are
// zero-padded to it.
const MinSize = 8

// minAsm is the smallest inverse size m = n/2 the assembly kernels handle
// (the fused kernels work on blocks of 16).
const minAsm = 16

// stage holds the twiddles of one pass over blocks of size s. A radix-2²
// pass has w1[j] = ω^j, w2[j] = ω^{2j}, w3[j] = ω^{3j} for j < s/4; a
// radix-2 pass has w1[j] = ω^j for j < s/2 (ω = e^{∓2πi/s}). tw holds the
// same values for the assembly kernels, per group of four j: the real
// parts of w1 for the four, their imaginary parts, then w2 and w3 alike
// (radix-2: w1 only).
type stage struct {
	s          int
	w1, w2, w3 []complex128
	tw         []float64
}

// plan is everything a convolution of transform size n needs.
type plan struct {
	n, m int // forward size n, inverse size m = n/2
	// fwd2 is the radix-2 DIF pass over all n points that starts the
	// forward transform when log₂ n is odd (nil otherwise); fwd are the
	// radix-2² DIF passes that follow, blocks of n or n/2 points down to 4.
	fwd2 *stage
	fwd  []stage
	// inv are the radix-2² DIT passes of the inverse, blocks of 4 up to m or
	// m/2 points; inv2 is the radix-2 pass over all m points that ends it
	// when log₂ m is odd (nil otherwise).
	inv  []stage
	inv2 *stage
	// post[r] = e^{+2πik/n} for k = bitrev_m(r).
	post []complex128
	// comb holds, for the assembly combine, per group of four pairs of
	// positions (r, r') of the octaves from 8 on, c·post[r] and −c·post[r']
	// (real parts, then imaginary parts, four lanes each, in the lane order
	// combLanes), c = 1/(8m) the constant factor.
	comb []float64
	bufs sync.Pool // *work
}

// combLanes is the order in which the combine kernel holds four
// consecutive pairs in its registers (what unpacking two registers of
// interleaved values gives).
var combLanes = [4]int{0, 2, 1, 3}

// work is a convolution's scratch space: the forward transform in re, im
// (n each) and the inverse in yre, yim (m each); the interleaved result
// c_{2j} + i·c_{2j+1} ends in re.
type work struct {
	re, im, yre, yim []float64
}

var (
	plansMu sync.Mutex
	plans   [32]*plan
)

// getPlan returns the cached plan of size n = 2^lg, building it on first use.
func getPlan(lg int) *plan {
	plansMu.Lock()
	p := plans[lg]
	if p == nil {
		p = newPlan(1 << lg)
		plans[lg] = p
	}
	plansMu.Unlock()
	return p
}

func newPlan(n int) *plan {
	m := n / 2
	p := &plan{n: n, m: m}
	// Base table e^{−2πik/n}.
	base := make([]complex128, n)
	for k := range base {
		s, c := math.Sincos(-2 * math.Pi * float64(k) / float64(n))
		base[k] = complex(c, s)
	}
	// Exact values at the quarter points, where sin/cos of a rounded angle
	// are off by an ulp.
	base[0] = 1
	base[n/4] = -1i
	base[n/2] = -1
	base[3*n/4] = 1i
	lgN := bits.TrailingZeros(uint(n))
	top := n
	if lgN%2 == 1 {
		st := makeStage(base, n, n, 2, false)
		p.fwd2 = &st
		top = n / 2
	}
	for s := top; s >= 4; s /= 4 {
		p.fwd = append(p.fwd, makeStage(base, n, s, 4, false))
	}
	lgM := lgN - 1
	top = m
	if lgM%2 == 1 {
		top = m / 2
	}
	// ω_s = e^{+2πi/s}: index k·(n/s) into the n-point base table.
	for s := 4; s <= top; s *= 4 {
		p.inv = append(p.inv, makeStage(base, n, s, 4, true))
	}
	if lgM%2 == 1 {
		st := makeStage(base, n, m, 2, true)
		p.inv2 = &st
	}
	revM := bitrev(m)
	p.post = make([]complex128, m)
	for r := range p.post {
		p.post[r] = conj(base[revM[r]])
	}
	c := 0.125 / float64(m)
	for lo := 8; lo < m; lo *= 2 {
		for i0 := 0; i0 < lo/2; i0 += 4 {
			var g [16]float64
			for l, i := range combLanes {
				w, w2 := p.post[lo+i0+i], p.post[2*lo-1-i0-i]
				g[l], g[4+l] = c*real(w), c*imag(w)
				g[8+l], g[12+l] = -c*real(w2), -c*imag(w2)
			}
			p.comb = append(p.comb, g[:]...)
		}
	}
	p.bufs.New = func() any {
		return &work{
			re: make([]float64, n), im: make([]float64, n),
			yre: make([]float64, m), yim: make([]float64, m),
		}
	}
	return p
}

// makeStage returns the twiddles of a radix-2² (radix 4) or radix-2 pass
// over blocks of s points of a transform whose base table of size n is
// base; inverse conjugates them.
func makeStage(base []complex128, n, s, radix int, inverse bool) stage {
	q := s / radix
	st := stage{s: s, w1: make([]complex128, q)}
	if radix == 4 {
		st.w2, st.w3 = make([]complex128, q), make([]complex128, q)
	}
	stride := n / s
	tw := func(k int) complex128 {
		w := base[(k*stride)%n]
		if inverse {
			w = conj(w)
		}
		return w
	}
	for j := 0; j < q; j++ {
		st.w1[j] = tw(j)
		if radix == 4 {
			st.w2[j], st.w3[j] = tw(2*j), tw(3*j)
		}
	}
	if q >= 4 {
		ws := [][]complex128{st.w1, st.w2, st.w3}[:radix-1]
		for g := 0; g < q; g += 4 {
			for _, w := range ws {
				for l := 0; l < 4; l++ {
					st.tw = append(st.tw, real(w[g+l]))
				}
				for l := 0; l < 4; l++ {
					st.tw = append(st.tw, imag(w[g+l]))
				}
			}
		}
	}
	return st
}

func bitrev(n int) []int32 {
	lg := bits.TrailingZeros(uint(n))
	r := make([]int32, n)
	for i := range r {
		r[i] = int32(bits.Reverse64(uint64(i)) >> (64 - lg))
	}
	return r
}

func conj(z complex128) complex128 { return complex(real(z), -imag(z)) }

// prod returns −i·(x² − conj(y)²) = −i·(x − conj y)·(x + conj y):
// 4·A_k·B_k for x = Z_k, y = Z_{n−k}.
func prod(x, y complex128) complex128 {
	y = conj(y)
	d := (x - y) * (x + y)
	return complex(imag(d), -real(d))
}

// fold returns c·((x + conj y) + i·(x − conj y)·w): c·2·Y_k for x = P_k,
// y = P_{m−k}, w = e^{2πik/n}.
func fold(x, y, w complex128, c float64) complex128 {
	y = conj(y)
	v := (x + y) + mulI((x-y)*w)
	return complex(real(v)*c, imag(v)*c)
}

// mulI returns i·z.
func mulI(z complex128) complex128 { return complex(-imag(z), real(z)) }

// Accelerated reports whether the assembly kernels are in use.
func Accelerated() bool { return useAVX2 }

// Size returns the transform size used for a linear convolution of length
// l = len(a) + len(b) − 1: the smallest power of two ≥ max(l, MinSize).
func Size(l int) int {
	n := MinSize
	for n < l {
		n *= 2
	}
	return n
}

// Convolve writes the linear convolution c_k = Σ_i a_i·b_{k−i},
// k = 0 … len(a)+len(b)−2, into dst[:len(a)+len(b)−1] and returns that
// slice. dst must have room for it. The result matches direct summation to
// within a few ulps of Σ|a|·Σ|b| per entry. Empty operands give an empty
// result. Convolve is safe for concurrent use.
func Convolve(dst, a, b []float64) []float64 {
	if len(a) == 0 || len(b) == 0 {
		return dst[:0]
	}
	l := len(a) + len(b) - 1
	dst = dst[:l]
	p, w := transform(a, b)
	copy(dst, w.re[:l])
	p.bufs.Put(w)
	return dst
}

// ConvolveSplit computes the linear convolution c of a and b as Convolve
// does and writes its half split, HalfSplit of the l + 1 values
// c_0, …, c_{l−1}, 0 (l = len(a)+len(b)−1), into dst[:l+1] and the running
// sums into cum[:l+1], without an intermediate copy of c. It returns the
// total. dst and cum must have room for l + 1 values; empty operands
// write nothing and give 0.
func ConvolveSplit(dst, cum, a, b []float64) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	l := len(a) + len(b) - 1
	dst, cum = dst[:l+1], cum[:l+1]
	p, w := transform(a, b)
	s, prev := splitInto(dst[:l], w.re[:l], cum[:l])
	h := 0.5 * prev
	dst[l] = h
	s += h
	cum[l] = s
	p.bufs.Put(w)
	return s
}

// transform computes the convolution of a and b (both non-empty) into the
// work buffer w.re of the plan p it returns, c_k at w.re[k] for
// k < len(a)+len(b)−1; the caller puts w back into p.bufs when done with it.
func transform(a, b []float64) (*plan, *work) {
	l := len(a) + len(b) - 1
	n := Size(l)
	p := getPlan(bits.TrailingZeros(uint(n)))
	w := p.bufs.Get().(*work)
	re, im := w.re[:n], w.im[:n]
	// z = a + i·b, zero-padded.
	copy(re, a)
	copy(im, b)
	asm := useAVX2 && p.m >= minAsm
	// With the assembly kernels the first pass knows when the upper half
	// is zero and never reads it.
	upperZero := asm && max(len(a), len(b)) <= n/2
	end := n
	if upperZero {
		end = n / 2
	}
	clear(re[len(a):end])
	clear(im[len(b):end])

	y, yi := w.yre[:p.m], w.yim[:p.m]
	p.forward(re, im, upperZero)
	p.combine(re, im, y, yi)
	p.inverse(y, yi)
	// c_{2j} + i·c_{2j+1} = y_j: interleave into re.
	if asm {
		packAVX((*complex128)(unsafe.Pointer(&re[0])), &y[0], &yi[0], p.m)
	} else {
		for j := range y {
			re[2*j], re[2*j+1] = y[j], yi[j]
		}
	}
	return p, w
}

// forward is the in-place forward transform X_k = Σ_j x_j e^{−2πijk/n} of
// x = re + i·im, natural order in, bit-reversed order out. upperZero
// promises that the upper half of x is zero; without the assembly kernels
// that half must also be cleared.
func (p *plan) forward(re, im []float64, upperZero bool) {
	if useAVX2 && p.m >= minAsm {
		p.forwardAsm(re, im, upperZero)
	} else {
		p.forwardGo(re, im)
	}
}

// inverse is the in-place unnormalised inverse transform
// x_j = Σ_k X_k e^{+2πijk/m} of re + i·im, bit-reversed order in, natural
// order out.
func (p *plan) inverse(re, im []float64) {
	if useAVX2 && p.m >= minAsm {
		p.inverseAsm(re, im)
	} else {
		p.inverseGo(re, im)
	}
}

// combine is combineLow over all positions, the octaves from 8 on with
// the assembly kernel where it applies.
func (p *plan) combine(re, im, y, yi []float64) {
	if useAVX2 && p.m >= minAsm {
		p.combineLow(re, im, y, yi, 8)
		combineAVX(&re[0], &im[0], &y[0], &yi[0], p.m, &p.comb[0], 0.125/float64(p.m))
		return
	}
	p.combineLow(re, im, y, yi, p.m)
}

// combineLow turns the packed spectrum re + i·im into the input y + i·yi
// of the half-length inverse for the positions r < end (a power of two, at
// most m). The spectrum Z is in bit-reversed order: with r = bitrev_m(k)
// for k < m, Z_k sits at position 2r and Z_{m+k} at 2r+1. combineLow
// separates the spectra and multiplies them,
// P_k = −i/4·(Z_k² − conj(Z_{n−k})²), two mirrored frequencies k and m−k
// at a time, and folds the product's spectrum into y, also bit-reversed:
//
//	Y_k = ½·(P_k + conj P_{m−k}) + ½·i·(P_k − conj P_{m−k})·e^{2πik/n}.
//
// Frequency m−k sits at position r' = 3·2ʲ − 1 − r when r ∈ [2ʲ, 2ʲ⁺¹)
// (k and m−k have the same lowest set bit and complementary bits above it);
// k = 0 pairs with m, at position 1. The constant factors (¼, ½ and the
// inverse's 1/m) are applied once, in c. combineAVX does the octaves from
// 8 on, four pairs at a time.
func (p *plan) combineLow(re, im, y, yi []float64, end int) {
	m := p.m
	y, yi = y[:m], yi[:m]
	re, im = re[:2*m], im[:2*m]
	post := p.post[:m]
	c := 0.125 / float64(m)
	z := func(i int) complex128 { return complex(re[i], im[i]) }
	set := func(r int, v complex128) { y[r], yi[r] = real(v), imag(v) }
	// k = 0 pairs with m: Z_0 and Z_m are their own mirrors.
	p0, pm := prod(z(0), z(0)), prod(z(1), z(1))
	set(0, fold(p0, pm, post[0], c))
	for lo := 1; lo < end; lo *= 2 {
		for r := lo; r < lo+max(lo/2, 1); r++ {
			r2 := 3*lo - 1 - r
			pk := prod(z(2*r), z(2*r2+1)) // Z_k, Z_{n−k}
			pr := prod(z(2*r2), z(2*r+1)) // Z_{m−k}, Z_{m+k}
			set(r, fold(pk, pr, post[r], c))
			set(r2, fold(pr, pk, post[r2], c))
		}
	}
}

// forwardAsm is the forward transform with the assembly kernels (m ≥ 16):
// X_k = Σ_j x_j e^{−2πijk/n} in place, natural order in, bit-reversed order
// out. upperZero promises that the upper half of x is zero (it need not be
// cleared).
func (p *plan) forwardAsm(re, im []float64, upperZero bool) {
	n := p.n
	first := true
	if st := p.fwd2; st != nil {
		if upperZero {
			dif2zAVX(&re[0], &im[0], n, &st.tw[0])
		} else {
			dif2AVX(&re[0], &im[0], n, &st.tw[0])
		}
		first = false
	}
	// Passes over blocks larger than blockL run over all of x; from the
	// first pass over blocks of at most blockL points on, the blocks are
	// independent and each gets all the remaining passes in turn, while it
	// is in the first-level cache.
	k := len(p.fwd)
	si := 0
	for ; si < k-2 && p.fwd[si].s > blockL; si++ {
		st := &p.fwd[si]
		if first && upperZero {
			dif4zAVX(&re[0], &im[0], n, &st.tw[0])
		} else {
			dif4AVX(&re[0], &im[0], n, st.s, &st.tw[0])
		}
		first = false
	}
	b := p.fwd[si].s
	for off := 0; off < n; off += b {
		r, i := &re[off], &im[off]
		for sj := si; sj < k-2; sj++ {
			st := &p.fwd[sj]
			if first && upperZero {
				dif4zAVX(r, i, b, &st.tw[0]) // b = n: one block
			} else {
				dif4AVX(r, i, b, st.s, &st.tw[0])
			}
			first = false
		}
		// The passes over blocks of 16 and 4, fused.
		dif16AVX(r, i, b, &p.fwd[k-2].tw[0])
	}
}

// blockL is the largest block (in points) whose passes forwardAsm runs
// one block at a time: 1024 points are 16 KB, half a first-level cache.
const blockL = 1024

// inverseAsm is the unnormalised inverse transform with the assembly
// kernels (m ≥ 16): x_j = Σ_k X_k e^{+2πijk/m} in place, bit-reversed order
// in, natural order out.
func (p *plan) inverseAsm(re, im []float64) {
	m := p.m
	// The passes over blocks of 4 and 16, fused.
	dit16AVX(&re[0], &im[0], m, &p.inv[1].tw[0])
	for si := 2; si < len(p.inv); si++ {
		st := &p.inv[si]
		dit4AVX(&re[0], &im[0], m, st.s, &st.tw[0])
	}
	if st := p.inv2; st != nil {
		dit2AVX(&re[0], &im[0], m, &st.tw[0])
	}
}

// forwardGo is forwardAsm in Go, for any n ≥ 8, the upper half cleared.
func (p *plan) forwardGo(re, im []float64) {
	re, im = re[:p.n], im[:p.n]
	if st := p.fwd2; st != nil {
		st.pass2(re, im, false)
	}
	last := len(p.fwd) - 1
	for si := range p.fwd[:last] {
		p.fwd[si].pass4(re, im, false)
	}
	// The last pass, blocks of four with unit twiddles.
	pass4Unit(re, im, false)
}

// inverseGo is inverseAsm in Go, for any m ≥ 4.
func (p *plan) inverseGo(re, im []float64) {
	re, im = re[:p.m], im[:p.m]
	// The first pass, blocks of four with unit twiddles.
	pass4Unit(re, im, true)
	for si := 1; si < len(p.inv); si++ {
		p.inv[si].pass4(re, im, true)
	}
	if st := p.inv2; st != nil {
		st.pass2(re, im, true)
	}
}

// pass4Unit is the radix-2² pass over blocks of four points, whose
// twiddles are all 1: the forward one ends the decimation in frequency
// (natural order in, bit-reversed out), the inverse one starts the
// decimation in time (bit-reversed in, natural out).
func pass4Unit(re, im []float64, inverse bool) {
	for b := 0; b+3 < len(re); b += 4 {
		r, i := re[b:b+4:b+4], im[b:b+4:b+4]
		a0, a1 := complex(r[0], i[0]), complex(r[1], i[1])
		a2, a3 := complex(r[2], i[2]), complex(r[3], i[3])
		var y0, y1, y2, y3 complex128
		if inverse {
			t0, t1 := a0+a1, a0-a1
			t2, t3 := a2+a3, a2-a3
			y0, y2 = t0+t2, t0-t2
			y1, y3 = t1+mulI(t3), t1-mulI(t3)
		} else {
			s02, d02 := a0+a2, a0-a2
			s13, d13 := a1+a3, a1-a3
			y0, y1 = s02+s13, s02-s13
			y2, y3 = d02-mulI(d13), d02+mulI(d13)
		}
		r[0], i[0], r[1], i[1] = real(y0), imag(y0), real(y1), imag(y1)
		r[2], i[2], r[3], i[3] = real(y2), imag(y2), real(y3), imag(y3)
	}
}

// pass2 is the radix-2 pass of st over all of re and im: decimation in
// frequency for the forward transform, in time for the inverse.
func (st *stage) pass2(re, im []float64, inverse bool) {
	q := len(re) / 2
	x0r, x0i, x1r, x1i := re[:q], im[:q], re[q:2*q], im[q:2*q]
	x0i, x1r, x1i = x0i[:len(x0r)], x1r[:len(x0r)], x1i[:len(x0r)]
	w := st.w1[:len(x0r)]
	if inverse {
		for j := range x0r {
			a0 := complex(x0r[j], x0i[j])
			a1 := complex(x1r[j], x1i[j]) * w[j]
			y0, y1 := a0+a1, a0-a1
			x0r[j], x0i[j] = real(y0), imag(y0)
			x1r[j], x1i[j] = real(y1), imag(y1)
		}
		return
	}
	for j := range x0r {
		a0 := complex(x0r[j], x0i[j])
		a1 := complex(x1r[j], x1i[j])
		y0, y1 := a0+a1, (a0-a1)*w[j]
		x0r[j], x0i[j] = real(y0), imag(y0)
		x1r[j], x1i[j] = real(y1), imag(y1)
	}
}

// pass4 is the radix-2² pass of st over the blocks of st.s points of re
// and im: decimation in frequency for the forward transform (butterfly,
// then twiddles), in time for the inverse (twiddles, then butterfly).
func (st *stage) pass4(re, im []float64, inverse bool) {
	s, q := st.s, st.s/4
	for b := 0; b < len(re); b += s {
		x0r, x0i := re[b:b+q], im[b:b+q]
		x1r, x1i := re[b+q:b+2*q], im[b+q:b+2*q]
		x2r, x2i := re[b+2*q:b+3*q], im[b+2*q:b+3*q]
		x3r, x3i := re[b+3*q:b+4*q], im[b+3*q:b+4*q]
		n := len(x0r)
		x0i, x1r, x1i, x2r, x2i, x3r, x3i = x0i[:n], x1r[:n], x1i[:n], x2r[:n], x2i[:n], x3r[:n], x3i[:n]
		w1, w2, w3 := st.w1[:n], st.w2[:n], st.w3[:n]
		if inverse {
			for j := range x0r {
				p0 := complex(x0r[j], x0i[j])
				p1 := complex(x1r[j], x1i[j]) * w2[j]
				p2 := complex(x2r[j], x2i[j]) * w1[j]
				p3 := complex(x3r[j], x3i[j]) * w3[j]
				t0, t1 := p0+p1, p0-p1
				t2, t3 := p2+p3, p2-p3
				y0, y2 := t0+t2, t0-t2
				y1, y3 := t1+mulI(t3), t1-mulI(t3)
				x0r[j], x0i[j] = real(y0), imag(y0)
				x1r[j], x1i[j] = real(y1), imag(y1)
				x2r[j], x2i[j] = real(y2), imag(y2)
				x3r[j], x3i[j] = real(y3), imag(y3)
			}
			continue
		}
		for j := range x0r {
			a0, a1 := complex(x0r[j], x0i[j]), complex(x1r[j], x1i[j])
			a2, a3 := complex(x2r[j], x2i[j]), complex(x3r[j], x3i[j])
			s02, d02 := a0+a2, a0-a2
			s13, d13 := a1+a3, a1-a3
			y0 := s02 + s13
			y1 := (s02 - s13) * w2[j]
			y2 := (d02 - mulI(d13)) * w1[j]
			y3 := (d02 + mulI(d13)) * w3[j]
			x0r[j], x0i[j] = real(y0), imag(y0)
			x1r[j], x1i[j] = real(y1), imag(y1)
			x2r[j], x2i[j] = real(y2), imag(y2)
			x3r[j], x3i[j] = real(y3), imag(y3)
		}
	}
}

// HalfSplit replaces v[k] by ½(v[k] + v[k−1]) (v[−1] = 0), negatives and
// NaNs clamped to zero first, writes the running sum to cum (which must be
// at least as long as v) and returns the total. Four bins at a time are
// added to the running sum as s + ((h₀ + h₁) + (h₂ + h₃)), with the partial
// sums s + h₀, s + (h₀ + h₁) and s + ((h₀ + h₁) + h₂) in between, so that the
// loop is not bound by the latency of one long chain of additions; with
// every h ≥ 0 the sums stay non-decreasing. The assembly kernel computes the
// very same sums, so both paths give identical results.
func HalfSplit(v, cum []float64) float64 {
	s, _ := splitInto(v, v, cum)
	return s
}

// splitInto is HalfSplit reading src and writing the split values to dst
// (src and dst the same slice or not overlapping, both at least as long as
// src, and cum too); it returns the total and the last clamped input.
func splitInto(dst, src, cum []float64) (s, prev float64) {
	dst, cum = dst[:len(src)], cum[:len(src)]
	k := 0
	if useAVX2 && len(src) >= 4 {
		k = len(src) &^ 3
		s, prev = halfSplitAVX(&dst[0], &src[0], &cum[0], k)
	}
	for ; k+3 < len(src); k += 4 {
		c0, c1, c2, c3 := pos(src[k]), pos(src[k+1]), pos(src[k+2]), pos(src[k+3])
		h0, h1, h2, h3 := 0.5*(c0+prev), 0.5*(c1+c0), 0.5*(c2+c1), 0.5*(c3+c2)
		dst[k], dst[k+1], dst[k+2], dst[k+3] = h0, h1, h2, h3
		h01 := h0 + h1
		cum[k] = s + h0
		cum[k+1] = s + h01
		cum[k+2] = s + (h01 + h2)
		s += h01 + (h2 + h3)
		cum[k+3] = s
		prev = c3
	}
	for ; k < len(src); k++ {
		cur := pos(src[k])
		h := 0.5 * (cur + prev)
		dst[k] = h
		s += h
		cum[k] = s
		prev = cur
	}
	return s, prev
}

// pos returns x if it is positive, else 0 (NaN included).
func pos(x float64) float64 {
	if x > 0 {
		return x
	}
	return 0
}
