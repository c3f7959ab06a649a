// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// TestVarintLen checks the varint lengths at their boundaries (protobuf
// encoding: 7 bits per byte, so 2⁷ − 1 is the largest 1-byte value, 2¹⁴ − 1
// the largest 2-byte one, …).
func TestVarintLen(t *testing.T) {
	for _, tc := range []struct{ x, n int }{
		{0, 1}, {127, 1}, {128, 2}, {1<<14 - 1, 2}, {1 << 14, 3}, {1<<21 - 1, 3}, {1 << 21, 4}, {3 << 20, 4}, {1 << 28, 5},
	} {
		assert.Equal(t, tc.n, varintLen(tc.x), "varintLen(%d)", tc.x)
	}
}

// splitInput is metrics with two resources, the first with two scopes, and
// one metric of every type; the points carry attributes of varied lengths,
// and every header field is set, so that a piece that loses one shows.
func splitInput(points int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	for r := range 2 {
		rm := md.ResourceMetrics().AppendEmpty()
		rm.SetSchemaUrl("https://example.com/resource")
		rm.Resource().Attributes().PutStr("service.name", fmt.Sprintf("svc-%d", r))
		for s := range 2 - r {
			sm := rm.ScopeMetrics().AppendEmpty()
			sm.SetSchemaUrl("https://example.com/scope")
			sm.Scope().SetName(fmt.Sprintf("scope-%d", s))
			sm.Scope().SetVersion("v1")

			g := sm.Metrics().AppendEmpty()
			g.SetName("g")
			g.SetUnit("1")
			g.SetDescription("a gauge")
			g.Metadata().PutStr("k", "v")
			gp := g.SetEmptyGauge().DataPoints()
			for i := range points {
				dp := gp.AppendEmpty()
				dp.SetTimestamp(pcommon.Timestamp(i))
				dp.SetDoubleValue(float64(i))
				dp.Attributes().PutStr(contract.AttrProbe, strings.Repeat("p", i%50))
				dp.Attributes().PutStr(contract.AttrLE, fmt.Sprint(i))
			}

			sum := sm.Metrics().AppendEmpty()
			sum.SetName("s")
			sd := sum.SetEmptySum()
			sd.SetIsMonotonic(true)
			sd.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			for i := range points / 2 {
				dp := sd.DataPoints().AppendEmpty()
				dp.SetIntValue(int64(i))
				dp.Attributes().PutStr(contract.AttrOutcome, fmt.Sprint("o", i))
			}

			h := sm.Metrics().AppendEmpty()
			h.SetName("h")
			hd := h.SetEmptyHistogram()
			hd.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
			for i := range points / 10 {
				dp := hd.DataPoints().AppendEmpty()
				dp.Attributes().PutStr(contract.AttrProbe, fmt.Sprint("h", i))
				bounds := make([]float64, 10+i%90)
				for j := range bounds {
					bounds[j] = float64(j)
				}
				dp.ExplicitBounds().FromRaw(bounds)
				dp.BucketCounts().FromRaw(make([]uint64, len(bounds)+1))
				dp.SetCount(uint64(i))
			}

			e := sm.Metrics().AppendEmpty()
			e.SetName("e")
			ed := e.SetEmptyExponentialHistogram()
			ed.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			for i := range 3 {
				dp := ed.DataPoints().AppendEmpty()
				dp.SetScale(int32(i))
				dp.Positive().BucketCounts().FromRaw([]uint64{1, 2, 3})
			}

			q := sm.Metrics().AppendEmpty()
			q.SetName("q")
			qd := q.SetEmptySummary()
			for i := range 3 {
				dp := qd.DataPoints().AppendEmpty()
				dp.SetCount(uint64(i))
				dp.QuantileValues().AppendEmpty().SetQuantile(0.5)
			}
		}
	}
	return md
}

