// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package deltaq implements the ΔQ ("quality attenuation") algebra of ΔQSD.
//
// A ΔQ is an improper random variable over delay (thesis §2.1.2): a
// cumulative distribution F of the delay of an outcome whose limit
// F(∞) = 1 − f is below one, the missing mass f (the intangible mass) being
// the probability of failure or timeout. Delays are float64 seconds, but
// for the log-linear binning (LogLinear, LogLinearHistogram), whose edges
// and delays are int64 nanoseconds like the spans' timestamps it bins.
//
// # Representation
//
// A DeltaQ holds N ≥ 1 equal-width bins of width w > 0, bin i covering
// (i·w, (i+1)·w] (bin 0 also holds a delay of 0), so dMax = N·w (thesis
// §4.1.2, (4.1) and (5.3)). Bin i holds
// the probability mass pᵢ ≥ 0 with Σpᵢ ≤ 1; the intangible mass is
// 1 − Σpᵢ. The thesis parameterisation w = Δbase·2ⁿ with Δbase = 1 ms,
// n ∈ [−10, 10] and N ∈ [1, 1000] is available through ThesisWidth; any
// other width (for instance dMax/N, WidthFor) is accepted too.
//
// # Binning convention
//
// Bins are upper-inclusive, like OTLP and Prometheus histogram buckets
// (b₋, b]: a sample of delay d > 0 belongs to bin ⌈d/w⌉ − 1, a delay of 0 to
// bin 0, and a delay of exactly dMax to the last bin (a success, as the
// deltaq processor calls an instance whose duration is ≤ dMax); a delay
// beyond dMax is a timeout and adds to the intangible mass. A delay within a
// relative 1e-9 of a bin edge counts as on the edge, so that delays given as
// multiples of the width (5 ms on 1 ms bins, read from a millisecond clock)
// land in the bin they close despite rounding. The CDF at the edge (i+1)·w,
// Σ_{j≤i} pⱼ, is therefore exactly the fraction of instances with
// d ≤ (i+1)·w, the value of the bucket le = (i+1)·w. Point and Steps follow
// the same rule. The mass of a bin is taken as uniform over the bin, so the
// CDF is piecewise linear between bin edges:
//
//	F(t) = Σ_{j<i} pⱼ + pᵢ·(t − i·w)/w   for i·w ≤ t < (i+1)·w,
//	F(t) = Σⱼ pⱼ                          for t ≥ dMax.
//
// The representative delay of bin i is therefore its midpoint (i+½)·w.
// Sequential composition (convolution, thesis (2.1) and (5.4)) respects this:
// the discrete convolution cₖ = Σᵢ aᵢ·b_{k−i} collects the mass whose
// representative delays sum to (i+½)w + (j+½)w = (k+1)·w, which is the edge
// between output bins k and k+1, so that mass is shared equally between them:
//
//	(A ⊗ B)ₖ = ½·(cₖ + c_{k−1}),   k = 0 … N_A + N_B − 1.
//
// The result has N_A + N_B bins (it covers dMax_A + dMax_B), preserves the
// mean of the successful part exactly, and is not shifted by a bin: a point
// mass at 1.5 ms composed with itself on 1 ms bins puts half its mass in
// (2, 3] ms and half in (3, 4] ms, so its median is exactly 3 ms. The
// half split is exact for masses spread uniformly over their bins (the sum
// of two such uniforms is a triangle over two output bins, half in each).
// A delay on a bin edge is, like any delay, represented by the bin that
// holds it, the one the edge closes, so Point(2 ms) ⊗ Point(3 ms) on 1 ms
// bins (masses in (1, 2] and (2, 3] ms) puts half
// its mass in (3, 4] ms and half in (4, 5] ms, and F(5 ms) = 1 as for the
// exact sum; its median reads 4 ms, within the one bin of resolution
// (a continuous CDF that reaches 1 at 5 ms cannot have its median there).
// The tangible mass of a sequence is Σa·Σb, hence its intangible mass is
// 1 − (1 − f_A)(1 − f_B), with no special case.
//
// # Mixed shapes
//
// Operators between ΔQs of different widths first coarsen every operand to
// the coarsest width (Align, thesis §5.1.4), splitting a bin's mass between
// the new bins in proportion to their overlap, as the uniform-in-bin
// assumption implies. Refinement to a smaller width would invent information
// and is an error. Operators between ΔQs of different bin counts extend the
// shorter one with empty bins: its CDF stays flat beyond its dMax, the mass
// there being intangible.
//
// # Operators
//
// Sequential composition (Convolve, ConvolveDirect, ConvolveFFT),
// first-to-finish (FirstToFinish, (2.3)), all-to-finish (AllToFinish, (2.4)),
// probabilistic choice (Choice, (2.5)), scaling (Scale, (4.2)), arithmetic on
// ECDFs (AddECDF, SubECDF, MulECDF, (4.3)), rebinning (Rebin, Align, (5.10)),
// merging of observations (Merge), the what-if time transform a·X + b
// (TimeTransform), deconvolution (Deconvolve), the partial order (Compare,
// §2.1.4), quantitative timeliness agreements (QTA, §2.1.6 and §4.1.3, with
// QTA.RequiredSteps the curve a plot draws for one) and confidence bands
// over a window of ΔQs (Band, and RunningBand kept up to date as ΔQs come
// and go, §4.1.5 and §5.1.3, with the Student t band in place of the
// thesis's misprinted (5.9)).
//
// Every operator validates its input and returns an error rather than
// panicking or producing NaN; results are clamped so that a CDF stays
// non-decreasing within [0, 1].
//
// Works cited by short name ("the thesis, section 3.6", "the draft, section
// 5.6") are listed in the repository's docs/references.md; the architecture
// and the contracts are described in docs/design.md.
package deltaq
