// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"math"

	"github.com/deltaq-otel/deltaq/deltaq/internal/fft"
)

// Convolve returns the sequential composition A ⊗ B (thesis (2.1), (2.2)):
// the ΔQ of an outcome that starts B when A completes. With cₖ the discrete
// convolution Σᵢ aᵢ·b_{k−i} of the bin masses, output bin k holds
// ½·(cₖ + c_{k−1}) when both operands are Spread (docs/design.md, "The ΔQ
// value", derives why the half split keeps the result unshifted). When
// an operand's masses sit at edges (Placement) the sum is exact: a point at
// edge e plus a mass spread over bin j is spread over the bin j + e/w, and
// two points add their edges, so cₖ lands whole in one bin, k or k + 1 by
// the operands' placements, and Point(2 ms) ⊗ Point(3 ms) is Point(5 ms).
// The result has N_A + N_B bins of the common
// width (operands of different widths are coarsened to the coarser one
// first), tangible mass Σa·Σb and intangible mass 1 − (1 − f_A)(1 − f_B).
// A result of more than MaxBins bins is an error.
//
// Convolve computes only the span where both operands have mass, and picks
// direct summation or the FFT by an operation-count model calibrated on
// measurements (see useFFT); both give the same result to 1e-9.
func Convolve(a, b DeltaQ) (DeltaQ, error) {
	return convolve("Convolve", a, b, methodAuto)
}

// ConvolveDirect is Convolve computed by direct summation,
// O(N_A·N_B) (thesis (5.4)).
func ConvolveDirect(a, b DeltaQ) (DeltaQ, error) {
	return convolve("ConvolveDirect", a, b, methodDirect)
}

// ConvolveFFT is Convolve computed with a fast Fourier transform,
// O((N_A + N_B)·log(N_A + N_B)) (thesis §5.1.2).
func ConvolveFFT(a, b DeltaQ) (DeltaQ, error) {
	return convolve("ConvolveFFT", a, b, methodFFT)
}

type method int

const (
	methodAuto method = iota
	methodDirect
	methodFFT
)

// support returns the half-open index range [lo, hi) of the non-zero masses.
func support(p []float64) (lo, hi int) {
	hi = len(p)
	for hi > 0 && p[hi-1] == 0 {
		hi--
	}
	for lo < hi && p[lo] == 0 {
		lo++
	}
	return lo, hi
}

// Cost model of the two methods, per call, for supports of na and nb bins
// and the transform size n = Size(na + nb − 1):
//
//	direct ≈ directNS·na·nb,   fft ≈ fftNS·n·log₂n + fftFixedNS.
//
// The constants are fitted to BenchmarkConvolveCrossover (computing into a
// reused result buffer, so both columns include the clearing of the result
// and the half split they share), the fastest of five runs on the
// development machine (2-core AMD EPYC, Go 1.26, GOAMD64=v1, the
// transform's AVX2/FMA kernels in use). Direct summation ran at 0.36–0.46 ns
// per multiply-add on dense operands (more per multiply-add when one
// operand is a few bins long, where the per-bin work weighs in) and the
// transform at 0.42–0.53 ns per n·log₂n from n = 256 on, with about 100 ns
// more than that below:
//
//	  na × nb        n   direct     FFT
//	  16 × 16       32   0.22 µs   0.27 µs
//	  24 × 24       64   0.39 µs   0.38 µs
//	  32 × 32       64   0.55 µs   0.39 µs
//	  64 × 64      128   1.79 µs   0.63 µs
//	 128 × 128     256   6.84 µs   1.10 µs
//	1000 × 1000   2048    361 µs   9.45 µs
//	   8 × 1000   1024   4.42 µs   5.06 µs
//	  16 × 1000   1024   8.65 µs   5.27 µs
//	  64 × 1000   2048   25.9 µs   10.2 µs
//	   8 × 4000   4096   20.7 µs   24.7 µs
//	  16 × 4000   4096   31.4 µs   24.4 µs
//	  64 × 4000   4096    117 µs   25.9 µs
//	4000 × 4000   8192   6.50 ms   48.0 µs
//
// so dense operands cross over near 24 bins, and an operand of about ten
// bins keeps direct summation ahead against thousands. With these
// constants the model picks the faster method on every shape above (at
// 24 × 24 the two are within 2 %). Without AVX2 and FMA the pure-Go
// transform runs at about 1.65 ns per n·log₂n (fftGoNS, 1.6–1.9 measured
// the same way with -tags purego), crossing over near 64 bins.
const (
	directNS   = 0.40
	fftNS      = 0.46
	fftGoNS    = 1.65
	fftFixedNS = 100
)

// useFFT reports whether the FFT is expected to be faster than direct
// summation for supports of lengths na and nb.
func useFFT(na, nb int) bool {
	n := fft.Size(na + nb - 1)
	lg := 0
	for 1<<lg < n {
		lg++
	}
	direct := directNS * float64(na) * float64(nb)
	perNS := fftNS
	if !fft.Accelerated() {
		perNS = fftGoNS
	}
	ff := perNS*float64(n)*float64(lg) + fftFixedNS
	return ff < direct
}

func convolve(op string, a, b DeltaQ, m method) (DeltaQ, error) {
	return convolveInto(nil, op, a, b, m)
}