// flatMetrics lists every data point of md as one line: its resource,
// scope, metric header and the point, each as OTLP JSON. Two outputs that
// carry the same points under the same headers, however they are cut into
// resources, scopes and metrics, give the same lines in the same order.
func flatMetrics(t *testing.T, mds ...pmetric.Metrics) []string {
	t.Helper()
	var out []string
	var jm pmetric.JSONMarshaler
	for _, md := range mds {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					for p := range dataPointCount(m) {
						one := pmetric.NewMetrics()
						orm := one.ResourceMetrics().AppendEmpty()
						rm.Resource().CopyTo(orm.Resource())
						orm.SetSchemaUrl(rm.SchemaUrl())
						osm := orm.ScopeMetrics().AppendEmpty()
						sm.Scope().CopyTo(osm.Scope())
						osm.SetSchemaUrl(sm.SchemaUrl())
						c := osm.Metrics().AppendEmpty()
						m.CopyTo(c)
						idx := 0
						keep := func() bool { idx++; return idx-1 != p }
						switch c.Type() {
						case pmetric.MetricTypeGauge:
							c.Gauge().DataPoints().RemoveIf(func(pmetric.NumberDataPoint) bool { return keep() })
						case pmetric.MetricTypeSum:
							c.Sum().DataPoints().RemoveIf(func(pmetric.NumberDataPoint) bool { return keep() })
						case pmetric.MetricTypeHistogram:
							c.Histogram().DataPoints().RemoveIf(func(pmetric.HistogramDataPoint) bool { return keep() })
						case pmetric.MetricTypeExponentialHistogram:
							c.ExponentialHistogram().DataPoints().RemoveIf(func(pmetric.ExponentialHistogramDataPoint) bool { return keep() })
						case pmetric.MetricTypeSummary:
							c.Summary().DataPoints().RemoveIf(func(pmetric.SummaryDataPoint) bool { return keep() })
						}
						b, err := jm.MarshalMetrics(one)
						require.NoError(t, err)
						out = append(out, string(b))
					}
				}
			}
		}
	}
	return out
}

// split runs the splitter and returns the pieces.
func splitAll(md pmetric.Metrics, limit int) (pieces []pmetric.Metrics, dropped int) {
	var s splitter
	dropped = s.metrics(md, limit, func(p pmetric.Metrics) { pieces = append(pieces, p) })
	return pieces, dropped
}

// TestSplitMetricsSmallIsOneRequest: output within the bound is passed on
// as it is, and so is any output when there is no bound.
func TestSplitMetricsSmallIsOneRequest(t *testing.T) {
	md := splitInput(20)
	size := (&pmetric.ProtoMarshaler{}).MetricsSize(md)
	for _, limit := range []int{size, 0} {
		pieces, dropped := splitAll(md, limit)
		require.Len(t, pieces, 1)
		assert.Zero(t, dropped)
		assert.Equal(t, md, pieces[0], "the very same metrics, not a copy")
	}
}

// TestSplitMetricsPiecesWithinBound cuts the same output at bounds from
// just above its largest point (a histogram point of about 2 KB) to just
// below its size: every piece is within the
// bound, the pieces together carry every point once, in order, under its
// own resource, scope and metric header, and nothing is dropped.
func TestSplitMetricsPiecesWithinBound(t *testing.T) {
	var sz pmetric.ProtoMarshaler
	total := sz.MetricsSize(splitInput(300))
	want := flatMetrics(t, splitInput(300))
	for _, limit := range []int{2500, 4096, 10_000, total / 3, total / 2, total - 1} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			pieces, dropped := splitAll(splitInput(300), limit)
			assert.Zero(t, dropped)
			assert.Greater(t, len(pieces), 1)
			for i, p := range pieces {
				size := sz.MetricsSize(p)
				assert.LessOrEqual(t, size, limit, "piece %d", i)
				assert.Positive(t, p.DataPointCount(), "piece %d is empty", i)
			}
			assert.Equal(t, want, flatMetrics(t, pieces...))
			// The bound is used, not merely respected: every piece but
			// the last is at least half full (a cut happens when the next
			// point, at most about 2 KB here, does not fit).
			for i, p := range pieces[:len(pieces)-1] {
				assert.Greater(t, sz.MetricsSize(p), limit/2, "piece %d", i)
			}
		})
	}
}

