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
// A DeltaQ holds N ≥ 1 bins of width w > 0 up to dMax = N·w (thesis §4.1.2,
// (4.1) and (5.3); ThesisWidth gives the thesis's widths, any other is
// accepted too). Bins are upper-inclusive like OTLP and Prometheus buckets:
// bin i holds the mass pᵢ ≥ 0 of the delays in (i·w, (i+1)·w], bin 0 also a
// delay of 0, the last bin a delay of exactly dMax; Σpᵢ ≤ 1. The mass of an
// observed bin is spread uniformly over it (Placement), so its CDF is
// linear between edges and exact at every edge:
//
//	F(t) = Σ_{j<i} pⱼ + pᵢ·(t − i·w)/w   for i·w ≤ t < (i+1)·w,
//	F(t) = Σⱼ pⱼ                          for t ≥ dMax.
//
// The operators: sequential composition (Convolve, (2.1)), first-to-finish
// (FirstToFinish, (2.3)), all-to-finish (AllToFinish, (2.4)), probabilistic
// choice (Choice, (2.5)), scaling (Scale, (4.2)), arithmetic on ECDFs
// (AddECDF, SubECDF, MulECDF, (4.3)), rebinning (Rebin, Align, (5.10)),
// merging (Merge), the what-if time transform a·X + b (TimeTransform),
// deconvolution (Deconvolve), the partial order (Compare, §2.1.4), QTAs
// (QTA, §2.1.6 and §4.1.3) and confidence bands over a window of ΔQs (Band,
// RunningBand, §4.1.5 and §5.1.3, with the Student t band in place of the
// thesis's misprinted (5.9), and a binomial floor, Wilson's score interval
// of the window's instances). Operands of different widths are first
// coarsened to the coarsest (Align, §5.1.4). Every operator validates its
// input and returns an error rather than panicking or producing NaN.
//
// docs/design.md, "The ΔQ value", gives the binning convention in full and
// derives why sequential composition splits each convolution term between
// two bins; works cited by short name ("the thesis, section 3.6") are
// listed in docs/references.md.
package deltaq
