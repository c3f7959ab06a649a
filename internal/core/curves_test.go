// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/internal/contract"
)

// TestCurvesInPartsAreTheSerialOutput checks that building a window's
// deltaq.cdf points in several parts, each by a goroutine of its own,
// gives the output of one builder point after point, to the byte.
func TestCurvesInPartsAreTheSerialOutput(t *testing.T) {
	r := largeResult(t, testConfig(), 100, 1000)
	var enc pmetric.ProtoMarshaler
	build := func(minPart, parts int) ([]byte, int) {
		b := newBuilder(DefaultCDFPoints, 0, exporterScope, "test", t0)
		b.cdf.minPart, b.cdf.parts = minPart, parts
		md := b.metrics(r)
		n := 0
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() == contract.MetricCDF {
				n = m.Gauge().DataPoints().Len()
			}
		})
		buf, err := enc.MarshalMetrics(md)
		require.NoError(t, err)
		return buf, n
	}
	serial, n := build(1<<30, 1)
	require.Greater(t, n, 3000, "deltaq.cdf points")
	for _, parts := range []int{2, 3, 7, 1000} {
		got, m := build(1, parts)
		assert.Equal(t, n, m, "%d parts", parts)
		assert.Equal(t, serial, got, "%d parts", parts)
	}
}