// TestSplitMetricsDropsOnlyTheOversizedPoint: one point with a 1 MB
// attribute (the deltaq.probe of the issue) cannot go in any 64 KiB
// request; it alone is dropped and counted, the points before and after it
// all arrive.
func TestSplitMetricsDropsOnlyTheOversizedPoint(t *testing.T) {
	build := func() pmetric.Metrics {
		md := splitInput(200)
		dps := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints()
		dps.At(100).Attributes().PutStr(contract.AttrProbe, strings.Repeat("x", 1<<20))
		return md
	}
	want := flatMetrics(t, build())
	want = append(want[:100], want[101:]...)
	const limit = 64 << 10
	pieces, dropped := splitAll(build(), limit)
	assert.Equal(t, 1, dropped)
	for i, p := range pieces {
		assert.LessOrEqual(t, (&pmetric.ProtoMarshaler{}).MetricsSize(p), limit, "piece %d", i)
	}
	assert.Equal(t, want, flatMetrics(t, pieces...))
}

// TestSplitMetricsEveryPointOversized: when no point fits, nothing is sent
// and every point is counted.
func TestSplitMetricsEveryPointOversized(t *testing.T) {
	md := splitInput(10)
	n := md.DataPointCount()
	pieces, dropped := splitAll(md, 40)
	assert.Empty(t, pieces)
	assert.Equal(t, n, dropped)
}

func splitLogsInput(records int) plog.Logs {
	ld := plog.NewLogs()
	for r := range 2 {
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("service.name", fmt.Sprint("svc-", r))
		for s := range 2 {
			sl := rl.ScopeLogs().AppendEmpty()
			sl.Scope().SetName(fmt.Sprint("scope-", s))
			for i := range records {
				lr := sl.LogRecords().AppendEmpty()
				lr.SetEventName(contract.EventSnapshot)
				lr.Attributes().PutInt(contract.AttrSnapshotID, int64(i))
				lr.Body().SetStr(strings.Repeat("b", 10+i%300))
			}
		}
	}
	return ld
}

func flatLogs(t *testing.T, lds ...plog.Logs) []string {
	t.Helper()
	var out []string
	var jm plog.JSONMarshaler
	for _, ld := range lds {
		rls := ld.ResourceLogs()
		for i := 0; i < rls.Len(); i++ {
			sls := rls.At(i).ScopeLogs()
			for j := 0; j < sls.Len(); j++ {
				recs := sls.At(j).LogRecords()
				for k := 0; k < recs.Len(); k++ {
					one := plog.NewLogs()
					rl := one.ResourceLogs().AppendEmpty()
					rls.At(i).Resource().CopyTo(rl.Resource())
					sl := rl.ScopeLogs().AppendEmpty()
					sls.At(j).Scope().CopyTo(sl.Scope())
					recs.At(k).CopyTo(sl.LogRecords().AppendEmpty())
					b, err := jm.MarshalLogs(one)
					require.NoError(t, err)
					out = append(out, string(b))
				}
			}
		}
	}
	return out
}

// TestSplitLogs: the same for log records, with one 1 MB record among them.
func TestSplitLogs(t *testing.T) {
	build := func() plog.Logs {
		ld := splitLogsInput(400)
		ld.ResourceLogs().At(1).ScopeLogs().At(0).LogRecords().At(7).Body().SetStr(strings.Repeat("x", 1<<20))
		return ld
	}
	want := flatLogs(t, build())
	want = append(want[:800+7], want[800+8:]...)
	var sz plog.ProtoMarshaler
	for _, limit := range []int{1000, 4096, 64 << 10, 512 << 10} {
		var s splitter
		var pieces []plog.Logs
		dropped := s.logs(build(), limit, func(ld plog.Logs) { pieces = append(pieces, ld) })
		assert.Equal(t, 1, dropped, "limit %d", limit)
		for i, p := range pieces {
			assert.LessOrEqual(t, sz.LogsSize(p), limit, "limit %d piece %d", limit, i)
			assert.Positive(t, p.LogRecordCount(), "limit %d piece %d is empty", limit, i)
		}
		assert.Equal(t, want, flatLogs(t, pieces...), "limit %d", limit)
	}

	small := splitLogsInput(3)
	var s splitter
	var pieces []plog.Logs
	assert.Zero(t, s.logs(small, sz.LogsSize(small), func(ld plog.Logs) { pieces = append(pieces, ld) }))
	require.Len(t, pieces, 1)
	assert.Equal(t, small, pieces[0])
}

