// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/internal/contract"
)

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

// TestPointsSize checks that a curve's size taken at once (pointsSize) is
// the sum of its points' sizes, also where their lengths take one byte for
// some points and two for others (base + the labels' sizes around 128).
func TestPointsSize(t *testing.T) {
	b := newBuilder(DefaultCDFPoints, 0, exporterScope, "test", t0)
	for _, e := range []*edges{b.edgesOf(0.001, 1000), b.edgesOf(9.765625e-07, 4096), b.edgesOf(0.25, 3), b.edgesOf(0.001, 1)} {
		for base := range 16500 {
			want := 0
			for _, le := range e.labels {
				want += fieldCost(base + attrSize(contract.AttrLE, le))
			}
			if got := e.pointsSize(base); got != want {
				t.Fatalf("edges %v, base %d: size %d, want %d", e.labels, base, got, want)
			}
		}
	}
}

// BenchmarkWindowOutput measures building one window's OTLP metrics (100
// probes of 1000 bins, their observed curves at the default cdf_points)
// and handing them to the splitter under the default max_request_bytes,
// the analysis not timed. It reports the process's CPU time besides the
// wall-clock time.
func BenchmarkWindowOutput(b *testing.B) {
	r := largeResult(b, testConfig(), 100, 1000)
	build := newBuilder(DefaultCDFPoints, 0, exporterScope, "bench", t0)
	build.measure = true
	b.ReportAllocs()
	c0 := processCPU()
	for b.Loop() {
		build.split.metrics(build.metrics(r), DefaultMaxRequestBytes, func(pmetric.Metrics) {})
	}
	b.ReportMetric(float64((processCPU()-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// TestBandCurvesAtReportedEdges: the band, which the analysis keeps at the
// deltaq.cdf edges alone (analysis.Config.BandPoints), is reported at the
// observed curve's edges, each value at its own: after three identical
// windows of 40 instances its mean curve is the observed one, and its
// lower and upper curves, the windows not differing at all, are the 95 %
// Wilson score interval of the observed value over 3 × 40 instances
// (deltaq.ConfidenceBand; E. B. Wilson, "Probable inference, the law of
// succession, and statistical inference", JASA 22, 1927).
func TestBandCurvesAtReportedEdges(t *testing.T) {
	cfg := testConfig()
	cfg.CDFPoints = 7
	h := newHarness(t, cfg, at(time.Second))
	for w := range 3 {
		base := time.Duration(w) * time.Second
		for j := range 40 {
			h.consume(span{probe: "p", outcome: contract.Success, end: base + ms(float64(100+j)), delay: ms(float64(1 + 7*j%90)), dmax: ms(100), bins: 100})
		}
		h.obs.tick(at(base + 2*time.Second))
	}
	all := h.metrics.AllMetrics()
	curves := map[string]map[string]float64{} // series → le → value
	out := all[len(all)-1].ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for _, m := range out.All() {
		addCDFPoints(curves, m)
	}
	obs := curves[contract.SeriesObserved]
	require.Len(t, obs, 7, "every 15th of 100 edges and the last")
	assert.Equal(t, obs, curves[contract.SeriesMean], contract.SeriesMean)
	const n, z = 120, 1.959963984540054
	for le, p := range obs {
		c := (p + z*z/(2*n)) / (1 + z*z/n)
		h := z / (1 + z*z/n) * math.Sqrt(p*(1-p)/n+z*z/(4*n*n))
		assert.InDelta(t, max(c-h, 0), curves[contract.SeriesLower][le], 1e-12, "lower at %s", le)
		assert.InDelta(t, min(c+h, 1), curves[contract.SeriesUpper][le], 1e-12, "upper at %s", le)
	}
}

// addCDFPoints adds the points of m, if it is deltaq.cdf, to curves:
// series → le → value.
func addCDFPoints(curves map[string]map[string]float64, m pmetric.Metric) {
	if m.Name() != contract.MetricCDF {
		return
	}
	for _, dp := range m.Gauge().DataPoints().All() {
		series, _ := dp.Attributes().Get(contract.AttrSeries)
		le, _ := dp.Attributes().Get(contract.AttrLE)
		if curves[series.Str()] == nil {
			curves[series.Str()] = map[string]float64{}
		}
		curves[series.Str()][le.Str()] = dp.DoubleValue()
	}
}
