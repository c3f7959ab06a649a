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

// TestCurveSizes checks the size bound the builder gives the splitter: a
// deltaq.cdf point's encoded size (pointSize) is pdata's, for a probe
// with and without services and for a what-if series, and a window's
// bound is its size up to the length prefixes' growth and the shells of
// the metrics left without points (removed after the bound is taken).
func TestCurveSizes(t *testing.T) {
	var sz pmetric.ProtoMarshaler
	e := &edges{idx: []int{0, 1}, labels: []string{"0.001", "0.25"}}
	for _, cv := range []cdfCurve{
		{id: probeID{name: "p"}, series: contract.SeriesObserved, e: e},
		{id: probeID{name: "checkout", service: "cart,web"}, series: contract.SeriesUpper, e: e},
		{id: probeID{name: "p"}, series: contract.SeriesWhatIf, scenario: "faster", e: e},
	} {
		dps := pmetric.NewNumberDataPointSlice()
		buildPoints(dps, []cdfCurve{cv}, []float64{0, 0.5}, 1)
		for j, dp := range dps.All() {
			assert.Equal(t, sz.NumberDataPointSize(dp), pointSize(cv.id, cv.series, cv.scenario)+attrSize(contract.AttrLE, e.labels[j]), "%+v", cv)
		}
	}

	r := largeResult(t, testConfig(), 100, 1000)
	b := newBuilder(DefaultCDFPoints, 0, exporterScope, "test", t0)
	b.measure = true
	md := b.metrics(r)
	require.Equal(t, md, b.split.hint.md)
	size := sz.MetricsSize(md)
	assert.GreaterOrEqual(t, b.split.hint.bound, size)
	assert.LessOrEqual(t, b.split.hint.bound, size+16+4096)
}

// BenchmarkWindowOutput measures building one window's OTLP metrics (100
// probes of 1000 bins, their observed curves at the default cdf_points),
// the analysis not timed: with the deltaq.cdf points built by this
// goroutine alone (parts=1) and by up to GOMAXPROCS (parts=max). It
// reports the process's CPU time besides the wall-clock time.
func BenchmarkWindowOutput(b *testing.B) {
	r := largeResult(b, testConfig(), 100, 1000)
	for _, parts := range []int{1, 0} {
		name := "parts=1"
		if parts == 0 {
			name = "parts=max"
		}
		b.Run(name, func(b *testing.B) {
			build := newBuilder(DefaultCDFPoints, 0, exporterScope, "bench", t0)
			build.cdf.parts = parts
			build.measure = true
			b.ReportAllocs()
			c0 := processCPU()
			for b.Loop() {
				build.split.metrics(build.metrics(r), DefaultMaxRequestBytes, func(pmetric.Metrics) {})
			}
			b.ReportMetric(float64((processCPU()-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