// TestOversizedPointsAreCounted: with max_request_bytes below the size of
// one 1000-bin deltaq.observed point (1000 bounds and 1001 counts, over 8 KB
// encoded), that point is dropped and counted in
// exporter_deltaq_output_oversized, and the window's other series arrive.
func TestOversizedPointsAreCounted(t *testing.T) {
	cfg := testConfig()
	cfg.MaxRequestBytes = 4096
	h := newHarness(t, cfg, at(time.Second))
	h.consume(span{probe: "p", outcome: contract.Success, end: ms(100), delay: ms(3), dmax: time.Second, bins: 1000})
	h.obs.tick(at(2 * time.Second))

	var sz pmetric.ProtoMarshaler
	names := map[string]int{}
	observedCurve := 0
	for _, md := range h.metrics.AllMetrics() {
		assert.LessOrEqual(t, sz.MetricsSize(md), cfg.MaxRequestBytes)
		ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
		for i := 0; i < ms.Len(); i++ {
			m := ms.At(i)
			names[m.Name()] += dataPointCount(m)
			if m.Name() == contract.MetricCDF {
				for _, dp := range m.Gauge().DataPoints().All() {
					if s, _ := dp.Attributes().Get(contract.AttrSeries); s.Str() == contract.SeriesObserved {
						observedCurve++
					}
				}
			}
		}
	}
	assert.Greater(t, len(h.metrics.AllMetrics()), 1, "the window went in several requests")
	assert.NotContains(t, names, contract.MetricObserved)
	assert.Equal(t, 3, names[contract.MetricOutcomes])
	assert.Equal(t, 32, observedCurve, "the observed curve at the default 32 points")

	assert.Equal(t, map[string]int64{"signal=metrics": 1}, telemetrytest.Sum(t, h.tel, "otelcol_exporter_deltaq_output_oversized"))
}

// BenchmarkSplit measures cutting one window of 100 probes × 1000 bins with
// every bin edge on deltaq.cdf (cdf_points 0, about 10 MB encoded) into
// 3 MiB requests; the window's build is not timed.
func BenchmarkSplit(b *testing.B) {
	cfg := testConfig()
	cfg.CDFPoints = 0
	r := largeResult(b, cfg, 100, 1000)
	build := newBuilder(0, 0, exporterScope, "bench", t0)
	b.ReportAllocs()
	var s splitter
	for b.Loop() {
		b.StopTimer()
		md := build.metrics(r)
		b.StartTimer()
		s.metrics(md, DefaultMaxRequestBytes, func(pmetric.Metrics) {})
	}
}

// BenchmarkSplitFits measures the cost the split adds to a window that fits
// in one request (100 probes × 1000 bins at the default 32 CDF points): one
// size computation.
func BenchmarkSplitFits(b *testing.B) {
	cfg := testConfig()
	r := largeResult(b, cfg, 100, 1000)
	build := newBuilder(DefaultCDFPoints, 0, exporterScope, "bench", t0)
	md := build.metrics(r)
	b.ReportAllocs()
	var s splitter
	for b.Loop() {
		s.metrics(md, DefaultMaxRequestBytes, func(pmetric.Metrics) {})
	}
}

// largeResult returns the result of one window of n probes with the given
// bins (dMax 1 s, set by configuration), each with 20 instances spread over
// its bins, one of them failed.
func largeResult(tb testing.TB, cfg *Config, n, bins int) *analysis.Result {
	tb.Helper()
	cfg.MaxProbes = n
	cfg.Probes = make(map[string]analysis.ProbeConfig, n)
	for i := range n {
		cfg.Probes[fmt.Sprintf("probe_%04d", i)] = analysis.ProbeConfig{DMax: time.Second, Bins: bins}
	}
	e, err := analysis.New(cfg.engineConfig(testLayouts), at(time.Second))
	require.NoError(tb, err)
	b := e.Begin()
	for i := range n {
		for k := range 20 {
			end := at(ms(float64(100 + 10*k)))
			in := analysis.Instance{Probe: fmt.Sprintf("probe_%04d", i), Outcome: analysis.Success,
				Start: end.Add(-ms(float64(1 + (i+37*k)%990))).UnixNano(), End: end.UnixNano(),
				DMaxNs: int64(time.Second), Bins: bins}
			if k == 19 {
				in.Outcome = analysis.Failure
			}
			b.Add(&in)
		}
	}
	b.End()
	rs := e.Advance(at(2 * time.Second))
	require.Len(tb, rs, 1)
	return rs[0]
}
