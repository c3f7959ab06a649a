// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import "math"

// ExpIndex returns the index of the exponential bucket (base^i, base^(i+1)]
// that holds v > 0 at the given scale, base = 2^(2^−scale) (OpenTelemetry
// metrics data model, "Exponential Histogram"). An exact power of two is
// computed exactly from its exponent; other values through the logarithm.
// The exponential form of the deltaq.observed metric is cut at these
// buckets, and deltaq slo names the bucket around a QTA delay with it.
func ExpIndex(v float64, scale int32) int32 {
	frac, exp := math.Frexp(v) // v = frac·2^exp, frac in [0.5, 1)
	if frac == 0.5 {
		// v = 2^(exp−1) is the upper edge of bucket ((exp−1)<<scale) − 1.
		if scale >= 0 {
			return int32((exp-1)<<scale) - 1
		}
		return int32((exp - 2) >> -scale) // ⌈e/2^−scale⌉ − 1 = ⌊(e−1)/2^−scale⌋ for e = exp−1
	}
	if scale <= 0 {
		return int32((exp - 1) >> -scale)
	}
	return int32(math.Ceil(math.Log2(v)*math.Ldexp(1, int(scale)))) - 1
}
