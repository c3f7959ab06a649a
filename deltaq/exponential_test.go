// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"math"
	"testing"
)

// TestExpIndex: bucket i of scale s is (base^i, base^(i+1)], base =
// 2^(2^−s) (OpenTelemetry metrics data model, "Exponential Histogram");
// the answers are worked by hand from that definition.
func TestExpIndex(t *testing.T) {
	for _, c := range []struct {
		v     float64
		scale int32
		want  int32
	}{
		{1, 0, -1},    // (0.5, 1]
		{2, 0, 0},     // (1, 2]
		{3, 0, 1},     // (2, 4]
		{0.75, 0, -1}, // (0.5, 1]
		{1.5, 1, 1},   // (√2, 2]
		{1.4, 1, 0},   // (1, √2]
		{1, -1, -1},   // base 4: (1/4, 1]
		{4, -1, 0},    // (1, 4]
		{5, -1, 1},    // (4, 16]
		{0.2, -1, -2}, // (1/16, 1/4]
		{0.001, 4, -160},
		{1.0 / 1024, 4, -161}, // 2^−10 exactly: the upper edge of bucket −10·16 − 1
	} {
		got := ExpIndex(c.v, c.scale)
		if got != c.want {
			t.Errorf("ExpIndex(%v, %d) = %d, want %d", c.v, c.scale, got, c.want)
		}
		base := math.Pow(2, math.Pow(2, -float64(c.scale)))
		lo, hi := math.Pow(base, float64(got)), math.Pow(base, float64(got+1))
		if c.v <= lo*(1-1e-12) || c.v > hi*(1+1e-12) {
			t.Errorf("%v not in (%v, %v]", c.v, lo, hi)
		}
	}
}