// convolveInto is convolve computing into buf when it has room for the
// result's 2·(N_A + N_B) values (the result then shares buf's storage),
// allocating otherwise. It lets benchmarks measure the arithmetic apart
// from the allocation of the result.
func convolveInto(buf []float64, op string, a, b DeltaQ, m method) (DeltaQ, error) {
	if err := a.valid(op, 0); err != nil {
		return DeltaQ{}, err
	}
	if err := b.valid(op, 1); err != nil {
		return DeltaQ{}, err
	}
	if !sameWidth(a.width, b.width) {
		ab, err := alignWidths(op, []DeltaQ{a, b})
		if err != nil {
			return DeltaQ{}, err
		}
		a, b = ab[0], ab[1]
	}
	bins := len(a.pdf) + len(b.pdf)
	if bins > MaxBins {
		return DeltaQ{}, &tooManyBins{op: op, a: len(a.pdf), b: len(b.pdf)}
	}
	if cap(buf) >= 2*bins {
		buf = buf[:2*bins]
		clear(buf)
	} else {
		buf = make([]float64, 2*bins)
	}
	out, cum := buf[:bins:bins], buf[bins:]
	alo, ahi := support(a.pdf)
	blo, bhi := support(b.pdf)
	cum = cum[:len(out)]
	s := 0.0
	if alo < ahi && blo < bhi {
		as, bs := a.pdf[alo:ahi], b.pdf[blo:bhi]
		// c occupies out[off : off+len(as)+len(bs)−1]; the half split
		// reaches one bin further, ahi+bhi−1 < bins.
		off := alo + blo
		end := off + len(as) + len(bs)
		// Half split ½(c[k] + c[k−1]), accumulating the CDF. Round-off of
		// the FFT can leave tiny negatives where the exact value is 0:
		// clamp them. The FFT path splits as it unpacks its result.
		useF := m == methodFFT || (m == methodAuto && useFFT(len(as), len(bs)))
		_, shift, exact := sumPlacement(a.at, b.at)
		switch {
		case exact:
			s = convolveExact(out, cum, as, bs, off+shift, useF)
		case useF:
			s = fft.ConvolveSplit(out[off:end], cum[off:end], as, bs)
		default:
			convolveDirect(out[off:end-1], as, bs)
			s = halfSplit(out[off:end], cum[off:end])
		}
		if !exact {
			for k := end; k < len(cum); k++ {
				cum[k] = s
			}
		}
		// The tangible mass is Σa·Σb; rounding keeps s within a few ulps of
		// it. Should it not (clamping removed more than rounding), rescale.
		if want := a.Tangible() * b.Tangible(); s > 0 && math.Abs(s-want) > 1e-13*want {
			r := want / s
			s = 0
			for i, x := range out {
				x *= r
				out[i] = x
				s += x
				cum[i] = s
			}
		}
		if s > 1 {
			// Only rounding: both operands' masses are at most one.
			for i := range cum {
				cum[i] = min(cum[i], 1)
			}
		}
	}
	at, _, _ := sumPlacement(a.at, b.at)
	return DeltaQ{width: a.width, pdf: out, cum: cum, at: at}, nil
}

// convolveExact writes the convolution cₖ of as and bs into out from index
// at on, whole in its bins (masses at edges, sumPlacement), and the running
// sums into cum, and returns the total.
func convolveExact(out, cum, as, bs []float64, at int, useF bool) float64 {
	dst := out[at : at+len(as)+len(bs)-1]
	if useF {
		fft.Convolve(dst, as, bs)
	} else {
		convolveDirect(dst, as, bs)
	}
	s := 0.0
	for k := range out {
		x := max(out[k], 0) // FFT round-off where the exact value is 0
		out[k] = x
		s += x
		cum[k] = s
	}
	return s
}

// sumPlacement returns where the masses of a sum of operands placed pa and
// pb lie, and, when the sum is exact (an operand at edges), the bin shift
// of cₖ = Σᵢ aᵢ·b_{k−i}: a mass at the lower edge of bin i is at i·w, at its
// upper edge at (i+1)·w, spread over it at i·w plus a uniform (0, w]. So
// two lower edges sum to bin k's lower edge, an upper and a lower edge to
// bin k's upper edge, two upper edges to bin k + 1's upper edge, and a
// spread mass plus a point at bin i's lower (upper) edge to bin k (k + 1)
// spread. Two spread masses have a triangular sum over two bins: not exact.
func sumPlacement(pa, pb Placement) (at Placement, shift int, exact bool) {
	ups := 0
	if pa == UpperEdges {
		ups++
	}
	if pb == UpperEdges {
		ups++
	}
	switch {
	case pa == Spread && pb == Spread:
		return Spread, 0, false
	case pa == Spread || pb == Spread:
		return Spread, ups, true
	case ups == 0:
		return LowerEdges, 0, true
	default:
		return UpperEdges, ups - 1, true
	}
}

// halfSplit replaces v[k] by ½(v[k] + v[k−1]) (v[−1] = 0), negatives
// clamped to zero first, writes the running sum to cum and returns the
// total (see fft.HalfSplit, which vectorises it where it can).
func halfSplit(v, cum []float64) float64 { return fft.HalfSplit(v, cum) }

// convolveDirect writes the discrete convolution of a and b into c
// (len(c) = len(a)+len(b)−1), skipping zero masses of a.
//
// The inner loop is unrolled by four (each c[k] still receives its terms
// in the same order, so the result is unchanged): at about one
// multiply-add per cycle, a one-at-a-time loop ran 1.7 times slower
// whenever the code layout put it across a 64-byte instruction-fetch
// boundary, which any edit of the surrounding code could do.
func convolveDirect(c, a, b []float64) {
	clear(c)
	for i, x := range a {
		if x == 0 {
			continue
		}
		dst := c[i : i+len(b)]
		dst = dst[:len(b)]
		j := 0
		for ; j+4 <= len(b); j += 4 {
			d := dst[j : j+4 : j+4]
			s := b[j : j+4 : j+4]
			d[0] += x * s[0]
			d[1] += x * s[1]
			d[2] += x * s[2]
			d[3] += x * s[3]
		}
		for ; j < len(b); j++ {
			dst[j] += x * b[j]
		}
	}
}
